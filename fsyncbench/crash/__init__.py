"""The kill matrix: what a step journal and idempotency keys buy an agent that crashes.

A scripted incident-response agent runs in a real child process (``os.fork``) and is killed
with SIGKILL at each of 30 points (10 steps x 3 kill windows) under each of four persistence
policies; after every kill the agent is restarted from the top until it completes. What
happened is then counted, not assumed: duplicate writes in the outside-world database and
extra model tokens billed by the scripted model.

The agent (10 steps, in this order)::

    seq  1 model1  4,400 tokens      seq  2 tool1  query_alerts  (read)
    seq  3 model2  5,900 tokens      seq  4 tool2  open_ticket   (write)
    seq  5 model3  7,400 tokens      seq  6 tool3  page_oncall   (write)
    seq  7 model4  8,900 tokens      seq  8 tool4  post_status   (write)
    seq  9 model5 10,400 tokens      seq 10 tool5  check_status  (read)

A clean run bills 37,000 tokens and makes 3 writes. Model calls are deterministic; their
"effect" is a row in the outside world's ``billing`` table (the provider's meter), so a model
call that runs again after a restart is billed again, as a real API would bill it.

Kill windows of every step: ``before`` (nothing of the step happened), ``effect`` (the model
was billed or the tool touched the outside world; nothing recorded), ``recorded`` (the
policy's record of the step, if it keeps one, is committed).

Policies (:data:`POLICIES`):

- ``no_persistence``: nothing is saved; a restart runs every step again.
- ``checkpoint_per_turn``: the conversation is saved after each model+tool turn, i.e. after
  the tool step's ``recorded`` point; a restart resumes at the first unsaved turn.
- ``step_journal``: every step's output is committed to the journal (the ``steps`` table)
  before its ``recorded`` point; a restart replays recorded steps and runs the rest.
- ``journal_idempotency``: the step journal, and every write carries the idempotency key
  ``run_id:seq``, on which the outside world deduplicates (as Stripe's API does:
  https://docs.stripe.com/api/idempotent_requests).

Extra tokens are tokens billed for the run beyond a clean run of the same policy; duplicate
writes are outside-world rows beyond a clean run's. Both follow from the semantics above:
a model step killed at ``before`` was never billed; one killed at ``effect`` is billed again
when it runs again; the journal re-runs only the step killed between its effect and its
record, which is why idempotency keys are needed to make that window safe (Temporal makes
the same point about activities: https://docs.temporal.io/activity-definition#idempotency).

Processes: each run is a forked child; the parent never holds an SQLite connection across a
fork (https://www.sqlite.org/howtocorrupt.html section 2.6) and each child opens its own.
The child reports reaching its kill point over a pipe and waits there; the parent sends
SIGKILL, which cannot be caught or ignored (signal(7)), and checks with ``waitpid`` that the
child died of it. SIGKILL loses nothing the child handed to the kernel (the page cache
survives a process death), so the numbers do not depend on ``synchronous``; the journal's
commit latency does. Requires ``os.fork`` and SIGKILL: Linux, macOS, the BSDs; elsewhere
(Windows) :class:`CrashUnsupported` is raised. On macOS fork is fine here because the child
runs only Python and SQLite and nothing in fsyncbench starts threads; Apple's system
frameworks are not fork-safe once threaded (CPython made ``spawn`` the macOS default for
multiprocessing for that reason:
https://docs.python.org/3/library/multiprocessing.html#contexts-and-start-methods).

Nothing here prints. Every file lives in a fresh subdirectory of the given directory, removed
afterwards (:func:`fsyncbench.measure.workloads.scratch_dir`).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import select
import signal
import sqlite3
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

from fsyncbench.errors import FsyncbenchError
from fsyncbench.model import Pragmas
from fsyncbench.measure.scratch import STOP_SIGNALS
from fsyncbench.measure.workloads import JOURNAL_MODES, SCHEMA, SYNCHRONOUS, read_pragmas, scratch_dir

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


# --------------------------------------------------------------------------------------------
# Outside world


class World:
    """The outside world (ticketing, paging, status page and the model provider's meter) as
    one SQLite database.

    ``write`` with a key deduplicates on it (the first row with that key wins and its id is
    returned again); without a key every call is a new row. The world's own durability is
    not under test (a SIGKILL of the agent keeps the page cache), so it runs WAL with
    ``synchronous=OFF``.
    """

    SCHEMA = (
        "CREATE TABLE IF NOT EXISTS billing(id INTEGER PRIMARY KEY, run_id TEXT NOT NULL, "
        "seq INTEGER NOT NULL, model TEXT NOT NULL, tokens INTEGER NOT NULL)",
        "CREATE TABLE IF NOT EXISTS effects(id INTEGER PRIMARY KEY, run_id TEXT NOT NULL, "
        "seq INTEGER NOT NULL, kind TEXT NOT NULL, payload TEXT NOT NULL, "
        "idempotency_key TEXT UNIQUE)",
        "CREATE TABLE IF NOT EXISTS alerts(service TEXT, signal TEXT, since TEXT)",
    )

    def __init__(self, path: Path) -> None:
        self.conn = sqlite3.connect(path, isolation_level=None, timeout=30)
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute("PRAGMA synchronous=OFF")

    @classmethod
    def create(cls, path: Path) -> None:
        """Make the world's tables and seed the alert the agent investigates."""
        world = cls(path)
        try:
            for statement in cls.SCHEMA:
                world.conn.execute(statement)
            world.conn.execute(
                "INSERT INTO alerts VALUES ('checkout', 'p99 latency 2.3 s', '2024-05-01T09:12Z')"
            )
        finally:
            world.close()

    def close(self) -> None:
        self.conn.close()

    def bill(self, run_id: str, seq: int, model: str, tokens: int) -> None:
        """Meter one model call (never deduplicated: tokens spent are spent)."""
        self.conn.execute(
            "INSERT INTO billing(run_id, seq, model, tokens) VALUES (?, ?, ?, ?)",
            (run_id, seq, model, tokens),
        )

    def write(self, run_id: str, seq: int, kind: str, payload: str, key: str | None) -> int:
        """One write (ticket, page, status); returns its id, the existing one for a known key."""
        if key is None:
            cur = self.conn.execute(
                "INSERT INTO effects(run_id, seq, kind, payload) VALUES (?, ?, ?, ?)",
                (run_id, seq, kind, payload),
            )
            return int(cur.lastrowid)
        self.conn.execute(
            "INSERT OR IGNORE INTO effects(run_id, seq, kind, payload, idempotency_key) "
            "VALUES (?, ?, ?, ?, ?)",
            (run_id, seq, kind, payload, key),
        )
        return int(
            self.conn.execute("SELECT id FROM effects WHERE idempotency_key=?", (key,)).fetchone()[0]
        )

    def alerts(self, service: str) -> list[dict[str, str]]:
        rows = self.conn.execute(
            "SELECT service, signal, since FROM alerts WHERE service=? ORDER BY rowid", (service,)
        )
        return [{"service": a, "signal": b, "since": c} for a, b, c in rows]

    def latest_status(self, run_id: str) -> str | None:
        row = self.conn.execute(
            "SELECT payload FROM effects WHERE run_id=? AND kind='status' ORDER BY id DESC LIMIT 1",
            (run_id,),
        ).fetchone()
        return row[0] if row else None

    def writes_by_run(self) -> dict[str, int]:
        return dict(self.conn.execute("SELECT run_id, COUNT(*) FROM effects GROUP BY run_id"))

    def tokens_by_run(self) -> dict[str, int]:
        return dict(self.conn.execute("SELECT run_id, SUM(tokens) FROM billing GROUP BY run_id"))

    def calls_by_run(self) -> dict[str, int]:
        return dict(self.conn.execute("SELECT run_id, COUNT(*) FROM billing GROUP BY run_id"))


# --------------------------------------------------------------------------------------------
# Step runners: the journal, and the plain runner the other policies use

Point = Callable[[int, str], None]


def _no_point(seq: int, window: str) -> None:
    return None


def input_hash(args: Sequence[Any]) -> str:
    """sha256 hex of a step's arguments as canonical JSON (sorted keys, no spaces)."""
    text = json.dumps(list(args), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


class StepRunner:
    """Runs steps in order without recording them (no persistence, checkpoint per turn).

    ``step(name, fn, *args)`` numbers the step (``start_seq`` + 1, ...), calls ``point(seq,
    window)`` at each kill window and returns ``fn(*args)``. ``executed``/``replayed`` count
    steps run and steps answered from a record.
    """

    def __init__(self, run_id: str, *, start_seq: int = 0, point: Point = _no_point) -> None:
        self.run_id = run_id
        self.seq = start_seq
        self.point = point
        self.executed = 0
        self.replayed = 0
        self._active_seq: int | None = None

    def idempotency_key(self) -> str | None:
        """The key the running step sends with a write; None: this policy sends none."""
        return None

    @property
    def active_seq(self) -> int:
        """Sequence number of the step being executed."""
        if self._active_seq is None:
            raise RuntimeError("no step is executing")
        return self._active_seq

    def step(self, name: str, fn: Callable[..., Any], *args: Any) -> Any:
        self.seq += 1
        return self._execute(self.seq, name, "", fn, args)

    def _execute(self, seq: int, name: str, digest: str, fn: Callable[..., Any], args: Any) -> Any:
        self.point(seq, "before")
        self._active_seq = seq
        try:
            output = fn(*args)
        finally:
            self._active_seq = None
        self.point(seq, "effect")
        self._record(seq, name, digest, output)
        self.executed += 1
        self.point(seq, "recorded")
        return output

    def _record(self, seq: int, name: str, digest: str, output: Any) -> None:
        return None


class Journal(StepRunner):
    """The step journal: ``steps(run_id, seq, name, input_hash, output)`` on ``conn``.

    ``step(name, fn, *args)`` returns the recorded output (JSON) when step ``seq`` of
    ``run_id`` is recorded, and raises :class:`NonDeterminismError` when the recorded name or
    input hash differs from ``name``/``input_hash(args)``. Otherwise it runs ``fn(*args)``
    and commits one row (BEGIN, INSERT, COMMIT; each commit's ``perf_counter_ns`` duration is
    appended to ``commit_ns``). With ``idempotency_keys`` the running step's
    :meth:`idempotency_key` is ``"run_id:seq"``. The table must exist
    (:data:`fsyncbench.measure.workloads.SCHEMA`).
    """

    def __init__(
        self,
        conn: sqlite3.Connection,
        run_id: str,
        *,
        idempotency_keys: bool = False,
        point: Point = _no_point,
        commit_ns: list[int] | None = None,
    ) -> None:
        super().__init__(run_id, point=point)
        self.conn = conn
        self.idempotency_keys = idempotency_keys
        self.commit_ns = commit_ns if commit_ns is not None else []
        self._recorded = {
            seq: (name, digest, output)
            for seq, name, digest, output in conn.execute(
                "SELECT seq, name, input_hash, output FROM steps WHERE run_id=?", (run_id,)
            )
        }

    def idempotency_key(self) -> str | None:
        return f"{self.run_id}:{self.active_seq}" if self.idempotency_keys else None

    def step(self, name: str, fn: Callable[..., Any], *args: Any) -> Any:
        self.seq += 1
        seq = self.seq
        digest = input_hash(args)
        recorded = self._recorded.get(seq)
        if recorded is not None:
            rec_name, rec_digest, output = recorded
            if rec_name != name or rec_digest != digest:
                raise NonDeterminismError(seq, rec_name, name, rec_digest, digest)
            self.replayed += 1
            return json.loads(output)
        return self._execute(seq, name, digest, fn, args)

    def _record(self, seq: int, name: str, digest: str, output: Any) -> None:
        row = (self.run_id, seq, name, digest, json.dumps(output, sort_keys=True))
        conn = self.conn
        try:
            start = time.perf_counter_ns()
            conn.execute("BEGIN")
            conn.execute("INSERT INTO steps VALUES (?, ?, ?, ?, ?)", row)
            conn.execute("COMMIT")
            self.commit_ns.append(time.perf_counter_ns() - start)
        except sqlite3.Error:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        self._recorded[seq] = row[2:]


# --------------------------------------------------------------------------------------------
# The agent

_STEP_RE = re.compile(r"(model|tool)([1-9][0-9]*)\Z")

_CHECKPOINT_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS checkpoints(run_id TEXT PRIMARY KEY, next_index INTEGER, "
    "conversation TEXT)"
)


@dataclass
class _Agent:
    """The scripted incident-response agent, bound to one run in one process."""

    run_id: str
    policy: str
    world: World
    state: sqlite3.Connection | None
    point: Point
    commit_ns: list[int]
    steps: StepRunner | None = None

    def run(self, order: Sequence[str] = STEP_NAMES) -> dict[str, Any]:
        """Run (or resume) the agent to the end; returns counts and a conversation digest."""
        conversation: list[Any] = []
        start = 0
        if self.policy == "checkpoint_per_turn":
            assert self.state is not None
            row = self.state.execute(
                "SELECT next_index, conversation FROM checkpoints WHERE run_id=?", (self.run_id,)
            ).fetchone()
            if row:
                start, conversation = row[0], json.loads(row[1])
        if self.policy in _JOURNAL_POLICIES:
            assert self.state is not None
            steps: StepRunner = Journal(
                self.state,
                self.run_id,
                idempotency_keys=self.policy == "journal_idempotency",
                point=self.point,
                commit_ns=self.commit_ns,
            )
        else:
            steps = StepRunner(self.run_id, start_seq=start, point=self.point)
        self.steps = steps
        for index in range(start, len(order)):
            match = _STEP_RE.match(order[index])
            if not match:
                raise ValueError(f"unknown step name {order[index]!r}")
            kind, turn = match.group(1), int(match.group(2))
            if kind == "model":
                out = steps.step(order[index], self._model, turn, conversation)
            else:
                asked = conversation[-1].get("args", {}) if conversation else {}
                out = steps.step(order[index], self._tool, turn, asked)
            conversation.append(out)
            if self.policy == "checkpoint_per_turn" and kind == "tool":
                self._save_checkpoint(index + 1, conversation)
        digest = hashlib.sha256(json.dumps(conversation, sort_keys=True).encode()).hexdigest()
        return {
            "completed": True,
            "executed": steps.executed,
            "replayed": steps.replayed,
            "conversation_sha256": digest,
        }

    # Step functions: their arguments are the step's hashed input; the running step's seq
    # and idempotency key come from self.steps.
    def _model(self, turn: int, conversation: list[Any]) -> dict[str, Any]:
        tokens = model_call_tokens(turn)
        self.world.bill(self.run_id, self._running().active_seq, f"model{turn}", tokens)
        tool = TOOLS[turn][0]
        return {"turn": turn, "tool": tool, "args": _SCRIPT[turn], "tokens": tokens}

    def _tool(self, turn: int, args: dict[str, Any]) -> dict[str, Any]:
        name, writes, kind = TOOLS[turn]
        if name == "query_alerts":
            return {"alerts": self.world.alerts(str(args.get("service", "checkout")))}
        if name == "check_status":
            return {"status": self.world.latest_status(self.run_id)}
        assert writes and kind is not None
        payload = json.dumps(args, sort_keys=True)
        steps = self._running()
        ident = self.world.write(
            self.run_id, steps.active_seq, kind, payload, steps.idempotency_key()
        )
        return {f"{kind}_id": ident}

    def _running(self) -> StepRunner:
        if self.steps is None:
            raise RuntimeError("the agent is not running")
        return self.steps

    def _save_checkpoint(self, next_index: int, conversation: list[Any]) -> None:
        assert self.state is not None
        self.state.execute("BEGIN")
        self.state.execute(
            "INSERT OR REPLACE INTO checkpoints VALUES (?, ?, ?)",
            (self.run_id, next_index, json.dumps(conversation, sort_keys=True)),
        )
        self.state.execute("COMMIT")


# --------------------------------------------------------------------------------------------
# Child processes


@dataclass(frozen=True)
class _Lane:
    """Files of one policy's runs: the agent's state (journal/checkpoints) and the world."""

    directory: Path
    journal_mode: str
    synchronous: str

    @property
    def state_path(self) -> Path:
        return self.directory / "agent.db"

    @property
    def world_path(self) -> Path:
        return self.directory / "world.db"

    def connect_state(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.state_path, isolation_level=None, timeout=30)
        conn.execute(f"PRAGMA journal_mode={self.journal_mode}")
        conn.execute(f"PRAGMA synchronous={self.synchronous}")
        return conn

    def create(self) -> Pragmas:
        """Make both databases (in the parent, before any fork); returns effective pragmas."""
        self.directory.mkdir()
        conn = self.connect_state()
        try:
            conn.execute(SCHEMA)
            conn.execute(_CHECKPOINT_SCHEMA)
            effective = read_pragmas(conn, with_fullfsync=False)
        finally:
            conn.close()
        World.create(self.world_path)
        return effective


@dataclass(frozen=True)
class _RunSpec:
    lane: _Lane
    run_id: str
    policy: str
    kill_at: tuple[int, str] | None = None
    order: tuple[str, ...] = STEP_NAMES


@dataclass(frozen=True)
class _ChildReport:
    event: str  # "point" (killed there), "done", "error"
    message: dict[str, Any]
    kill_signal: int


def _send(fd: int, message: dict[str, Any]) -> None:
    data = (json.dumps(message) + "\n").encode()
    while data:
        data = data[os.write(fd, data):]


def _child_main(fd: int, spec: _RunSpec, parent: int) -> NoReturn:
    """Body of a forked child: run the agent, report over ``fd``, never return.

    At its kill point the child reports and waits for SIGKILL; should the parent die
    first, the child notices (its parent pid changes) and exits instead of lingering.
    """
    code = _EXIT_ERROR
    commit_ns: list[int] = []
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C and cleans up

        def point(seq: int, window: str) -> None:
            if spec.kill_at == (seq, window):
                _send(fd, {"event": "point", "seq": seq, "window": window, "commit_ns": commit_ns})
                while os.getppid() == parent:  # wait here for the parent's SIGKILL
                    time.sleep(0.05)
                os._exit(_EXIT_ERROR)

        message: dict[str, Any]
        world = World(spec.lane.world_path)
        state = spec.lane.connect_state() if spec.policy != "no_persistence" else None
        try:
            agent = _Agent(spec.run_id, spec.policy, world, state, point, commit_ns)
            message = {"event": "done", "result": agent.run(spec.order)}
            code = _EXIT_OK
        except NonDeterminismError as exc:
            message = {
                "event": "error",
                "type": "NonDeterminismError",
                "message": str(exc),
                "step": exc.step,
                "recorded_name": exc.recorded_name,
                "requested_name": exc.requested_name,
            }
            code = _EXIT_NONDETERMINISM
        finally:
            world.close()
            if state is not None:
                state.close()
        # Report after closing, so the parent's waitpid does not wait for SQLite's close.
        _send(fd, {**message, "commit_ns": commit_ns})
    except BaseException as exc:  # report anything, then leave without running parent code
        code = _EXIT_ERROR
        try:
            _send(fd, {"event": "error", "type": type(exc).__name__, "message": str(exc)})
        except BaseException:
            pass
    finally:
        os._exit(code)


def _read_line(fd: int, deadline: float) -> dict[str, Any] | None:
    buf = b""
    while not buf.endswith(b"\n"):
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise CrashError(f"a crash-matrix child sent nothing for {CHILD_TIMEOUT_S:.0f} s")
        ready, _, _ = select.select([fd], [], [], remaining)
        if not ready:
            continue
        chunk = os.read(fd, 65536)
        if not chunk:
            return None
        buf += chunk
    return json.loads(buf)


#: Signals held back while a child is forked (see :func:`_run_child`).
_DEFERRED_SIGNALS = STOP_SIGNALS


def _run_child(spec: _RunSpec) -> _ChildReport:
    """Fork one agent run; SIGKILL it at ``spec.kill_at`` if it gets there; reap it."""
    read_fd, write_fd = os.pipe()
    parent = os.getpid()
    # Ctrl-C (sent to the whole process group) or SIGTERM arriving while fork runs its
    # after-fork hooks in the child would raise there, before the child can ignore it, and
    # Python prints "Exception ignored in: <function _after_fork>": the signals wait, blocked,
    # until the child has set its own dispositions (and the parent has finished forking).
    old_mask = signal.pthread_sigmask(signal.SIG_BLOCK, _DEFERRED_SIGNALS)
    try:
        pid = os.fork()
    except OSError as exc:
        signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)
        os.close(read_fd)
        os.close(write_fd)
        raise CrashError(f"cannot fork a crash-matrix child: {exc.strerror}") from None
    if pid == 0:  # child
        try:
            signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C
            for other in _DEFERRED_SIGNALS - {signal.SIGINT}:
                signal.signal(other, signal.SIG_DFL)
            signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)
            os.close(read_fd)
        finally:
            _child_main(write_fd, spec, parent)
    reaped = False
    try:
        # a signal held during the fork arrives here, inside the try: the child is then
        # killed and reaped below before anyone removes the directory it writes in
        signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)
        os.close(write_fd)
        write_fd = -1
        message = _read_line(read_fd, time.monotonic() + CHILD_TIMEOUT_S)
        if message is not None and message.get("event") == "point":
            os.kill(pid, signal.SIGKILL)
        _, status = os.waitpid(pid, 0)
        reaped = True
    finally:
        if not reaped:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            os.waitpid(pid, 0)
        os.close(read_fd)
        if write_fd >= 0:
            os.close(write_fd)
    killed_by = os.WTERMSIG(status) if os.WIFSIGNALED(status) else 0
    if message is None:
        how = f"signal {killed_by}" if killed_by else f"exit code {os.waitstatus_to_exitcode(status)}"
        raise CrashError(f"a crash-matrix child died unreported ({how})")
    event = message["event"]
    if event == "point" and killed_by != signal.SIGKILL:
        raise CrashError(f"a crash-matrix child was to die of SIGKILL but ended with {status}")
    if event == "error" and message.get("type") != "NonDeterminismError":
        raise CrashError(f"a crash-matrix child failed: {message['type']}: {message['message']}")
    return _ChildReport(event, message, killed_by)


