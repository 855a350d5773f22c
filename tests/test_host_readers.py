"""What the host readers take from /proc and /sys, and how the host record is put together.

- ``fsyncbench.host._activity``: the CPU line of ``/proc/stat`` (every state by its proc(5)
  name), ``/proc/pressure/*`` totals, ``/proc/loadavg``, ``/proc/thread-self/schedstat``,
  psutil on the live root, the process table (kernel threads apart, write bytes, the
  "not readable" threshold) and the reasons a snapshot gives for what it could not read
  (they are printed in reports, so their words are pinned);
- ``fsyncbench.host._virt``: systemd-detect-virt's output and how it is run, the container
  evidence (environment, ``/run/.containerenv``, PID 1's cgroups, a ``/.dockerenv`` nothing
  else confirms) and the kernel release of a recorded tree versus the live machine;
- ``fsyncbench.host``: the platform dispatch, the counter devices of a target without a
  recorded stack, and the facts the host record keeps from the platform reader.

Recorded trees and fakes of psutil and of the readers' file access: nothing here depends
on the machine the tests run on, and nothing starts a process.
"""

from __future__ import annotations

import collections
import time
from pathlib import Path
from types import SimpleNamespace

import psutil
import pytest
import this_platform

import fsyncbench.host as host_pkg
from fsyncbench.host import _activity, _common, _mountinfo, _virt, counter_devices
from fsyncbench.model import BlockDevice, StorageLayer, StorageTarget, Virtualization

FIXTURES = Path(__file__).parent / "fixtures" / "host"

# --------------------------------------------------------------------------- helpers


def _files(monkeypatch: pytest.MonkeyPatch, module, files: dict[str, str]) -> None:
    """``module`` reads ``files`` (absolute paths under the real ``/``) instead of the disk."""
    texts = {_common.under_root("/", path): text for path, text in files.items()}
    monkeypatch.setattr(module, "read_text", lambda path: texts.get(path))


def _platform(monkeypatch: pytest.MonkeyPatch, module, name: str) -> None:
    monkeypatch.setattr(module, "sys", SimpleNamespace(platform=name))


def _tree(root: Path, files: dict[str, str]) -> Path:
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


# --------------------------------------------------------------------------- /proc/stat

#: /proc/stat's aggregate line with all ten fields (proc(5): user nice system idle iowait
#: irq softirq steal guest guest_nice, USER_HZ ticks), distinct values to tell them apart.
STAT_ALL_FIELDS = "cpu  101 202 303 404 505 606 707 808 909 1010\n"


def test_every_cpu_state_of_proc_stat_is_named_as_proc5_names_it():
    # https://man7.org/linux/man-pages/man5/proc_stat.5.html: the order of the cpu line
    assert _activity.parse_proc_stat_cpu(STAT_ALL_FIELDS) == {
        "user": 1.01,
        "nice": 2.02,
        "system": 3.03,
        "idle": 4.04,
        "iowait": 5.05,
        "irq": 6.06,
        "softirq": 7.07,
        "steal": 8.08,
        "guest": 9.09,
        "guest_nice": 10.10,
    }


def test_only_the_aggregate_cpu_line_counts():
    text = "cpu0 1 1 1 1 1 1 1 1 1 1\n\nintr 5 6\ncpu  100 0 0 200 0 0 0 0 0 0\n"
    cpu = _activity.parse_proc_stat_cpu(text)
    assert cpu is not None and (cpu["user"], cpu["idle"]) == (1.0, 2.0)


# --------------------------------------------------------------------------- pressure stall

PSI_IO = (
    "some avg10=6.45 avg60=7.05 avg300=2.51 total=9414703\n"
    "full avg10=6.18 avg60=5.59 avg300=1.92 total=7362271\n"
)


def test_psi_lines_other_than_some_and_full_are_passed_over_not_stopped_at():
    text = "other avg10=0.00 total=5\n\n" + PSI_IO
    assert _activity.parse_psi(text, "io") == {"io_some": 9414703, "io_full": 7362271}


def test_psi_total_is_found_by_name_wherever_it_stands():
    assert _activity.parse_psi("some total=12\nfull total=3 avg10=0.00\n", "cpu") == {
        "cpu_some": 12,
        "cpu_full": 3,
    }


def test_psi_on_the_live_root_reads_this_machines_proc_pressure(monkeypatch):
    _platform(monkeypatch, _activity, "linux")
    _files(monkeypatch, _activity, {"/proc/pressure/io": PSI_IO})
    assert _activity.read_psi() == ({"io_some": 9414703, "io_full": 7362271}, None)
    assert _activity.read_psi("/") == ({"io_some": 9414703, "io_full": 7362271}, None)


