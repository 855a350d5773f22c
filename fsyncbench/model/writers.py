"""Concurrent writers (``run --writers``, :mod:`fsyncbench.measure.writers` and
:mod:`fsyncbench.measure.concurrency`): each :class:`WritersPoint` with one
:class:`WriterLane` per writer and their :class:`WritersSummary`."""

from __future__ import annotations

from dataclasses import dataclass

from fsyncbench.model.results import Interval, Pragmas, RoundActivity


@dataclass(frozen=True)
class WriterLane:
    """One writer process of a concurrent-writers measurement (``run --writers``): its own
    connection to the shared database, committing step rows until the window closed.

    Per commit, in time order: ``start_samples_ns`` when it began (ns after the window
    opened), ``samples_ns`` its latency from ``BEGIN`` to the end of ``COMMIT`` (every wait
    for the write lock, the busy handler's sleeps and retries after SQLITE_BUSY included) and
    ``lock_wait_samples_ns`` the part spent before the write lock was held. ``busy_errors``
    counts the SQLITE_BUSY errors that reached the writer (each retried; the busy handler's
    own waits raise none); ``abandoned`` the commits still without the lock when the window
    had closed and the busy timeout had run out (at most one: it began
    ``abandoned_start_ns`` after the window opened and waited ``abandoned_wait_ns``);
    ``error`` is "" or why the writer stopped early.
    """

    writer: int
    start_samples_ns: tuple[int, ...]
    samples_ns: tuple[int, ...]
    lock_wait_samples_ns: tuple[int, ...]
    busy_errors: int = 0
    abandoned: int = 0
    abandoned_start_ns: int = 0
    abandoned_wait_ns: int = 0
    error: str = ""


@dataclass(frozen=True)
class WritersSummary:
    """Statistics of one :class:`WritersPoint`, derived from its lanes' raw samples
    (:func:`fsyncbench.measure.concurrency.summarize`).

    Over all commits: ``p50_interval``/``p99_interval`` (95 % intervals, a jackknife over
    time slices of the window), ``p999_ns``, ``max_ns``; ``commits_per_s``/``steps_per_s``
    the commits (steps) finished inside the window per second of it. ``lock_wait_share``:
    the share of all commit time spent waiting for the write lock (0-1). Per writer, in
    writer order: ``writer_commits_per_s`` and ``writer_longest_ns`` (the longest commit,
    an abandoned wait included). ``fairness`` is Jain's index of the writers' commit rates
    (1 = equal shares, 1/N = one writer got everything; Jain, Chiu & Hawe 1984, DEC-TR-301).
    Over time rather than over commits: ``oldest_wait_p99_ns``/``oldest_wait_max_ns`` are
    the p99 and maximum, over 1 ms instants of the window, of how long the oldest commit in
    progress at that instant had been running: a writer starved for seconds makes few
    commits, so it hides in a percentile over commits and not in this one. ``starved`` lists
    the writers that got less than :data:`fsyncbench.measure.concurrency.STARVED_SHARE` of
    an equal share of the commits or waited longer than
    :data:`fsyncbench.measure.concurrency.STARVED_WAIT_SHARE` of the window in one commit.
    """

    commits: int
    steps: int
    window_ns: int
    commits_per_s: float
    steps_per_s: float
    p50_interval: Interval
    p99_interval: Interval
    p999_ns: float
    max_ns: float
    lock_wait_share: float
    busy_errors: int
    abandoned: int
    writer_commits_per_s: tuple[float, ...]
    writer_longest_ns: tuple[float, ...]
    fairness: float
    oldest_wait_p99_ns: float
    oldest_wait_max_ns: float
    starved: tuple[int, ...] = ()


@dataclass(frozen=True)
class WritersPoint:
    """One pragma combination at one number of concurrent writers (``run --writers``):
    ``writers`` processes, each with its own connection to one fresh database, committing
    ``steps_per_commit`` step rows of ``payload_bytes`` per transaction for
    ``window_ns``. ``begin`` is the transaction's start ("immediate": ``BEGIN IMMEDIATE``
    takes the write lock at once; "deferred": at the first INSERT) and ``busy_timeout_ms``
    SQLite's busy timeout (its handler sleeps 1, 2, 5, 10, 15, 20, 25, 25, 25, 50, 50, 100
    ms, then 100 ms, between tries: sqliteDefaultBusyCallback in SQLite's main.c).
    ``primitive`` is the sync call behind each commit (as :attr:`Result.primitive`);
    ``requested``/``effective`` the pragmas asked for and read back; ``activity`` what the
    rest of the machine did meanwhile (its CPU share, steal, writes and busiest processes;
    device flushes are not told apart from the writers' own, so it is not judged; None:
    not read).
    """

    requested: Pragmas
    effective: Pragmas
    writers: int
    begin: str
    busy_timeout_ms: int
    steps_per_commit: int
    payload_bytes: int
    window_ns: int
    primitive: str
    lanes: tuple[WriterLane, ...]
    summary: WritersSummary
    activity: RoundActivity | None = None

    @property
    def name(self) -> str:
        """The configuration's label and the writer count, e.g. ``wal/full x4``, with the
        steps per commit when more than one (``wal/full x4, 10 steps``)."""
        steps = f", {self.steps_per_commit} steps" if self.steps_per_commit > 1 else ""
        return f"{self.requested.label} x{self.writers}{steps}"
