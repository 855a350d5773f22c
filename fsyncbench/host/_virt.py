"""Signs of a hypervisor or a container on Linux (:class:`fsyncbench.model.Virtualization`).

Each rule records what it saw; none of them alone proves where a flush ends up. Rules and
their sources:

- ``hypervisor_flag``: the ``hypervisor`` word in a ``flags`` line of ``/proc/cpuinfo``
  (x86 only). It is CPUID leaf 1 ECX bit 31, which hypervisors set for their guests
  (Linux ``X86_FEATURE_HYPERVISOR``, arch/x86/include/asm/cpufeatures.h). No ``flags``
  line (ARM and others) -> None, not False.
- ``dmi_vendor``/``dmi_product``: ``/sys/class/dmi/id/sys_vendor`` and ``product_name``
  (drivers/firmware/dmi-id.c), raw, e.g. "QEMU", "Amazon EC2". Absent without DMI
  (Firecracker, most ARM boards). Recorded, not interpreted: bare-metal cloud instances
  report their provider too.
- ``detect_virt``: ``systemd-detect-virt --vm`` (man systemd-detect-virt(1)): "kvm",
  "microsoft", ... or "none". ``--vm`` because plain output prefers a container's name over
  the VM's (a container inside a VM reads "docker"), and a container is no hypervisor.
  Run only against the real root, with a 2 s timeout; failures -> None.
- ``container`` (with ``container_evidence``, what it rests on): first of: the
  ``container`` environment variable (set by container managers,
  https://systemd.io/CONTAINER_INTERFACE/); ``/run/.containerenv`` -> "podman"
  (podman-run(1)); ``/proc/1/cgroup`` naming docker, kubepods, containerd or lxc (cgroup
  v1 paths; cgroup v2 namespaces show only ``0::/``); the mount table
  (``/proc/self/mountinfo``): a bind mount from a runtime's per-container directory (Docker
  mounts ``/etc/hostname``, ``/etc/hosts`` and ``/etc/resolv.conf`` from
  ``<docker root>/containers/<64 hex id>/``; podman and CRI-O from
  ``.../overlay-containers/<id>/userdata/``; the kubelet from ``.../kubelet/pods/``) or
  ``/`` an overlay whose upper directory lies under a runtime's storage (``/docker/``,
  ``/containerd/``, ``/containers/storage/``); ``systemd-detect-virt --container``.
  ``/.dockerenv`` (created by Docker, https://github.com/moby/moby/issues/18355) is a file
  an image can carry into a machine that is no container (this project's VM has one): it
  names "docker" only where another sign above agrees, and alone it is recorded in
  ``container_evidence`` as not taken. systemd-detect-virt reads the same file
  (src/basic/virt.c, ``detect_container_files``: ``/.dockerenv`` -> docker), so its
  "docker" does not confirm it either. PID 1's name is no sign (a container runs any
  program as PID 1, and so do VMs: this one runs ``process_api``), nor is
  ``/proc/1/sched``'s pid (namespace-aware since Linux 4.14's
  ``sched/debug: Use task_pid_nr_ns in /proc/$pid/sched``).
- ``kernel_hint`` from the kernel release (``/proc/sys/kernel/osrelease``):
  ``microsoft-standard`` -> "wsl2" (WSL2 kernels are built with that local version,
  https://github.com/microsoft/WSL2-Linux-Kernel); other ``Microsoft`` -> "wsl1" (the
  detection Microsoft documents in https://github.com/microsoft/WSL/issues/423; WSL1 is a
  translation layer, not a VM, but its storage is the Windows host's either way);
  Ubuntu cloud flavours ``-aws``, ``-azure``, ``-gcp``, ``-gke``, ``-oracle``, ``-ibm``,
  ``-kvm`` -> "cloud-kernel:<flavour>" (https://ubuntu.com/kernel/variants); Amazon Linux
  ``.amzn2``/``.amzn2023`` -> "cloud-kernel:amazon-linux". Cloud kernels also boot the
  providers' bare-metal instances, so those hints are weaker than the CPUID flag.
"""

from __future__ import annotations

import os
import platform
import re
import shutil
from collections.abc import Callable, Mapping

from fsyncbench.host.layers import overlay_upperdir
from fsyncbench.model import Virtualization

from . import _mountinfo
from ._common import read_text, run_command, under_root

DETECT_VIRT_TIMEOUT_S = 2.0

_CGROUP_WORDS = ("kubepods", "docker", "containerd", "lxc")

_KERNEL_RULES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"microsoft-standard", re.IGNORECASE), "wsl2"),
    (re.compile(r"microsoft", re.IGNORECASE), "wsl1"),
    (re.compile(r"-\d+-(aws|azure|gcp|gke|oracle|ibm|kvm)$"), r"cloud-kernel:\1"),
    (re.compile(r"\.amzn(2|2023)\b"), "cloud-kernel:amazon-linux"),
)

Runner = Callable[[list[str]], "tuple[int, bytes] | None"]


def parse_hypervisor_flag(cpuinfo_text: str | None) -> bool | None:
    """True/False from the x86 ``flags`` lines of /proc/cpuinfo; None when there are none."""
    seen_flags = False
    for line in (cpuinfo_text or "").splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() == "flags":
            seen_flags = True
            if "hypervisor" in value.split():
                return True
    return False if seen_flags else None


