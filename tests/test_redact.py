"""--redact: no hostname, serial number or user path in any format, and still a valid report."""

import dataclasses
import json
import re
import socket

import pytest
import sampled
from clitools import fsb
from factories import host

from fsyncbench import api
from fsyncbench.model import BlockDevice, Mount, StorageLayer
from fsyncbench.report import compare, redact, store

QUICK = ["--samples", "30", "--budget-seconds", "5", "--warmup", "2", "--quiet"]
HOSTNAME = socket.gethostname()


def has_name(text: str, name: str) -> bool:
    """Does ``name`` occur in ``text``? A short hostname (this VM's is "vm") is looked for
    as a whole word only, or it would be found inside "kvm"; a longer one anywhere."""
    if len(name) >= 4:
        return name.lower() in text.lower()
    return re.search(rf"(?<![A-Za-z0-9]){re.escape(name)}(?![A-Za-z0-9])", text) is not None


def personal_report():
    h = host(
        disks=(
            BlockDevice(
                "nvme0n1",
                model="WD SN850",
                rotational=False,
                write_cache="write back",
                serial="21354X801234",
                has_flush_counters=True,
            ),
        )
    )
    h = dataclasses.replace(
        h,
        hostname="alices-laptop.corp.example",
        target=dataclasses.replace(
            h.target,
            path="/home/alice/projects/agent",
            mount=Mount("/home/alice/mnt", "ext4", "/home/alice/disk.img", ("rw",)),
        ),
        ld_preload="/home/alice/lib/libfoo.so",
        sqlite_library="/home/alice/.venv/lib/libsqlite3.so",
    )
    cmd = (
        "fsyncbench",
        "run",
        "/home/alice/projects/agent",
        "--output",
        "/home/alice/reports",
        "--samples",
        "400",
        "--config",
        "wal/full",
        "--csv=/home/alice/x.csv",
        "--redact",
    )
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
    assert red.command_line == (
        "fsyncbench",
        "run",
        "[redacted]",
        "--output",
        "[redacted]",
        "--samples",
        "400",
        "--config",
        "wal/full",
        "--csv=[redacted]",
        "--redact",
    )
    assert [r.samples_ns for r in red.results] == [r.samples_ns for r in rep.results]
    assert red.verdict == rep.verdict
    # still a valid report of the same schema, and still comparable
    again = store.report_from_json(text)
    assert again == red
    compare.check_comparable([rep, again], ["a", "b"])
    assert compare.compare_pair(rep, again).configs[0].p50.ratio == 1.0


def test_redaction_leaves_system_paths_alone():
    h = host()
    h = dataclasses.replace(
        h, target=dataclasses.replace(h.target, mount=Mount("/", "ext4", "/dev/root", ("rw",)))
    )
    red = redact.redact_report(sampled.report(the_host=h), home="/root")
    assert red.host.target.mount.source == "/dev/root"
    assert red.host.target.mount.mount_point == "/"
    assert redact.scrub_text("server:/export/alice nfs", [], "x") == "server:/export/alice nfs"
    assert (
        redact.redact_report(
            sampled.report(
                the_host=dataclasses.replace(
                    h,
                    target=dataclasses.replace(
                        h.target, mount=Mount("/mnt", "nfs4", "filer.corp:/export/alice")
                    ),
                )
            ),
            home="/root",
        ).host.target.mount.source
        == redact.REDACTED
    )


@pytest.fixture(scope="module")
def real_run(tmp_path_factory):
    """A small real run in a directory named after this host, not redacted."""
    target = tmp_path_factory.mktemp("data") / f"{HOSTNAME}-data"
    target.mkdir()
    out = tmp_path_factory.mktemp("out")
    proc = fsb(
        "run",
        target,
        "--report-dir",
        out,
        "--journal-mode",
        "wal",
        "--synchronous",
        "off,full",
        *QUICK,
    )
    assert proc.returncode == 0, proc.stderr
    return target, out, next(out.glob("*.json"))


