"""``python -m linklab.cli ARGS``: the ``linklab`` command (its entry point: __init__.py)."""

from linklab.cli import main

raise SystemExit(main())
