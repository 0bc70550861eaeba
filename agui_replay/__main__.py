"""``python -m agui_replay``: the ``agui-replay`` command."""

from .cli import main

raise SystemExit(main())
