"""``/proc/self/mountinfo`` parsing and the mount that holds a path.

Format (proc(5), https://man7.org/linux/man-pages/man5/proc_pid_mountinfo.5.html)::

    36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue
    (1)(2) (3)   (4)   (5)      (6)     (7)   (8) (9)   (10)         (11)

mount ID, parent ID, major:minor, root, mount point, per-mount options, zero or more
optional fields, a lone ``-`` separator, filesystem type, source, super-block options.
The kernel escapes space, tab, newline and backslash in paths as octal ``\\040``, ``\\011``,
``\\012``, ``\\134`` (fs/proc_namespace.c, ``mangle``/``seq_escape``).
"""

from __future__ import annotations

import os
import re

from fsyncbench.model import Mount

from ._common import longest_prefix, under_root

_OCTAL = re.compile(r"\\([0-7]{3})")


def unescape(field: str) -> str:
    """Undo the kernel's octal escapes (``\\040`` -> space)."""
    return _OCTAL.sub(lambda m: chr(int(m.group(1), 8)), field)


def parse_line(line: str) -> Mount | None:
    """One mountinfo line as a :class:`Mount`, or None when the line is malformed."""
    fields = line.split()
    try:
        sep = fields.index("-", 6)
    except ValueError:
        return None
    if len(fields) < sep + 3:
        return None
    return Mount(
        mount_point=unescape(fields[4]),
        fs_type=unescape(fields[sep + 1]),
        source=unescape(fields[sep + 2]),
        options=tuple(fields[5].split(",")),
        super_options=tuple(o for o in fields[sep + 3].split(",") if o)
        if len(fields) > sep + 3
        else (),
        device_number=fields[2],
        root=unescape(fields[3]),
    )


def parse_mountinfo(text: str) -> list[Mount]:
    """All parsable lines of a mountinfo file, in file order (order of mounting)."""
    mounts = []
    for line in text.splitlines():
        mount = parse_line(line)
        if mount is not None:
            mounts.append(mount)
    return mounts


def read_mountinfo(root: str = "/") -> list[Mount]:
    """Parsed ``<root>/proc/self/mountinfo``; [] when it cannot be read (no /proc)."""
    try:
        with open(under_root(root, "/proc/self/mountinfo"), "rb") as handle:
            raw = handle.read()
    except OSError:
        return []
    # Paths are bytes to the kernel; surrogateescape keeps non-UTF-8 names round-trippable.
    return parse_mountinfo(raw.decode("utf-8", errors="surrogateescape"))


def find_mount(path: str, mounts: list[Mount]) -> Mount | None:
    """The mount whose mount point is the longest whole-component prefix of ``path``.

    ``path`` should already be absolute and resolved (``os.path.realpath``). When the same
    mount point appears twice, the later (top-most) mount wins.
    """
    index = longest_prefix(os.path.normpath(path), [m.mount_point for m in mounts])
    return None if index is None else mounts[index]