def _require_fork() -> None:
    if not hasattr(os, "fork") or not hasattr(signal, "SIGKILL"):
        raise CrashUnsupported(
            f"fsyncbench crash needs os.fork and SIGKILL (Linux, macOS, BSD); {sys.platform} has "
            "no fork"
        )


def _pragmas(journal_mode: str, synchronous: str) -> Pragmas:
    mode, sync = journal_mode.upper(), synchronous.upper()
    if mode not in JOURNAL_MODES:
        raise ValueError(f"journal mode {journal_mode!r} is not one of {', '.join(JOURNAL_MODES)}")
    if sync not in SYNCHRONOUS:
        raise ValueError(f"synchronous {synchronous!r} is not one of {', '.join(SYNCHRONOUS)}")
    return Pragmas(mode, sync)


def _world_counts(lane: _Lane) -> tuple[dict[str, int], dict[str, int], dict[str, int]]:
    world = World(lane.world_path)
    try:
        return world.writes_by_run(), world.tokens_by_run(), world.calls_by_run()
    finally:
        world.close()


def _create_lane(base: Path, name: str, pragmas: Pragmas) -> tuple[_Lane, Pragmas]:
    lane = _Lane(base / name, pragmas.journal_mode, pragmas.synchronous)
    try:
        return lane, lane.create()
    except (OSError, sqlite3.Error) as exc:
        raise CrashError(f"cannot create the crash-matrix databases in {base}: {exc}") from None


