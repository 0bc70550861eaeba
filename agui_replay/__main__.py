"""``python -m agui_replay``: the ``agui-replay`` command."""

from agui_replay.cli import main

raise SystemExit(main())
