"""The verdict engine: small rules over recorded facts -> findings and verdicts.

Everything here is a pure function of a :class:`~fsyncbench.model.Host`, the results'
summaries and counters, and (for ``fsyncbench audit`` reports) the recorded
:class:`~fsyncbench.model.Evidence`, so a saved or hand-written report is judged exactly like
a live run (``fsyncbench audit --from REPORT.json``; the fields read are listed in
docs/report-schema.md).

Signals are weighed strongest first (docs/verdicts.md, "The signals, strongest first"). A storage path and sync
primitive get the verdict of the first path rule in
:data:`~fsyncbench.judge.path_rules.PATH_RULES` that returns one, and
``decided_by`` names that rule's finding code:

1. what the filesystem and the storage stack are (tmpfs, overlay ``volatile`` in any layer,
   ZFS ``sync=disabled``, RAM at the bottom of the stack: :mod:`fsyncbench.judge.stack`);
2. the device flush and write counters, judged on the disks holding the bytes (no_flush
   when nothing was written at sync time, volatile_cache when data was written but not
   flushed, with the cause named);
3. libc wrapper vs raw system call (interposition), measured;
4. the dirty-size sweep (a bandwidth no storage bus delivers);
5. a sync-disabling library named in LD_PRELOAD or /etc/ld.so.preload — only where no
   measured signal above covers the primitive;
6. mount options that drop cache flushes (``nobarrier``, ``barrier=0``) on any filesystem
   of the stack;
7. platform semantics (macOS fsync), hypervisor defaults (VirtualBox), identified cloud
   block storage, layers forwarding the flush (network filesystems, FUSE, network disks),
   virtualization, a stack that could not be followed; a RAID controller's cache in
   front of the disks; a model a published power-cut test saw lose acknowledged writes;
8. flushes counted on bare metal, then latency against device-class floors
   (:mod:`fsyncbench.judge.devices`: power-loss protection and write cache decide the floor).

Every verdict carries its strength (measured, inferred; ``proven`` only from a power cut) and
the weaker signals that agree or disagree with it. Latency never decides against a stronger
signal: the latency rules come last. Slowness and tails are separate findings; so are config
durability and the commit checks (syncs per commit, FULL vs OFF, commit vs S x flush).

The host is first completed with the device knowledge table
(:func:`fsyncbench.host.known.apply`: emulated disks, RAID volumes named by their model),
so a report recorded before a row existed is judged as a live one is today.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from fsyncbench.host import knowledge, known
from fsyncbench.judge import devices
from fsyncbench.judge.commit_rules import (
    COMMIT_RULE_STRENGTH,
    COMMIT_RULES,
    config_durability,
    fullfsync_mapping,
    slowness,
)
from fsyncbench.judge.evidence_rules import evidence_findings
from fsyncbench.judge.path_rules import judge_primitive, weaker_signals
from fsyncbench.judge.rule_facts import (
    LATENCY_BANDS_DOC,
    MAIN_PRIMITIVES,
    Facts,
    _base_primitive,
    _flush_results,
)
from fsyncbench.model import (
    MEASURED,
    NO_FLUSH,
    NO_STRENGTH,
    VOLATILE_CACHE,
    WARNING,
    Evidence,
    Finding,
    Host,
    Report,
    Result,
    ResultVerdict,
    Verdict,
)

# --------------------------------------------------------------------------- verdict


#: Verdict codes that come from what a sync primitive itself promises on its platform, not
#: from the storage path: a primitive decided by one of these is expected to differ from the
#: others, and is left out of the "primitives-disagree" comparison (Apple's fsync(2): a plain
#: fsync, F_BARRIERFSYNC and O_DSYNC writes need not reach stable media, F_FULLFSYNC does).
PRIMITIVE_SEMANTICS_CODES = frozenset({"macos-fsync-stops-at-cache"})


def _overall_primitive(flushes: Sequence[Result]) -> Result | None:
    """The primitive a durable journal would rely on (MAIN_PRIMITIVES order); a report
    whose flush results carry other names (FreeBSD ``DIOCGFLUSH``, a hand-written
    ``O_DSYNC`` write) falls back to its first syncing flush result."""
    for name in MAIN_PRIMITIVES:
        for r in flushes:
            if r.primitive == name:
                return r
    return next((r for r in flushes if r.primitive != "none"), None)


def _as_measured(r: Result, measured_fullfsync: str | None) -> Result:
    """``r`` with the fullfsync primitive the latency showed (:func:`fullfsync_mapping`)
    instead of the one inferred from the SQLite library's path."""
    p = r.effective or r.requested
    if (
        measured_fullfsync is None
        or p is None
        or not p.fullfsync
        or _base_primitive(r.primitive) not in ("F_FULLFSYNC", "F_BARRIERFSYNC")
    ):
        return r
    return dataclasses.replace(r, primitive=measured_fullfsync)