@pytest.fixture(scope="module")
def run_here(tmp_path_factory):
    """The same small real run, in this process and in one round (the fast tier's)."""
    target = tmp_path_factory.mktemp("data-here") / f"{HOSTNAME}-data"
    target.mkdir()
    out = tmp_path_factory.mktemp("out-here")
    report = api.run(
        target,
        journal_modes="wal",
        synchronous="off,full",
        samples=30,
        warmup=2,
        rounds=1,
        command_line=["fsyncbench", "run", str(target), "--report-dir", str(out)],
    )
    api.save(report, out)
    return target, out, next(out.glob("*.json"))


@pytest.mark.slow
def test_unredacted_report_does_name_the_host(real_run):
    """The control: without --redact the hostname is there (so the checks below mean something)."""
    _target, _out, report = real_run
    assert has_name(report.read_text(), HOSTNAME)


def test_unredacted_report_does_name_the_host_in_process(run_here):
    _target, _out, report = run_here
    assert has_name(report.read_text(), HOSTNAME)


def _run_redact_leaves_no_hostname_in_any_format(fsb, real_run, tmp_path, *rounds):
    target, _out, _report = real_run
    out = tmp_path / "out"
    csv = tmp_path / "samples.csv"
    proc = fsb(
        "run",
        target,
        "--report-dir",
        out,
        "--journal-mode",
        "wal",
        "--synchronous",
        "off,full",
        *QUICK,
        "--redact",
        "--format",
        "html",
        "--csv",
        csv,
        *rounds,
    )
    assert proc.returncode == 0, proc.stderr
    files = sorted(out.iterdir())
    assert {p.suffix for p in files} == {".json", ".md", ".html"}
    serials = [
        d["serial"]
        for d in json.loads(store.report_to_json(store.load_report(real_run[2])))["host"]["target"][
            "disks"
        ]
        if d.get("serial")
    ]
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


@pytest.mark.slow
def test_run_redact_leaves_no_hostname_in_any_format(real_run, tmp_path):
    _run_redact_leaves_no_hostname_in_any_format(fsb, real_run, tmp_path)


def test_run_redact_leaves_no_hostname_in_any_format_in_process(run_here, tmp_path, here):
    _run_redact_leaves_no_hostname_in_any_format(here, run_here, tmp_path, "--rounds", "1")


def _show_redact_every_format(fsb, real_run, fmt):
    target, _out, report = real_run
    plain = fsb("show", report, "--format", fmt)
    assert plain.returncode == 0 and has_name(plain.stdout, HOSTNAME)
    red = fsb("show", report, "--format", fmt, "--redact")
    assert red.returncode == 0, red.stderr
    assert not has_name(red.stdout, HOSTNAME)
    assert str(target) not in red.stdout
    if fmt == "json":
        store.report_from_json(red.stdout)  # still a valid report


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["text", "markdown", "json", "html"])
def test_show_redact_every_format(real_run, fmt):
    _show_redact_every_format(fsb, real_run, fmt)


# (html's redaction: the run's page in test_run_redact_leaves_no_hostname_in_any_format_in_process;
# each HTML rendering takes most of a second)
@pytest.mark.parametrize("fmt", ["text", "markdown", "json"])
def test_show_redact_every_format_in_process(run_here, fmt, here):
    _show_redact_every_format(here, run_here, fmt)


def _show_redacted_report_compares_with_the_original(fsb, real_run, tmp_path):
    _target, _out, report = real_run
    red = tmp_path / "red.json"
    assert fsb("show", report, "--format", "json", "--redact", "--output", red).returncode == 0
    proc = fsb("compare", report, red)
    assert proc.returncode == 0, proc.stderr
    assert "wal/full" in proc.stdout and "1.00x" in proc.stdout


@pytest.mark.slow
def test_show_redacted_report_compares_with_the_original(real_run, tmp_path):
    _show_redacted_report_compares_with_the_original(fsb, real_run, tmp_path)


