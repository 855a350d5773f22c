"""The one exception type the CLI turns into a single stderr line and exit code 2."""


class FsyncbenchError(Exception):
    """A usage or runtime error with a message fit for one line on stderr."""
