"""The path rules in the order they are weighed (:data:`PATH_RULES`, strongest signal first),
the verdict of one primitive (:func:`judge_primitive`: the first rule that returns one
decides) and the signals of every other rule (:func:`weaker_signals`). The rules live in
:mod:`~fsyncbench.judge.platform_rules`, :mod:`~fsyncbench.judge.counter_rules`,
:mod:`~fsyncbench.judge.cache_rules` and :mod:`~fsyncbench.judge.timing_rules`."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

from fsyncbench.host import known
from fsyncbench.judge.cache_rules import rule_controller_cache
from fsyncbench.judge.counter_rules import (
    rule_flush_counters,
    rule_flushes_reach_device,
    rule_libc_interposed,
)
from fsyncbench.judge.platform_rules import (
    rule_barriers_disabled,
    rule_cloud_block_storage,
    rule_hypervisor_ignores_flush,
    rule_macos_plain_fsync,
    rule_network_filesystem,
    rule_no_flush_filesystem,
    rule_published_power_cut,
    rule_ram_media,
    rule_stack_not_followed,
    rule_sync_disabling_preload,
    rule_virtualized,
)
from fsyncbench.judge.rule_facts import Facts
from fsyncbench.judge.timing_rules import (
    rule_flush_costs_nothing,
    rule_latency_floor,
    rule_sweep_bandwidth,
)
from fsyncbench.model import (
    UNVERIFIABLE,
    Evidence,
    Finding,
    Host,
    Result,
)

# --------------------------------------------------------------------------- path rules
# Each path rule looks at one flush primitive (r; None = the path with nothing measured)
# and returns (verdict, deciding finding) or None. Strongest signal first. Every finding a
# path rule returns carries its strength: how the verdict it points to is known.

PathRule = Callable[[Facts, "Result | None"], "tuple[str, Finding] | None"]


#: Path rules, strongest signal first; the first that returns a verdict decides.
PATH_RULES: tuple[PathRule, ...] = (
    rule_no_flush_filesystem,
    rule_ram_media,
    rule_flush_counters,
    rule_libc_interposed,
    rule_sweep_bandwidth,
    rule_sync_disabling_preload,
    rule_barriers_disabled,
    rule_flush_costs_nothing,
    rule_macos_plain_fsync,
    rule_hypervisor_ignores_flush,
    rule_cloud_block_storage,
    rule_network_filesystem,
    rule_stack_not_followed,
    rule_virtualized,
    rule_controller_cache,
    rule_published_power_cut,
    rule_flushes_reach_device,
    rule_latency_floor,
)


def judge_primitive(
    host: Host, r: Result | None, results: Sequence[Result], evidence: Evidence | None = None
) -> tuple[str, str, Finding | None]:
    """(path verdict, deciding finding code, its finding) for one flush result, or for the
    path itself (``r`` None) when no primitive was measured. The finding carries its
    strength, ``points_to`` the verdict and ``stance`` "decides"."""
    facts = Facts(known.apply(host), tuple(results), evidence)
    for rule in PATH_RULES:
        hit = rule(facts, r)
        if hit:
            finding = dataclasses.replace(hit[1], points_to=hit[0], stance="decides")
            return hit[0], finding.code, finding
    return UNVERIFIABLE, "no-evidence", None


def weaker_signals(f: Facts, r: Result | None, verdict: str, code: str) -> list[Finding]:
    """Findings of the rules after the deciding one, each marked with the verdict it points
    to and whether it ``agrees`` or ``disagrees`` with ``verdict``: a report shows every
    signal, the disagreeing ones too (a fast latency under a VM verdict, counters that look
    honest above a RAM-backed loop device). Rules before the deciding one found nothing."""
    out = []
    for rule in PATH_RULES:
        hit = rule(f, r)
        if hit and hit[1].code != code:
            stance = "agrees" if hit[0] == verdict else "disagrees"
            out.append(dataclasses.replace(hit[1], points_to=hit[0], stance=stance))
    return out
