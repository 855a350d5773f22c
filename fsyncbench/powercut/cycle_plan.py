"""``powercut cycle``'s plan: the user's four commands (split with :func:`shlex.split`,
their placeholders checked), the cycle count, the seeded cut moments and the timeouts, each
checked before anything runs (:func:`make_plan`; FsyncbenchError naming the option)."""

from __future__ import annotations

import random
import re
import shlex
import shutil
from collections.abc import Mapping
from dataclasses import dataclass

from fsyncbench import powercut_defaults as defaults
from fsyncbench.errors import FsyncbenchError

#: The placeholders a command may hold (``{run_id}`` not in the start command).
PLACEHOLDERS = ("port", "address", "cycle", "secret_file", "run_id")
_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
#: Bounds of the plan's numbers: at most a day per wait, 10,000 cycles.
MAX_SECONDS = 86_400.0
MAX_CYCLES = 10_000


@dataclass(frozen=True)
class Command:
    """One user command: the text as given (for messages) and its argv template."""

    option: str
    text: str
    argv: tuple[str, ...]

    def expand(self, values: Mapping[str, str]) -> list[str]:
        """The argv with each ``{name}`` of ``values`` replaced (others left as they are)."""
        return [
            _PLACEHOLDER.sub(lambda m: values.get(m.group(1), m.group(0)), word)
            for word in self.argv
        ]


@dataclass(frozen=True)
class CyclePlan:
    """What ``powercut cycle`` does (checked by :func:`make_plan`); times in seconds."""

    start: Command
    cut: Command
    restore: Command | None
    verify: Command
    cycles: int
    cut_after_s: tuple[float, float]
    seed: int
    start_timeout_s: float
    command_timeout_s: float
    verify_timeout_s: float
    retry_every_s: float

    def moments_s(self) -> list[float]:
        """The cut moment of each cycle, seconds after its first acknowledged commit: drawn
        uniformly from ``cut_after_s`` by :class:`random.Random` seeded with ``seed``, so the
        same seed gives the same moments (rounded to the millisecond)."""
        rng = random.Random(self.seed)
        lo, hi = self.cut_after_s
        return [round(rng.uniform(lo, hi), 3) for _ in range(self.cycles)]


def parse_seconds_range(text: str, option: str = "--cut-after") -> tuple[float, float]:
    """``"2..10"`` -> (2.0, 10.0); ``"5"`` -> (5.0, 5.0). Raises FsyncbenchError unless
    0 <= LO <= HI <= one day."""
    lo_text, sep, hi_text = str(text).partition("..")
    try:
        lo = float(lo_text)
        hi = float(hi_text) if sep else lo
    except ValueError:
        raise FsyncbenchError(
            f"{option} must be seconds or a range LO..HI (e.g. 2..10), got {text!r}"
        ) from None
    if not (0 <= lo <= hi <= MAX_SECONDS):
        raise FsyncbenchError(
            f"{option} must be a range LO..HI with 0 <= LO <= HI <= {MAX_SECONDS:g}, got {text!r}"
        )
    return lo, hi


def parse_command(text: str, option: str, *, run_id_known: bool = True) -> Command:
    """A command line (``option``: its CLI option, for messages) split with
    :func:`shlex.split`. Raises FsyncbenchError when it is empty or does not split, holds an
    unknown placeholder (or ``{run_id}`` where no run is known yet), or its program is not
    found (a name on PATH, or a path)."""
    try:
        argv = tuple(shlex.split(text))
    except ValueError as exc:
        raise FsyncbenchError(f"{option}: cannot split {text!r}: {exc}") from None
    if not argv:
        raise FsyncbenchError(f"{option}: the command is empty")
    for word in argv:
        for name in _PLACEHOLDER.findall(word):
            if name not in PLACEHOLDERS:
                raise FsyncbenchError(
                    f"{option}: unknown placeholder {{{name}}} (known: "
                    + ", ".join(f"{{{p}}}" for p in PLACEHOLDERS)
                    + ")"
                )
            if name == "run_id" and not run_id_known:
                raise FsyncbenchError(
                    f"{option}: {{run_id}} is not known yet when this command runs"
                )
    program = argv[0]
    if _PLACEHOLDER.search(program) is None and shutil.which(program) is None:
        raise FsyncbenchError(f"{option}: command not found: {program}")
    return Command(option, text, argv)


def make_plan(
    start: str,
    cut: str,
    verify: str,
    *,
    restore: str | None = None,
    cycles: int = defaults.CYCLES,
    cut_after: str = defaults.CUT_AFTER,
    seed: int | None = None,
    start_timeout_s: float = defaults.START_TIMEOUT_S,
    command_timeout_s: float = defaults.COMMAND_TIMEOUT_S,
    verify_timeout_s: float = defaults.VERIFY_TIMEOUT_S,
    retry_every_s: float = defaults.RETRY_EVERY_S,
) -> CyclePlan:
    """The checked plan (FsyncbenchError naming the option otherwise). ``seed`` None: a
    random seed, shown in the summary so the moments can be drawn again."""
    if isinstance(cycles, bool) or not isinstance(cycles, int) or not 1 <= cycles <= MAX_CYCLES:
        raise FsyncbenchError(f"--cycles must be from 1 to {MAX_CYCLES}, got {cycles!r}")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
        raise FsyncbenchError(f"--seed must be an integer, got {seed!r}")
    for value, option in (
        (start_timeout_s, "--start-timeout-seconds"),
        (command_timeout_s, "--command-timeout-seconds"),
        (verify_timeout_s, "--verify-timeout-seconds"),
        (retry_every_s, "--retry-every-seconds"),
    ):
        if (
            isinstance(value, bool)
            or not isinstance(value, (int, float))
            or not 0 < value <= MAX_SECONDS
        ):
            raise FsyncbenchError(
                f"{option} must be more than 0 and at most {MAX_SECONDS:g}, got {value!r}"
            )
    return CyclePlan(
        start=parse_command(start, "--start", run_id_known=False),
        cut=parse_command(cut, "--cut"),
        restore=None if restore is None else parse_command(restore, "--restore"),
        verify=parse_command(verify, "--verify"),
        cycles=cycles,
        cut_after_s=parse_seconds_range(cut_after),
        seed=random.SystemRandom().randrange(1 << 31) if seed is None else seed,
        start_timeout_s=float(start_timeout_s),
        command_timeout_s=float(command_timeout_s),
        verify_timeout_s=float(verify_timeout_s),
        retry_every_s=float(retry_every_s),
    )
