"""The verdict engine: small rules over recorded facts -> findings and verdicts.

Everything here is a pure function of a :class:`~fsyncbench.model.Host`, the results'
summaries and counters, and (for ``fsyncbench audit`` reports) the recorded
:class:`~fsyncbench.model.Evidence`, so a saved or hand-written report is judged exactly like
a live run (``fsyncbench audit --from REPORT.json``; the fields read are listed in
docs/report-schema.md).

Signals are weighed strongest first (../shared/DESIGN.md, "Signals"). A storage path and sync
primitive get the verdict of the first path rule in :data:`PATH_RULES` that returns one, and
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
   virtualization, a stack that could not be followed;
8. flushes counted on bare metal, then latency against device-class floors
   (:mod:`fsyncbench.judge.devices`: power-loss protection and write cache decide the floor).

Every verdict carries its strength (measured, inferred; ``proven`` only from a power cut) and
the weaker signals that agree or disagree with it. Latency never decides against a stronger
signal: the latency rules come last. Slowness and tails are separate findings; so are config
durability and the commit checks (syncs per commit, FULL vs OFF, commit vs S x flush).
"""

# ruff: noqa: F401
# Transitional: the names moved out to the modules below are imported back here
# until every importer uses those modules; then this module goes.

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from fsyncbench.judge import devices, stack
from fsyncbench.judge.devices import CLOUD_BLOCK_MODELS, device_class
from fsyncbench.host.layers import NO_BARRIER_OPTIONS, RAM_FILESYSTEMS, SYNC_DISABLING_LIBS
from fsyncbench.model import (
    HONEST_FLUSH,
    INFERRED,
    INFO,
    MEASURED,
    NO_FLUSH,
    NO_STRENGTH,
    RISK,
    UNVERIFIABLE,
    VOLATILE_CACHE,
    WARNING,
    BlockDevice,
    Evidence,
    Finding,
    FlushDelta,
    Host,
    Pragmas,
    Report,
    Result,
    ResultVerdict,
    SyncTrace,
    Verdict,
)
from fsyncbench.fmt import fmt_bandwidth
from fsyncbench.judge.rule_facts import (
    APPLE_BARRIER_DOC, APPLE_FSYNC_DOC, BARRIER_DOC, BLOCK_FLUSH_DOC, CLOUD_BLOCK_DOC,
    COMMIT_VS_FLUSH_MIN_RATIO, COUNTER_MIN_SYNCS, DESIGN_BANDS, DROPPED_FLUSH_RATIO,
    EATMYDATA_DOC, ETCD_GATE_DOC, FIRECRACKER_DOC, GATE_P99_NS, INTERPOSED_RATIO,
    KERNEL_STAT_DOC, MAIN_PRIMITIVES, MAX_LINK_BANDWIDTH, NO_FLUSH_FILESYSTEMS,
    OVERLAY_VOLATILE_DOC, PCIE_DOC, PG_TEST_FSYNC_DOC, RAM_STACK_DOC, REACHED_FLUSH_RATIO,
    REAL_IO_FLOOR_NS, SECOND_FD_MIN_RATIO, SLOW_MEDIAN_NS, SQLITE_SYNC_DOC, SQLITE_WAL_DOC,
    SWEEP_MIN_BYTES, VIRTUALBOX_DOC, ZFS_SYNC_DOC, Facts, _a, _all_ram, _background_flushes,
    _base_primitive, _chain, _commit, _comparison, _counter_ratio, _flush_ms_per_flush,
    _flush_results, _least, _least_flushes, _media_deltas, _media_disks, _models, _per_sync,
    _power_protected_media, _preload_names, _primitive, _ratio, _reached_ratio, _subject,
    _sync_disabling, _us, _write_back,
)
from fsyncbench.judge.platform_rules import (
    _virtualbox, rule_barriers_disabled, rule_cloud_block_storage,
    rule_hypervisor_ignores_flush, rule_macos_plain_fsync, rule_network_filesystem,
    rule_no_flush_filesystem, rule_ram_media, rule_stack_not_followed,
    rule_sync_disabling_preload, rule_virtualized,
)
from fsyncbench.judge.counter_rules import (
    FUA_PRIMITIVES, NOT_SENT_ADVICE, _fua_may_carry, _interposed, _not_sent_cause,
    rule_flush_counters, rule_flushes_reach_device, rule_libc_interposed,
)
from fsyncbench.judge.timing_rules import (
    _sweep_ceiling, rule_flush_costs_nothing, rule_latency_floor, rule_sweep_bandwidth,
)
from fsyncbench.judge.path_rules import PATH_RULES, PathRule, judge_primitive, weaker_signals
from fsyncbench.judge.commit_rules import (
    COMMIT_RULE_STRENGTH, COMMIT_RULES, UNSYNCED_COMMIT_POINT, _flush_cost, _traces_for,
    config_durability, rule_commit_faster_than_sync, rule_commit_issues_no_sync,
    rule_full_equals_off, slowness, syncs_per_commit,
)
from fsyncbench.judge.evidence_rules import (
    _counter_findings, _second_fd_finding, evidence_findings,
)
from fsyncbench.judge.engine import _overall_primitive, _strength, judge, rejudge
