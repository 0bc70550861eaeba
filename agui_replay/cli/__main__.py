"""``python -m agui_replay.cli``: the ``agui-replay`` command."""

from . import main

raise SystemExit(main())
