"""The CI gates of the API (:mod:`fsyncbench.api`): :func:`gate` checks a report against
``--max-p99`` and ``--fail-on`` (:mod:`fsyncbench.judge.gates`) and returns a
:class:`GateResult`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from fsyncbench import options
from fsyncbench.model import UNVERIFIABLE, Report
from fsyncbench.options import Gates

if TYPE_CHECKING:  # for annotations only: imported where it is used
    from fsyncbench.judge.gates import GateFailure


@dataclass(frozen=True)
class GateResult:
    """What :func:`gate` found: ``failures`` (:class:`fsyncbench.judge.gates.GateFailure`,
    in result order) among ``checked`` configurations; ``notes`` (a p99 whose interval
    straddles ``--max-p99``); ``cannot_tell`` (what a strict gate could not check, with what
    would settle it); ``active`` False when no gate was set (nothing checked);
    ``unverified``: with ``--fail-on``, the configurations checked whose storage path is
    ``unverifiable`` while ``--fail-on`` does not name it: a pass says nothing of them."""

    failures: tuple[GateFailure, ...] = ()
    checked: int = 0
    active: bool = False
    notes: tuple[str, ...] = ()
    cannot_tell: tuple[str, ...] = ()
    unverified: tuple[str, ...] = ()

    @property
    def failed(self) -> bool:
        return bool(self.failures)


def gate(
    report: Report,
    gates: Gates | None = None,
    *,
    max_p99: str | int | None = None,
    fail_on: str | Sequence[str] | None = None,
    configs: str | Sequence[str] | None = None,
    max_p99_strict: bool = False,
) -> GateResult:
    """The CI gates over ``report``: each configuration (``configs``; default all but the
    no-sync write baseline) whose p99 is above ``max_p99`` ("10ms", or ns) or whose path
    verdict is in ``fail_on`` ("volatile_cache,no_flush") fails. Give ``gates`` (parsed) or
    the three values."""
    from fsyncbench.judge import gates as checks

    options.check_instance(gates, Gates, "gates")
    if gates is None:
        gates = Gates.parse(max_p99, fail_on, configs, max_p99_strict)
    options.check_instance(report, Report, "report", optional=False)
    if not gates.active:
        return GateResult()
    failures, notes, untold = checks.review(
        report,
        gates.max_p99_ns,
        gates.fail_on,
        gates.configs,
        gates.max_p99_strict,
        gates.accept_disturbed,
    )
    selected = checks.select(report, gates.configs)
    verdicts = {v.subject: v.path_verdict for v in report.verdict.results}
    unverified = tuple(
        r.name
        for r in selected
        if gates.fail_on
        and verdicts.get(r.name) == UNVERIFIABLE
        and UNVERIFIABLE not in gates.fail_on
    )
    return GateResult(tuple(failures), len(selected), True, tuple(notes), tuple(untold), unverified)