def test_psi_off_linux_is_named_as_linux_only(monkeypatch):
    _platform(monkeypatch, _activity, "darwin")
    _files(monkeypatch, _activity, {"/proc/pressure/io": PSI_IO})
    reason = "pressure stall information is Linux's (/proc/pressure)"
    assert _activity.read_psi() == ({}, reason)
    assert _activity.read_psi("/") == ({}, reason)


@this_platform.linux_trees
def test_psi_of_a_recorded_tree_is_read_on_any_platform(monkeypatch, tmp_path):
    _platform(monkeypatch, _activity, "darwin")
    root = _tree(tmp_path, {"proc/pressure/io": PSI_IO})
    assert _activity.read_psi(str(root)) == ({"io_some": 9414703, "io_full": 7362271}, None)


@this_platform.linux_trees
def test_a_kernel_without_psi_says_why(tmp_path):
    assert _activity.read_psi(str(tmp_path)) == (
        {},
        "no /proc/pressure (Linux < 4.20, or PSI disabled: psi=0 / CONFIG_PSI)",
    )


# --------------------------------------------------------------------------- live figures

CpuTimes = collections.namedtuple("CpuTimes", "user system idle steal")


def _live(monkeypatch, procs=None):
    """The live root ("/") with psutil's figures and the process table faked."""
    _platform(monkeypatch, _activity, "linux")
    _files(monkeypatch, _activity, {"/proc/pressure/cpu": "some avg10=1.00 total=77\n"})
    monkeypatch.setattr(_activity.psutil, "cpu_times", lambda: CpuTimes(1.5, 2.5, 30.0, 0.25))
    monkeypatch.setattr(_activity.psutil, "getloadavg", lambda: (1.25, 2.5, 3.75))
    monkeypatch.setattr(_activity.os, "cpu_count", lambda: 64)
    monkeypatch.setattr(_activity, "_processes", lambda: procs or ({}, 0.0, None))


def test_the_live_root_takes_psutils_figures(monkeypatch):
    _live(monkeypatch)
    before = time.monotonic_ns()
    snap = _activity.snapshot("/")
    after = time.monotonic_ns()
    assert snap.cpu_s == {"user": 1.5, "system": 2.5, "idle": 30.0, "steal": 0.25}
    assert snap.load_avg_1m == 1.25  # the 1-minute figure: getloadavg()[0]
    assert snap.cpu_count == 64
    assert snap.psi_us == {"cpu_some": 77}
    assert before <= snap.t_ns <= after
    assert snap.not_measured == ()


def test_the_live_process_table_and_its_reason_reach_the_snapshot(monkeypatch):
    procs = {7: _activity.ProcessSample("fio", 2.0, 4096)}
    _live(monkeypatch, (procs, 3.5, "2 processes' I/O counters are not readable"))
    snap = _activity.snapshot("/")
    assert snap.processes == procs
    assert snap.kernel_cpu_s == 3.5
    assert snap.not_measured == ("processes' writes: 2 processes' I/O counters are not readable",)


def test_unreadable_cpu_times_are_named(monkeypatch):
    _live(monkeypatch)

    def broken():
        raise OSError("no /proc/stat")

    monkeypatch.setattr(_activity.psutil, "cpu_times", broken)
    snap = _activity.snapshot("/", processes=False)
    assert snap.cpu_s is None
    assert snap.not_measured == ("cpu: CPU times not readable",)


@this_platform.linux_trees
def test_a_recorded_tree_has_no_processes_and_no_unread_cpu(tmp_path):
    root = _tree(
        tmp_path,
        {
            "proc/stat": STAT_ALL_FIELDS + "cpu0 1 1 1 1\ncpu1 1 1 1 1\ncpu2 1 1 1 1\n",
            "proc/loadavg": "0.50 0.40 0.30 1/90 123\n",
            "proc/pressure/cpu": "some avg10=0.00 total=5\n",
        },
    )
    snap = _activity.snapshot(str(root))
    assert snap.processes == {}
    assert snap.kernel_cpu_s == 0.0
    assert snap.cpu_count == 3
    assert snap.load_avg_1m == 0.5
    assert snap.not_measured == ()
    assert isinstance(snap.t_ns, int)


