"""``python -m fsyncbench``: the same entry point as the ``fsyncbench`` console script."""

from fsyncbench.cli import main

raise SystemExit(main())
