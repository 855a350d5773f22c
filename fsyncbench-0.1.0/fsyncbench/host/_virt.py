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
- ``container``: first of: the ``container`` environment variable (set by container
  managers, https://systemd.io/CONTAINER_INTERFACE/); ``/run/.containerenv`` -> "podman"
  (podman-run(1)); ``/.dockerenv`` -> "docker" (created by Docker; also read by systemd's
  src/basic/virt.c); ``/proc/1/cgroup`` naming docker, kubepods, containerd or lxc (cgroup
  v1 paths; cgroup v2 namespaces show only ``0::/``); ``systemd-detect-virt --container``.
  A file copied into an image (``/.dockerenv``) can outlive the container: a hint only.
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

from fsyncbench.model import Virtualization

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


def container_hint(root: str = "/", environ: Mapping[str, str] | None = None) -> str | None:
    """Container runtime named by the environment or files under ``root``, or None (rules
    in the module docstring; systemd-detect-virt is consulted by the caller)."""
    env = os.environ if environ is None else environ
    if env.get("container"):
        return env["container"]
    if os.path.exists(under_root(root, "/run/.containerenv")):
        return "podman"
    if os.path.exists(under_root(root, "/.dockerenv")):
        return "docker"
    cgroup = (read_text(under_root(root, "/proc/1/cgroup")) or "").lower()
    for word in _CGROUP_WORDS:
        if word in cgroup:
            return word
    return None


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
    container = container_hint(root, environ)
    if container is None and live:
        found = _detect_virt("--container", run)
        container = found if found != "none" else None
    return Virtualization(
        hypervisor_flag=parse_hypervisor_flag(read_text(under_root(root, "/proc/cpuinfo"))),
        dmi_vendor=read_text(under_root(root, "/sys/class/dmi/id/sys_vendor")),
        dmi_product=read_text(under_root(root, "/sys/class/dmi/id/product_name")),
        detect_virt=_detect_virt("--vm", run) if live else None,
        container=container,
        kernel_hint=kernel_hint(release),
    )
