"""The kill matrix's constants (policies, kill windows, the agent's steps and token cost
model), its errors, and its frozen result dataclasses: defined in :mod:`fsyncbench.model`
(a crash report keeps them) and re-exported here, with :func:`policy_row` deriving a row."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from fsyncbench.errors import FsyncbenchError

# the result dataclasses, re-exported (a crash report keeps them, so the model defines them)
from fsyncbench.model import CrashExperiment as CrashExperiment
from fsyncbench.model import KillMatrix as KillMatrix
from fsyncbench.model import KillOutcome as KillOutcome
from fsyncbench.model import PolicyRow as PolicyRow
from fsyncbench.model import PowerLossExperiment as PowerLossExperiment
from fsyncbench.model import ReorderResult as ReorderResult
from fsyncbench.model import ReplayResult as ReplayResult

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

#: progress(label, index, total, done, target): the experiment is made of ``total`` parts
#: (one per policy and pragma combination, then replay and reorder); part ``index``
#: (0-based), named by ``label`` ("wal/full step journal"), has made ``done`` of its
#: ``target`` kills (or steps). Called in the parent only, never in a forked child.
CrashProgress = Callable[[str, int, int, int, int], None]

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


def policy_row(
    policy: str, kills: Sequence[KillOutcome], clean_run_tokens: int, clean_run_writes: int
) -> PolicyRow:
    """The :class:`PolicyRow` of ``policy``, its figures derived from ``kills`` (at least
    one)."""
    extra = [k.extra_tokens for k in kills]
    worst = max(extra)
    return PolicyRow(
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
