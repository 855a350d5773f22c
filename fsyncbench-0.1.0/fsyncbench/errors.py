"""The exceptions the CLI turns into a single stderr line and exit code 2."""


class FsyncbenchError(Exception):
    """A usage or runtime error with a message fit for one line on stderr."""


class Interrupted(KeyboardInterrupt):
    """Ctrl-C (or a signal the CLI maps to it) while measuring: a KeyboardInterrupt whose
    message says where it happened and what was cleaned up, fit for one line on stderr."""