@this_platform.linux_trees
def test_a_recorded_tree_without_proc_stat_says_so(tmp_path):
    root = _tree(tmp_path, {"proc/pressure/cpu": "some avg10=0.00 total=5\n"})
    snap = _activity.snapshot(str(root))
    assert (snap.cpu_s, snap.cpu_count, snap.load_avg_1m) == (None, None, None)
    assert snap.not_measured == ("cpu: CPU times not readable",)


# --------------------------------------------------------------------------- run queue wait


def test_run_queue_wait_is_linuxs_on_the_live_root(monkeypatch):
    _files(monkeypatch, _activity, {"/proc/thread-self/schedstat": "154782125 60380254 557"})
    _platform(monkeypatch, _activity, "darwin")
    assert _activity.run_queue_wait_ns("/") is None
    _platform(monkeypatch, _activity, "linux")
    assert _activity.run_queue_wait_ns("/") == 60380254


@this_platform.linux_trees
def test_run_queue_wait_of_a_recorded_tree_is_read_on_any_platform(monkeypatch, tmp_path):
    _platform(monkeypatch, _activity, "darwin")
    root = _tree(tmp_path, {"proc/thread-self/schedstat": "154782125 60380254 557\n"})
    assert _activity.run_queue_wait_ns(str(root)) == 60380254


# --------------------------------------------------------------------------- process table


class _Proc:
    """A psutil.Process as process_iter yields it (``info`` filled in)."""

    def __init__(self, pid, ppid, name, user, system, written=None, denied=False):
        self.pid = pid
        self.info = {
            "name": name,
            "ppid": ppid,
            "cpu_times": SimpleNamespace(user=user, system=system),
        }
        self._written = written
        self._denied = denied

    def io_counters(self):
        if self._denied:
            raise psutil.AccessDenied(self.pid)
        return SimpleNamespace(write_bytes=self._written)


class _Gone:
    """A process that exited between the listing and the read."""

    pid = 99

    @property
    def info(self):
        raise psutil.NoSuchProcess(self.pid)


class _NoTimes:
    pid = 98
    info = {"name": "zombie", "ppid": 1, "cpu_times": None}


def _table(monkeypatch, procs, platform="linux"):
    _platform(monkeypatch, _activity, platform)
    monkeypatch.setattr(_activity.psutil, "process_iter", lambda attrs: iter(procs))


def test_processes_are_sampled_and_kernel_threads_set_apart(monkeypatch):
    _table(
        monkeypatch,
        [
            _Proc(1, 0, "init", 1.0, 0.5, written=4096),
            _NoTimes(),
            _Proc(2, 0, "kthreadd", 0.25, 0.5),  # kthreadd itself
            _Gone(),
            _Proc(40, 2, "kworker/0:1", 1.0, 2.0),  # a child of kthreadd
            _Proc(300, 1, None, 0.75, 0.5, written=0),  # a name psutil could not read
            _Proc(301, 1, "sshd", 2.0, 1.0, denied=True),
        ],
    )
    procs, kernel, why = _activity._processes()
    assert procs == {
        1: _activity.ProcessSample("init", 1.5, 4096),
        300: _activity.ProcessSample("?", 1.25, 0),
        301: _activity.ProcessSample("sshd", 3.0, None),
    }
    assert kernel == 3.75
    assert why is None


def test_kthreadd_is_a_kernel_thread_only_on_linux(monkeypatch):
    _table(monkeypatch, [_Proc(2, 0, "kthreadd", 1.0, 0.0, written=0)], platform="freebsd14")
    procs, kernel, _ = _activity._processes()
    assert procs == {2: _activity.ProcessSample("kthreadd", 1.0, 0)} and kernel == 0.0


def _many(count: int, denied: int) -> list[_Proc]:
    return [_Proc(1000 + k, 1, "p", 0.0, 0.0, written=1, denied=k < denied) for k in range(count)]


@pytest.mark.parametrize(
    ("count", "denied", "named"),
    [
        (5, 3, False),  # up to 3 unreadable are tolerated however few processes there are
        (5, 4, True),
        (40, 4, False),  # and up to a tenth of the table
        (40, 5, True),
    ],
)
def test_unreadable_io_counters_are_named_past_a_tenth_of_the_table(
    monkeypatch, count, denied, named
):
    _table(monkeypatch, _many(count, denied))
    procs, _, why = _activity._processes()
    assert len(procs) == count
    assert sum(p.write_bytes is None for p in procs.values()) == denied
    expected = f"{denied} processes' I/O counters are not readable by this user"
    assert why == (expected if named else None)