def test_show_redacted_report_compares_with_the_original_in_process(run_here, tmp_path, here):
    _show_redacted_report_compares_with_the_original(here, run_here, tmp_path)


def _audit_redact(fsb, real_run):
    """audit --from re-judges a saved report without measuring; --redact applies there too."""
    _target, _out, report = real_run
    for extra in ((), ("--json",)):
        proc = fsb("audit", "--from", report, "--redact", *extra, "--no-report")
        assert proc.returncode == 0, proc.stderr
        assert not has_name(proc.stdout, HOSTNAME)


@pytest.mark.slow
def test_audit_redact(real_run):
    _audit_redact(fsb, real_run)


def test_audit_redact_in_process(run_here, here):
    _audit_redact(here, run_here)


def test_redaction_reaches_every_layer_of_the_storage_stack():
    """A FUSE layer's network source and the serial of a disk under a loop device's backing
    file are as identifying as the target's own; the verdict quotes the source."""
    from fsyncbench.judge import engine
    from fsyncbench.model import StorageLayer

    ssd = BlockDevice(
        "sdb",
        model="Samsung SSD 870",
        rotational=False,
        serial="S5Y1NX0R777777",
        write_cache="write back",
        has_flush_counters=True,
    )
    layers = (
        StorageLayer(
            "fuse",
            "/mnt/remote",
            "forwarded",
            0,
            fs_type="fuse.sshfs",
            source="deploy@db-primary.internal:/srv",
        ),
        StorageLayer("disk", "sdb", "to-device", 1, holds_bytes=True, volatile=False, device=ssd),
    )
    rep = personal_report()
    h = dataclasses.replace(rep.host, target=dataclasses.replace(rep.host.target, layers=layers))
    rep = dataclasses.replace(rep, host=h, verdict=engine.judge(h, rep.results))
    assert "db-primary.internal" in store.report_to_json(rep)  # the finding quotes it
    text = store.report_to_json(redact.redact_report(rep, home="/home/alice"))
    for secret in ("db-primary", "deploy@", "S5Y1NX0R777777"):
        assert secret not in text, secret
    assert "fuse.sshfs" in text and "Samsung SSD 870" in text  # the facts stay


# --- redact_command_line, redact_report and scrub_text, one redaction rule at a time ---------

#: A home outside /home, /Users, /root: only the ``home`` argument makes paths under it personal.
HOME = "/srv/bob"


@pytest.mark.parametrize(
    "argv,expected",
    [
        (("fsyncbench", "show", "--format", "json"), ("fsyncbench", "show", "--format", "json")),
        (("fsyncbench", "run", "--samples=400"), ("fsyncbench", "run", "--samples=400")),
        (
            ("fsyncbench", "run", "--quiet", "--samples", "400"),  # a flag takes no value
            ("fsyncbench", "run", "--quiet", "--samples", "400"),
        ),
        (("fsyncbench", "run", "mydir"), ("fsyncbench", "run", "[redacted]")),  # positional
        (("fsyncbench", "show", "-"), ("fsyncbench", "show", "[redacted]")),  # "-" is positional
        (("/usr/local/bin/fsyncbench", "run"), ("[redacted]", "run")),  # a program path is a path
        (("fsyncbench", "~"), ("fsyncbench", "[redacted]")),
        (("fsyncbench", "C:\\bench"), ("fsyncbench", "[redacted]")),
        (
            ("fsyncbench", "run", "--output", "/data/out"),
            ("fsyncbench", "run", "--output", "[redacted]"),
        ),
        (("fsyncbench", "run", "--output=/data/out"), ("fsyncbench", "run", "--output=[redacted]")),
        # a plain option's value stays, unless it is a user path
        (
            ("fsyncbench", "run", "--config", "/srv/bob"),
            ("fsyncbench", "run", "--config", "[redacted]"),
        ),
        (
            ("fsyncbench", "run", "--config", "/srv/bob/c"),
            ("fsyncbench", "run", "--config", "[redacted]"),
        ),
        (
            ("fsyncbench", "run", "--config=/srv/bob/c"),
            ("fsyncbench", "run", "--config=[redacted]"),
        ),
        (
            ("fsyncbench", "run", "--config", "/srv/bobby/c"),  # beside the home, not under it
            ("fsyncbench", "run", "--config", "/srv/bobby/c"),
        ),
        (
            ("fsyncbench", "run", "--config", "/home/alice/c"),
            ("fsyncbench", "run", "--config", "[redacted]"),
        ),
        (
            ("fsyncbench", "run", "--config", "/root"),
            ("fsyncbench", "run", "--config", "[redacted]"),
        ),
        (("fsyncbench", "run", "--config", "~"), ("fsyncbench", "run", "--config", "[redacted]")),
        (("fsyncbench", "run", "--config", "~/c"), ("fsyncbench", "run", "--config", "[redacted]")),
    ],
)
def test_command_line_redaction(argv, expected):
    assert redact.redact_command_line(argv, home=HOME) == expected