def _restart_until_complete(lane: _Lane, run_id: str, policy: str) -> list[_ChildReport]:
    """Restart a killed run from the top (each time in a new child) until it completes."""
    reports = []
    while len(reports) < MAX_RESTARTS:
        reports.append(_run_child(_RunSpec(lane, run_id, policy)))
        if reports[-1].event == "done":
            return reports
    raise CrashError(f"{run_id}: no completed run after {MAX_RESTARTS} restarts")


def _run_policy(lane: _Lane, policy: str, commit_ns: list[int]) -> PolicyRow:
    """One policy's clean reference run and 30 kills; appends journal commit samples."""
    clean_id = f"{policy}/clean"
    reports = [_run_child(_RunSpec(lane, clean_id, policy))]
    runs = []
    for seq in range(1, len(STEP_NAMES) + 1):
        for window in WINDOWS:
            run_id = f"{policy}/{seq}/{window}"
            killed = _run_child(_RunSpec(lane, run_id, policy, kill_at=(seq, window)))
            if killed.event != "point":
                raise CrashError(f"{run_id}: the run never reached its kill point")
            restarts = _restart_until_complete(lane, run_id, policy)
            reports += [killed, *restarts]
            runs.append((seq, window, run_id, killed.kill_signal, len(restarts)))
    for report in reports:
        commit_ns.extend(report.message.get("commit_ns", ()))
    writes, tokens, _ = _world_counts(lane)
    clean_writes, clean_tokens = writes.get(clean_id, 0), tokens.get(clean_id, 0)
    outcomes = [
        KillOutcome(
            seq=seq,
            step=STEP_NAMES[seq - 1],
            window=window,
            kill_signal=kill_signal,
            restarts=restarts,
            duplicate_writes=writes.get(run_id, 0) - clean_writes,
            extra_tokens=tokens.get(run_id, 0) - clean_tokens,
        )
        for seq, window, run_id, kill_signal, restarts in runs
    ]
    return PolicyRow.from_kills(policy, outcomes, clean_tokens, clean_writes)