def test_a_platform_without_per_process_io_is_named(monkeypatch):
    # macOS: psutil.Process has no io_counters, nor has any process
    proc = SimpleNamespace(pid=5, info=_Proc(5, 1, "a", 1.0, 0.0).info)
    _table(monkeypatch, [proc], platform="darwin")
    monkeypatch.setattr(_activity.psutil, "Process", type("Process", (), {}))
    procs, _, why = _activity._processes()
    assert procs == {5: _activity.ProcessSample("a", 1.0, None)}
    assert why == "this platform gives psutil no per-process I/O counters (macOS)"


# --------------------------------------------------------------------------- systemd-detect-virt


def test_detect_virt_output_that_is_not_utf8_does_not_raise():
    assert _virt.parse_detect_virt((1, b"\xfe\xff\n")) is None
    assert _virt.parse_detect_virt((0, b"kvm\xff\n")) == "kvm\ufffd"


def test_detect_virt_that_prints_nothing_says_nothing():
    assert _virt.parse_detect_virt((0, b"")) is None
    assert _virt.parse_detect_virt((0, b" \n")) is None


def test_detect_virt_runs_only_when_installed_under_its_name(monkeypatch):
    monkeypatch.setattr(
        _virt.shutil,
        "which",
        lambda name: "/usr/bin/" + name if name == "systemd-detect-virt" else None,
    )
    calls = []
    runner = lambda argv: calls.append(argv) or (0, b"kvm\n")  # noqa: E731
    assert _virt._detect_virt("--vm", runner) == "kvm"
    assert calls == [["systemd-detect-virt", "--vm"]]


def test_detect_virt_is_given_two_seconds(monkeypatch):
    """The module docstring's "with a 2 s timeout" (a hung tool must not hang the run)."""
    seen = []
    monkeypatch.setattr(_virt, "run_command", lambda argv, timeout: seen.append(timeout) or None)
    assert _virt._default_runner(["systemd-detect-virt", "--vm"]) is None
    assert seen == [2.0] == [_virt.DETECT_VIRT_TIMEOUT_S]


# --------------------------------------------------------------------------- container evidence


def _mount(dev: str, mount_point: str, fs_type: str, source: str, mount_id: int = 30) -> str:
    return f"{mount_id} 1 {dev} / {mount_point} rw,relatime shared:1 - {fs_type} {source} rw\n"


@this_platform.linux_trees
@pytest.mark.parametrize(
    ("files", "environ", "expected"),
    [
        ({}, {}, (None, "")),
        (
            {},
            {"container": "lxc"},
            ("lxc", "environment variable container=lxc"),
        ),
        (
            {".dockerenv": ""},
            {"container": "lxc"},
            ("lxc", "environment variable container=lxc; /.dockerenv exists too"),
        ),
        (
            {"run/.containerenv": 'engine="podman-4.9"\n'},
            {},
            ("podman", "/run/.containerenv exists"),
        ),
        (
            {"proc/1/cgroup": "3:cpu:/docker/0123abcd\n"},
            {},
            ("docker", "/proc/1/cgroup names docker"),
        ),
        (
            {".dockerenv": "", "proc/1/cgroup": "3:cpu:/docker/0123abcd\n"},
            {},
            ("docker", "/proc/1/cgroup names docker; /.dockerenv exists too"),
        ),
    ],
)
def test_container_evidence_says_what_it_rests_on(tmp_path, files, environ, expected):
    root = _tree(tmp_path, files)
    assert _virt.container_signs(str(root), environ) == expected


#: /proc/1/cgroup of this project's VM (cgroup v1, every controller at /), recorded with
#: ``cat /proc/1/cgroup``; its mount table is tests/fixtures/host/mountinfo_firecracker_vm.txt.
CGROUP_FIRECRACKER_VM = (
    "9:name=systemd:/\n8:pids:/\n7:blkio:/\n6:freezer:/\n5:devices:/\n4:memory:/\n"
    "3:cpuset:/\n2:cpuacct:/\n1:cpu:/\n0::/\n"
)


@this_platform.linux_trees
def test_this_projects_vm_has_a_dockerenv_and_is_no_container(tmp_path):
    root = _tree(
        tmp_path,
        {
            ".dockerenv": "",
            "proc/1/cgroup": CGROUP_FIRECRACKER_VM,
            "proc/self/mountinfo": (FIXTURES / "mountinfo_firecracker_vm.txt").read_text(),
        },
    )
    assert _virt.container_signs(str(root), {}) == (
        None,
        "/.dockerenv exists, but nothing else shows a container (PID 1's cgroups: /; "
        "/ is ext4, no container overlay; no runtime's bind mounts): not taken as one "
        "(an image can carry the file)",
    )


