"""The console entry point: imports the CLI (numpy and the rest: most of a second) inside a
guard, so Ctrl-C during that second is the same one line and exit 2 as Ctrl-C later, not a
traceback from the middle of an import."""

from __future__ import annotations

import sys


def main() -> int:
    """``fsyncbench``: :func:`fsyncbench.cli.main`, with the import interruptible."""
    try:
        from fsyncbench.cli import main as cli_main
    except KeyboardInterrupt:
        print("fsyncbench: interrupted; nothing was written", file=sys.stderr)
        return 2
    except RuntimeError as exc:
        # Ctrl-C inside a class body being created while importing (e.g. the standard
        # library's platform.uname_result) surfaces as "Error calling __set_name__",
        # a RuntimeError whose cause is the KeyboardInterrupt
        if isinstance(exc.__cause__ or exc.__context__, KeyboardInterrupt):
            print("fsyncbench: interrupted; nothing was written", file=sys.stderr)
            return 2
        raise
    return cli_main()
