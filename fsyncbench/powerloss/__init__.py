"""Simulated power cuts over a recorded SQLite VFS trace: what each pragma combination
really loses when the machine loses power.

Pipeline: :mod:`~fsyncbench.powerloss.sqlite` records every file operation SQLite makes
while committing the step journal (``run``'s workload) through a pass-through VFS (apsw);
:mod:`~fsyncbench.powerloss.models` rebuilds the on-disk states a power cut could leave at
each crash point under a named persistence model; :mod:`~fsyncbench.powerloss.matrix` opens
each state with SQLite (rollback, WAL recovery, integrity_check), compares every row with
what its commit wrote and counts acknowledged commits lost and corrupt states;
:mod:`fsyncbench.report.loss` lays the result out as text, Markdown and HTML (JSON is
the result's own fields).

What it does not cover: storage that acknowledges a flush it did not make (a lying drive, a
VM's host cache, eatmydata: that is ``fsyncbench audit``), firmware bugs, media errors and
anything beyond the models' rules (``fsyncbench powercut`` pulls a real plug). The models
trust every honoured sync; ``audit`` says whether this machine's syncs deserve that trust.
Nothing here prints.
"""

from __future__ import annotations

from fsyncbench.model import PowerlossConfig, PowerlossModelOutcome, PowerlossResult
from fsyncbench.powerloss.models import (
    DEFAULT_MODELS,
    MODELS,
    SECTOR_SIZES,
    SEMANTICS,
    default_semantics,
)
from fsyncbench.powerloss.plan import DEFAULT_COMMITS, PowerlossPlan

TYPE_CHECKING = False  # as in fsyncbench/__init__.py: no typing import at run time
if TYPE_CHECKING:
    from typing import Any


def __getattr__(name: str) -> Any:
    """``run_matrix`` on first use: it imports apsw (about 25 ms), which the command line's
    help and the other commands do not need."""
    if name == "run_matrix":
        from fsyncbench.powerloss.matrix import run_matrix

        return run_matrix
    raise AttributeError(f"module 'fsyncbench.powerloss' has no attribute {name!r}")


__all__ = [
    "DEFAULT_COMMITS",
    "DEFAULT_MODELS",
    "MODELS",
    "SECTOR_SIZES",
    "SEMANTICS",
    "default_semantics",
    "PowerlossConfig",
    "PowerlossModelOutcome",
    "PowerlossPlan",
    "PowerlossResult",
    "run_matrix",
]
