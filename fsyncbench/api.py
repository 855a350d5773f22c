"""The Python API: what each ``fsyncbench`` command does, as one call that returns its
result or raises, and never prints or exits."""

from __future__ import annotations

import datetime as _dt
from collections.abc import Sequence

from fsyncbench import __version__
from fsyncbench.measure import runner
from fsyncbench.model import SCHEMA_VERSION, Evidence, Host, Report, Result


def build_report(kind: str, host: Host, results: Sequence[Result], command_line: Sequence[str],
                 floors: Sequence[Result] = (), evidence: Evidence | None = None,
                 elapsed_ns: int | None = None) -> Report:
    """Assemble a report of ``kind`` ("run" or "audit"): the verdict is derived here from
    ``host``, ``results`` and ``evidence`` (what ``fsyncbench audit`` measured,
    :mod:`fsyncbench.measure.evidence`), the notes from the measurement
    (:func:`fsyncbench.measure.runner.measurement_notes`); ``floors``
    (:func:`fsyncbench.measure.runner.measure_floors`) are recorded as they are."""
    from fsyncbench.judge import audit as engine

    now = _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0)
    return Report(
        schema_version=SCHEMA_VERSION,
        tool_version=__version__,
        kind=kind,
        created_utc=now.strftime("%Y-%m-%dT%H:%M:%SZ"),
        command_line=tuple(command_line),
        host=host,
        results=tuple(results),
        verdict=engine.judge(host, results, evidence),
        notes=runner.measurement_notes(host, results),
        evidence=evidence,
        floors=tuple(floors),
        elapsed_ns=elapsed_ns,
    )