@this_platform.linux_trees
@pytest.mark.parametrize(
    ("cgroup", "mountinfo", "seen"),
    [
        # systemd on cgroup v1: some controllers at /, the rest in init.scope
        (
            "12:cpuset:/\n11:hugetlb:/\n10:pids:/init.scope\n1:name=systemd:/init.scope\n"
            "0::/init.scope\n",
            _mount("8:2", "/", "xfs", "/dev/sda2"),
            "PID 1's cgroups: /, /init.scope; / is xfs",
        ),
        (None, _mount("8:2", "/", "xfs", "/dev/sda2"), "PID 1's cgroups: unread; / is xfs"),
        ("0::/init.scope\n", None, "PID 1's cgroups: /init.scope; / is unknown"),
    ],
)
def test_a_lone_dockerenv_names_pid1s_cgroups_and_the_root_filesystem(
    tmp_path, cgroup, mountinfo, seen
):
    files = {".dockerenv": ""}
    if cgroup is not None:
        files["proc/1/cgroup"] = cgroup
    if mountinfo is not None:
        files["proc/self/mountinfo"] = mountinfo
    name, evidence = _virt.container_signs(str(_tree(tmp_path, files)), {})
    assert name is None
    assert evidence == (
        f"/.dockerenv exists, but nothing else shows a container ({seen}, no container "
        "overlay; no runtime's bind mounts): not taken as one (an image can carry the file)"
    )


# --------------------------------------------------------------------------- the live root


@pytest.fixture
def live_root(tmp_path, monkeypatch):
    """A fake tree standing in for this machine's ``/`` in _virt (root stays "/", so the
    live-only steps run); systemd-detect-virt installed; no ``container`` variable."""
    real_under_root = _virt.under_root
    real_read_mountinfo = _mountinfo.read_mountinfo

    def remap(root: str) -> str:
        return str(tmp_path) if root == "/" else root

    monkeypatch.setattr(_virt, "under_root", lambda root, path: real_under_root(remap(root), path))
    monkeypatch.setattr(
        _virt._mountinfo, "read_mountinfo", lambda root="/": real_read_mountinfo(remap(root))
    )
    monkeypatch.setattr(
        _virt.shutil,
        "which",
        lambda name: "/usr/bin/" + name if name == "systemd-detect-virt" else None,
    )
    monkeypatch.delenv("container", raising=False)
    return tmp_path


def _answers(vm: str, container: str):
    """A systemd-detect-virt that prints ``vm`` for --vm and ``container`` for --container
    ("none" with exit 1, as it does)."""

    def run(argv):
        out = vm if argv[1] == "--vm" else container
        return (1 if out == "none" else 0), (out + "\n").encode()

    return run


@this_platform.linux_trees
def test_without_a_root_the_readers_look_at_this_machine(live_root, monkeypatch):
    _tree(live_root, {"run/.containerenv": "", "proc/sys/kernel/osrelease": "6.8.0-1015-aws\n"})
    assert _virt.container_signs(environ={}) == ("podman", "/run/.containerenv exists")
    virt = _virt.collect_virtualization(environ={}, runner=_answers("kvm", "none"))
    assert (virt.detect_virt, virt.container, virt.kernel_hint) == (
        "kvm",
        "podman",
        "cloud-kernel:aws",
    )
    roots = []
    monkeypatch.setattr(
        _virt, "container_signs", lambda root, environ: roots.append(root) or ("x", "")
    )
    assert _virt.container_hint() == "x" and roots == ["/"]


@this_platform.linux_trees
def test_the_live_kernel_release_falls_back_to_the_running_kernel(live_root, monkeypatch):
    monkeypatch.setattr(_virt.platform, "release", lambda: "5.15.153.1-microsoft-standard-WSL2")
    virt = _virt.collect_virtualization("/", environ={}, runner=_answers("none", "none"))
    assert virt.kernel_hint == "wsl2"
    _tree(live_root, {"proc/sys/kernel/osrelease": "6.8.0-45-generic\n"})
    virt = _virt.collect_virtualization("/", environ={}, runner=_answers("none", "none"))
    assert virt.kernel_hint is None  # the file, not platform.release(), where there is one