def parse_detect_virt(result: tuple[int, bytes] | None) -> str | None:
    """Identifier printed by systemd-detect-virt: the name on exit 0, "none" when it says
    so (it then exits 1), None when it failed or printed nothing."""
    if result is None:
        return None
    code, out = result
    lines = out.decode("utf-8", errors="replace").strip().splitlines()
    text = lines[0].strip() if lines else ""
    if not text:
        return None
    if code == 0 or text == "none":
        return text
    return None


def kernel_hint(release: str | None) -> str | None:
    """Hint from a kernel release string (rules in the module docstring), else None."""
    if not release:
        return None
    for pattern, label in _KERNEL_RULES:
        match = pattern.search(release)
        if match:
            return match.expand(label)
    return None


#: Mount roots (mountinfo field 4) of a runtime's per-container files, and the runtime.
_RUNTIME_MOUNT_ROOTS = (
    (re.compile(r"/containers/[0-9a-f]{64}/(hostname|hosts|resolv\.conf)$"), "docker"),
    (re.compile(r"/overlay-containers/[0-9a-f]{64}/userdata/"), "podman"),
    (re.compile(r"/kubelet/pods/"), "kubepods"),
)
#: Words in the upper directory of an overlay at ``/`` and the runtime whose storage it is.
_RUNTIME_UPPERDIRS = (
    ("/docker/", "docker"),
    ("/containerd/", "containerd"),
    ("/containers/storage/", "podman"),
)


def _mount_sign(root: str) -> tuple[str, str] | None:
    """(runtime, what was seen) from the mount table under ``root``, or None."""
    mounts = _mountinfo.read_mountinfo(root)
    for mount in mounts:
        for pattern, runtime in _RUNTIME_MOUNT_ROOTS:
            if mount.root and pattern.search(mount.root):
                return runtime, f"{mount.mount_point} is bind-mounted from {mount.root}"
    top = _mountinfo.find_mount("/", mounts)
    if top is not None and top.mount_point == "/" and top.fs_type == "overlay":
        upper = overlay_upperdir(top) or ""
        for word, runtime in _RUNTIME_UPPERDIRS:
            if word in upper:
                return runtime, f"/ is an overlay whose upper directory is {upper}"
    return None


def container_signs(
    root: str = "/", environ: Mapping[str, str] | None = None
) -> tuple[str | None, str]:
    """(container runtime or None, the evidence) from the environment and files under
    ``root`` (rules in the module docstring; systemd-detect-virt is consulted by the
    caller). A ``/.dockerenv`` nothing else confirms gives (None, why it was not taken)."""
    env = os.environ if environ is None else environ
    dockerenv = os.path.exists(under_root(root, "/.dockerenv"))
    also = "; /.dockerenv exists too" if dockerenv else ""
    if env.get("container"):
        return env["container"], f"environment variable container={env['container']}{also}"
    if os.path.exists(under_root(root, "/run/.containerenv")):
        return "podman", "/run/.containerenv exists"
    cgroup_text = read_text(under_root(root, "/proc/1/cgroup")) or ""
    for word in _CGROUP_WORDS:
        if word in cgroup_text.lower():
            return word, f"/proc/1/cgroup names {word}{also}"
    sign = _mount_sign(root)
    if sign is not None:
        return sign[0], f"mountinfo: {sign[1]}{also}"
    if dockerenv:
        top = _mountinfo.find_mount("/", _mountinfo.read_mountinfo(root))
        fs = "unknown" if top is None else top.fs_type
        groups = sorted({ln.rsplit(":", 1)[-1] for ln in cgroup_text.splitlines() if ":" in ln})
        return None, (
            "/.dockerenv exists, but nothing else shows a container (PID 1's cgroups: "
            f"{', '.join(groups) or 'unread'}; / is {fs}, no container overlay; no runtime's "
            "bind mounts): not taken as one (an image can carry the file)"
        )
    return None, ""


def container_hint(root: str = "/", environ: Mapping[str, str] | None = None) -> str | None:
    """The runtime of :func:`container_signs`, without its evidence."""
    return container_signs(root, environ)[0]


def _detect_virt(option: str, runner: Runner) -> str | None:
    if shutil.which("systemd-detect-virt") is None:
        return None
    return parse_detect_virt(runner(["systemd-detect-virt", option]))


def _default_runner(argv: list[str]) -> tuple[int, bytes] | None:
    return run_command(argv, DETECT_VIRT_TIMEOUT_S)


def collect_virtualization(
    root: str = "/",
    environ: Mapping[str, str] | None = None,
    runner: Runner | None = None,
) -> Virtualization:
    """All Linux signs for ``root`` (``/`` = this machine; another path = a recorded tree,
    where systemd-detect-virt is not run). Never raises."""
    run = runner or _default_runner
    live = root == "/"
    release = read_text(under_root(root, "/proc/sys/kernel/osrelease"))
    if release is None and live:
        release = platform.release()
    container, evidence = container_signs(root, environ)
    if container is None and live:
        found = _detect_virt("--container", run)
        if found == "docker" and evidence.startswith("/.dockerenv"):
            evidence += "; systemd-detect-virt says docker from the same file"
        elif found and found != "none":
            container, evidence = found, f"systemd-detect-virt --container: {found}"
    return Virtualization(
        hypervisor_flag=parse_hypervisor_flag(read_text(under_root(root, "/proc/cpuinfo"))),
        dmi_vendor=read_text(under_root(root, "/sys/class/dmi/id/sys_vendor")),
        dmi_product=read_text(under_root(root, "/sys/class/dmi/id/product_name")),
        detect_virt=_detect_virt("--vm", run) if live else None,
        container=container,
        kernel_hint=kernel_hint(release),
        container_evidence=evidence,
    )
