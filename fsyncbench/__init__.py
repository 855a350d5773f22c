"""fsyncbench: what a durable journal commit costs here, and whether the storage keeps it.

The Python API (:mod:`fsyncbench.api`) is reachable from here, imported on first use so
that ``from fsyncbench import __version__`` stays cheap (no numpy)::

    import fsyncbench

    report = fsyncbench.run("/var/lib/myapp", samples=300, rounds=1)
"""

from __future__ import annotations

# typing is not imported at run time: this module is the first of fsyncbench a Ctrl-C can
# land in while the interpreter starts, and importing typing (and re) there takes long
# enough to be hit (entry.py guards only what comes after). mypy reads the block below
# (it takes any name TYPE_CHECKING as true).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__version__ = "0.1.0"

#: The names :mod:`fsyncbench.api` exports here (``host``, ``crash`` and ``powerloss`` are
#: subpackages, hence ``host_record``, ``kill_matrix`` and ``simulate_power_loss``).
_API = frozenset(
    {
        "run",
        "audit",
        "host_record",
        "kill_matrix",
        "simulate_power_loss",
        "experiment_report",
        "load",
        "save",
        "render",
        "gate",
        "compare",
        "powercut_listen",
        "powercut_write",
        "powercut_verify",
        "powercut_cycle",
        "Gates",
        "Outputs",
        "GateResult",
        "Comparison",
        "FsyncbenchError",
        "Interrupted",
    }
)


def __getattr__(name: str) -> Any:
    if name in _API:
        import importlib

        # by name, not an import statement: the package itself stays below every layer
        # (modules that import __version__ must not depend on the API above them)
        return getattr(importlib.import_module("fsyncbench.api"), name)
    raise AttributeError(f"module 'fsyncbench' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_API})
