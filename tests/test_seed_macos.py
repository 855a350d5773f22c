"""The project's seed case, judged from its saved report alone: an Apple M3 laptop where a
durable SQLite commit with PRAGMA fullfsync=ON took 3.02 ms at p50 and 4.78 ms at p99, and
0.04 ms without fullfsync (tests/fixtures/seed/README.md: how the report was made and what
is assumed). Loaded with fsyncbench's loader, re-judged as ``fsyncbench audit --from`` does,
rendered as ``fsyncbench show`` does."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from fsyncbench import api
from fsyncbench.judge import rule_facts
from fsyncbench.model import HONEST_FLUSH, INFERRED, VOLATILE_CACHE
from fsyncbench.report import store
from tests.schemacheck import cut_samples, validator

SEED = Path(__file__).parent / "fixtures" / "seed"
REPORT = SEED / "macos-m3-fullfsync.json"
FULL = "wal/full/fullfsync"
PLAIN = "wal/full/no-fullfsync"


def _script():
    spec = importlib.util.spec_from_file_location("make_macos_m3", SEED / "make_macos_m3.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def loaded():
    return api.load(REPORT)


@pytest.fixture(scope="module")
def judged():
    return api.audit(from_report=REPORT)


def _by_name(report):
    return {r.name: r for r in report.results}


def _verdicts(report):
    return {v.subject: v for v in report.verdict.results}


def _findings(report, subject=None):
    return [f for f in report.verdict.findings if subject is None or f.subject == subject]


def test_the_fixture_is_what_its_script_makes(loaded):
    made = _script().build()
    assert [r.name for r in made.results] == [r.name for r in loaded.results] == [PLAIN, FULL]
    for a, b in zip(made.results, loaded.results):
        assert a.samples_ns == b.samples_ns  # the same seed gives the same samples
        assert (a.summary.p50_ns, a.summary.p99_ns) == (b.summary.p50_ns, b.summary.p99_ns)


def test_the_fixture_meets_the_published_schema():
    data = cut_samples(json.loads(REPORT.read_text()))
    errors = list(validator().iter_errors(data))
    assert not errors, f"{errors[0].message} at {list(errors[0].path)}"
    store.report_from_json(REPORT.read_text())


def test_it_is_a_mac_run_of_the_two_fullfsync_settings(loaded):
    h = loaded.host
    assert (h.os_name, h.cpu_brand, h.virtualization.virtualized) == ("Darwin", "Apple M3", False)
    assert h.target.darwin is not None and h.target.darwin["BusProtocol"] == "Apple Fabric"
    assert h.target.mount is not None and h.target.mount.mount_point == "/System/Volumes/Data"
    assert h.target.firmlink == "/Users"
    by = _by_name(loaded)
    assert (by[FULL].primitive, by[FULL].requested.fullfsync) == ("F_FULLFSYNC", True)
    assert (by[PLAIN].primitive, by[PLAIN].requested.fullfsync) == ("fsync", False)
    assert loaded.kind == "run" and "--no-primitives" in loaded.command_line


def test_fullfsync_configuration_is_durable_at_the_seeds_latency(judged):
    by = _by_name(judged)
    s = by[FULL].summary
    assert (s.p50_ns, s.p99_ns) == (3_020_000, 4_780_000)
    assert s.count == len(by[FULL].samples_ns) == 4_800
    assert _verdicts(judged)[FULL].config_durable is True
    # durable, not slow, within etcd's 10 ms p99 gate: nothing to say about it
    assert [f.code for f in _findings(judged, FULL)] in ([], ["flush-latency-plausible"])


def test_plain_fsync_configuration_is_not_durable_on_macos(judged):
    by = _by_name(judged)
    assert by[PLAIN].summary.p50_ns == 40_000
    v = _verdicts(judged)[PLAIN]
    assert v.config_durable is False
    (finding,) = [f for f in _findings(judged, PLAIN) if f.code == "config-not-durable"]
    assert finding.message == (
        f"{PLAIN}: on macOS without fullfsync SQLite's fsync stops at the drive's cache."
    )
    assert finding.source == rule_facts.APPLE_FSYNC_DOC
    assert finding.advice.endswith("with fullfsync=ON.")


def test_plain_fsync_path_stops_at_the_drive_cache(judged):
    v = _verdicts(judged)[PLAIN]
    assert (v.path_verdict, v.decided_by, v.strength) == (
        VOLATILE_CACHE,
        "macos-fsync-stops-at-cache",
        INFERRED,
    )


def test_the_primitives_promising_different_things_are_not_a_disagreement(judged):
    assert "primitives-disagree" not in [f.code for f in _findings(judged)]
    assert not {"slow-median", "p99-above-10ms"} & {f.code for f in _findings(judged)}


def test_fullfsync_path_is_honest_and_decides_the_report(judged):
    v = _verdicts(judged)[FULL]
    assert (v.path_verdict, v.decided_by, v.strength) == (
        HONEST_FLUSH,
        "flush-latency-plausible",
        INFERRED,
    )
    (plausible,) = [f for f in _findings(judged, FULL) if f.code == "flush-latency-plausible"]
    assert plausible.evidence["device_class"] == "Apple internal SSD (F_FULLFSYNC)"
    assert plausible.evidence["floor_ns"] == 1_000_000
    # the report's path verdict is F_FULLFSYNC's, the primitive a Mac's durable journal uses
    assert (judged.verdict.path_verdict, judged.verdict.decided_by) == (
        HONEST_FLUSH,
        "flush-latency-plausible",
    )
    # and the latency of a plain fsync, which is not asked to flush, is no signal against it
    assert [f for f in _findings(judged) if f.stance == "disagrees"] == []
    assert judged.notes == api.load(REPORT).notes  # no "re-derived ... differs" note


def test_the_bottom_line_chooses_the_fullfsync_configuration(judged):
    text = api.render(judged, "text")
    assert "Choose: wal/full/fullfsync: p50 3.02 ms, p99 4.78 ms" in " ".join(text.split())
    assert "nothing measured here is durable" not in text


@pytest.mark.parametrize(("fmt", "verbose"), [("text", False), ("text", True), ("markdown", False)])
def test_rendering_shows_the_seed_figures(judged, fmt, verbose):
    text = api.render(judged, fmt, verbose=verbose)
    assert "3.02 ms" in text and "4.78 ms" in text
    assert "40 us" in text or "40 µs" in text