# --------------------------------------------------------------------------------------------
# Public API


def run_kill_matrix(
    workdir: Path, journal_mode: str = "WAL", synchronous: str = "FULL"
) -> KillMatrix:
    """Run the 120-kill matrix (4 policies x 10 steps x 3 windows) under ``workdir``.

    For each policy: one clean reference run, then for each (step, window) a fresh run id,
    a child killed there with SIGKILL and restarts (children too) until the run completes.
    The journal (and the checkpoints) use ``journal_mode``/``synchronous`` (case-insensitive,
    :data:`fsyncbench.measure.workloads.JOURNAL_MODES`/``SYNCHRONOUS``). Runs go one at a time, so
    the journal's commit latency is measured without the matrix competing with itself
    (about 2 s for the 120 kills on a 2-core VM with ext4 on virtio; most of it is fork and
    process teardown, not commits). Returns a
    :class:`KillMatrix`. Raises ValueError for unknown pragma values, CrashUnsupported
    without fork/SIGKILL, CrashError when the directory is unusable or a child fails or hangs.
    """
    _require_fork()
    requested = _pragmas(journal_mode, synchronous)
    with scratch_dir(Path(workdir)) as base:
        rows: list[PolicyRow] = []
        commit_ns: list[int] = []
        effective: Pragmas | None = None
        start = time.perf_counter_ns()
        for policy in POLICIES:
            lane, lane_pragmas = _create_lane(base, policy, requested)
            effective = effective or lane_pragmas
            rows.append(_run_policy(lane, policy, commit_ns))
        elapsed = time.perf_counter_ns() - start
    assert effective is not None
    return KillMatrix(
        requested=requested,
        effective=effective,
        rows=tuple(rows),
        journal_commit_ns=tuple(commit_ns),
        elapsed_ns=elapsed,
        kill_count=sum(1 for row in rows for kill in row.kills if kill.kill_signal),
        model_tokens=MODEL_TOKENS,
        sqlite_version=sqlite3.sqlite_version,
    )


