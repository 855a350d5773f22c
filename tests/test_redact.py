"""--redact: no hostname, serial number or user path in any format, and still a valid report."""

import dataclasses
import json
import re
import socket

import pytest
import sampled
from clitools import fsb
from factories import host

from fsyncbench import compare, redact, store
from fsyncbench.model import BlockDevice, Mount

QUICK = ["--samples", "30", "--budget-seconds", "5", "--warmup", "2", "--quiet"]
HOSTNAME = socket.gethostname()


def has_name(text: str, name: str) -> bool:
    """Does ``name`` occur in ``text``? A short hostname (this VM's is "vm") is looked for
    as a whole word only, or it would be found inside "kvm"; a longer one anywhere."""
    if len(name) >= 4:
        return name.lower() in text.lower()
    return re.search(rf"(?<![A-Za-z0-9]){re.escape(name)}(?![A-Za-z0-9])", text) is not None


def personal_report():
    h = host(disks=(BlockDevice("nvme0n1", model="WD SN850", rotational=False,
                                write_cache="write back", serial="21354X801234",
                                has_flush_counters=True),))
    h = dataclasses.replace(
        h, hostname="alices-laptop.corp.example",
        target=dataclasses.replace(
            h.target, path="/home/alice/projects/agent",
            mount=Mount("/home/alice/mnt", "ext4", "/home/alice/disk.img", ("rw",)),
        ),
        ld_preload="/home/alice/lib/libfoo.so",
        sqlite_library="/home/alice/.venv/lib/libsqlite3.so",
    )
    cmd = ("fsyncbench", "run", "/home/alice/projects/agent", "--output", "/home/alice/reports",
           "--samples", "400", "--config", "wal/full", "--csv=/home/alice/x.csv", "--redact")
    return sampled.report(the_host=h, command_line=cmd)


def test_redact_report_removes_identity_and_keeps_the_measurements():
    rep = personal_report()
    red = redact.redact_report(rep, home="/home/alice")
    text = store.report_to_json(red)
    for secret in ("alices-laptop", "alice", "21354X801234", "/home/"):
        assert secret not in text, secret
    assert red.host.hostname == redact.REDACTED_HOST
    assert red.host.target.disks[0].serial == redact.REDACTED
    assert red.host.target.disks[0].model == "WD SN850"  # facts that explain the verdict stay
    assert red.host.target.mount.fs_type == "ext4"
    assert red.command_line == ("fsyncbench", "run", "[redacted]", "--output", "[redacted]",
                                "--samples", "400", "--config", "wal/full", "--csv=[redacted]",
                                "--redact")
    assert [r.samples_ns for r in red.results] == [r.samples_ns for r in rep.results]
    assert red.verdict == rep.verdict
    # still a valid report of the same schema, and still comparable
    again = store.report_from_json(text)
    assert again == red
    compare.check_comparable([rep, again], ["a", "b"])
    assert compare.compare_pair(rep, again).configs[0].p50.ratio == 1.0


def test_redaction_leaves_system_paths_alone():
    h = host()
    h = dataclasses.replace(h, target=dataclasses.replace(
        h.target, mount=Mount("/", "ext4", "/dev/root", ("rw",))))
    red = redact.redact_report(sampled.report(the_host=h), home="/root")
    assert red.host.target.mount.source == "/dev/root"
    assert red.host.target.mount.mount_point == "/"
    assert redact.scrub_text("server:/export/alice nfs", [], "x") == "server:/export/alice nfs"
    assert redact.redact_report(sampled.report(the_host=dataclasses.replace(h, target=dataclasses.replace(
        h.target, mount=Mount("/mnt", "nfs4", "filer.corp:/export/alice")))), home="/root"
    ).host.target.mount.source == redact.REDACTED


@pytest.fixture(scope="module")
def real_run(tmp_path_factory):
    """A small real run in a directory named after this host, not redacted."""
    target = tmp_path_factory.mktemp("data") / f"{HOSTNAME}-data"
    target.mkdir()
    out = tmp_path_factory.mktemp("out")
    proc = fsb("run", target, "--output", out, "--journal-mode", "wal", "--synchronous",
               "off,full", *QUICK)
    assert proc.returncode == 0, proc.stderr
    return target, out, next(out.glob("*.json"))


