"""A QEMU guest on the lab drive: this machine's own root filesystem, read-only over 9p,
so the guest runs the same Python and the same installed fsyncbench; a writable 9p share
for the command and its results; the lab drive (lab/drive.py behind nbdkit) as an
emulated NVMe disk with a volatile write cache (QEMU's own NBD client: no kernel nbd, no
network). QEMU runs with TCG (``-accel tcg``): nested KVM guests hang on this project's VM.

Needs qemu-system-x86, a Debian kernel (linux-image-amd64) and busybox-static
(:func:`missing_parts`). The initramfs is built from them (:func:`build_initramfs`): busybox,
the modules for virtio, 9p, NVMe and ext4 in dependency order (``modprobe --show-depends``),
and an init that mounts the shares, runs ``/results/cmd.sh`` chrooted into this machine's
root and powers off. The hypervisor can be hidden from the guest (``hide_vm``: CPUID
without the hypervisor bit, bare-metal SMBIOS strings) so fsyncbench's VM rule does not
decide a verdict the drive should.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

#: Modules the guest needs, loaded with their dependencies in order.
MODULES = ("virtio_pci", "9pnet_virtio", "9p", "nvme", "ext4", "virtio_console", "virtio_blk")
#: Modules for the drives attached as spinning disks (``sata-hdd``, ``virtio-scsi-hdd``):
#: AHCI (SATA), virtio-scsi, and sd.
SCSI_MODULES = ("ahci", "virtio_scsi", "sd_mod")
#: How a drive can be attached (:func:`qemu_argv`).
DRIVE_BUSES = ("nvme", "virtio-blk", "sata-hdd", "virtio-scsi-hdd")
#: The guest's device node of a single drive per bus.
DRIVE_DEVICE = {
    "nvme": "/dev/nvme0n1",
    "virtio-blk": "/dev/vda",
    "sata-hdd": "/dev/sda",
    "virtio-scsi-hdd": "/dev/sda",
}
#: The ATA model string of a ``sata-hdd`` drive: no emulator's name (fsyncbench's
#: host.layers.VIRTUAL_DISK_MODELS) and no drive family of judge.devices.PLP_MODELS.
HDD_MODEL = "LAB HDD 7200"
#: The model string an NVMe drive shows where a scenario needs a disk fsyncbench does not
#: recognise as emulated: QEMU's NVMe controller names itself ``QEMU NVMe Ctrl``, an
#: emulated disk in fsyncbench's device knowledge (fsyncbench/host/device_knowledge.json,
#: row qemu-nvme), and has no property to change it (hw/nvme/ctrl.c; ``-device nvme,help``
#: lists none), so a hidden hypervisor is still found by it and the VM rule decides. No
#: drive family of the table either (no PLP, no RAID, no hybrid).
NVME_MODEL = "LAB NVME SSD"
#: A shell prefix for the guest's command that shows :data:`NVME_MODEL` in place of every
#: NVMe controller's model: a file on the guest's tmpfs bind-mounted over
#: ``/sys/class/nvme/nvme*/model`` (what ``/sys/block/nvme0n1/device/model`` resolves to).
#: The kernel still has QEMU's identity; only what fsyncbench reads is hidden.
HIDE_NVME_MODEL = (
    f"printf '%s\\n' '{NVME_MODEL}' > /tmp/lab-nvme-model && "
    'for m in /sys/class/nvme/nvme*/model; do mount --bind /tmp/lab-nvme-model "$m" || exit 9; '
    "done && "
)
#: Where the guest mounts things inside this machine's root (existing directories, since
#: the root is read-only): the results share and the drive's filesystem.
GUEST_RESULTS = "/mnt"
GUEST_DISK = "/srv"

INIT = f"""#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
# NVMe's 30 s I/O timeout fails a slow request with EIO (ext4 then aborts its journal): a
# TCG guest on a loaded 2-core host can wait that long for the lab drive, so it gets 600 s
for m in $(cat /modules.order); do
  case "$m" in
    *nvme-core.ko*|*nvme_core.ko*) insmod "$m" io_timeout=600 2>/dev/null ;;
    *) insmod "$m" 2>/dev/null ;;
  esac