def kill_matrix_rows(matrix: KillMatrix) -> list[dict[str, Any]]:
    """The published table as a list of dicts, one per policy, for ``tabulate(rows,
    headers="keys")``: policy label, kills causing duplicate writes (of N), worst duplicates
    in one run, mean extra tokens ("17,967"), worst extra tokens ("37,000 (+100 %)")."""
    out = []
    for row in matrix.rows:
        out.append(
            {
                "policy": row.label,
                f"kills causing duplicate writes (of {len(row.kills)})": row.kills_causing_duplicates,
                "worst duplicates in one run": row.worst_duplicates,
                "mean extra tokens": f"{round(row.mean_extra_tokens):,}",
                "worst extra tokens": (
                    f"{row.worst_extra_tokens:,} (+{round(row.worst_extra_pct)} %)"
                ),
            }
        )
    return out


def replay_completed_run(
    workdir: Path,
    journal_mode: str = "WAL",
    synchronous: str = "FULL",
    policy: str = "journal_idempotency",
) -> ReplayResult:
    """Run the agent to completion in a child, then run it again with the same run id.

    ``policy`` must be a journal policy (``step_journal`` or ``journal_idempotency``).
    Returns a :class:`ReplayResult`; with a working journal the replay makes zero
    outside-world effects and bills zero tokens. Raises ValueError for other policies or
    pragma values, CrashUnsupported/CrashError as :func:`run_kill_matrix`.
    """
    if policy not in _JOURNAL_POLICIES:
        raise ValueError(f"replay needs a journal policy ({', '.join(_JOURNAL_POLICIES)})")
    _require_fork()
    pragmas = _pragmas(journal_mode, synchronous)
    with scratch_dir(Path(workdir)) as base:
        lane, _ = _create_lane(base, policy, pragmas)
        run_id = f"{policy}/replay"
        first = _run_child(_RunSpec(lane, run_id, policy))
        before = _world_counts(lane)
        second = _run_child(_RunSpec(lane, run_id, policy))
        after = _world_counts(lane)
        conn = lane.connect_state()
        try:
            recorded = conn.execute("SELECT COUNT(*) FROM steps WHERE run_id=?", (run_id,))
            steps_recorded = int(recorded.fetchone()[0])
        finally:
            conn.close()
    if first.event != "done" or second.event != "done":
        raise CrashError(f"replay run failed: {second.message.get('message', '')}")
    writes, tokens, calls = (d.get(run_id, 0) for d in before)
    writes2, tokens2, calls2 = (d.get(run_id, 0) for d in after)
    return ReplayResult(
        policy=policy,
        run_id=run_id,
        steps_recorded=steps_recorded,
        first_run_effects=writes + calls,
        first_run_tokens=tokens,
        replay_effects=(writes2 + calls2) - (writes + calls),
        replay_tokens=tokens2 - tokens,
        replay_steps_executed=second.message["result"]["executed"],
        replay_steps_replayed=second.message["result"]["replayed"],
        same_conversation=(
            first.message["result"]["conversation_sha256"]
            == second.message["result"]["conversation_sha256"]
        ),
    )


