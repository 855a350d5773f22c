"""Frozen dataclasses shared by every module; no I/O here.

Units live in field names: ``_ns`` nanoseconds, ``_ms`` milliseconds, ``_bytes`` bytes,
``_s`` seconds. Everything here converts to plain JSON and back with
:mod:`fsyncbench.jsonable`; the report schema (see ``docs/report-schema.md``) is these classes.

One module per stage that records them, each importing only the ones below it: ``host``
(the machine and the storage path), ``results`` (pragmas, samples, their statistics, what
the machine did in each round), ``verdict`` (the judge's findings), ``evidence`` (what an
audit measures beyond the results), ``writers`` (concurrent writers), ``powerloss``
(simulated power cuts), ``crash`` (the kill matrix) and ``report`` (the saved report's top
level, ``SCHEMA_VERSION``). Every public name is re-exported here: ``from fsyncbench.model
import X`` is the way to reach one.
"""

from fsyncbench.model.crash import (
    CrashExperiment,
    KillMatrix,
    KillOutcome,
    PolicyRow,
    PowerLossExperiment,
    ReorderResult,
    ReplayResult,
)
from fsyncbench.model.evidence import (
    NON_DURABLE_SYNCS,
    DirtySweep,
    EnvironmentFacts,
    Evidence,
    SecondFdCheck,
    SweepPoint,
    SyncTrace,
    SyscallComparison,
)
from fsyncbench.model.host import (
    FLUSH_DROPPED,
    FLUSH_FORWARDED,
    FLUSH_FSYNCS_BACKING_FILE,
    FLUSH_NOTHING_TO_FLUSH,
    FLUSH_PASSES_DOWN,
    FLUSH_TO_DEVICE,
    FLUSH_TO_HOST,
    FLUSH_UNKNOWN,
    POWER_PROTECTION_NV_CACHE,
    POWER_PROTECTION_USER_POLICY,
    PROTECTION_FAILED,
    PROTECTION_NOT_READY,
    PROTECTION_OK,
    BlockDevice,
    FlushDelta,
    Host,
    Mount,
    RaidController,
    StorageLayer,
    StorageTarget,
    Virtualization,
)
from fsyncbench.model.powerloss import (
    NO_LOSS_UNDER_MODEL,
    PowerlossClaim,
    PowerlossConfig,
    PowerlossModelOutcome,
    PowerlossResult,
)
from fsyncbench.model.report import EXPERIMENT_KINDS, SCHEMA_VERSION, Report, recorded_options
from fsyncbench.model.results import (
    EarlierRun,
    Interval,
    Pragmas,
    ProcessActivity,
    Result,
    RoundActivity,
    Summary,
)
from fsyncbench.model.verdict import (
    HONEST_FLUSH,
    INFERRED,
    INFO,
    MEASURED,
    NO_FLUSH,
    NO_STRENGTH,
    PATH_VERDICTS,
    PROVEN,
    RISK,
    STRENGTHS,
    UNVERIFIABLE,
    VOLATILE_CACHE,
    WARNING,
    Finding,
    ResultVerdict,
    Verdict,
)
from fsyncbench.model.writers import WriterLane, WritersPoint, WritersSummary

__all__ = [
    # host
    "FLUSH_DROPPED",
    "FLUSH_FORWARDED",
    "FLUSH_FSYNCS_BACKING_FILE",
    "FLUSH_NOTHING_TO_FLUSH",
    "FLUSH_PASSES_DOWN",
    "FLUSH_TO_DEVICE",
    "FLUSH_TO_HOST",
    "FLUSH_UNKNOWN",
    "POWER_PROTECTION_NV_CACHE",
    "POWER_PROTECTION_USER_POLICY",
    "PROTECTION_FAILED",
    "PROTECTION_NOT_READY",
    "PROTECTION_OK",
    "BlockDevice",
    "FlushDelta",
    "Host",
    "Mount",
    "RaidController",
    "StorageLayer",
    "StorageTarget",
    "Virtualization",
    # results
    "EarlierRun",
    "Interval",
    "Pragmas",
    "ProcessActivity",
    "Result",
    "RoundActivity",
    "Summary",
    # verdict
    "HONEST_FLUSH",
    "INFERRED",
    "INFO",
    "MEASURED",
    "NO_FLUSH",
    "NO_STRENGTH",
    "PATH_VERDICTS",
    "PROVEN",
    "RISK",
    "STRENGTHS",
    "UNVERIFIABLE",
    "VOLATILE_CACHE",
    "WARNING",
    "Finding",
    "ResultVerdict",
    "Verdict",
    # evidence
    "NON_DURABLE_SYNCS",
    "DirtySweep",
    "EnvironmentFacts",
    "Evidence",
    "SecondFdCheck",
    "SweepPoint",
    "SyncTrace",
    "SyscallComparison",
    # writers
    "WriterLane",
    "WritersPoint",
    "WritersSummary",
    # powerloss
    "NO_LOSS_UNDER_MODEL",
    "PowerlossClaim",
    "PowerlossConfig",
    "PowerlossModelOutcome",
    "PowerlossResult",
    # crash
    "CrashExperiment",
    "KillMatrix",
    "KillOutcome",
    "PolicyRow",
    "PowerLossExperiment",
    "ReorderResult",
    "ReplayResult",
    # report
    "EXPERIMENT_KINDS",
    "SCHEMA_VERSION",
    "Report",
    "recorded_options",
]