def _commit_stand_ins(results: Sequence[Result]) -> list[Result]:
    """Without raw primitives, the first commit of each sync primitive that syncs at every
    commit (not "none", not "(checkpoints only)") stands in for that primitive, so a macOS
    report of commits with and without fullfsync judges F_FULLFSYNC and fsync each on its
    own; when every syncing commit syncs only at checkpoints, the first of them."""
    syncing = [r for r in results if r.kind == "commit" and r.primitive != "none"]
    per_commit = [r for r in syncing if "checkpoints only" not in r.primitive] or syncing[:1]
    first: dict[str, Result] = {}
    for r in per_commit:
        first.setdefault(r.primitive, r)
    return list(first.values())


def _strength(finding: Finding | None) -> str:
    return finding.strength if finding is not None and finding.strength else NO_STRENGTH


def judge(host: Host, results: Sequence[Result], evidence: Evidence | None = None) -> Verdict:
    """The verdict of a report: pure function of ``host``, ``results`` (summaries, syncs
    issued, device flush deltas; raw samples are not needed) and ``evidence``.

    Every path verdict names its deciding finding and its strength (measured, inferred; see
    :data:`fsyncbench.model.STRENGTHS`); for the primitive the journal relies on, every
    weaker signal follows, marked as agreeing or disagreeing (:func:`weaker_signals`)."""
    # the facts as the device knowledge table completes them, whichever version recorded them
    host = known.apply(host)
    facts = Facts(host, tuple(results), evidence)
    findings: list[Finding] = []
    verdicts: list[ResultVerdict] = []
    by_primitive: dict[str, tuple[str, str, str]] = {}
    flushes = _flush_results(results)
    main = _overall_primitive(flushes)
    # The primitive the journal relies on first: its deciding finding leads the list.
    for r in sorted(flushes, key=lambda x: x is not main):
        verdict, code, finding = judge_primitive(host, r, results, evidence)
        by_primitive.setdefault(r.primitive, (verdict, code, _strength(finding)))
        verdicts.append(ResultVerdict(r.name, verdict, None, code, _strength(finding)))
        if finding:
            findings.append(finding)
        if r is main:
            findings.extend(weaker_signals(facts, r, verdict, code))
        findings.extend(slowness(r))

    if main is None:  # no raw primitive measured: syncing commits stand in, one per primitive
        stand_ins = _commit_stand_ins(results)
        main = _overall_primitive(stand_ins)
        if main is None:  # no syncing commit either: the path's own rules only
            verdict, code, finding = judge_primitive(host, None, results, evidence)
            if finding:
                findings.append(finding)
                findings.extend(weaker_signals(facts, None, verdict, code))
            path = (verdict, code, _strength(finding))
        for r in sorted(stand_ins, key=lambda x: x is not main):
            verdict, code, finding = judge_primitive(host, r, results, evidence)
            by_primitive[r.primitive] = (verdict, code, _strength(finding))
            if finding:
                findings.append(finding)
                if r is main:
                    findings.extend(weaker_signals(facts, r, verdict, code))
    if main is not None:
        path = by_primitive[main.primitive]

    measured_fullfsync, mapping = fullfsync_mapping(facts)
    if mapping:
        findings.append(mapping)
    for r in results:
        if r.kind != "commit":
            continue
        durable, finding = config_durability(host, _as_measured(r, measured_fullfsync))
        if finding:
            findings.append(finding)
        verdict, code, strength = by_primitive.get(r.primitive) or by_primitive.get(
            _base_primitive(r.primitive), path
        )
        for rule in COMMIT_RULES:
            hit = rule(facts, r)
            if hit:
                hit_strength = COMMIT_RULE_STRENGTH[hit.code]
                if verdict in (NO_FLUSH, VOLATILE_CACHE) and strength == MEASURED:
                    # a measured signal already found the risk: keep it, show this one too
                    findings.append(
                        dataclasses.replace(
                            hit,
                            strength=hit_strength,
                            points_to=NO_FLUSH,
                            stance="agrees" if verdict == NO_FLUSH else "disagrees",
                        )
                    )
                else:
                    findings.append(
                        dataclasses.replace(
                            hit, strength=hit_strength, points_to=NO_FLUSH, stance="decides"
                        )
                    )
                    verdict, code, strength = NO_FLUSH, hit.code, hit_strength
                break
        findings.extend(slowness(r))
        verdicts.append(ResultVerdict(r.name, verdict, durable, code, strength))
    findings.extend(evidence_findings(facts))
    # primitives that promise different things on this platform (macOS: fsync stops at the
    # drive cache, F_FULLFSYNC does not) are expected to differ: only the others are compared
    split = {
        v.subject: (v.path_verdict, v.decided_by)
        for v in verdicts
        if v.config_durable is None
        and v.subject != "path"
        and v.decided_by not in PRIMITIVE_SEMANTICS_CODES
    }
    if len({verdict for verdict, _ in split.values()}) > 1:
        findings.append(
            Finding(
                "primitives-disagree",
                WARNING,
                "path",
                "The sync primitives on this one path got different verdicts: "
                + "; ".join(f"{name} {verdict} ({code})" for name, (verdict, code) in split.items())
                + ". Where one is decided only by latency near a floor, the line between them is "
                "not sharp; where a measurement covers one primitive only, the other lacks it.",
                "Read each verdict's strength; the path verdict is the one of the primitive the "
                "journal uses.",
                {"verdicts": {k: v[0] for k, v in split.items()}},
                LATENCY_BANDS_DOC,
            )
        )
    unknown = sorted(devices.declared_facts(host) - set(devices.DECLARABLE))
    if unknown:
        findings.append(
            Finding(
                "unknown-declaration",
                WARNING,
                "path",
                f"Declared facts not understood and ignored: {', '.join(unknown)}.",
                "Declare only "
                + ", ".join(f"'{k}' ({v})" for k, v in devices.DECLARABLE.items())
                + ".",
                {"declared": list(host.target.declared)},
                "docs/report-schema.md",
            )
        )
    order = {r.name: i for i, r in enumerate(results)}
    verdicts.sort(key=lambda v: order.get(v.subject, len(order)))
    return Verdict(
        path[0],
        path[1],
        tuple(verdicts),
        tuple(findings),
        path[2],
        device_knowledge_version=knowledge.table().version,
    )


