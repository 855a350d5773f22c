"""The kill matrix: what ``fsyncbench crash`` counts (:mod:`fsyncbench.crash`, which
re-exports these). A report of kind "crash" keeps one of the two experiments
(``Report.crash``, ``Report.crash_power_loss``)."""

from __future__ import annotations

from dataclasses import dataclass

from fsyncbench.model.results import Pragmas


@dataclass(frozen=True)
class KillOutcome:
    """One kill: where the child died and what the restarted run cost.

    ``seq`` 1-10 and ``step`` name the step, ``window`` is one of :data:`WINDOWS`;
    ``kill_signal`` is the signal ``waitpid`` reported (9 = SIGKILL); ``restarts`` counts the
    runs needed to complete afterwards; ``duplicate_writes`` are outside-world rows beyond a
    clean run's; ``extra_tokens`` are billed tokens beyond a clean run's.
    """

    seq: int
    step: str
    window: str
    kill_signal: int
    restarts: int
    duplicate_writes: int
    extra_tokens: int


@dataclass(frozen=True)
class PolicyRow:
    """One policy's 30 kills and the table row derived from them.

    ``kills_causing_duplicates`` counts kills with at least one duplicate write;
    ``worst_duplicates`` is the most duplicates after one kill; ``mean_extra_tokens`` is the
    mean over all kills (tokens); ``worst_extra_pct`` is the worst as a percentage of
    ``clean_run_tokens``; ``clean_run_writes`` is the number of writes of a clean run.
    """

    policy: str
    label: str
    kills: tuple[KillOutcome, ...]
    kills_causing_duplicates: int
    worst_duplicates: int
    mean_extra_tokens: float
    worst_extra_tokens: int
    worst_extra_pct: float
    clean_run_tokens: int
    clean_run_writes: int


@dataclass(frozen=True)
class KillMatrix:
    """The whole kill matrix.

    ``requested``/``effective`` are the journal's pragmas as asked and as SQLite reports them;
    ``rows`` one per policy in :data:`POLICIES` order; ``journal_commit_ns`` the raw commit
    latencies (ns, ``time.perf_counter_ns`` around BEGIN/INSERT one step row/COMMIT) of every
    step-journal commit the children made, killed children included, in run order;
    ``elapsed_ns`` the wall time of the whole matrix (databases made, 4 clean reference
    runs, 120 kills, their restarts, counting; not the scratch directory's removal);
    ``kill_count`` the SIGKILLs sent; ``model_tokens`` the cost
    model, turn 1 first; ``sqlite_version`` the library the children used.
    """

    requested: Pragmas
    effective: Pragmas
    rows: tuple[PolicyRow, ...]
    journal_commit_ns: tuple[int, ...]
    elapsed_ns: int
    kill_count: int
    model_tokens: tuple[int, ...]
    sqlite_version: str


@dataclass(frozen=True)
class ReplayResult:
    """Replaying a completed run under a journal policy.

    ``first_run_effects``/``first_run_tokens``: outside-world rows (writes and billed model
    calls) and tokens of the first, complete run. ``replay_effects``/``replay_tokens``: the
    same made by the replay (0 when the journal works). ``replay_steps_executed`` and
    ``replay_steps_replayed`` count steps run vs. answered from the journal;
    ``same_conversation`` is True when both runs ended with the same conversation.
    """

    policy: str
    run_id: str
    steps_recorded: int
    first_run_effects: int
    first_run_tokens: int
    replay_effects: int
    replay_tokens: int
    replay_steps_executed: int
    replay_steps_replayed: int
    same_conversation: bool


@dataclass(frozen=True)
class ReorderResult:
    """A crash, then a restart whose code runs two steps in swapped order.

    The first run was SIGKILLed (``kill_signal``) at ``killed_at_seq``/``killed_at_window``;
    the restart ran ``code_order``. ``stopped`` is True when it stopped with
    :class:`NonDeterminismError`, whose ``error_step``, ``recorded_name``,
    ``requested_name`` and ``message`` are copied here; ``restart_effects`` counts
    outside-world rows the restart made before stopping.
    """

    run_id: str
    killed_at_seq: int
    killed_at_window: str
    kill_signal: int
    code_order: tuple[str, ...]
    stopped: bool
    error_step: int | None
    recorded_name: str | None
    requested_name: str | None
    message: str
    restart_effects: int


@dataclass(frozen=True)
class PowerLossExperiment:
    """The kill matrix under simulated power loss (``fsyncbench crash --powerloss``): one
    :class:`KillMatrix` per journal pragma combination, in the order asked.

    ``model``/``semantics``: the persistence model and sync semantics of every cut
    (:data:`fsyncbench.powerloss.models.MODELS`, ``SEMANTICS``); ``choice``: which state a
    cut leaves where the model allows several (:data:`fsyncbench.powerloss.rebase.CUT_CHOICE`);
    ``elapsed_ns``: wall time of all matrices; ``kill_count``: SIGKILLs sent, each followed
    by a cut; ``sqlite_version``: the SQLite the children used (apsw's). The matrices'
    ``journal_commit_ns`` are empty: their commits ran through a recording VFS, so their
    latency is not the journal's."""

    model: str
    semantics: str
    choice: str
    matrices: tuple[KillMatrix, ...]
    elapsed_ns: int
    kill_count: int
    sqlite_version: str


@dataclass(frozen=True)
class CrashExperiment:
    """What ``fsyncbench crash`` shows: the kill matrix and the two hazards."""

    matrix: KillMatrix
    replay: ReplayResult
    reorder: ReorderResult
