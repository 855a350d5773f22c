"""The scripted incident-response agent (5 turns of model then tool) under each policy."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from fsyncbench.crash.journal import Journal, Point, StateConnection, StepRunner
from fsyncbench.crash.results import (
    _JOURNAL_POLICIES,
    _SCRIPT,
    STEP_NAMES,
    TOOLS,
    model_call_tokens,
)
from fsyncbench.crash.world import World

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
    state: StateConnection | None
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
