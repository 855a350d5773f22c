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

Under simulated power loss (:func:`run_power_loss_matrix`, ``fsyncbench crash --powerloss
MODEL``) every SIGKILL is also a power cut of the agent's machine
(:mod:`fsyncbench.crash.power`): the agent's journal and checkpoint databases keep only what
the persistence model (:data:`fsyncbench.powerloss.models.MODELS`) says survives, while the
outside world, a remote service, keeps every write it acknowledged. There the numbers do
depend on ``synchronous``: under ``synced-only`` wal/full loses nothing acknowledged and
gives the SIGKILL table, wal/normal and wal/off lose every journal commit of the killed run
(the WAL is not synced at commit), and delete/full loses the last commit (the rollback
journal's unlink is not synced before synchronous=EXTRA).

Nothing here prints. Every file lives in a fresh subdirectory of the given directory, removed
afterwards (:func:`fsyncbench.measure.workloads.scratch_dir`).
"""

from __future__ import annotations

from fsyncbench.crash.journal import Journal, Point, StateConnection, StepRunner, input_hash
from fsyncbench.crash.matrix import (
    kill_matrix_rows,
    reordered_steps_after_crash,
    replay_completed_run,
    run_crash_experiment,
    run_kill_matrix,
    run_power_loss_matrix,
)
from fsyncbench.crash.power import (
    DARWIN_POWER_LOSS_PRAGMAS,
    DEFAULT_POWER_LOSS_PRAGMAS,
    PowerLoss,
    default_power_loss_pragmas,
)
from fsyncbench.crash.results import (
    CHILD_TIMEOUT_S,
    CONTEXT_TOKENS_PER_TURN,
    MAX_RESTARTS,
    MODEL_TOKENS,
    POLICIES,
    POLICY_LABELS,
    PROMPT_TOKENS,
    STEP_NAMES,
    TOOLS,
    TURNS,
    WINDOWS,
    CrashError,
    CrashExperiment,
    CrashProgress,
    CrashUnsupported,
    KillMatrix,
    KillOutcome,
    NonDeterminismError,
    PolicyRow,
    PowerLossExperiment,
    ReorderResult,
    ReplayResult,
    model_call_tokens,
)
from fsyncbench.crash.world import World

# The package's modules, in pipeline order: results (constants, errors, result dataclasses)
# < world (the outside world) < journal (step runners) < agent < power (the recorded state
# database and the cut) < child (forked runs, the pipe protocol, SIGKILL) < matrix (the
# public entry points). view renders a CrashExperiment or a PowerLossExperiment; cmd_crash
# imports it, this package does not.
from fsyncbench.measure.workloads import JOURNAL_MODES, SYNCHRONOUS

__all__ = [
    "JOURNAL_MODES",
    "SYNCHRONOUS",
    "POLICIES",
    "POLICY_LABELS",
    "WINDOWS",
    "TURNS",
    "STEP_NAMES",
    "PROMPT_TOKENS",
    "CONTEXT_TOKENS_PER_TURN",
    "model_call_tokens",
    "MODEL_TOKENS",
    "TOOLS",
    "CHILD_TIMEOUT_S",
    "MAX_RESTARTS",
    "CrashError",
    "CrashProgress",
    "CrashUnsupported",
    "NonDeterminismError",
    "KillOutcome",
    "PolicyRow",
    "KillMatrix",
    "ReplayResult",
    "ReorderResult",
    "World",
    "Point",
    "input_hash",
    "StepRunner",
    "Journal",
    "StateConnection",
    "PowerLoss",
    "DEFAULT_POWER_LOSS_PRAGMAS",
    "DARWIN_POWER_LOSS_PRAGMAS",
    "default_power_loss_pragmas",
    "PowerLossExperiment",
    "run_power_loss_matrix",
    "run_kill_matrix",
    "kill_matrix_rows",
    "replay_completed_run",
    "reordered_steps_after_crash",
    "CrashExperiment",
    "run_crash_experiment",
]
