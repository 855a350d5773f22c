"""The platform rules' findings word for word, where the broader judge tests only check which
rule decided (:mod:`fsyncbench.judge.platform_rules`): a published power-cut loss (its level,
subject, sentence naming the model and every disk, the advice, the evidence with and without
a measured primitive, and the source the device knowledge table cites for that test), a
power-cut row matched on the disk's vendor and model together, the advice a QEMU-emulated
disk gets (QEMU's cache modes) against any other virtual disk's, what a recorded VM run says
cannot be seen from inside, a guest known only from its disk's model string said to be
inferred, the flushes-per-sync figures a VM finding rounds, and what a
Windows stack that could not be followed asks the user to do.

Every fact here is written by hand (tests/factories.py) or read from a recorded run
(tests/fixtures/runs/): no measurement, no I/O beyond reading that file."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from factories import BARE, VM, flush, host

from fsyncbench.host import knowledge
from fsyncbench.judge import engine
from fsyncbench.model import (
    INFERRED,
    MEASURED,
    RISK,
    UNVERIFIABLE,
    VOLATILE_CACHE,
    WARNING,
    BlockDevice,
    Finding,
    Host,
    Mount,
    StorageLayer,
    StorageTarget,
)
from fsyncbench.report import store

RUNS = Path(__file__).parent / "fixtures" / "runs"

#: A Toshiba THNSNH060GCS as Linux shows a SATA disk (vendor ATA, the first 16 characters
#: of the ATA model): the drive of the device knowledge table's ``toshiba-thnsnh060`` row.
TOSHIBA = BlockDevice(
    "sda",
    vendor="ATA",
    model="TOSHIBA THNSNH06",
    rotational=False,
    write_cache="write back",
    has_flush_counters=True,
)
#: That row, as the shipped table holds it.
TOSHIBA_ROW = next(r for r in knowledge.table().devices if r.id == "toshiba-thnsnh060")
#: QEMU's emulated SATA disk as a Linux guest shows it.
QEMU_DISK = BlockDevice(
    "sda",
    vendor="ATA",
    model="QEMU HARDDISK",
    rotational=True,
    write_cache="write back",
    has_flush_counters=True,
)
#: A virtio disk: no model string, so no emulator named.
VIRTIO_DISK = BlockDevice(
    "vda", rotational=True, write_cache="write back", transport="virtio", has_flush_counters=True
)
LOST_SENTENCE = (
    "lost: failed Leighton's 2013 power-cut test within minutes (acknowledged writes lost), "
    "where only the Intel S3500 lasted"
)
POWER_CUT_ADVICE = (
    "Check the drive's firmware against the one tested, or pull the plug yourself "
    "(fsyncbench powercut); until then keep the journal on another drive."
)
TAIL = " Or run fsyncbench on the host (or pull the plug: fsyncbench powercut)."


def _deciding(v) -> Finding:
    return next(f for f in v.findings if f.code == v.decided_by and f.stance == "decides")


# --------------------------------------------------------------------------- power cut


def test_a_published_power_cut_loss_names_the_model_every_disk_and_the_test():
    """Two disks of the model Leighton's 2013 test saw lose acknowledged writes, measured at
    1 ms (a latency that cannot tell): a risk on the measured primitive, naming the row's
    model, both disks, the published result, what settles it, and the test's source."""
    both = host(disks=(TOSHIBA, dataclasses.replace(TOSHIBA, name="sdb")), virt=BARE)
    v = engine.judge(both, [flush("fdatasync", 1_000_000)])
    assert (v.path_verdict, v.decided_by, v.strength) == (
        VOLATILE_CACHE,
        "published-power-cut-loss",
        INFERRED,
    )
    assert _deciding(v) == Finding(
        "published-power-cut-loss",
        RISK,
        "write+fdatasync",
        "The target's bytes are on Toshiba THNSNH060GCS(T), a 60 GB SATA SSD (Q Series Pro) "
        "(sda, sdb): a published power-cut test of this model lost acknowledged writes "
        f"({LOST_SENTENCE}).",
        POWER_CUT_ADVICE,
        {
            "models": ["TOSHIBA THNSNH06", "TOSHIBA THNSNH06"],
            "knowledge_rows": ["toshiba-thnsnh060", "toshiba-thnsnh060"],
            "p50_ns": 1_000_000,
        },
        TOSHIBA_ROW.source(knowledge.POWER_CUT),
        INFERRED,
        VOLATILE_CACHE,
        "decides",
    )