@pytest.mark.parametrize(
    "home,value,expected",
    [
        ("/srv/bob/", "/srv/bob/c", "[redacted]"),  # $HOME with a trailing slash
        ("/srv/ALEX", "/srv/ALEX/c", "[redacted]"),
        ("/", "/etc/c", "/etc/c"),  # HOME=/ (containers) makes no path personal
    ],
)
def test_command_line_redaction_per_home(home, value, expected):
    argv = ("fsyncbench", "run", "--config", value)
    assert redact.redact_command_line(argv, home=home) == (
        "fsyncbench",
        "run",
        "--config",
        expected,
    )


def test_home_defaults_to_the_home_directory(tmp_path, monkeypatch):
    home = tmp_path / "bob"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    mine = ("fsyncbench", "run", "--config", f"{home}/c")
    other = ("fsyncbench", "run", "--config", "/srv/bob/c")
    assert redact.redact_command_line(mine) == ("fsyncbench", "run", "--config", "[redacted]")
    assert redact.redact_command_line(other) == other
    # an explicit home replaces $HOME
    assert redact.redact_command_line(mine, home=HOME) == mine
    assert redact.redact_command_line(other, home=HOME) == (
        "fsyncbench",
        "run",
        "--config",
        "[redacted]",
    )
    h = dataclasses.replace(host(), ld_preload=f"{home}/lib/libfoo.so")
    assert redact.redact_report(sampled.report(the_host=h)).host.ld_preload == "[redacted]"
    h = dataclasses.replace(host(), ld_preload="/srv/bob/lib/libfoo.so")
    assert (
        redact.redact_report(sampled.report(the_host=h), home=HOME).host.ld_preload == "[redacted]"
    )
    assert (
        redact.redact_report(sampled.report(the_host=h)).host.ld_preload == "/srv/bob/lib/libfoo.so"
    )


def redacted(
    home=HOME, hostname="case-host", notes=(), command_line=("fsyncbench", "run", "/data"), **target
):
    """``redact_report`` of a report on ``factories.host()`` with these target fields,
    hostname, notes and command line."""
    h = host()
    h = dataclasses.replace(h, hostname=hostname, target=dataclasses.replace(h.target, **target))
    rep = dataclasses.replace(
        sampled.report(the_host=h, command_line=command_line), notes=tuple(notes)
    )
    return redact.redact_report(rep, home=home)


