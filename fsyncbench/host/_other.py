"""Any system without a module of its own (FreeBSD, ...; Windows has
:mod:`fsyncbench.host._windows`): only what psutil knows (the mount of the target).

Device facts, virtualization signs and the SQLite library file stay None: there is no
portable, cheap source for them here, and a guess would be worse than "unknown".
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from fsyncbench.model import StorageTarget, Virtualization

from ._common import PlatformFacts, psutil_mount


def storage_target(target: str, partitions: Sequence[Any] | None = None) -> StorageTarget:
    """The psutil mount holding ``target`` (longest prefix); no chain, no disks. Paths are
    POSIX paths here (Windows has its own module): a backslash is a character of a name."""
    path = os.path.realpath(target)
    return StorageTarget(path=path, mount=psutil_mount(path, partitions))


def collect(target: str, partitions: Sequence[Any] | None = None) -> PlatformFacts:
    """Facts for ``target`` on a system without a dedicated module. Never raises."""
    return PlatformFacts(
        target=storage_target(target, partitions),
        virtualization=Virtualization(),
        sqlite_library=None,
    )