def test_the_power_cut_source_is_the_published_test():
    """The source the finding cites is the row's: L. K. C. Leighton's report
    (http://lkcl.net/reports/ssd_analysis.html) and the list of the drives that failed."""
    source = TOSHIBA_ROW.source(knowledge.POWER_CUT)
    assert source.startswith("http://lkcl.net/reports/ssd_analysis.html (L. K. C. Leighton")
    assert "Toshiba THNSNH060GCS: failed." in source


def test_a_published_power_cut_loss_without_any_result_is_the_paths_with_no_latency():
    """Nothing measured (an audit of the recorded facts alone): the path's finding, with no
    p50 to show."""
    v = engine.judge(host(disks=(TOSHIBA,), virt=BARE), [])
    assert (v.path_verdict, v.decided_by) == (VOLATILE_CACHE, "published-power-cut-loss")
    f = _deciding(v)
    assert (f.subject, f.level, f.advice) == ("path", RISK, POWER_CUT_ADVICE)
    assert f.message == (
        "The target's bytes are on Toshiba THNSNH060GCS(T), a 60 GB SATA SSD (Q Series Pro) "
        f"(sda): a published power-cut test of this model lost acknowledged writes "
        f"({LOST_SENTENCE})."
    )
    assert f.evidence == {
        "models": ["TOSHIBA THNSNH06"],
        "knowledge_rows": ["toshiba-thnsnh060"],
        "p50_ns": None,
    }


def test_a_power_cut_row_is_matched_on_the_disks_vendor_and_model_together(monkeypatch):
    """A disk's identity is "vendor model" (fsyncbench.host.knowledge): a row written with
    the vendor in its pattern, as the VMware row is, finds a SAS disk whose vendor field
    holds the maker's name."""
    row = knowledge.KnownDevice(
        "toshiba-sas-lost",
        r"\btoshiba thnsnh06",
        "Toshiba THNSNH060GCS",
        ((knowledge.POWER_CUT, "lost: a power-cut test lost acknowledged writes"),),
        ((knowledge.POWER_CUT, "a published power-cut test"),),
    )
    table = knowledge.Knowledge(knowledge.table().version, knowledge.table().updated, (row,))
    monkeypatch.setattr(knowledge, "table", lambda: table)
    knowledge._matching.cache_clear()
    try:
        sas = dataclasses.replace(TOSHIBA, vendor="TOSHIBA", model="THNSNH060GCS")
        v = engine.judge(host(disks=(sas,), virt=BARE), [flush("fdatasync", 1_000_000)])
        assert v.decided_by == "published-power-cut-loss"
        assert _deciding(v).evidence["knowledge_rows"] == ["toshiba-sas-lost"]
    finally:
        knowledge._matching.cache_clear()


# --------------------------------------------------------------------------- virtual machines


def test_a_qemu_disk_is_told_qemus_cache_modes():
    """A guest whose disk is QEMU's emulated one: the advice names QEMU's cache modes only
    (the ``emulated`` fact of its device knowledge row)."""
    v = engine.judge(host(disks=(QEMU_DISK,), virt=VM), [flush("fdatasync", 1_000_000)])
    assert v.decided_by == "virtualized-storage"
    assert _deciding(v).advice == (
        "Check the disk's cache mode in QEMU's command line on the host: cache=unsafe "
        "ignores the guest's flushes, writeback, none, writethrough and directsync honour "
        "them." + TAIL
    )


def test_a_disk_naming_no_emulator_is_told_every_hypervisors_cache_modes():
    v = engine.judge(host(disks=(VIRTIO_DISK,), virt=VM), [flush("fdatasync", 1_000_000)])
    assert v.decided_by == "virtualized-storage"
    assert _deciding(v).advice == (
        "Check the hypervisor's disk cache mode: Firecracker's default cache_type Unsafe "
        "advertises no flush and never syncs on the host, Writeback fsyncs the backing file "
        "on every guest flush; QEMU cache=unsafe ignores flushes, its other modes honour "
        "them." + TAIL
    )