@this_platform.linux_trees
def test_a_recorded_tree_without_osrelease_has_no_kernel_hint(tmp_path, monkeypatch):
    monkeypatch.setattr(_virt.platform, "release", lambda: "6.8.0-1015-aws")
    virt = _virt.collect_virtualization(str(tmp_path), environ={}, runner=None)
    assert virt.kernel_hint is None


@this_platform.linux_trees
def test_the_callers_environment_is_the_one_read(tmp_path, monkeypatch):
    monkeypatch.delenv("container", raising=False)
    virt = _virt.collect_virtualization(str(tmp_path), environ={"container": "systemd-nspawn"})
    assert (virt.container, virt.container_evidence) == (
        "systemd-nspawn",
        "environment variable container=systemd-nspawn",
    )


@this_platform.linux_trees
@pytest.mark.parametrize(
    ("files", "said", "container", "evidence"),
    [
        ({}, "none", None, ""),
        ({}, "lxc", "lxc", "systemd-detect-virt --container: lxc"),
        # a lone /.dockerenv: detect-virt's "docker" reads the same file, so it stays unconfirmed
        (
            {".dockerenv": "", "proc/1/cgroup": "0::/\n"},
            "docker",
            None,
            "/.dockerenv exists, but nothing else shows a container (PID 1's cgroups: /; / is "
            "unknown, no container overlay; no runtime's bind mounts): not taken as one (an "
            "image can carry the file); systemd-detect-virt says docker from the same file",
        ),
        (
            {".dockerenv": "", "proc/1/cgroup": "0::/\n"},
            "none",
            None,
            "/.dockerenv exists, but nothing else shows a container (PID 1's cgroups: /; / is "
            "unknown, no container overlay; no runtime's bind mounts): not taken as one (an "
            "image can carry the file)",
        ),
    ],
)
def test_detect_virt_container_is_taken_where_nothing_else_was_seen(
    live_root, files, said, container, evidence
):
    _tree(live_root, files)
    virt = _virt.collect_virtualization("/", environ={}, runner=_answers("none", said))
    assert (virt.container, virt.container_evidence) == (container, evidence)


@this_platform.linux_trees
def test_no_detect_virt_leaves_the_container_unseen(live_root, monkeypatch):
    monkeypatch.setattr(_virt.shutil, "which", lambda name: None)
    virt = _virt.collect_virtualization("/", environ={}, runner=_answers("kvm", "lxc"))
    assert (virt.detect_virt, virt.container, virt.container_evidence) == (None, None, "")


# --------------------------------------------------------------------------- fsyncbench.host


def test_counter_devices_without_a_recorded_stack_are_the_disks_with_counters():
    target = StorageTarget(
        "/data",
        disks=(
            BlockDevice("vda", has_flush_counters=True),
            BlockDevice("sdb"),
            BlockDevice("vda", has_flush_counters=True),
        ),
    )
    assert counter_devices(target) == ["vda"]
    layered = StorageTarget(
        "/data",
        disks=target.disks,
        layers=(
            StorageLayer("disk", "nvme0n1", device=BlockDevice("nvme0n1", has_flush_counters=True)),
        ),
    )
    assert counter_devices(layered) == ["nvme0n1"]


@pytest.mark.parametrize(
    ("platform", "reader"),
    [
        ("linux", "_linux"),
        ("darwin", "_darwin"),
        ("win32", "_windows"),
        ("freebsd14", "_other"),
        ("DARWIN", "_other"),
    ],
)
def test_each_platform_has_its_reader(monkeypatch, platform, reader):
    import importlib

    for name in ("_linux", "_darwin", "_windows", "_other"):
        module = importlib.import_module(f"fsyncbench.host.{name}")
        monkeypatch.setattr(module, "collect", lambda target, _name=name: (_name, target))
    assert host_pkg._platform_facts("/data", platform) == (reader, "/data")


def test_the_host_record_keeps_the_platform_readers_facts(monkeypatch):
    virt = Virtualization(hypervisor_flag=True, dmi_vendor="QEMU", detect_virt="kvm")
    facts = _common.PlatformFacts(
        StorageTarget("/data"), virt, "/usr/lib/x86_64-linux-gnu/libsqlite3.so.0.8.6"
    )
    monkeypatch.setattr(host_pkg, "_platform_facts", lambda target, platform: facts)
    host = host_pkg.collect_host("/data")
    assert host.sqlite_library == "/usr/lib/x86_64-linux-gnu/libsqlite3.so.0.8.6"
    assert host.virtualization == virt
    assert host.target == StorageTarget("/data")