def reordered_steps_after_crash(
    workdir: Path,
    journal_mode: str = "WAL",
    synchronous: str = "FULL",
    swap: tuple[str, str] = ("tool2", "tool3"),
    kill_at: tuple[int, str] = (4, "recorded"),
) -> ReorderResult:
    """Kill a journaled run at ``kill_at`` (seq, window) with SIGKILL, then restart it with
    code that runs the two steps named in ``swap`` in each other's place.

    The default kills after tool2 (open the ticket) is recorded and restarts with code that
    pages on-call first: the journal holds 'tool2' at step 4 where the code asks for
    'tool3', so the restart stops with :class:`NonDeterminismError` before any effect.
    Returns a :class:`ReorderResult`. Raises ValueError for unknown step names, windows or
    pragma values; CrashUnsupported/CrashError as :func:`run_kill_matrix`.
    """
    a, b = swap
    if a not in STEP_NAMES or b not in STEP_NAMES or a == b:
        raise ValueError(f"swap needs two different steps of {', '.join(STEP_NAMES)}")
    seq, window = kill_at
    if not 1 <= seq <= len(STEP_NAMES) or window not in WINDOWS:
        raise ValueError(f"kill_at must be (1-{len(STEP_NAMES)}, one of {', '.join(WINDOWS)})")
    _require_fork()
    pragmas = _pragmas(journal_mode, synchronous)
    order = list(STEP_NAMES)
    i, j = order.index(a), order.index(b)
    order[i], order[j] = order[j], order[i]
    policy = "journal_idempotency"
    with scratch_dir(Path(workdir)) as base:
        lane, _ = _create_lane(base, policy, pragmas)
        run_id = f"{policy}/reordered"
        killed = _run_child(_RunSpec(lane, run_id, policy, kill_at=kill_at))
        before = _world_counts(lane)
        restart = _run_child(_RunSpec(lane, run_id, policy, order=tuple(order)))
        after = _world_counts(lane)
    if killed.event != "point":
        raise CrashError("the first run never reached its kill point")
    made = sum(d.get(run_id, 0) for d in (after[0], after[2])) - sum(
        d.get(run_id, 0) for d in (before[0], before[2])
    )
    msg = restart.message
    stopped = restart.event == "error"
    return ReorderResult(
        run_id=run_id,
        killed_at_seq=seq,
        killed_at_window=window,
        kill_signal=killed.kill_signal,
        code_order=tuple(order),
        stopped=stopped,
        error_step=msg.get("step") if stopped else None,
        recorded_name=msg.get("recorded_name") if stopped else None,
        requested_name=msg.get("requested_name") if stopped else None,
        message=msg.get("message", "") if stopped else "",
        restart_effects=made,
    )


@dataclass(frozen=True)
class CrashExperiment:
    """What ``fsyncbench crash`` shows: the kill matrix and the two hazards."""

    matrix: KillMatrix
    replay: ReplayResult
    reorder: ReorderResult


def run_crash_experiment(
    workdir: Path, journal_mode: str = "WAL", synchronous: str = "FULL"
) -> CrashExperiment:
    """The kill matrix, then replay of a completed run and a reordered restart, all under
    ``workdir`` with the given journal pragmas. Errors as :func:`run_kill_matrix`."""
    return CrashExperiment(
        matrix=run_kill_matrix(workdir, journal_mode, synchronous),
        replay=replay_completed_run(workdir, journal_mode, synchronous),
        reorder=reordered_steps_after_crash(workdir, journal_mode, synchronous),
    )