def test_a_recorded_vm_run_says_what_cannot_be_seen_from_inside():
    """The recorded run in a KVM guest (virtio disk vda, one flush per sync): each
    primitive reaches the virtual disk, and the host's part cannot be seen."""
    report = engine.rejudge(store.load_report(RUNS / "vm-20261201T113650Z.json"))
    v = report.verdict
    assert (v.path_verdict, v.decided_by, v.strength) == (
        UNVERIFIABLE,
        "virtualized-storage",
        MEASURED,
    )
    f = next(x for x in v.findings if x.code == "virtualized-storage")
    assert (f.subject, f.level) == ("write+fdatasync", WARNING)
    assert f.message == (
        "This is a virtual machine: fdatasync reaches the virtual disk (1.00 device flushes "
        "per sync counted), and whether the host persists what it gets cannot be seen from "
        "inside."
    )


def test_a_guest_known_only_from_its_disks_model_says_so():
    """No hypervisor flag, but the disk is QEMU's (a guest with its CPUID flag hidden): the
    VM is inferred from the model string, and the sentence says which disk told."""
    v = engine.judge(host(disks=(QEMU_DISK,), virt=BARE), [flush("fdatasync", 1_000_000)])
    assert (v.path_verdict, v.decided_by, v.strength) == (
        UNVERIFIABLE,
        "virtualized-storage",
        INFERRED,
    )
    f = _deciding(v)
    assert f.message == (
        "This looks like a virtual machine (inferred from the model string: sda model "
        "'ATA QEMU HARDDISK' is an emulated disk's): fdatasync goes to the virtual disk, and "
        "whether the host persists what it gets cannot be seen from inside."
    )
    assert f.evidence["virtual_disk_hint"] == "sda model 'ATA QEMU HARDDISK'"


def test_a_vm_findings_flushes_per_sync_are_given_to_three_decimals():
    """10,007 flushes for 10,000 syncs: both figures (counted, and net of other I/O, which
    no baseline estimates here) are 1.001, as the counter table rounds them."""
    r = flush("fdatasync", 1_000_000, flushes=10_007, syncs=10_000, device="vda")
    v = engine.judge(host(disks=(VIRTIO_DISK,), virt=VM), [r])
    evidence = _deciding(v).evidence
    assert evidence["flushes_per_sync"] == 1.001
    assert evidence["flushes_per_sync_net_of_other_io"] == 1.001


# --------------------------------------------------------------------------- not followed


def test_a_windows_stack_not_followed_asks_for_a_volume_whose_disks_answer():
    """A Windows volume whose disks were not read (access denied), as a stored report
    records it: the advice names the query that failed and the other way to settle it."""
    note = "the disks of \\\\.\\C: were not read ([Errno 13] Access is denied)"
    ntfs = StorageLayer(
        kind="filesystem",
        name="C:\\",
        flush="passes-down",
        depth=0,
        holds_bytes=False,
        fs_type="NTFS",
        options=("fixed", "rw"),
        source="C:\\",
        note=note,
    )
    target = StorageTarget(
        path="C:\\data\\bench",
        mount=Mount("C:\\", "NTFS", "C:\\", ("rw", "fixed")),
        chain=("\\\\.\\C:",),
        layers=(ntfs,),
    )
    windows = Host(hostname="win-host", os_name="Windows", target=target, virtualization=BARE)
    v = engine.judge(windows, [flush("FlushFileBuffers", 40_000)])
    assert (v.path_verdict, v.decided_by) == (UNVERIFIABLE, "stack-not-followed")
    f = _deciding(v)
    assert f.message == (
        "The storage under the target could not be followed to the medium holding the bytes "
        f"(NTFS C:\\; NTFS C:\\: {note}): nothing measured here can be tied to it."
    )
    assert f.advice == (
        "Run fsyncbench where the volume's disks answer IOCTL_STORAGE_QUERY_PROPERTY (a "
        "local disk; for a virtual hard disk, the volume holding its file); `fsyncbench "
        "host DIR` shows what was read. Or pull the plug: fsyncbench powercut."
    )