#: How the note :func:`rejudge` adds begins (:func:`rejudged_note` finds it).
REJUDGED = "the report recorded "


def rejudged_note(report: Report) -> str | None:
    """The note :func:`rejudge` added to ``report`` where its recorded verdict differed from
    the one derived again, or None."""
    return next((n for n in report.notes if n.startswith(REJUDGED)), None)


def rejudge(report: Report) -> Report:
    """``report`` with its verdict derived again from its recorded facts alone (host,
    results, evidence), its host completed by the device knowledge table
    (:func:`fsyncbench.host.known.apply`): ``fsyncbench audit --from``, ``show``, the fleet. When the recorded verdict differs (a
    report by an older engine, or edited by hand) a note says so."""
    # its host as the device knowledge table completes it, so what a report shows of its
    # disks (a guest named by its disk, a RAID volume's controller) agrees with its verdict
    report = dataclasses.replace(report, host=known.apply(report.host))
    verdict = judge(report.host, report.results, report.evidence)
    notes = tuple(report.notes)
    old = report.verdict
    recorded = {v.subject: (v.path_verdict, v.config_durable) for v in old.results}
    changed = [
        f"{v.subject} {recorded[v.subject][0]} -> {v.path_verdict}"
        for v in verdict.results
        if v.subject in recorded and recorded[v.subject] != (v.path_verdict, v.config_durable)
    ]
    if (old.path_verdict, old.decided_by) == (verdict.path_verdict, verdict.decided_by) and changed:
        notes += (
            f"{REJUDGED}other verdicts for some configurations; re-derived from its facts "
            f"(device knowledge version {verdict.device_knowledge_version}): " + "; ".join(changed),
        )
    if (old.path_verdict, old.decided_by) != (verdict.path_verdict, verdict.decided_by):
        notes += (
            f"{REJUDGED}{old.path_verdict} (decided by {old.decided_by}); "
            f"re-derived from its facts: {verdict.path_verdict} (decided by "
            f"{verdict.decided_by}; device knowledge version "
            f"{verdict.device_knowledge_version})",
        )
    return dataclasses.replace(report, verdict=verdict, notes=notes)
