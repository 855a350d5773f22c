"""Reports built from recorded facts (factories.host) plus seeded synthetic raw samples, for
the report, compare, gate and redaction tests: no measurement, verdicts from engine.judge."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from factories import even_slices, host

from fsyncbench import api
from fsyncbench.measure import stats
from fsyncbench.model import FlushDelta, Pragmas, Report, Result
from fsyncbench.report import store


def samples(median_ns: float, n: int = 400, seed: int = 0, sigma: float = 0.35) -> tuple[int, ...]:
    """``n`` lognormal operation times around ``median_ns`` (seeded)."""
    rng = np.random.default_rng(seed)
    return tuple(int(v) for v in median_ns * rng.lognormal(0.0, sigma, size=n))


def result(
    kind: str,
    name: str,
    primitive: str,
    median_ns: float,
    n: int = 400,
    seed: int = 0,
    payload_bytes: int | None = None,
    **kw,
) -> Result:
    data = samples(median_ns, n, seed)
    kw.setdefault("slice_counts", even_slices(n))
    rounds = kw.pop("rounds", 0)
    if rounds and "slice_rounds" not in kw:
        slices = len(kw["slice_counts"])
        kw["slice_rounds"] = tuple(i * rounds // slices for i in range(slices))
    return Result(
        kind=kind,
        name=name,
        primitive=primitive,
        samples_ns=data,
        summary=stats.summarize(data, kw["slice_counts"], kw.get("slice_rounds", ())),
        warmup=0,
        target_samples=n,
        budget_s=10.0,
        target_reached=True,
        elapsed_ns=sum(data),
        payload_bytes=payload_bytes
        if payload_bytes is not None
        else (512 if kind == "commit" else 4096),
        **kw,
    )


def commit(mode: str, sync: str, median_ns: float, seed: int = 0, n: int = 400, **kw) -> Result:
    """A commit result (``rounds``: its 10 slices in that many rounds; 0: one round)."""
    p = Pragmas(mode, sync)
    return result(
        "commit",
        p.label,
        "none" if sync == "OFF" else "fdatasync",
        median_ns,
        n,
        seed,
        requested=p,
        effective=p,
        **kw,
    )


def flush(
    primitive: str,
    median_ns: float,
    seed: int = 0,
    n: int = 400,
    flushes: int | None = None,
    rounds: int = 0,
) -> Result:
    deltas = () if flushes is None else (FlushDelta("vda", flushes, flushes // 4),)
    return result(
        "flush",
        f"write+{primitive}",
        primitive,
        median_ns,
        n,
        seed,
        device_flushes=deltas,
        syncs_issued=n,
        rounds=rounds,
    )


def report(
    scale: float = 1.0,
    seed: int = 0,
    the_host=None,
    n: int = 2000,
    payload_bytes: int = 512,
    command_line=("fsyncbench", "run", "/data"),
    rounds: int = 0,
) -> Report:
    """A run on an ext4 SSD: write baseline, fdatasync, and three WAL commits; every time
    multiplied by ``scale``. ``rounds``: each result's 10 slices taken in that many rounds
    (what a test between runs needs); 0: one round."""
    from fsyncbench.model import BlockDevice

    h = the_host or host(
        disks=(
            BlockDevice(
                "sda",
                model="Samsung SSD 870",
                rotational=False,
                write_cache="write back",
                serial="S6PNNS0T123456",
                has_flush_counters=True,
            ),
        )
    )
    r = rounds
    results = (
        result(
            "write", "write (no sync)", "none", 2_000 * scale, n, seed, syncs_issued=0, rounds=r
        ),
        flush("fdatasync", 900_000 * scale, seed + 1, n, flushes=n, rounds=r),
        commit("WAL", "OFF", 40_000 * scale, seed + 2, n, payload_bytes=payload_bytes, rounds=r),
        commit("WAL", "NORMAL", 45_000 * scale, seed + 3, n, payload_bytes=payload_bytes, rounds=r),
        commit(
            "WAL", "FULL", 1_000_000 * scale, seed + 4, n, payload_bytes=payload_bytes, rounds=r
        ),
    )
    return api.build_report("run", h, results, command_line)


def save(rep: Report, path: Path) -> Path:
    store.write_durably(path, store.report_to_json(rep))
    return path


def save_raw(data: dict, path: Path) -> Path:
    path.write_text(json.dumps(data))
    return path
