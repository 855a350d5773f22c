"""``python -m fsyncbench``: the same entry point as the ``fsyncbench`` console script."""

from fsyncbench.entry import main

raise SystemExit(main())
