"""Comparing reports (numpy only): two runs side by side with significance, or a fleet.

Two reports A and B are compared configuration by configuration on their raw samples:

- p50 and p99 of each, with their percentile-bootstrap CIs, and the ratio B/A with a
  bootstrap CI of that ratio (A and B resampled independently). The difference is called
  *significant* when the ratio's CI excludes 1.
- A Mann-Whitney rank test over the whole distributions (normal approximation with tie
  correction and continuity correction; Mann & Whitney 1947, Lehmann "Nonparametrics",
  1975, ch. 1), and the common-language effect size P(B > A) (McGraw & Wong 1992).

Everything is seeded, so the same two reports always give the same answer.

The bootstrap of a percentile does not materialise resamples. The k-th order statistic of
n draws with replacement from the sorted sample x is x[ceil(n * U_(k)) - 1], where U_(k) is
the k-th order statistic of n uniforms, which is Beta(k, n + 1 - k); the next one is
U_(k) + (1 - U_(k)) * Beta(1, n - k). numpy's "linear" percentile interpolates between
those two, so the bootstrap distribution is drawn exactly in O(resamples) whatever n is
(the same distribution as resampling, without its O(n * resamples) cost).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from fsyncbench.errors import FsyncbenchError
from fsyncbench.model import Report, Result

#: Bootstrap draws for the CIs of a ratio of percentiles (Efron & Tibshirani 1993, ch. 13).
RESAMPLES = 4000
CONFIDENCE = 0.95
#: The configuration a fleet table is sorted by when none is named: the durable WAL setup
#: an agent journal would use.
DEFAULT_FLEET_CONFIG = "wal/full"


@dataclass(frozen=True)
class QuantileComparison:
    """One percentile of A and B with their CIs, and the ratio B/A with its CI.

    ``significant`` is None when either side has no raw samples (hand-written report)."""

    percentile: float
    a_ns: float
    a_ci_ns: tuple[float, float]
    b_ns: float
    b_ci_ns: tuple[float, float]
    ratio: float | None
    ratio_ci: tuple[float, float] | None
    significant: bool | None

    @property
    def change_pct(self) -> float | None:
        """(B/A - 1) in percent: positive = B slower."""
        return None if self.ratio is None else (self.ratio - 1.0) * 100.0


@dataclass(frozen=True)
class RankTest:
    """Mann-Whitney U test of A against B: two-sided ``p_value`` and P(B > A)."""

    u_b: float
    z: float
    p_value: float
    prob_b_slower: float


@dataclass(frozen=True)
class ConfigComparison:
    """One configuration (result name) present in both reports."""

    name: str
    kind: str
    primitive_a: str
    primitive_b: str
    n_a: int
    n_b: int
    p50: QuantileComparison
    p99: QuantileComparison
    rank: RankTest | None
    verdict_a: str | None
    verdict_b: str | None


@dataclass(frozen=True)
class PairComparison:
    """A against B: per-configuration comparisons in A's order, and names found in only one."""

    configs: tuple[ConfigComparison, ...]
    only_a: tuple[str, ...]
    only_b: tuple[str, ...]
    confidence: float
    resamples: int
    seed: int


@dataclass(frozen=True)
class Regression:
    """A configuration whose p99 got worse by more than the allowed percentage, significantly."""

    name: str
    baseline: str
    candidate: str
    p99: QuantileComparison
    limit_pct: float


@dataclass(frozen=True)
class FleetRow:
    """One report in a fleet table."""

    label: str
    report: Report
    result: Result
    path_verdict: str
    config_verdict: str | None
    config_durable: bool | None


# --------------------------------------------------------------------------- checks


def check_comparable(reports: Sequence[Report], labels: Sequence[str]) -> None:
    """Refuse reports that cannot be compared, with one line: different schema versions,
    different report kinds, or the same configuration measured with a different workload
    (kind or payload size). Raises FsyncbenchError."""
    if len(reports) < 2:
        raise FsyncbenchError("compare needs at least two reports")
    first, first_label = reports[0], labels[0]
    for rep, label in zip(reports[1:], labels[1:]):
        if rep.schema_version != first.schema_version:
            raise FsyncbenchError(
                f"{first_label} is report schema {first.schema_version} but {label} is schema "
                f"{rep.schema_version}: compare reports of one schema version (re-run the older one)"
            )
        if rep.kind != first.kind:
            raise FsyncbenchError(
                f"{first_label} is a {first.kind!r} report but {label} is a {rep.kind!r} report: "
                f"they measured different things"
            )
        theirs = {r.name: r for r in rep.results}
        common = [r for r in first.results if r.name in theirs]
        if not common:
            raise FsyncbenchError(f"{first_label} and {label} have no configuration in common")
        for r in common:
            o = theirs[r.name]
            if r.kind != o.kind:
                raise FsyncbenchError(
                    f"{r.name} is a {r.kind} workload in {first_label} but a {o.kind} workload "
                    f"in {label}: different workloads cannot be compared"
                )
            if r.payload_bytes != o.payload_bytes:
                raise FsyncbenchError(
                    f"{r.name} wrote {r.payload_bytes}-byte payloads in {first_label} but "
                    f"{o.payload_bytes}-byte payloads in {label}: re-run with the same "
                    f"--payload-bytes to compare"
                )


