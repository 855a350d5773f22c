import json
import os

import pytest
from factories import commit, flush, host

from fsyncbench import audit, runner, store
from fsyncbench.errors import FsyncbenchError
from fsyncbench.model import BlockDevice


def _report():
    h = host(disks=(BlockDevice("sda", rotational=False, write_cache="write back"),))
    results = [flush("fdatasync", 1_500_000), commit("WAL", "NORMAL", 30_000)]
    return runner.build_report("run", h, results, ["fsyncbench", "run", "/data"])


def test_json_round_trip_is_lossless():
    r = _report()
    again = store.report_from_json(store.report_to_json(r))
    assert again == r
    assert audit.judge(again.host, again.results) == r.verdict


def test_write_durably_replaces_and_leaves_no_temp(tmp_path):
    target = tmp_path / "r.json"
    target.write_text("old")
    store.write_durably(target, "new")
    assert target.read_text() == "new"
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"]


def test_write_durably_into_missing_dir_is_clear_error(tmp_path):
    with pytest.raises(FsyncbenchError, match="cannot write"):
        store.write_durably(tmp_path / "nope" / "r.json", "x")


def test_newer_schema_refused(tmp_path):
    data = json.loads(store.report_to_json(_report()))
    data["schema_version"] = store.SCHEMA_VERSION + 1
    path = tmp_path / "r.json"
    path.write_text(json.dumps(data))
    with pytest.raises(FsyncbenchError, match="upgrade fsyncbench"):
        store.load_report(path)


@pytest.mark.parametrize("text,msg", [
    ("{not json", "not valid JSON"),
    ("[1, 2]", "not an fsyncbench report"),
    ('{"schema_version": 1, "kind": "run"}', "missing field"),
])
def test_corrupt_reports_refused(tmp_path, text, msg):
    path = tmp_path / "r.json"
    path.write_text(text)
    with pytest.raises(FsyncbenchError, match=msg):
        store.load_report(path)


def test_missing_report(tmp_path):
    with pytest.raises(FsyncbenchError, match="does not exist"):
        store.load_report(tmp_path / "none.json")


def test_output_dir_under_a_file_is_refused(tmp_path):
    f = tmp_path / "file"
    f.write_text("")
    with pytest.raises(FsyncbenchError):
        store.prepare_output_dir(f / "sub")
    with pytest.raises(FsyncbenchError, match="not a directory"):
        store.prepare_output_dir(f)