def test_unredacted_report_does_name_the_host(real_run):
    """The control: without --redact the hostname is there (so the checks below mean something)."""
    _target, _out, report = real_run
    assert has_name(report.read_text(), HOSTNAME)


def test_run_redact_leaves_no_hostname_in_any_format(real_run, tmp_path):
    target, _out, _report = real_run
    out = tmp_path / "out"
    csv = tmp_path / "samples.csv"
    proc = fsb("run", target, "--output", out, "--journal-mode", "wal", "--synchronous",
               "off,full", *QUICK, "--redact", "--format", "html", "--csv", csv)
    assert proc.returncode == 0, proc.stderr
    files = sorted(out.iterdir())
    assert {p.suffix for p in files} == {".json", ".md", ".html"}
    serials = [d["serial"] for d in json.loads(store.report_to_json(
        store.load_report(real_run[2])))["host"]["target"]["disks"] if d.get("serial")]
    for text in [proc.stdout, csv.read_text()] + [p.read_text() for p in files]:
        assert not has_name(text, HOSTNAME)
        assert str(target) not in text
        for s in serials:
            assert s not in text
    assert all(p.name.startswith("redacted-host-") for p in files)
    report = store.load_report(next(out.glob("*.json")))
    assert report.host.target.path == "[redacted]"
    assert "<svg" in next(out.glob("*.html")).read_text()
    assert csv.read_text().startswith("configuration,primitive,kind,index,ns,slice,round\n")


@pytest.mark.parametrize("fmt", ["text", "markdown", "json", "html"])
def test_show_redact_every_format(real_run, fmt):
    target, _out, report = real_run
    plain = fsb("show", report, "--format", fmt)
    assert plain.returncode == 0 and has_name(plain.stdout, HOSTNAME)
    red = fsb("show", report, "--format", fmt, "--redact")
    assert red.returncode == 0, red.stderr
    assert not has_name(red.stdout, HOSTNAME)
    assert str(target) not in red.stdout
    if fmt == "json":
        store.report_from_json(red.stdout)  # still a valid report


def test_show_redacted_report_compares_with_the_original(real_run, tmp_path):
    _target, _out, report = real_run
    red = tmp_path / "red.json"
    assert fsb("show", report, "--format", "json", "--redact", "--output", red).returncode == 0
    proc = fsb("compare", report, red)
    assert proc.returncode == 0, proc.stderr
    assert "wal/full" in proc.stdout and "1.00x" in proc.stdout


def test_audit_redact(real_run):
    """audit --from re-judges a saved report without measuring; --redact applies there too."""
    _target, _out, report = real_run
    for extra in ((), ("--json",)):
        proc = fsb("audit", "--from", report, "--redact", *extra)
        assert proc.returncode == 0, proc.stderr
        assert not has_name(proc.stdout, HOSTNAME)


def test_redaction_reaches_every_layer_of_the_storage_stack():
    """A FUSE layer's network source and the serial of a disk under a loop device's backing
    file are as identifying as the target's own; the verdict quotes the source."""
    from fsyncbench import audit
    from fsyncbench.model import StorageLayer

    ssd = BlockDevice("sdb", model="Samsung SSD 870", rotational=False, serial="S5Y1NX0R777777",
                      write_cache="write back", has_flush_counters=True)
    layers = (StorageLayer("fuse", "/mnt/remote", "forwarded", 0, fs_type="fuse.sshfs",
                           source="deploy@db-primary.internal:/srv"),
              StorageLayer("disk", "sdb", "to-device", 1, holds_bytes=True, volatile=False,
                           device=ssd))
    rep = personal_report()
    h = dataclasses.replace(rep.host, target=dataclasses.replace(rep.host.target, layers=layers))
    rep = dataclasses.replace(rep, host=h, verdict=audit.judge(h, rep.results))
    assert "db-primary.internal" in store.report_to_json(rep)  # the finding quotes it
    text = store.report_to_json(redact.redact_report(rep, home="/home/alice"))
    for secret in ("db-primary", "deploy@", "S5Y1NX0R777777"):
        assert secret not in text, secret
    assert "fuse.sshfs" in text and "Samsung SSD 870" in text  # the facts stay
