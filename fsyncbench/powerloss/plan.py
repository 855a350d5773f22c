"""What ``fsyncbench powerloss`` simulates (:class:`PowerlossPlan`), without importing
apsw: the command line builds its help from these names at every start."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from fsyncbench.model import Pragmas
from fsyncbench.powerloss.models import DEFAULT_MAX_STATES, DEFAULT_MODELS, DEFAULT_SAMPLES

#: Commits recorded per configuration by default: enough for WAL/NORMAL's window to show
#: several lost commits, small enough for the default matrix to take seconds.
DEFAULT_COMMITS = 10
#: SQLite's default wal_autocheckpoint, in WAL pages (SQLITE_DEFAULT_WAL_AUTOCHECKPOINT,
#: https://www.sqlite.org/pragma.html#pragma_wal_autocheckpoint): 200 step-journal commits
#: make about 484 frames, so a recording with it never checkpoints before the close.
SQLITE_WAL_AUTOCHECKPOINT = 1000
#: The largest --wal-autocheckpoint taken (0 turns automatic checkpoints off).
MAX_WAL_AUTOCHECKPOINT = 1_000_000
#: Most commits per configuration: the prefix model checks every prefix since the last
#: sync at every crash point, which grows with the square of the commits between syncs
#: (synchronous=OFF: 100 commits take about 9 s on this VM, 200 about four times that).
MAX_COMMITS = 200


@dataclass(frozen=True)
class PowerlossPlan:
    """What ``fsyncbench powerloss`` simulates: ``configs`` x ``models``
    (:data:`~fsyncbench.powerloss.models.MODELS`) under ``semantics`` ("linux" or "macos");
    ``commits`` recorded per configuration with ``payload_bytes`` step outputs;
    ``sector_bytes`` for torn writes and test6's trashed sectors; ``psow`` None records
    with SQLite's default (powersafe overwrite on) and, for the models of
    :data:`~fsyncbench.powerloss.models.SECTOR_MODELS`, a second trace with it off,
    True/False forces it; ``max_states``/``samples``/``seed`` bound the drawn models
    (:func:`~fsyncbench.powerloss.models.crash_states`); ``keep_failures``: a directory for
    the worst state of each configuration x model (None: keep none); ``wal_autocheckpoint``:
    PRAGMA wal_autocheckpoint for the recordings in WAL mode (None: SQLite's default,
    :data:`SQLITE_WAL_AUTOCHECKPOINT`; 0: no automatic checkpoint)."""

    configs: tuple[Pragmas, ...]
    models: tuple[str, ...] = DEFAULT_MODELS
    semantics: str = "linux"
    commits: int = DEFAULT_COMMITS
    payload_bytes: int = 512
    sector_bytes: int = 512
    psow: bool | None = None
    max_states: int = DEFAULT_MAX_STATES
    samples: int = DEFAULT_SAMPLES
    seed: int = 0
    keep_failures: Path | None = None
    wal_autocheckpoint: int | None = None