# --------------------------------------------------------------------------- statistics


def bootstrap_percentile(
    data: Sequence[float], percentile: float, resamples: int, rng: np.random.Generator
) -> np.ndarray:
    """``resamples`` draws from the bootstrap distribution of the ``percentile`` (numpy
    "linear" method) of ``data``; exact in distribution, O(resamples) (module docstring)."""
    x = np.sort(np.asarray(data, dtype=np.float64))
    n = x.size
    if n == 0:
        raise ValueError("no samples")
    if n == 1:
        return np.full(resamples, x[0])
    h = (n - 1) * percentile / 100.0
    k = int(math.floor(h))
    frac = h - k
    u1 = rng.beta(k + 1, n - k, size=resamples)
    lo = np.clip(np.ceil(n * u1).astype(np.int64) - 1, 0, n - 1)
    if frac == 0.0 or k + 1 >= n:
        return x[lo]
    u2 = u1 + (1.0 - u1) * rng.beta(1, n - k - 1, size=resamples)
    hi = np.clip(np.ceil(n * u2).astype(np.int64) - 1, 0, n - 1)
    return x[lo] + frac * (x[hi] - x[lo])


def _interval(draws: np.ndarray, confidence: float) -> tuple[float, float]:
    alpha = (1.0 - confidence) / 2.0
    lo, hi = np.quantile(draws, [alpha, 1.0 - alpha])
    return float(lo), float(hi)


def compare_quantile(
    a: Result, b: Result, percentile: float, confidence: float, resamples: int,
    rng: np.random.Generator,
) -> QuantileComparison:
    """``percentile`` of A and B with CIs and the bootstrap CI of the ratio B/A. Without raw
    samples on either side, the summaries' values are used and significance is None."""
    if not a.samples_ns or not b.samples_ns:
        pa, pb = _summary_value(a, percentile), _summary_value(b, percentile)
        return QuantileComparison(
            percentile, pa, _summary_ci(a, percentile), pb, _summary_ci(b, percentile),
            pb / pa if pa else None, None, None,
        )
    da = np.asarray(a.samples_ns, dtype=np.float64)
    db = np.asarray(b.samples_ns, dtype=np.float64)
    pa = float(np.percentile(da, percentile))
    pb = float(np.percentile(db, percentile))
    ba = bootstrap_percentile(da, percentile, resamples, rng)
    bb = bootstrap_percentile(db, percentile, resamples, rng)
    if pa <= 0 or np.any(ba <= 0):
        return QuantileComparison(percentile, pa, _interval(ba, confidence), pb,
                                  _interval(bb, confidence), None, None, None)
    ratio_ci = _interval(bb / ba, confidence)
    significant = ratio_ci[0] > 1.0 or ratio_ci[1] < 1.0
    return QuantileComparison(
        percentile, pa, _interval(ba, confidence), pb, _interval(bb, confidence),
        pb / pa, ratio_ci, bool(significant),
    )


def _summary_value(r: Result, percentile: float) -> float:
    return r.summary.p50_ns if percentile == 50 else r.summary.p99_ns


def _summary_ci(r: Result, percentile: float) -> tuple[float, float]:
    return r.summary.p50_ci_ns if percentile == 50 else r.summary.p99_ci_ns


def rank_test(a: Sequence[float], b: Sequence[float]) -> RankTest | None:
    """Two-sided Mann-Whitney U test (normal approximation, tie and continuity corrected).
    None when a side is empty or every value is tied."""
    xa = np.asarray(a, dtype=np.float64)
    xb = np.asarray(b, dtype=np.float64)
    n1, n2 = xa.size, xb.size
    if n1 == 0 or n2 == 0:
        return None
    both = np.concatenate([xa, xb])
    _, inverse, counts = np.unique(both, return_inverse=True, return_counts=True)
    upper = np.cumsum(counts)
    mid_rank = upper - (counts - 1) / 2.0  # average rank of each distinct value (1-based)
    ranks = mid_rank[inverse]
    u_b = float(ranks[n1:].sum() - n2 * (n2 + 1) / 2.0)  # pairs with b > a (ties count 1/2)
    n = n1 + n2
    tie = float(np.sum(counts.astype(np.float64) ** 3 - counts)) / (n * (n - 1)) if n > 1 else 0.0
    var = n1 * n2 / 12.0 * ((n + 1) - tie)
    if var <= 0:
        return None
    mean = n1 * n2 / 2.0
    diff = u_b - mean
    z = (diff - math.copysign(0.5, diff)) / math.sqrt(var) if diff else 0.0
    p = math.erfc(abs(z) / math.sqrt(2.0))
    return RankTest(u_b, z, min(1.0, p), u_b / (n1 * n2))