@pytest.mark.parametrize(
    "home,mount,expected",
    [
        # a user path is redacted whole, with its spaces (the last pass would stop at a space)
        (
            HOME,
            Mount("/home/alice/My Drive", "fuse", "/dev/sdb1"),
            Mount("[redacted]", "fuse", "/dev/sdb1"),
        ),
        (
            HOME,
            Mount("/srv/bob/My Drive", "ext4", "/srv/bob/disk image.img"),
            Mount("[redacted]", "ext4", "[redacted]"),
        ),
        (
            HOME,
            Mount("/mnt/share", "cifs", "//nas/share"),
            Mount("/mnt/share", "cifs", "[redacted]"),
        ),
        (
            HOME,
            Mount("/mnt", "nfs4", "filer.corp:/export/alice"),
            Mount("/mnt", "nfs4", "[redacted]"),
        ),
        (HOME, Mount("/", "ext4", "/dev/root"), Mount("/", "ext4", "/dev/root")),
        ("/", Mount("/mnt/disk", "ext4", "/dev/sda1"), Mount("/mnt/disk", "ext4", "/dev/sda1")),
    ],
)
def test_mount_redaction(home, mount, expected):
    assert redacted(home, mount=mount).host.target.mount == expected


def test_every_disk_serial_is_redacted_and_no_serial_stays_none():
    disks = (
        BlockDevice("sda", model="QEMU HARDDISK", serial="QM1"),  # too short to scrub elsewhere
        BlockDevice("sdb", model="Samsung SSD 870", serial="S5Y1NX0R777777"),
        BlockDevice("sdc", model="USB stick", serial=None),
        BlockDevice("sdd", model="SD card", serial=""),
    )
    red = redacted(disks=disks, chain=("sda", "sdb", "sdc", "sdd"))
    assert red.host.target.disks == (
        BlockDevice("sda", model="QEMU HARDDISK", serial="[redacted]"),
        BlockDevice("sdb", model="Samsung SSD 870", serial="[redacted]"),
        BlockDevice("sdc", model="USB stick", serial=None),
        BlockDevice("sdd", model="SD card", serial=""),
    )


def test_every_layer_of_the_stack_is_redacted():
    layers = (
        StorageLayer(
            "fuse",
            "/home/alice/Google Drive",
            "forwarded",
            0,
            fs_type="fuse.rclone",
            source="gdrive:/",
        ),
        StorageLayer(
            "fuse",
            "/srv/bob/My Files",
            "forwarded",
            0,
            fs_type="fuse.bindfs",
            source="/srv/bob/files",
        ),
        StorageLayer("lvm", "dm-0", "forwarded", 1, source="/dev/mapper/vg-root"),
        StorageLayer(
            "disk",
            "sda",
            "to-device",
            2,
            holds_bytes=True,
            device=BlockDevice("sda", model="QEMU HARDDISK", serial="QM1"),
        ),
        StorageLayer(
            "disk",
            "sdb",
            "to-device",
            2,
            holds_bytes=True,
            device=BlockDevice("sdb", model="Samsung SSD 870", serial="S5Y1NX0R777777"),
        ),
        StorageLayer(
            "disk",
            "vda",
            "to-device",
            2,
            holds_bytes=True,
            device=BlockDevice("vda", model="virtio", serial=None),
        ),
    )
    assert redacted(layers=layers).host.target.layers == (
        StorageLayer(
            "fuse", "[redacted]", "forwarded", 0, fs_type="fuse.rclone", source="[redacted]"
        ),
        StorageLayer(
            "fuse", "[redacted]", "forwarded", 0, fs_type="fuse.bindfs", source="[redacted]"
        ),
        StorageLayer("lvm", "dm-0", "forwarded", 1, source="/dev/mapper/vg-root"),
        StorageLayer(
            "disk",
            "sda",
            "to-device",
            2,
            holds_bytes=True,
            device=BlockDevice("sda", model="QEMU HARDDISK", serial="[redacted]"),
        ),
        StorageLayer(
            "disk",
            "sdb",
            "to-device",
            2,
            holds_bytes=True,
            device=BlockDevice("sdb", model="Samsung SSD 870", serial="[redacted]"),
        ),
        StorageLayer(
            "disk",
            "vda",
            "to-device",
            2,
            holds_bytes=True,
            device=BlockDevice("vda", model="virtio", serial=None),
        ),
    )


