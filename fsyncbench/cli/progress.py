"""The progress bar of the measuring commands (run, audit, crash, powerloss): tqdm on
stderr, only when stderr is a terminal."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, NoReturn, TextIO

if TYPE_CHECKING:  # for annotations only: imported where it is used
    from tqdm import tqdm

__all__ = ["Progress"]


class Progress:
    """tqdm progress on stderr whenever stderr is a terminal (never otherwise; --quiet: never):
    one unit per workload (``unit``: what the bar counts; crash's parts), fractional within
    it, so tqdm's ETA covers the whole run. A terminal that does not say how large it is (a
    serial console, a pty nobody sized) gets :data:`FALLBACK_SIZE`; tqdm itself prints
    nothing when told 0 columns or rows. No tqdm monitor thread: crash forks its children,
    and a fork while another thread runs may deadlock the child (and is deprecated from
    Python 3.12 on); every update here redraws the bar anyway."""

    FALLBACK_SIZE = (80, 24)

    def __init__(self, quiet: bool, unit: str = "workloads") -> None:
        self._bar: tqdm[NoReturn] | None = None
        self._quiet = quiet or not _isatty(sys.stderr)
        self._unit = unit

    def __call__(
        self,
        label: str,
        index: float,
        total: int,
        done: int,
        target: int,
        elapsed_ns: int,
        budget_ns: int,
    ) -> None:
        if self._quiet:
            return
        if self._bar is None:
            from tqdm import tqdm

            columns, rows = _terminal_size(sys.stderr, self.FALLBACK_SIZE)
            tqdm.monitor_interval = 0  # no monitor thread (see the class docstring)
            self._bar = tqdm(
                total=total,
                unit="config",
                file=sys.stderr,
                disable=False,
                ncols=columns,
                nrows=rows,
                bar_format="{l_bar}{bar}| {n:.1f}/{total} "
                + self._unit
                + " [{elapsed}<{remaining}]{postfix}",
            )
        # budget_ns 0: a run-budgeted run, where index already is the time spent, in workloads
        frac = min(1.0, max(done / target, elapsed_ns / budget_ns)) if budget_ns else 0.0
        # never past the total; a run-budgeted run stops on time, not at its sample cap, so
        # its count is not a fraction of that cap
        self._bar.n = min(float(total), index + frac)
        # a workload with no count of its own (powerloss: target 1): its label alone
        count = (
            ""
            if target <= 1 and not budget_ns
            else f" {done}/{target}"
            if budget_ns and done <= target
            else f" {done:,} samples"
        )
        self._bar.set_postfix_str(f"{label}{count}", refresh=True)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


def _isatty(stream: TextIO) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


def _terminal_size(stream: TextIO, fallback: tuple[int, int]) -> tuple[int, int]:
    """(columns, rows) of the terminal ``stream`` writes to; each from $COLUMNS / $LINES,
    then ``fallback``, where the terminal reports 0 or cannot be asked."""
    try:
        size = tuple(os.get_terminal_size(stream.fileno()))
    except (AttributeError, ValueError, OSError):
        size = (0, 0)
    out = []
    for got, env, default in zip(size, ("COLUMNS", "LINES"), fallback):
        if got <= 0:
            try:
                got = int(os.environ.get(env, ""))
            except ValueError:
                got = 0
        out.append(got if got > 0 else default)
    return out[0], out[1]
