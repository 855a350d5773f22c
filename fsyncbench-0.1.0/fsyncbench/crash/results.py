"""The kill matrix's constants (policies, kill windows, the agent's steps and token cost
model), its errors and its frozen result dataclasses."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from fsyncbench.errors import FsyncbenchError
from fsyncbench.model import Pragmas

# --------------------------------------------------------------------------------------------
# The experiment's constants

#: Policy keys, in table order, and their labels as the published table prints them.
POLICIES = ("no_persistence", "checkpoint_per_turn", "step_journal", "journal_idempotency")
POLICY_LABELS = {
    "no_persistence": "no persistence",
    "checkpoint_per_turn": "checkpoint per turn",
    "step_journal": "step journal",
    "journal_idempotency": "journal + idempotency keys",
}
_JOURNAL_POLICIES = ("step_journal", "journal_idempotency")

#: Kill windows of each step, in the order the agent passes them.
WINDOWS = ("before", "effect", "recorded")

#: The agent's turns and steps: turn k is model k then tool k.
TURNS = 5
STEP_NAMES = tuple(f"{kind}{turn}" for turn in range(1, TURNS + 1) for kind in ("model", "tool"))

#: Token cost model of the scripted model: a fixed prompt (system prompt and tool schemas)
#: plus context that grows by one model reply and one tool result per turn.
PROMPT_TOKENS = 2_900
CONTEXT_TOKENS_PER_TURN = 1_500


def model_call_tokens(turn: int) -> int:
    """Tokens billed by the model call of ``turn`` (1-5): 4,400, 5,900, 7,400, 8,900, 10,400."""
    return PROMPT_TOKENS + CONTEXT_TOKENS_PER_TURN * turn


#: Tokens of each model call, turn 1 first; a clean run costs their sum (37,000).
MODEL_TOKENS = tuple(model_call_tokens(turn) for turn in range(1, TURNS + 1))

#: Tool of each turn: (name, writes to the outside world, outside-world kind).
TOOLS = {
    1: ("query_alerts", False, None),
    2: ("open_ticket", True, "ticket"),
    3: ("page_oncall", True, "page"),
    4: ("post_status", True, "status"),
    5: ("check_status", False, None),
}

#: What the scripted model asks for in each turn (the tool call's arguments).
_SCRIPT = {
    1: {"service": "checkout", "window_min": 15},
    2: {"title": "checkout p99 latency above 2 s", "severity": "SEV2"},
    3: {"team": "payments", "reason": "SEV2: checkout p99 latency above 2 s"},
    4: {"text": "Investigating elevated checkout latency; payments on-call engaged."},
    5: {},
}

#: Seconds the parent waits for a child to report before it gives up (a hung child is a bug
#: or a stuck disk, not a result).
CHILD_TIMEOUT_S = 60.0
#: Restarts allowed after a kill before the run is declared stuck.
MAX_RESTARTS = 3

_EXIT_OK = 0
_EXIT_NONDETERMINISM = 3
_EXIT_ERROR = 70


# --------------------------------------------------------------------------------------------
# Errors


class CrashError(FsyncbenchError):
    """The kill matrix could not run (unusable directory, a child that failed or hung)."""


class CrashUnsupported(CrashError):
    """This platform has no ``os.fork`` or no SIGKILL (e.g. Windows)."""


class NonDeterminismError(Exception):
    """The journal recorded a different step at ``step`` than the code now asks for.

    ``step`` is the 1-based sequence number; ``recorded_name``/``requested_name`` and the
    sha256 input hashes are what the journal holds and what the code asked for. Replaying
    further would hand one step's recorded output to another step (Temporal stops a workflow
    the same way: https://docs.temporal.io/workflow-definition#deterministic-constraints).
    """

    def __init__(
        self,
        step: int,
        recorded_name: str,
        requested_name: str,
        recorded_hash: str = "",
        requested_hash: str = "",
    ) -> None:
        self.step = step
        self.recorded_name = recorded_name
        self.requested_name = requested_name
        self.recorded_hash = recorded_hash
        self.requested_hash = requested_hash
        if recorded_name != requested_name:
            text = (
                f"non-determinism at step {step}: the journal recorded {recorded_name!r} "
                f"but the code asks for {requested_name!r}"
            )
        else:
            text = (
                f"non-determinism at step {step}: the journal recorded {recorded_name!r} with "
                f"input hash {recorded_hash[:12]} but the code asks for {requested_name!r} "
                f"with input hash {requested_hash[:12]}"
            )
        super().__init__(text)


# --------------------------------------------------------------------------------------------
# Results (frozen; fsyncbench.model.to_jsonable turns them into JSON)


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

    @classmethod
    def from_kills(
        cls, policy: str, kills: Sequence[KillOutcome], clean_run_tokens: int, clean_run_writes: int
    ) -> PolicyRow:
        """Derive the row's figures from ``kills`` (at least one)."""
        extra = [k.extra_tokens for k in kills]
        worst = max(extra)
        return cls(
            policy=policy,
            label=POLICY_LABELS[policy],
            kills=tuple(kills),
            kills_causing_duplicates=sum(1 for k in kills if k.duplicate_writes > 0),
            worst_duplicates=max(k.duplicate_writes for k in kills),
            mean_extra_tokens=sum(extra) / len(extra),
            worst_extra_tokens=worst,
            worst_extra_pct=100.0 * worst / clean_run_tokens if clean_run_tokens else 0.0,
            clean_run_tokens=clean_run_tokens,
            clean_run_writes=clean_run_writes,
        )


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
    """The kill matrix under simulated power loss (``fsyncbench crash --power-loss``): one
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