done
mkdir -p /host
mount -t 9p -o trans=virtio,version=9p2000.L,ro,cache=loose hostroot /host || echo "lab-guest: no host root"
mount -t 9p -o trans=virtio,version=9p2000.L results /host{GUEST_RESULTS} || echo "lab-guest: no results share"
mount -t proc proc /host/proc
mount -t sysfs sys /host/sys
mount -t devtmpfs dev /host/dev
mount -t tmpfs tmp /host/tmp
mount -t tmpfs run /host/run
echo "lab-guest: running"
chroot /host /bin/sh {GUEST_RESULTS}/cmd.sh > /host{GUEST_RESULTS}/out.txt 2>&1
echo $? > /host{GUEST_RESULTS}/rc
sync
echo "lab-guest: done"
poweroff -f
"""


def kernel_version() -> str | None:
    """The newest Debian kernel under /boot with its modules, or None."""
    found = sorted(
        p.name.removeprefix("vmlinuz-")
        for p in Path("/boot").glob("vmlinuz-*")
        if Path("/lib/modules", p.name.removeprefix("vmlinuz-")).is_dir()
    )
    return found[-1] if found else None


def missing_parts() -> str:
    """What this machine lacks for a guest ("" when nothing)."""
    if shutil.which("qemu-system-x86_64") is None:
        return "qemu-system-x86_64 is not installed (apt install qemu-system-x86)"
    if kernel_version() is None:
        return "no kernel with modules under /boot (apt install linux-image-amd64)"
    if not Path("/bin/busybox").exists() or shutil.which("cpio") is None:
        return "busybox-static or cpio is not installed (apt install busybox-static cpio)"
    return ""


def build_initramfs(out: Path) -> Path:
    """Write the guest's initramfs (gzip'd cpio) to ``out``; returns it. Raises
    RuntimeError when a part is missing or a tool fails."""
    missing = missing_parts()
    if missing:
        raise RuntimeError(missing)
    kver = kernel_version()
    assert kver is not None
    with tempfile.TemporaryDirectory(prefix="fsb-initramfs-") as tmp:
        root = Path(tmp)
        for d in ("bin", "proc", "sys", "dev", "mods", "host"):
            (root / d).mkdir()
        shutil.copy2("/bin/busybox", root / "bin" / "busybox")
        order: list[str] = []
        for module in MODULES + SCSI_MODULES:
            deps = subprocess.run(
                ["modprobe", "-S", kver, "--show-depends", module],
                capture_output=True,
                text=True,
                check=True,
            ).stdout
            for line in deps.splitlines():
                words = line.split()
                if len(words) >= 2 and words[0] == "insmod":
                    name = f"/mods/{Path(words[1]).name}"
                    if name not in order:
                        shutil.copy2(words[1], root / name.lstrip("/"))
                        order.append(name)
        (root / "modules.order").write_text("\n".join(order) + "\n")
        init = root / "init"
        init.write_text(INIT)
        init.chmod(0o755)
        files = subprocess.run(
            ["find", ".", "-print0"], cwd=root, capture_output=True, check=True
        ).stdout
        cpio = subprocess.run(
            ["cpio", "--null", "-o", "-H", "newc", "--quiet"],
            cwd=root,
            input=files,
            capture_output=True,
            check=True,
        ).stdout
        out.write_bytes(
            subprocess.run(["gzip", "-1"], input=cpio, capture_output=True, check=True).stdout
        )
    return out


@dataclass(frozen=True)
class GuestRun:
    """One guest run: the command's exit code (None when it did not finish: a cut or a
    timeout), its output, the serial console, and how long the guest took (s)."""

    rc: int | None
    output: str
    console: str
    took_s: float


def qemu_argv(
    initrd: Path,
    results: Path,
    drive_socket: Path | None,
    hide_vm: bool,
    drive_sockets: Sequence[Path] = (),
    drive_bus: str = "nvme",
    extra_argv: Sequence[str] = (),
) -> list[str]:
    """QEMU's command line for one guest (module docstring); ``extra_argv`` is appended
    (e.g. a virtio-serial port: lab/bridge.py). The drives are
    ``drive_socket`` (if any) then ``drive_sockets``, each with the serial ``fsblab<i>``
    (i from 0 in that order): with ``drive_bus`` ``nvme`` each its own NVMe controller
    (found in the guest by ``/sys/block/nvme*/device/serial``, since the kernel's numbering
    is not promised), with ``virtio-blk`` a virtio disk (``/sys/block/vd*/serial``).
    The two spinning presentations (lab/audits.py) put every drive on one controller:
    ``sata-hdd`` a 7,200 rpm SATA disk on AHCI with the model string :data:`HDD_MODEL`
    (QEMU's ide-hd reports ``rotation_rate`` in ATA IDENTIFY word 217, so the guest's
    ``queue/rotational`` is 1; its write cache on; Linux's libata sends it no FUA), which
    fsyncbench records as a bare-metal spinning disk; ``virtio-scsi-hdd`` QEMU's scsi-hd
    with ``rotation_rate=7200`` on virtio-scsi, rotational too, but on a virtio bus and
    named ``QEMU HARDDISK``: fsyncbench records a virtual disk.

    The two differ in FUA, measured here (QEMU 7.2, lab/README.md): the guest's NVMe
    driver sees FUA advertised and sends FUA writes (ext4's journal commit block is one),
    and they reach the lab drive as plain writes: 10 O_DIRECT|O_DSYNC writes arrived as
    0 FUA writes and 10 flushes (the kernel's own sync after each; over virtio-blk the
    same writes brought 20), so QEMU drops the FUA, and an honest drive behind it can
    lose what the guest's fsync acknowledged. virtio-blk advertises no FUA, so the guest
    sends a FLUSH after such a write instead. Raises ValueError for another
    ``drive_bus``."""
    if drive_bus not in DRIVE_BUSES:
        raise ValueError(f"drive_bus must be one of {', '.join(DRIVE_BUSES)}, got {drive_bus!r}")
    kver = kernel_version()
    cpu = "max,-hypervisor" if hide_vm else "max"
    argv = [
        "qemu-system-x86_64",
        "-accel",
        "tcg",
        "-cpu",
        cpu,
        "-m",
        "1024",
        "-smp",
        "1",
        "-nographic",
        "-no-reboot",
        "-nic",
        "none",
        "-kernel",
        f"/boot/vmlinuz-{kver}",
        "-initrd",
        str(initrd),
        "-append",
        "console=ttyS0 panic=-1 quiet",
        "-virtfs",
        "local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap",
        "-virtfs",
        f"local,path={results},mount_tag=results,security_model=none,multidevs=remap",
    ]
    if hide_vm:  # bare-metal looking SMBIOS strings
        argv += ["-smbios", "type=1,manufacturer=Lab,product=Bare Metal,version=1"]
    sockets = ([drive_socket] if drive_socket is not None else []) + list(drive_sockets)
    if sockets and drive_bus == "sata-hdd":
        argv += ["-device", "ahci,id=ahci0"]
    if sockets and drive_bus == "virtio-scsi-hdd":
        argv += ["-device", "virtio-scsi-pci,id=scsi0"]
    for i, sock in enumerate(sockets):
        argv += [
            "-drive",
            f"driver=nbd,server.type=unix,server.path={sock},if=none,id=lab{i},cache.direct=off",
            "-device",
            _drive_device(drive_bus, i),
        ]
    return argv + list(extra_argv)


def _drive_device(drive_bus: str, i: int) -> str:
    """QEMU's ``-device`` for drive ``i`` on ``drive_bus`` (:func:`qemu_argv`)."""
    if drive_bus == "sata-hdd":
        return (
            f"ide-hd,bus=ahci0.{i},drive=lab{i},serial=fsblab{i},model={HDD_MODEL},"
            "rotation_rate=7200,write-cache=on"
        )
    if drive_bus == "virtio-scsi-hdd":
        return (
            f"scsi-hd,bus=scsi0.0,scsi-id={i},drive=lab{i},serial=fsblab{i},"
            "rotation_rate=7200,write-cache=on"
        )
    device = "nvme" if drive_bus == "nvme" else "virtio-blk-pci"
    return f"{device},serial=fsblab{i},drive=lab{i}"


def start(
    command: str,
    initrd: Path,
    results: Path,
    *,
    drive_socket: Path | None = None,
    hide_vm: bool = True,
    drive_sockets: Sequence[Path] = (),
    drive_bus: str = "nvme",
    extra_argv: Sequence[str] = (),
    console: int | IO[bytes] | None = subprocess.PIPE,
) -> subprocess.Popen[bytes]:
    """Start the guest of :func:`run` and return at once: QEMU's process; the caller waits
    for it or kills it (a SIGKILL of QEMU is a power cut of the guest). Its serial console
    goes to ``console``: a pipe by default, which the caller must drain or close; a file
    keeps it when the guest is cut."""
    (results / "cmd.sh").write_text(
        "export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root\n"
        + command
        + "\n"
    )
    for stale in ("out.txt", "rc"):
        (results / stale).unlink(missing_ok=True)
    return subprocess.Popen(
        qemu_argv(initrd, results, drive_socket, hide_vm, drive_sockets, drive_bus, extra_argv),
        stdin=subprocess.DEVNULL,
        stdout=console,
        stderr=subprocess.STDOUT,
    )


def run(
    command: str,
    initrd: Path,
    results: Path,
    *,
    drive_socket: Path | None = None,
    hide_vm: bool = True,
    timeout_s: float = 180.0,
    drive_sockets: Sequence[Path] = (),
    drive_bus: str = "nvme",
    extra_argv: Sequence[str] = (),
) -> GuestRun:
    """Boot a guest that runs the shell ``command`` (as root, chrooted into this machine's
    root; the drive, if any, is ``/dev/nvme0n1``, several drives as :func:`qemu_argv`
    says; ``/mnt`` is ``results``) and powers off. Returns its exit code and output; a
    guest still running at ``timeout_s`` is killed (rc None). ``extra_argv``: more QEMU
    arguments (:func:`qemu_argv`)."""
    start_s = time.monotonic()
    proc = start(
        command,
        initrd,
        results,
        drive_socket=drive_socket,
        hide_vm=hide_vm,
        drive_sockets=drive_sockets,
        drive_bus=drive_bus,
        extra_argv=extra_argv,
    )
    try:
        console, _ = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        console, _ = proc.communicate()
    took = time.monotonic() - start_s
    rc_file = results / "rc"
    rc = int(rc_file.read_text().strip()) if rc_file.exists() else None
    out = (
        (results / "out.txt").read_text(errors="replace") if (results / "out.txt").exists() else ""
    )
    return GuestRun(rc, out, console.decode(errors="replace"), took)


if __name__ == "__main__":  # a quick look: boot, run uname and python
    with tempfile.TemporaryDirectory(prefix="fsb-guest-") as tmp:
        work = Path(tmp)
        (work / "results").mkdir()
        initrd = build_initramfs(work / "initrd.gz")
        got = run(
            "uname -r; python3 --version; ls /sys/block; cat /proc/cpuinfo | grep -c hypervisor",
            initrd,
            work / "results",
        )
        print(
            f"rc={got.rc} in {got.took_s:.1f} s\n{got.output}\n--- console tail\n{got.console[-800:]}"
        )
        os.sync()