def test_macos_volume_facts_are_redacted():
    darwin = {
        "DeviceIdentifier": "disk3s1",
        "MountPoint": "/Users/alice/My Backup",
        "DiskImage": "/srv/bob/images/backup 1.dmg",
        "VolumeName": "Backup",
        "Internal": False,
        "TotalSize": 500107862016,
    }
    assert redacted(darwin=darwin).host.target.darwin == {
        "DeviceIdentifier": "disk3s1",
        "MountPoint": "[redacted]",
        "DiskImage": "[redacted]",
        "VolumeName": "Backup",
        "Internal": False,
        "TotalSize": 500107862016,
    }


@pytest.mark.parametrize(
    "target,note,expected",
    [
        # disk serials of 4 characters and more are removed wherever they are quoted
        (
            {"disks": (BlockDevice("sda", serial="AB12"),)},
            "disk AB12 lost its cache",
            "disk [redacted] lost its cache",
        ),
        (
            {"disks": (BlockDevice("sda", serial="X12"),)},
            "disk X12 lost its cache",
            "disk X12 lost its cache",
        ),  # shorter ones would hit ordinary words
        ({}, "copied to /srv/bob/results", "copied to [redacted]"),  # the home
        # a user path quoted whole, not cut at its space: the longest secret goes first
        ({"path": "/srv/bob/bench dir"}, "ran in /srv/bob/bench dir", "ran in [redacted]"),
        (
            {
                "layers": (
                    StorageLayer(
                        "fuse",
                        "/mnt/w",
                        "forwarded",
                        0,
                        fs_type="fuse.bindfs",
                        source="/srv/bob/shared docs",
                    ),
                )
            },
            "mirrors /srv/bob/shared docs",
            "mirrors [redacted]",
        ),
        # a mount point named after its disk's serial: the path goes first, as a whole
        (
            {
                "path": "/mnt/WD-WX41A19H7Y2Z",
                "disks": (BlockDevice("sda", serial="WD-WX41A19H7Y2Z"),),
            },
            "benchmarked /mnt/WD-WX41A19H7Y2Z",
            "benchmarked [redacted]",
        ),
        # a target of "." or "/" is no secret: a sentence's full stop and other paths stay
        ({"path": "."}, "see the table (p99).", "see the table (p99)."),
    ],
)
def test_secrets_are_removed_from_every_text(target, note, expected):
    assert redacted(notes=[note], **target).notes == (expected,)


@pytest.mark.parametrize("path", [".", "/"])
def test_target_path_is_redacted_even_when_it_is_no_secret(path):
    red = redacted(path=path, mount=Mount("/", "ext4", "/dev/root"))
    assert red.host.target.path == "[redacted]"
    assert red.host.target.mount == Mount("/", "ext4", "/dev/root")


