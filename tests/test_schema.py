"""The published report schema (docs/report.schema.json): generated from the dataclasses,
valid draft 2020-12, and met by every report fixture, the example reports and what the code
writes; strict where the loader is strict."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from fsyncbench import api
from fsyncbench.model import SCHEMA_VERSION
from fsyncbench.report import store
from fsyncbench.report.schema import report_schema
from tests.schemacheck import SCHEMA_FILE, cut_samples, validator

ROOT = Path(__file__).resolve().parents[1]
REPORTS = sorted(
    [
        *(ROOT / "tests" / "fixtures" / "reports").glob("*.json"),
        *(ROOT / "examples" / "report").glob("*.json"),
    ]
)


def _load(path):
    return cut_samples(json.loads(path.read_text()))


def test_the_published_schema_is_what_the_dataclasses_generate():
    assert json.loads(SCHEMA_FILE.read_text()) == report_schema(), (
        "docs/report.schema.json is stale: run python scripts/gen_schema.py"
    )
    jsonschema.Draft202012Validator.check_schema(report_schema())


@pytest.mark.slow
@pytest.mark.parametrize("path", REPORTS, ids=[p.name for p in REPORTS])
def test_every_fixture_and_example_report_validates(path):
    data = _load(path)
    errors = list(validator().iter_errors(data))
    assert not errors, f"{path.name}: {errors[0].message} at {list(errors[0].path)}"
    store.report_from_json(path.read_text())  # and the loader agrees


def test_the_schema_refuses_what_the_loader_refuses():
    good = _load(REPORTS[0])
    v = validator()
    assert v.is_valid(good)
    newer = {**good, "schema_version": SCHEMA_VERSION + 1}
    assert not v.is_valid(newer)
    unknown = {**good, "surprise": 1}
    assert not v.is_valid(unknown)
    missing = {k: x for k, x in good.items() if k != "host"}
    assert not v.is_valid(missing)
    negative = json.loads(json.dumps(good))
    negative["results"][0]["elapsed_ns"] = -1
    assert not v.is_valid(negative)
    wrong = json.loads(json.dumps(good))
    wrong["results"][0]["samples_ns"] = ["fast"]
    assert not v.is_valid(wrong)


def test_a_run_report_with_powerloss_validates(tmp_path):
    report = api.run(
        tmp_path,
        journal_modes="wal",
        synchronous="normal",
        samples=20,
        rounds=1,
        primitives=False,
        powerloss="synced-only",
    )
    data = json.loads(store.report_to_json(report))
    assert data["powerloss"]["configs"][0]["models"][0]["model"] == "synced-only"
    errors = list(validator().iter_errors(data))
    assert not errors, errors[0].message


@pytest.mark.slow
def test_the_suite_checks_every_report_it_writes():
    # conftest wraps store.report_to_json: a report off the schema fails the test writing it
    import dataclasses

    report = store.report_from_json(REPORTS[0].read_text())
    store.report_to_json(report)
    with pytest.raises(AssertionError, match="does not meet docs/report.schema.json"):
        store.report_to_json(dataclasses.replace(report, kind=5))


FIXTURES = sorted((ROOT / "tests" / "fixtures" / "reports").glob("*.json"))


@pytest.mark.parametrize("path", FIXTURES, ids=[p.name for p in FIXTURES])
def test_every_recorded_fixture_validates(path):
    """The hand-written fixtures of the slow test above (the example report, a default
    run's thousands of samples, is the slow one; the fast tier's own runs are checked as
    they are written, below)."""
    data = _load(path)
    errors = list(validator().iter_errors(data))
    assert not errors, f"{path.name}: {errors[0].message} at {list(errors[0].path)}"
    store.report_from_json(path.read_text())


def test_the_suite_checks_a_small_report_it_writes():
    import dataclasses

    import sampled

    report = sampled.report(1.0, seed=0, n=50)
    store.report_to_json(report)
    with pytest.raises(AssertionError, match="does not meet docs/report.schema.json"):
        store.report_to_json(dataclasses.replace(report, kind=5))