def compare_pair(
    a: Report, b: Report, confidence: float = CONFIDENCE, resamples: int = RESAMPLES,
    seed: int = 0,
) -> PairComparison:
    """Compare every configuration present in both reports (call
    :func:`check_comparable` first)."""
    rng = np.random.default_rng(seed)
    theirs = {r.name: r for r in b.results}
    va = {v.subject: v.path_verdict for v in a.verdict.results}
    vb = {v.subject: v.path_verdict for v in b.verdict.results}
    rows = []
    for ra in a.results:
        rb = theirs.get(ra.name)
        if rb is None:
            continue
        rows.append(ConfigComparison(
            name=ra.name, kind=ra.kind, primitive_a=ra.primitive, primitive_b=rb.primitive,
            n_a=ra.summary.count, n_b=rb.summary.count,
            p50=compare_quantile(ra, rb, 50, confidence, resamples, rng),
            p99=compare_quantile(ra, rb, 99, confidence, resamples, rng),
            rank=rank_test(ra.samples_ns, rb.samples_ns),
            verdict_a=va.get(ra.name), verdict_b=vb.get(ra.name),
        ))
    mine = {r.name for r in a.results}
    return PairComparison(
        configs=tuple(rows),
        only_a=tuple(r.name for r in a.results if r.name not in theirs),
        only_b=tuple(r.name for r in b.results if r.name not in mine),
        confidence=confidence, resamples=resamples, seed=seed,
    )


def regressions(
    pair: PairComparison, limit_pct: float, baseline: str, candidate: str,
    names: Sequence[str] | None = None,
) -> list[Regression]:
    """Configurations whose p99 is more than ``limit_pct`` % worse in B than in A *and*
    significantly so (the ratio's CI lies above 1). ``names`` limits the check; by default
    every compared configuration that syncs: the no-sync write baseline and commits at
    synchronous=OFF (primitive "none") measure Python and the page cache, not the storage
    a durability gate is about, so they are checked only when named."""
    wanted = {n.lower() for n in names} if names else None
    out = []
    for c in pair.configs:
        if wanted is not None and c.name.lower() not in wanted:
            continue
        if wanted is None and (c.kind == "write" or "none" in (c.primitive_a, c.primitive_b)):
            continue
        q = c.p99
        if q.significant and q.ratio is not None and q.change_pct > limit_pct and q.ratio_ci[0] > 1.0:
            out.append(Regression(c.name, baseline, candidate, q, limit_pct))
    return out


# --------------------------------------------------------------------------- fleet


def common_names(reports: Sequence[Report]) -> list[str]:
    """Result names present in every report, in the first report's order."""
    sets = [{r.name for r in rep.results} for rep in reports]
    return [r.name for r in reports[0].results if all(r.name in s for s in sets)]


def fleet_config(reports: Sequence[Report], requested: str | None) -> str:
    """The configuration to sort a fleet by: ``requested`` (must be in every report), else
    wal/full when every report has it, else the first syncing commit they share.
    Raises FsyncbenchError."""
    common = common_names(reports)
    if requested:
        match = next((n for n in common if n.lower() == requested.lower()), None)
        if match is None:
            raise FsyncbenchError(
                f"configuration {requested!r} is not in every report (in all of them: "
                f"{', '.join(common) or 'none'})"
            )
        return match
    if DEFAULT_FLEET_CONFIG in common:
        return DEFAULT_FLEET_CONFIG
    first = {r.name: r for r in reports[0].results}
    for kind in ("commit", "flush"):
        for name in common:
            if first[name].kind == kind and first[name].primitive != "none":
                return name
    if common:
        return common[0]
    raise FsyncbenchError("the reports have no configuration in common")


def fleet(reports: Sequence[Report], labels: Sequence[str], config: str) -> list[FleetRow]:
    """One row per report, fastest p99 of ``config`` first."""
    rows = []
    for rep, label in zip(reports, labels):
        result = next(r for r in rep.results if r.name == config)
        v = next((v for v in rep.verdict.results if v.subject == config), None)
        rows.append(FleetRow(label, rep, result, rep.verdict.path_verdict,
                             v.path_verdict if v else None, v.config_durable if v else None))
    rows.sort(key=lambda row: row.result.summary.p99_ns)
    return rows
