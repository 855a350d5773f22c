"""The Python API: what each ``fsyncbench`` command does, as one call that returns its
result or raises, and never prints or exits (``fsyncbench.cli`` parses, calls one of these,
prints and exits)::

    import fsyncbench

    report = fsyncbench.run("/var/lib/myapp", samples=300, rounds=1)   # a Report
    fsyncbench.save(report, "reports")                                  # its .json and .md
    print(fsyncbench.render(report, "markdown"))

Measuring: :func:`run`, :func:`audit`, :func:`kill_matrix`, :func:`simulate_power_loss`,
:func:`host_record`, :func:`experiment_report` (a kill matrix or power-loss simulation as a
report to save), :func:`powercut_listen`, :func:`powercut_write`, :func:`powercut_verify`,
:func:`powercut_cycle`. Reports:
:func:`load`, :func:`save`, :func:`render`, :func:`gate`, :func:`compare`. The results are
the frozen dataclasses of :mod:`fsyncbench.model` (durations in ns, in fields named
``*_ns``), JSON as :func:`fsyncbench.report.store.report_to_json` writes it.

Errors: :class:`~fsyncbench.errors.FsyncbenchError` with a one-line message, for bad input
(checked before any work, in :mod:`fsyncbench.options`; the message names the CLI option, so
it reads as the CLI's does) and for failures while working (an I/O error, a listener that
cannot be reached). Ctrl-C (or SIGTERM, where the CLI maps it) while measuring raises
:class:`~fsyncbench.errors.Interrupted`, a KeyboardInterrupt saying what was cleaned up.
"""

from fsyncbench.api.auditing import audit

# the callback types of the measuring calls' arguments, named for annotations
from fsyncbench.api.common import Notes as Notes
from fsyncbench.api.common import Progress as Progress
from fsyncbench.api.comparing import Comparison, compare
from fsyncbench.api.experiments import experiment_report, kill_matrix, simulate_power_loss
from fsyncbench.api.gating import GateResult, gate
from fsyncbench.api.measuring import build_report, host_record, run
from fsyncbench.api.powercut import (
    powercut_cycle,
    powercut_listen,
    powercut_verify,
    powercut_write,
)
from fsyncbench.api.reports import load, render, save, write_file
from fsyncbench.errors import FsyncbenchError, Interrupted
from fsyncbench.options import Gates, Outputs

__all__ = [
    "run",
    "audit",
    "host_record",
    "kill_matrix",
    "simulate_power_loss",
    "load",
    "save",
    "render",
    "gate",
    "compare",
    "powercut_listen",
    "powercut_write",
    "powercut_verify",
    "powercut_cycle",
    "build_report",
    "experiment_report",
    "write_file",
    "Gates",
    "Outputs",
    "GateResult",
    "Comparison",
    "FsyncbenchError",
    "Interrupted",
]
