"""The exceptions the CLI turns into a single stderr line and exit code 2, and the "did you
mean" their messages end with."""

import difflib
from collections.abc import Sequence


class FsyncbenchError(Exception):
    """A usage or runtime error with a message fit for one line on stderr."""


class Interrupted(KeyboardInterrupt):
    """Ctrl-C (or a signal the CLI maps to it) while measuring: a KeyboardInterrupt whose
    message says where it happened and what was cleaned up, fit for one line on stderr."""


def did_you_mean(words: Sequence[str], known: Sequence[str]) -> str:
    """ "; did you mean X?" naming the closest of ``known`` to each of ``words`` (leading
    dashes and case ignored; "X for W" when there are several words), or "" when none is
    close. Closeness is :func:`difflib.get_close_matches` at its default cutoff 0.6 (the
    ratio of matching characters; https://docs.python.org/3/library/difflib.html)."""
    bare = {k.lstrip("-").lower(): k for k in known}  # "--" would make every option alike
    hints = []
    for word in words:
        close = difflib.get_close_matches(word.lstrip("-").lower(), list(bare), n=1)
        if close:
            hints.append(f"{bare[close[0]]} for {word}" if len(words) > 1 else bare[close[0]])
    return f"; did you mean {', '.join(hints)}?" if hints else ""