def test_report_command_line_is_redacted(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    cmd = (
        "fsyncbench",
        "run",
        "/data",
        "--output",
        "/srv/reports",
        "--config",
        "/srv/bob/my configs",
    )
    assert redacted(command_line=cmd).command_line == (
        "fsyncbench",
        "run",
        "[redacted]",
        "--output",
        "[redacted]",
        "--config",
        "[redacted]",
    )


def test_a_host_without_a_name_gets_the_redacted_name():
    assert redacted(hostname="").host.hostname == "redacted-host"


@pytest.mark.parametrize(
    "text,literal,hostname,expected",
    [
        (
            "logs in /srv/bob/x",
            ["/srv/bob"],
            "h",
            "logs in [redacted]",
        ),  # a path with what is below
        ("logs in /srv/bobby", ["/srv/bob"], "h", "logs in /srv/bobby"),
        ("disk S5Y1NX0R777777.", ["S5Y1NX0R777777"], "h", "disk [redacted]."),
        (
            "alices-laptop is up",
            [],
            "alices-laptop.corp.example",
            "redacted-host is up",
        ),  # short form
        ("on alices-laptop.corp.example", [], "alices-laptop.corp.example", "on redacted-host"),
        ("Alices-Laptop", [], "alices-laptop", "redacted-host"),  # 4+ chars: any case
        ("DEV1 and dev1", [], "dev1", "redacted-host and redacted-host"),  # 4 chars is enough
        (
            "a VM named vm, in kvm",
            [],
            "vm",
            "a VM named redacted-host, in kvm",
        ),  # short: exact case
        ("a, b (c)", [], "", "a, b (c)"),  # no hostname, nothing to do
        ("", [], "", ""),
    ],
)
def test_scrub_text(text, literal, hostname, expected):
    assert redact.scrub_text(text, literal, hostname) == expected


def test_a_home_given_with_a_trailing_slash_is_still_redacted():
    """redact_command_line with home="/srv/bob/" (a caller's spelling; $HOME never ends in
    "/") redacts /srv/bob itself like home="/srv/bob" does."""
    assert redact.redact_command_line(
        ("fsyncbench", "run", "--config", "/srv/bob"), home="/srv/bob/"
    ) == redact.redact_command_line(("fsyncbench", "run", "--config", "/srv/bob"), home="/srv/bob")
    assert "/srv/bob" not in " ".join(
        redact.redact_command_line(("fsyncbench", "run", "--config", "/srv/bob"), home="/srv/bob/")
    )


@pytest.mark.parametrize(
    "home,mount,expected",
    [
        # $HOME spelled with a trailing slash: the home itself is a user path, not only what is below
        (
            "/srv/bob/",
            Mount("/srv/bob", "ext4", "/srv/bob/disk.img"),
            Mount("[redacted]", "ext4", "[redacted]"),
        ),
        # only slashes are trimmed off the end of a home: /srv/MAX stays /srv/MAX, and the
        # directory /srv/MA beside it is not personal
        (
            "/srv/MAX",
            Mount("/srv/MAX", "ext4", "/srv/MA/disk.img"),
            Mount("[redacted]", "ext4", "/srv/MA/disk.img"),
        ),
    ],
)
def test_report_redaction_per_home(home, mount, expected):
    assert redacted(home, mount=mount).host.target.mount == expected


@pytest.mark.parametrize("home", ["/", "", "//"])
def test_a_root_or_empty_home_makes_no_text_personal(home):
    """HOME=/ (containers), an empty or an all-slash HOME: no string is taken for the home,
    in the report's texts or in its command line."""
    red = redacted(
        home,
        notes=["XX/XX", "ratio 3/4"],
        mount=Mount("/mnt/disk", "ext4", "XX/XX"),
        command_line=("fsyncbench", "run", "--config", "XX/XX"),
    )
    assert red.notes == ("XX/XX", "ratio 3/4")
    assert red.host.target.mount == Mount("/mnt/disk", "ext4", "XX/XX")
    assert red.command_line == ("fsyncbench", "run", "--config", "XX/XX")
    assert redact.redact_command_line(("fsyncbench", "run", "--config", "XX/XX"), home=home) == (
        "fsyncbench",
        "run",
        "--config",
        "XX/XX",
    )


def test_a_home_without_a_slash_still_marks_the_tokens_that_name_it():
    """HOME=bob (a relative $HOME): the program name and the subcommand are kept unless they
    look like a path, and a token holding the home does."""
    assert redact.redact_command_line(("fsyncbench", "bob-data"), home="bob") == (
        "fsyncbench",
        "[redacted]",
    )
    assert redact.redact_command_line(("bob", "run"), home="bob") == ("[redacted]", "run")
    assert redact.redact_command_line(("fsyncbench", "run"), home="bob") == ("fsyncbench", "run")


def test_a_home_ending_in_a_space_is_that_directory():
    """A home directory whose name ends in a space ("/srv/bob "): paths below it are
    personal, paths below "/srv/bob" (another directory) are not."""
    argv = ("fsyncbench", "run", "--config", "/srv/bob /c", "--config", "/srv/bob/c")
    assert redact.redact_command_line(argv, home="/srv/bob ") == (
        "fsyncbench",
        "run",
        "--config",
        "[redacted]",
        "--config",
        "/srv/bob/c",
    )
