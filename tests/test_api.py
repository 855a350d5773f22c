"""The Python API in-process, as a workflow engine's own test suite would use it: a real
measurement of a temporary directory, the report's shape, and bad input raising
FsyncbenchError with the very line the CLI prints (checked against ``cli.main``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import sampled
import this_platform

import fsyncbench
from fsyncbench import cli, options
from fsyncbench.errors import FsyncbenchError, Interrupted
from fsyncbench.model import Report
from fsyncbench.report import store

SAMPLES = 20
#: The configurations the run below measures, as this platform names them (macOS: each with
#: fullfsync off and on), and the durable one a gate is set on.
NAMES = this_platform.labels("wal", "off,full")
WAL_FULL = this_platform.label("wal/full")


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    """One small real run: WAL at synchronous OFF and FULL, no raw primitives, one round."""
    target = tmp_path_factory.mktemp("api-target")
    calls, notes = [], []
    report = fsyncbench.run(
        target,
        journal_modes="wal",
        synchronous=["off", "full"],
        samples=SAMPLES,
        rounds=1,
        primitives=False,
        progress=lambda *args: calls.append(args),
        notes=notes.append,
        command_line=["my-engine-tests"],
    )
    return target, report, calls, notes


@pytest.mark.slow
def test_run_returns_a_judged_report_of_what_it_measured(measured):
    target, report, calls, _notes = measured
    assert isinstance(report, Report)
    assert report.kind == "run"
    assert report.command_line == ("my-engine-tests",)
    assert report.host.target.path == str(target.resolve())
    assert [r.name for r in report.results] == NAMES
    for r in report.results:
        assert r.kind == "commit"
        assert len(r.samples_ns) == r.summary.count == SAMPLES
        assert 0 < r.summary.p50_ns <= r.summary.p99_ns
    durable = {v.subject: v.config_durable for v in report.verdict.results}
    # what SQLite promises of each here (Linux: wal/off no, wal/full yes; macOS: only with
    # fullfsync)
    assert durable == {
        p.label: this_platform.promised_durable(p) for p in this_platform.configs("wal", "off,full")
    }
    assert {f.name for f in report.floors}  # the tool's own floor, measured alongside
    # progress went to the callback: (label, index, total, done, target, elapsed, budget)
    assert {c[0] for c in calls} == set(NAMES) and all(len(c) == 7 for c in calls)
    # its working directory is gone; nothing else was written
    assert list(target.iterdir()) == []


def test_the_small_run_is_a_judged_report_of_what_it_measured(measured):
    """The fast tier's reading of the same run (the fixture runs in both tiers): what it
    measured, judged, with the floors and the progress calls, and nothing left behind."""
    target, report, calls, _notes = measured
    assert report.kind == "run" and report.command_line == ("my-engine-tests",)
    assert report.host.target.path == str(target.resolve())
    assert [r.name for r in report.results] == NAMES
    assert all(len(r.samples_ns) == r.summary.count == SAMPLES for r in report.results)
    assert {v.subject: v.config_durable for v in report.verdict.results} == {
        p.label: this_platform.promised_durable(p) for p in this_platform.configs("wal", "off,full")
    }
    assert {f.name for f in report.floors}
    assert {c[0] for c in calls} == set(NAMES) and all(len(c) == 7 for c in calls)
    assert list(target.iterdir()) == []


def test_run_prints_nothing(tmp_path, capsys):
    fsyncbench.run(
        tmp_path, journal_modes="wal", synchronous="full", samples=5, rounds=1, primitives=False
    )
    assert capsys.readouterr() == ("", "")


def test_render_save_load_and_gate(measured, tmp_path):
    _target, report, _calls, _notes = measured
    paths = fsyncbench.save(report, tmp_path / "reports", csv=tmp_path / "samples.csv")
    assert [p.suffix for p in paths] == [".json", ".md", ".csv"]
    assert paths[0].read_text() == fsyncbench.render(report, "json")
    assert paths[1].read_text() == fsyncbench.render(report, "markdown")
    assert fsyncbench.load(paths[0]) == store.report_from_json(paths[0].read_text())
    assert fsyncbench.render(report).startswith("fsyncbench run: ")
    passed = fsyncbench.gate(report, max_p99="3600s", configs=WAL_FULL)
    assert (passed.active, passed.failed, passed.checked) == (True, False, 1)
    # 1 ns; judged even if this machine was busy while the fixture measured (a disturbed
    # run is "cannot tell" for --max-p99 otherwise: tests/test_disturbance.py)
    failed = fsyncbench.gate(report, fsyncbench.Gates.parse(max_p99=1, accept_disturbed=True))
    assert failed.failed and {f.subject for f in failed.failures} == set(NAMES)
    assert not fsyncbench.gate(report).active  # no gate set: nothing checked


def test_compare_two_reports_with_a_regression_check():
    before = sampled.report(1.0, seed=0, n=1200, rounds=5)
    after = sampled.report(3.0, seed=1, n=1200, rounds=5)
    result = fsyncbench.compare([before, after], fail_on_regression=20)
    assert result.pair is not None and result.limit_pct == 20
    assert result.regressions and all(r.limit_pct == 20 for r in result.regressions)
    assert result.lines[-1].startswith("REGRESSION ")
    assert '"regression_check"' in fsyncbench.render(result, "json")
    assert fsyncbench.compare([before, before], fail_on_regression=20).regressions == ()


def _cli_error(argv: list[str], capsys) -> str:
    """The one line ``fsyncbench ARGV`` prints on stderr, without its prefix (exit 2)."""
    assert cli.main(argv) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith("fsyncbench: error: "), err
    return err[0].removeprefix("fsyncbench: error: ")


# (the API call, the same request on the command line)
BAD = [
    (lambda d: fsyncbench.run(d, samples=0), ["run", "{d}", "--samples", "0"]),
    (lambda d: fsyncbench.run(d, samples=2), ["run", "{d}", "--samples", "2"]),
    (lambda d: fsyncbench.run(d, rounds=51), ["run", "{d}", "--rounds", "51"]),
    (lambda d: fsyncbench.run(d, ci_target_pct=100), ["run", "{d}", "--ci-target-pct", "100"]),
    (
        lambda d: fsyncbench.run(d, samples=10, min_samples=5),
        ["run", "{d}", "--samples", "10", "--min-samples", "5"],
    ),
    (lambda d: fsyncbench.run(d, journal_modes="wal2"), ["run", "{d}", "--journal-mode", "wal2"]),
    (
        lambda d: fsyncbench.run(d, synchronous=["full", ""]),
        ["run", "{d}", "--synchronous", "full,"],
    ),
    (lambda d: fsyncbench.run(d, payload_bytes=0), ["run", "{d}", "--payload-bytes", "0"]),
    (lambda d: fsyncbench.run(d / "missing"), ["run", "{d}/missing"]),
    (
        lambda d: fsyncbench.run(d, gates=fsyncbench.Gates.parse(configs="wal/fast")),
        ["run", "{d}", "--config", "wal/fast"],
    ),
    (
        lambda d: fsyncbench.host_record(d, outputs=fsyncbench.Outputs(output=d)),
        ["host", "{d}", "-o", "{d}"],
    ),
    (lambda d: fsyncbench.gate(None, max_p99="10"), ["run", "{d}", "--max-p99", "10"]),
    (
        lambda d: fsyncbench.gate(None, fail_on="sometimes"),
        ["run", "{d}", "--fail-on", "sometimes"],
    ),
    (lambda d: fsyncbench.audit(d, samples=0), ["audit", "{d}", "--samples", "0"]),
    (lambda d: fsyncbench.audit(d, compare_syncs=1), ["audit", "{d}", "--compare-syncs", "1"]),
    (
        lambda d: fsyncbench.kill_matrix(d, journal_mode="wal,delete"),
        ["crash", "{d}", "--journal-mode", "wal,delete"],
    ),
    (lambda d: fsyncbench.load(d / "none.json"), ["show", "{d}/none.json"]),
    (lambda d: fsyncbench.compare([d / "a.json"]), ["compare", "{d}/a.json"]),
    (
        lambda d: fsyncbench.powercut_write(d, to="nohost"),
        ["powercut", "write", "{d}", "--to", "nohost"],
    ),
]


@pytest.mark.parametrize("call,argv", BAD, ids=[" ".join(a) for _c, a in BAD])
def test_bad_input_raises_the_line_the_cli_prints(tmp_path, capsys, call, argv):
    with pytest.raises(FsyncbenchError) as raised:
        call(tmp_path)
    assert list(tmp_path.iterdir()) == []  # refused before any work
    # a path as the platform writes it ({d}/missing with a backslash on Windows)
    given = [a.format(d=tmp_path).replace("/", os.sep) if "{d}" in a else a for a in argv]
    assert str(raised.value) == _cli_error(given, capsys)


# (the API call given a wrong type, the parameter its message names): refused before any
# work, as FsyncbenchError (never a TypeError or AttributeError from deep inside)
BAD_TYPES = [
    # paths
    (lambda d: fsyncbench.run(None), "target"),
    (lambda d: fsyncbench.run(True), "target"),
    (lambda d: fsyncbench.run(["."]), "target"),
    (lambda d: fsyncbench.run(123), "target"),
    (lambda d: fsyncbench.host_record(None), "target"),
    (lambda d: fsyncbench.kill_matrix(None), "target"),
    (lambda d: fsyncbench.audit(True), "target"),
    (lambda d: fsyncbench.audit(from_report=123), "from_report"),
    (lambda d: fsyncbench.load(None), "path"),
    (lambda d: fsyncbench.compare([None, None]), "reports[0]"),
    (lambda d: fsyncbench.compare(None), "reports"),
    (
        lambda d: fsyncbench.powercut_verify(d, listener="127.0.0.1:9", report_dir=None),
        "report_dir",
    ),
    (lambda d: fsyncbench.save(sampled.report(1.0, n=50), d / "r", csv=5), "csv"),
    (lambda d: fsyncbench.Outputs(output=5), "output"),
    # lists
    (lambda d: fsyncbench.run(d, journal_modes=5), "journal_modes"),
    (lambda d: fsyncbench.run(d, synchronous=["full", None]), "synchronous"),
    (lambda d: fsyncbench.run(d, fullfsync=3), "fullfsync"),
    (lambda d: fsyncbench.run(d, assume=5), "assume"),
    (lambda d: fsyncbench.run(d, command_line="fsyncbench run"), "command_line"),
    (lambda d: fsyncbench.Gates.parse(fail_on=5), "fail_on"),
    (lambda d: fsyncbench.Gates.parse(configs=5), "configs"),
    (lambda d: fsyncbench.compare("ab"), "reports"),
    # numbers
    (lambda d: fsyncbench.run(d, samples="100"), "samples"),
    (lambda d: fsyncbench.run(d, samples=True), "samples"),
    (lambda d: fsyncbench.run(d, samples=2.5), "samples"),
    (lambda d: fsyncbench.run(d, rounds=None), "rounds"),
    (lambda d: fsyncbench.run(d, rounds=1.5), "rounds"),
    (lambda d: fsyncbench.run(d, warmup=None), "warmup"),
    (lambda d: fsyncbench.run(d, warmup=2.5), "warmup"),
    (lambda d: fsyncbench.run(d, payload_bytes=None), "payload_bytes"),
    (lambda d: fsyncbench.run(d, budget_seconds="5"), "budget_seconds"),
    (lambda d: fsyncbench.run(d, budget_seconds=True), "budget_seconds"),
    (lambda d: fsyncbench.run(d, ci_target_pct="10"), "ci_target_pct"),
    (lambda d: fsyncbench.run(d, min_samples="5"), "min_samples"),
    (lambda d: fsyncbench.audit(d, samples=None), "samples"),
    (lambda d: fsyncbench.audit(d, sweep_max_mib=1.5), "sweep_max_mib"),
    (lambda d: fsyncbench.Gates.parse(max_p99=1.5), "max_p99"),
    (lambda d: fsyncbench.render(sampled.report(1.0, n=50), model_call_ms="5"), "model_call_ms"),
    # single pragma values
    (lambda d: fsyncbench.kill_matrix(d, journal_mode=5), "journal_mode"),
    (lambda d: fsyncbench.kill_matrix(d, power_loss=5), "power_loss"),
    (lambda d: fsyncbench.kill_matrix(d, power_loss="synced-only", semantics=5), "semantics"),
    (lambda d: fsyncbench.powercut_write(d, to="127.0.0.1:9", synchronous=1), "synchronous"),
    # objects and callbacks
    (lambda d: fsyncbench.run(d, gates="x"), "gates"),
    (lambda d: fsyncbench.run(d, outputs="x"), "outputs"),
    (lambda d: fsyncbench.gate(None, max_p99="10ms"), "report"),
    (lambda d: fsyncbench.save(None, d / "reports"), "report"),
    (lambda d: fsyncbench.run(d, progress=5), "progress"),
    (lambda d: fsyncbench.audit(d, notes="x"), "notes"),
]


@pytest.mark.parametrize(
    "call,name", BAD_TYPES, ids=[f"{i}-{n}" for i, (_c, n) in enumerate(BAD_TYPES)]
)
def test_a_wrong_type_is_refused_before_any_work(tmp_path, call, name):
    with pytest.raises(FsyncbenchError) as raised:
        call(tmp_path)
    message = str(raised.value)
    assert message.startswith(f"{name} must be ") and "\n" not in message, message
    assert list(tmp_path.iterdir()) == []  # no directory created, no file written


def test_a_plain_string_is_one_comma_list(tmp_path):
    assert options.assumed("plp") == ("plp",)
    assert options.assumed(" plp, plp") == ("plp",)
    assert "plp" in fsyncbench.host_record(tmp_path, assume="plp").target.declared
    with pytest.raises(FsyncbenchError, match=r"^argument --assume: invalid choice: 'magic' "):
        options.assumed("plp,magic")
    assert fsyncbench.Gates.parse(fail_on=["no_flush"], configs=("wal/full",)).configs == (
        "wal/full",
    )


def test_an_unknown_format_or_fact_is_refused_as_argparse_words_it(measured):
    _target, report, _calls, _notes = measured
    with pytest.raises(FsyncbenchError, match=r"^argument --format: invalid choice: 'pdf' "):
        fsyncbench.render(report, "pdf")
    with pytest.raises(FsyncbenchError, match=r"^argument --assume: invalid choice: 'magic' "):
        fsyncbench.host_record(".", assume=["magic"])


def test_interrupted_is_a_keyboard_interrupt():
    assert issubclass(Interrupted, KeyboardInterrupt)
    assert fsyncbench.Interrupted is Interrupted and fsyncbench.FsyncbenchError is FsyncbenchError


def test_import_fsyncbench_does_not_import_numpy_or_the_api():
    code = "; ".join(
        [
            "import sys, fsyncbench",
            "from fsyncbench import __version__",
            "print(sorted(m for m in ('numpy', 'mpmath', 'fsyncbench.api') if m in sys.modules))",
            "import fsyncbench.powercut.verify",  # a lower module that imports __version__
            "print('fsyncbench.api' in sys.modules)",
            "fsyncbench.run",
            "print('fsyncbench.api' in sys.modules)",
        ]
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert proc.stdout.splitlines() == ["[]", "False", "True"]


def test_the_documented_example_runs_in_this_process(tmp_path, monkeypatch, capsys):
    """docs/reports.md's example as written, run here with 20 samples instead of its 200
    (every name it uses, every field it reads, what it prints)."""
    readme = (Path(__file__).resolve().parent.parent / "docs" / "reports.md").read_text()
    example = readme.split("## Python API", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    real = fsyncbench.run
    monkeypatch.setattr(fsyncbench, "run", lambda *a, **kw: real(*a, **{**kw, "samples": 20}))
    monkeypatch.chdir(tmp_path)
    exec(compile(example, "docs/reports.md", "exec"), {"__name__": "__main__"})
    assert capsys.readouterr().out.startswith(f"{WAL_FULL}: p50 ")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_the_documented_example_runs(tmp_path):
    readme = (Path(__file__).resolve().parent.parent / "docs" / "reports.md").read_text()
    example = readme.split("## Python API", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    proc = subprocess.run(
        [sys.executable, "-c", example], capture_output=True, text=True, cwd=tmp_path, timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"{WAL_FULL}: p50 "), proc.stdout
    assert list(tmp_path.iterdir()) == []


def test_audit_from_refuses_a_report_with_nothing_to_rejudge(tmp_path):
    """audit --from re-judges run and audit reports; a crash, powerloss or powercut report
    is refused in one line (it printed the crash report as if re-judged)."""
    import dataclasses

    import sampled

    from fsyncbench import api
    from fsyncbench.errors import FsyncbenchError

    for kind in ("crash", "powerloss", "powercut"):
        path = sampled.save(
            dataclasses.replace(sampled.report(), kind=kind), tmp_path / f"{kind}.json"
        )
        with pytest.raises(
            FsyncbenchError, match=f"is a {kind} report: audit --from re-judges the timings"
        ):
            api.audit(from_report=path)
    run = sampled.save(sampled.report(), tmp_path / "run.json")
    assert api.audit(from_report=run).kind == "run"


def test_ctrl_c_inside_a_class_being_imported_is_the_interrupted_line(monkeypatch, capsys):
    """CPython wraps a KeyboardInterrupt raised in __set_name__ (a class body of an imported
    module, e.g. platform.uname_result) in a RuntimeError; the entry point still says one
    line and exits 2 (CI once saw the traceback instead)."""
    import builtins

    from fsyncbench import entry

    real_import = builtins.__import__

    def interrupted(name, *args, **kwargs):
        if name == "fsyncbench.cli":
            try:
                raise KeyboardInterrupt
            except KeyboardInterrupt as exc:
                raise RuntimeError("Error calling __set_name__") from exc
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", interrupted)
    assert entry.main() == 2
    assert capsys.readouterr().err == "fsyncbench: interrupted; nothing was written\n"
