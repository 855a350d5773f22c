"""The verdict engine over recorded storage stacks: counters judged on the medium holding the
bytes, RAM at the bottom, flushes dropped vs data left in a volatile cache (with the cause
named), device knowledge for fast flushes, verdict strength and disagreeing evidence. Recorded
facts only; the stacks themselves are built for real in test_real_stacks.py."""

from __future__ import annotations

from factories import BARE, VM, flush
from factories import host as simple_host

from fsyncbench.host.layers import disk_layer, filesystem_layer
from fsyncbench.judge import devices, engine, stack
from fsyncbench.model import (
    FLUSH_FSYNCS_BACKING_FILE,
    FLUSH_PASSES_DOWN,
    HONEST_FLUSH,
    INFERRED,
    MEASURED,
    NO_FLUSH,
    UNVERIFIABLE,
    VOLATILE_CACHE,
    BlockDevice,
    FlushDelta,
    Host,
    Mount,
    StorageLayer,
    StorageTarget,
    Virtualization,
)
from fsyncbench.report import findings_text

VDA = BlockDevice(
    "vda", rotational=True, write_cache="write back", transport="virtio", has_flush_counters=True
)
LOOP0 = BlockDevice(
    "loop0", rotational=False, write_cache="write back", transport="loop", has_flush_counters=True
)


def stacked(layers, virt=BARE, declared=()) -> Host:
    disks = tuple(layer.device for layer in layers if layer.holds_bytes and layer.device)
    top = next(layer for layer in layers if layer.fs_type)
    mount = Mount(top.name, top.fs_type, top.source or "/dev/x", top.options)
    return Host(
        hostname="h",
        os_name="Linux",
        virtualization=virt,
        target=StorageTarget(
            path=top.name,
            mount=mount,
            layers=tuple(layers),
            disks=disks,
            chain=tuple(layer.name for layer in layers if layer.device),
            declared=tuple(declared),
        ),
    )


def fs(mount_point, fs_type="ext4", source="/dev/x", options=("rw",), depth=0):
    return filesystem_layer(Mount(mount_point, fs_type, source, tuple(options)), depth)


def loop(name="loop0", depth=1, device=LOOP0):
    return StorageLayer(
        "loop", name, FLUSH_FSYNCS_BACKING_FILE, depth, device=device, note="backing file /img"
    )


def counted(p50_ns, deltas, syncs=1000, primitive="fdatasync"):
    r = flush(primitive, p50_ns, syncs=syncs)
    return r.__class__(**{**r.__dict__, "device_flushes": tuple(deltas)})


def deciding(v):
    return next(f for f in v.findings if f.code == v.decided_by and f.stance == "decides")


def test_loop_on_tmpfs_is_no_flush_and_its_loop_counters_prove_nothing():
    h = stacked([fs("/mnt/img"), loop(), fs("/dev/shm", "tmpfs", "tmpfs", depth=2)], virt=VM)
    r = counted(40_000, [FlushDelta("loop0", 1000, 20, 2000)])
    v = engine.judge(h, [r])
    assert (v.path_verdict, v.decided_by, v.strength) == (NO_FLUSH, "ram-backed-storage", MEASURED)
    assert "ext4 /mnt/img → loop0 → tmpfs /dev/shm (RAM)" in deciding(v).message
    above = next(f for f in v.findings if f.code == "flushes-counted-above-media")
    assert above.evidence["per_result"] == {"write+fdatasync": {"loop0": 1000}}
    # the same counters with the loop device taken as the disk would have said honest
    assert "flushes-reach-device" not in {f.code for f in v.findings}


def test_zram_is_no_flush_even_though_it_claims_write_through():
    zram = BlockDevice(
        "zram0",
        rotational=False,
        write_cache="write through",
        transport="zram",
        has_flush_counters=True,
    )
    h = stacked([fs("/z", source="/dev/zram0"), disk_layer(zram, 1)], virt=VM)
    v = engine.judge(h, [counted(13_000, [FlushDelta("zram0", 0, 0, 1000)])])
    assert (v.path_verdict, v.decided_by) == (NO_FLUSH, "ram-backed-storage")
    # RAM media: no device-class or VM signal is offered as disagreeing evidence
    assert {f.code for f in v.findings if f.stance == "disagrees"} == set()


def test_flushes_lost_between_a_layer_that_got_them_and_the_disk_are_volatile_cache():
    """loop0 received a flush per sync, the disk holding its backing file none: the layers
    between stripped them, whatever they claim; the data reached the disk (writes)."""
    h = stacked([fs("/mnt"), loop(), fs("/", depth=2), disk_layer(VDA, 3)])
    r = counted(40_000, [FlushDelta("loop0", 1000, 0, 1000), FlushDelta("vda", 0, 0, 1000)])
    v = engine.judge(h, [r])
    assert (v.path_verdict, v.decided_by, v.strength) == (
        VOLATILE_CACHE,
        "flushes-stripped",
        MEASURED,
    )
    assert "loop0 received 1.00 flushes per sync" in deciding(v).message


def test_write_through_layer_over_a_write_back_disk_strips_flushes():
    """A layer claiming no write-back cache gets no flush from the block layer (blk-core
    submit_bio_noacct), so none reaches the write-back disk below: 0 flushes on the real
    leaf is dropped whatever the intermediate layer's 'write through' says."""
    nbd_like = BlockDevice("dm-0", write_cache="write through", has_flush_counters=True)
    sda = BlockDevice("sda", rotational=False, write_cache="write back", has_flush_counters=True)
    dm = StorageLayer("dm", "dm-0", "passes-down", 1, device=nbd_like)
    h = stacked([fs("/data", source="/dev/dm-0"), dm, disk_layer(sda, 2)])
    r = counted(40_000, [FlushDelta("dm-0", 0, 0, 1000), FlushDelta("sda", 0, 0, 1000)])
    v = engine.judge(h, [r])
    assert (v.path_verdict, v.decided_by) == (VOLATILE_CACHE, "flushes-stripped")
    assert "dm-0 claims a write-through cache" in deciding(v).message


def test_nobarrier_names_the_mount_option_and_is_volatile_cache_not_no_flush():
    sda = BlockDevice("sda", rotational=False, write_cache="write back", has_flush_counters=True)
    h = stacked([fs("/data", options=("rw", "nobarrier")), disk_layer(sda, 1)])
    # data written (1 write per sync), no flush sent
    v = engine.judge(h, [counted(40_000, [FlushDelta("sda", 0, 0, 1000)])])
    assert (v.path_verdict, v.decided_by) == (VOLATILE_CACHE, "barriers-disabled")
    assert "nobarrier" in deciding(v).message
    # the same without write counters (an older report): the option still names the cause
    v2 = engine.judge(h, [counted(40_000, [FlushDelta("sda", 0, 0)])])
    assert (v2.path_verdict, v2.decided_by) == (VOLATILE_CACHE, "barriers-disabled")


def test_nobarrier_on_the_filesystem_holding_a_loop_backing_file_is_found():
    h = stacked(
        [fs("/mnt"), loop(), fs("/", options=("rw", "barrier=0"), depth=2), disk_layer(VDA, 3)]
    )
    r = counted(40_000, [FlushDelta("loop0", 1000, 0, 1000), FlushDelta("vda", 0, 0, 1000)])
    v = engine.judge(h, [r])
    assert (v.path_verdict, v.decided_by) == (VOLATILE_CACHE, "barriers-disabled")


def test_nothing_written_at_sync_time_is_no_flush():
    sda = BlockDevice("sda", rotational=False, write_cache="write back", has_flush_counters=True)
    h = stacked([fs("/data"), disk_layer(sda, 1)])
    v = engine.judge(h, [counted(2_000, [FlushDelta("sda", 0, 0, 3)])])
    assert (v.path_verdict, v.decided_by) == (NO_FLUSH, "flushes-dropped")
    assert deciding(v).evidence["writes_per_sync"] == 0.003


def test_a_writes_only_disk_with_no_flush_cause_is_volatile_cache_flushes_not_sent():
    sda = BlockDevice("sda", rotational=False, write_cache="write back", has_flush_counters=True)
    h = stacked([fs("/data"), disk_layer(sda, 1)])
    v = engine.judge(h, [counted(40_000, [FlushDelta("sda", 0, 0, 1000)])])
    assert (v.path_verdict, v.decided_by) == (VOLATILE_CACHE, "flushes-not-sent")


def test_apple_m1_nvme_with_deferred_flushes_is_volatile_cache_by_device_floor():
    """Bare metal, Asahi's apple-nvme deferring flushes: 83 µs per write+flush on a
    write-back consumer NVMe without power-loss protection (a flush to NAND there takes
    17-18 ms, Jens Axboe's 'defer cache flushes' commit)."""
    nvme = BlockDevice(
        "nvme0n1",
        model="APPLE SSD AP0512Q",
        rotational=False,
        write_cache="write back",
        transport="nvme",
        has_flush_counters=True,
    )
    h = stacked([fs("/", source="/dev/nvme0n1p5"), disk_layer(nvme, 1)])
    v = engine.judge(h, [counted(83_000, [FlushDelta("nvme0n1", 1000, 10, 1000)])])
    assert (v.path_verdict, v.decided_by, v.strength) == (
        VOLATILE_CACHE,
        "flush-below-device-floor",
        INFERRED,
    )
    assert deciding(v).evidence["floor_ns"] == 150_000
    assert "power-loss protection" in deciding(v).evidence["device_class"]


def test_fast_flush_is_plausible_on_a_plp_family_a_write_through_drive_or_when_declared():
    def judge(model, cache, declared=()):
        d = BlockDevice(
            "nvme0n1", model=model, rotational=False, write_cache=cache, has_flush_counters=True
        )
        h = stacked([fs("/"), disk_layer(d, 1)], declared=declared)
        return engine.judge(h, [counted(30_000, [FlushDelta("nvme0n1", 1000, 10, 1000)])])

    plp = judge("SAMSUNG MZQL2960HCJR-00A07", "write back")  # PM9A3
    assert (plp.path_verdict, plp.decided_by, plp.strength) == (
        HONEST_FLUSH,
        "flushes-reach-device",
        INFERRED,
    )
    assert "PM9A3" in deciding(plp).evidence["fast_flush_allowed_by"]
    consumer = judge("Samsung SSD 990 PRO 2TB", "write back")
    assert consumer.path_verdict == VOLATILE_CACHE
    declared = judge("Samsung SSD 990 PRO 2TB", "write back", declared=("plp",))
    assert declared.path_verdict == HONEST_FLUSH
    assert "declared by the user" in deciding(declared).evidence["fast_flush_allowed_by"]
    no_vwc = judge("Samsung SSD 990 PRO 2TB", "write through")
    assert no_vwc.path_verdict != VOLATILE_CACHE


def test_virtualbox_guest_is_volatile_cache_inferred_from_the_default():
    vbox = BlockDevice(
        "sda",
        vendor="ATA",
        model="VBOX HARDDISK",
        rotational=True,
        write_cache="write back",
        has_flush_counters=True,
    )
    virt = Virtualization(hypervisor_flag=True, dmi_vendor="innotek GmbH", dmi_product="VirtualBox")
    h = stacked([fs("/"), disk_layer(vbox, 1)], virt=virt)
    v = engine.judge(h, [counted(900_000, [FlushDelta("sda", 1000, 100, 1000)])])
    assert (v.path_verdict, v.decided_by, v.strength) == (
        VOLATILE_CACHE,
        "hypervisor-ignores-flush",
        INFERRED,
    )
    assert "IgnoreFlush" in deciding(v).advice
    # the generic VM rule (the host's cache mode cannot be seen) points elsewhere: shown
    assert any(f.code == "virtualized-storage" and f.stance == "disagrees" for f in v.findings)


def test_only_non_standard_primitive_names_still_decide_the_path():
    """FreeBSD diskinfo -S flushes with ioctl(DIOCGFLUSH) (diskinfo.c slogbench)."""
    h = simple_host(
        disks=(BlockDevice("ada0", rotational=True, write_cache="write back"),), virt=BARE
    )
    v = engine.judge(h, [flush("DIOCGFLUSH", 8_000_000)])
    assert v.decided_by != "no-evidence"
    assert (v.path_verdict, v.decided_by) == (HONEST_FLUSH, "flush-latency-plausible")


def test_latency_only_honest_says_so_in_every_rendering():
    h = simple_host(
        disks=(
            BlockDevice(
                "nvme0n1",
                model="Samsung SSD 990 PRO 2TB",
                rotational=False,
                write_cache="write back",
            ),
        ),
        virt=BARE,
    )
    from fsyncbench import api

    v = engine.judge(h, [flush("fdatasync", 1_600_000)])
    assert (v.path_verdict, v.strength) == (HONEST_FLUSH, INFERRED)
    assert "inferred from latency only" in deciding(v).message
    report = api.build_report("run", h, [flush("fdatasync", 1_600_000)], ["fsyncbench"])
    from fsyncbench import report as report_out

    said = "Path verdict: honest_flush, inferred, not measured (decided by flush-latency-plausible)"
    assert said in " ".join(report_out.render(report, "text").split())  # wrapped at 100
    assert said.replace("_", "\\_") in report_out.render(report, "markdown")
    assert said in report_out.render(report, "html")


def test_weaker_disagreeing_signal_is_shown_not_hidden():
    h = simple_host(
        disks=(BlockDevice("vda", rotational=True, write_cache="write back", transport="virtio"),),
        virt=VM,
    )
    v = engine.judge(h, [flush("fdatasync", 300_000)])
    assert (v.path_verdict, v.decided_by) == (UNVERIFIABLE, "virtualized-storage")
    other = next(f for f in v.findings if f.code == "flush-latency-plausible")
    assert (other.stance, other.points_to, other.strength) == ("disagrees", HONEST_FLUSH, INFERRED)
    assert "[disagrees: honest_flush, inferred]" in findings_text.finding_line(other)


def test_an_old_report_whose_walk_stopped_at_a_loop_device_is_not_trusted():
    """Before stacks were recorded the walk ended at loop0 and called it the disk; its
    counters then looked like flushes reaching a bare-metal disk."""
    h = simple_host(disks=(LOOP0,), virt=BARE)
    v = engine.judge(h, [counted(40_000, [FlushDelta("loop0", 1000, 20)])])
    assert (v.path_verdict, v.decided_by) == (UNVERIFIABLE, "stack-not-followed")


def test_counters_are_read_on_the_disk_holding_the_bytes_not_the_loop_device():
    """Bare metal, a loop file on an SSD: loop0 counts what the inner filesystem sent (1 per
    sync), the SSD what reached it (1.5: the outer ext4's journal adds a pre-flush)."""
    sda = BlockDevice(
        "sda",
        model="Samsung SSD 990 PRO 2TB",
        rotational=False,
        write_cache="write back",
        has_flush_counters=True,
    )
    h = stacked([fs("/mnt"), loop(), fs("/", depth=2), disk_layer(sda, 3)])
    r = counted(1_600_000, [FlushDelta("loop0", 1000, 0, 1000), FlushDelta("sda", 1500, 900, 2000)])
    v = engine.judge(h, [r])
    assert (v.path_verdict, v.decided_by) == (HONEST_FLUSH, "flushes-reach-device")
    assert deciding(v).evidence["flushes_per_sync"] == 1.5
    assert deciding(v).evidence["flush_ms_per_flush"] == 0.6
    counters = next(f for f in v.findings if f.code == "device-flush-counters")
    assert counters.evidence["per_result"]["write+fdatasync"]["device_flushes"] == 1500
    assert counters.evidence["disks"] == ["sda"]


def _baseline(flushes_on, elapsed_ns, device="vda"):
    """The no-sync write baseline with ``flushes_on`` flushes of other I/O in its window."""
    from factories import write

    w = write(3_000)
    return w.__class__(
        **{
            **w.__dict__,
            "elapsed_ns": elapsed_ns,
            "device_flushes": (FlushDelta(device, flushes_on, 0, 0),),
        }
    )


def _timed(r, elapsed_ns):
    return r.__class__(**{**r.__dict__, "elapsed_ns": elapsed_ns})


def test_other_io_on_the_disk_cannot_fake_flushes_reaching_it():
    """Counters are device-wide: two other processes fsyncing on the same SSD add ~0.9
    flushes per sync. The no-sync baseline saw the same rate, so the counts are not taken as
    flushes reaching the disk, and the verdict falls back to what latency can say."""
    ssd = BlockDevice("sda", rotational=False, write_cache="write back", has_flush_counters=True)
    h = stacked([fs("/data"), disk_layer(ssd, 1)])
    r = _timed(counted(200_000, [FlushDelta("sda", 900, 0, 1000)]), 1_000_000_000)
    quiet = engine.judge(h, [r])
    assert quiet.decided_by == "flushes-reach-device"
    noisy = engine.judge(h, [_baseline(450, 500_000_000, "sda"), r])
    assert noisy.decided_by != "flushes-reach-device"


def test_zero_flushes_on_the_loop_device_under_a_nobarrier_filesystem_beats_disk_noise():
    """The loop device under the filesystem sees only what the filesystem sent: 0 flushes
    there is measured whatever other processes make the disk below count."""
    h = stacked(
        [fs("/mnt", options=("rw", "nobarrier")), loop(), fs("/", depth=2), disk_layer(VDA, 3)],
        virt=VM,
    )
    r = counted(40_000, [FlushDelta("loop0", 0, 0, 1000), FlushDelta("vda", 900, 50, 1900)])
    v = engine.judge(h, [r])
    assert (v.path_verdict, v.decided_by) == (VOLATILE_CACHE, "barriers-disabled")
    assert deciding(v).evidence["first_block_device_flushes_per_sync"] == 0.0


def test_nobarrier_over_a_loop_device_is_volatile_even_on_a_write_through_disk():
    """The cache right below the nobarrier filesystem is the loop device's (the host page
    cache), whatever the disk under the backing file reports."""
    wt = BlockDevice("sda", rotational=False, write_cache="write through", has_flush_counters=True)
    h = stacked(
        [fs("/mnt", options=("rw", "nobarrier")), loop(), fs("/", depth=2), disk_layer(wt, 3)]
    )
    v = engine.judge(
        h, [counted(20_000, [FlushDelta("loop0", 0, 0, 1000), FlushDelta("sda", 0, 0, 0)])]
    )
    assert (v.path_verdict, v.decided_by) == (VOLATILE_CACHE, "barriers-disabled")
    v2 = engine.judge(h, [flush("fdatasync", 20_000)])  # no counters at all
    assert (v2.path_verdict, v2.decided_by) == (VOLATILE_CACHE, "barriers-disabled")


def test_an_interposer_that_writes_without_flushing_is_named():
    """fsync replaced by sync_file_range in LD_PRELOAD: the data is written, never flushed;
    the libc-vs-syscall blocks (interleaved, so other I/O cancels) name the library even
    when background flushes keep the libc side above 0.1 per call."""
    from fsyncbench.model import Evidence, SyscallComparison

    ssd = BlockDevice("sda", rotational=False, write_cache="write back", has_flush_counters=True)
    h = stacked([fs("/data"), disk_layer(ssd, 1)])
    import dataclasses

    h = dataclasses.replace(h, ld_preload="/opt/lib/libcompat.so")
    c = SyscallComparison(
        "fdatasync", 75, "x86_64", 200, 198_000, 769_000, libc_flushes=61, syscall_flushes=242
    )
    r = counted(198_000, [FlushDelta("sda", 20, 0, 1000)])
    v = engine.judge(h, [r], Evidence(syscall_comparisons=(c,)))
    assert (v.path_verdict, v.decided_by) == (VOLATILE_CACHE, "preload-skips-flush")
    assert "/opt/lib/libcompat.so" in deciding(v).message
    assert any(f.code == "libc-sync-interposed" for f in v.findings)


def test_sync_file_range_is_not_a_durable_sync_per_commit():
    from fsyncbench.model import Pragmas, SyncTrace

    t = SyncTrace(Pragmas("DELETE", "FULL"), 20, {"sync_file_range": 80, "fdatasync": 0})
    assert t.syncs_per_commit == 0
    assert SyncTrace(Pragmas("WAL", "FULL"), 20, {"fdatasync": 20}).syncs_per_commit == 1


def test_a_legacy_report_naming_a_loop_in_its_chain_is_read_with_that_loop():
    """No recorded layers, chain (loop2,) and no disks: the loop-on-tmpfs report of an older
    version. Its loop2 counts are not media counts and the stack is not followed."""
    from fsyncbench.model import Host, Mount, StorageTarget

    h = Host(
        "h",
        "Linux",
        StorageTarget("/mnt", Mount("/mnt", "ext4", "/dev/loop2"), chain=("loop2",)),
        virtualization=VM,
    )
    v = engine.judge(h, [counted(40_000, [FlushDelta("loop2", 1000, 20, 2000)])])
    assert (v.path_verdict, v.decided_by) == (UNVERIFIABLE, "stack-not-followed")
    assert "1.00 device flushes" not in " ".join(
        f.message for f in v.findings if f.code == "virtualized-storage"
    )


def test_a_commit_rule_agrees_with_a_stronger_no_flush_instead_of_replacing_it():
    from factories import commit

    h = stacked([fs("/mnt/img"), loop(), fs("/dev/shm", "tmpfs", "tmpfs", depth=2)], virt=VM)
    results = [
        flush("fdatasync", 40_000),
        commit("DELETE", "OFF", 80_000),
        commit("DELETE", "FULL", 82_000),
    ]
    v = engine.judge(h, results)
    row = next(x for x in v.results if x.subject == "delete/full")
    assert (row.path_verdict, row.decided_by, row.strength) == (
        NO_FLUSH,
        "ram-backed-storage",
        MEASURED,
    )
    agree = next(f for f in v.findings if f.code == "sync-costs-nothing")
    assert (agree.stance, agree.strength) == ("agrees", INFERRED)
    assert "no slower than" not in agree.message  # 2 us slower: "only 2.0 us more"


def test_a_flush_no_slower_than_the_plain_write_reaches_no_device():
    from factories import write

    h = simple_host(
        disks=(BlockDevice("vda", rotational=True, write_cache="write back", transport="virtio"),),
        virt=VM,
    )
    v = engine.judge(h, [write(3_000), flush("fsync", 3_500), flush("fdatasync", 120_000)])
    by = {x.subject: x for x in v.results}
    assert (
        by["write+fsync"].path_verdict,
        by["write+fsync"].decided_by,
        by["write+fsync"].strength,
    ) == (NO_FLUSH, "flush-costs-nothing", INFERRED)
    assert by["write+fdatasync"].path_verdict == UNVERIFIABLE


def test_declarations_are_normalised_and_unknown_ones_reported():
    d = BlockDevice(
        "nvme0n1",
        model="Samsung SSD 990 PRO 2TB",
        rotational=False,
        write_cache="write back",
        has_flush_counters=True,
    )
    h = stacked([fs("/"), disk_layer(d, 1)], declared=("PLP", "nonsense"))
    v = engine.judge(h, [counted(30_000, [FlushDelta("nvme0n1", 1000, 10, 1000)])])
    assert v.path_verdict == HONEST_FLUSH
    unknown = next(f for f in v.findings if f.code == "unknown-declaration")
    assert "nonsense" in unknown.message and "PLP" not in unknown.message


def test_primitives_on_either_side_of_a_floor_are_called_out():
    """8 % apart, one each side of the 150 µs consumer-SSD floor: the report says the two
    primitives of one path disagree instead of leaving the contradiction silent."""
    d = BlockDevice(
        "nvme0n1", model="Samsung SSD 990 PRO 2TB", rotational=False, write_cache="write back"
    )
    h = simple_host(disks=(d,), virt=BARE)
    v = engine.judge(h, [flush("fdatasync", 140_700), flush("fsync", 152_200)])
    by = {x.subject: x.path_verdict for x in v.results}
    assert by == {"write+fdatasync": VOLATILE_CACHE, "write+fsync": HONEST_FLUSH}
    split = next(f for f in v.findings if f.code == "primitives-disagree")
    assert split.evidence["verdicts"] == by
    one = engine.judge(h, [flush("fdatasync", 140_700)])
    assert "primitives-disagree" not in {f.code for f in one.findings}


def test_a_stack_partly_on_ram_is_a_named_risk_not_a_certain_loss():
    """btrfs raid1 over a zram device and a disk keeps a copy on the disk; raid0 does not.
    The profile is not read, so the verdict says what is known and no more."""
    zram = BlockDevice("zram0", write_cache="write through", transport="zram")
    ssd = BlockDevice("sda", rotational=False, write_cache="write back")
    h = stacked([fs("/pool", "btrfs"), disk_layer(ssd, 1), disk_layer(zram, 1)])
    v = engine.judge(h, [flush("fdatasync", 900_000)])
    assert (v.path_verdict, v.decided_by) == (UNVERIFIABLE, "part-ram-backed-storage")
    assert deciding(v).level == "risk" and "zram0" in deciding(v).message


def test_nobarrier_directly_on_a_power_protected_disk_is_not_a_risk_but_on_a_loop_it_is():
    plp = BlockDevice(
        "sda",
        model="INTEL SSDSC2KB96",
        rotational=False,
        write_cache="write back",
        has_flush_counters=True,
    )
    on_disk = stacked([fs("/data", options=("rw", "nobarrier")), disk_layer(plp, 1)])
    r = counted(30_000, [FlushDelta("sda", 0, 0, 1000)])
    v = engine.judge(on_disk, [r])
    assert v.path_verdict == HONEST_FLUSH and "barriers-disabled" not in {
        f.code for f in v.findings
    }
    on_loop = stacked(
        [fs("/mnt", options=("rw", "nobarrier")), loop(), fs("/", depth=2), disk_layer(plp, 3)]
    )
    v2 = engine.judge(
        on_loop, [counted(30_000, [FlushDelta("loop0", 0, 0, 1000), FlushDelta("sda", 0, 0, 0)])]
    )
    assert (v2.path_verdict, v2.decided_by) == (VOLATILE_CACHE, "barriers-disabled")


def test_an_interposer_that_still_writes_agrees_and_keeps_commit_rows_volatile():
    import dataclasses

    from factories import commit

    from fsyncbench.model import Evidence, Pragmas, SyncTrace, SyscallComparison

    ssd = BlockDevice("sda", rotational=False, write_cache="write back", has_flush_counters=True)
    h = dataclasses.replace(
        stacked([fs("/data"), disk_layer(ssd, 1)]), ld_preload="/opt/lib/libcompat.so"
    )
    c = SyscallComparison(
        "fdatasync", 75, "x86_64", 200, 198_000, 769_000, libc_flushes=0, syscall_flushes=205
    )
    traces = (
        SyncTrace(
            Pragmas("WAL", "FULL"), 20, {"sync_file_range": 20}, ld_preload="/opt/lib/libcompat.so"
        ),
        SyncTrace(Pragmas("WAL", "FULL"), 20, {"fdatasync": 20}),
    )
    r = counted(198_000, [FlushDelta("sda", 0, 0, 1000)])
    v = engine.judge(
        h,
        [r, commit("WAL", "FULL", 400_000)],
        Evidence(syscall_comparisons=(c,), sync_traces=traces),
    )
    assert (v.path_verdict, v.decided_by) == (VOLATILE_CACHE, "preload-skips-flush")
    libc = next(f for f in v.findings if f.code == "libc-sync-interposed")
    assert (libc.points_to, libc.stance) == (VOLATILE_CACHE, "agrees")
    assert deciding(v).message.count("libcompat.so") == 1
    assert "LD_PRELOAD" in deciding(v).advice
    row = next(x for x in v.results if x.subject == "wal/full")
    assert (row.path_verdict, row.decided_by) == (VOLATILE_CACHE, "preload-skips-flush")
    intercepted = next(f for f in v.findings if f.code == "commit-syncs-intercepted")
    assert intercepted.stance == "disagrees"


def _o_dsync(p50_ns, deltas, syncs=1000, primitive="O_DSYNC"):
    r = counted(p50_ns, deltas, syncs, primitive)
    return r.__class__(**{**r.__dict__, "name": f"write ({primitive})", "primitive": primitive})


def test_o_dsync_writes_without_flushes_on_a_fua_disk_are_not_called_lost():
    """A disk that declares FUA may take an O_DSYNC write write-through, with no cache flush
    counted: 0 flushes with the writes arriving is no evidence of loss there."""
    fua = BlockDevice(
        "nvme0n1", rotational=False, write_cache="write back", fua=True, has_flush_counters=True
    )
    h = stacked([fs("/data"), disk_layer(fua, 1)])
    v = engine.judge(h, [_o_dsync(400_000, [FlushDelta("nvme0n1", 0, 0, 1000)])])
    assert v.path_verdict not in (VOLATILE_CACHE, NO_FLUSH)
    assert v.decided_by not in ("flushes-not-sent", "flushes-dropped")


def test_o_dsync_writes_without_flushes_on_a_disk_without_fua_are_flushes_not_sent():
    nofua = BlockDevice(
        "sda", rotational=False, write_cache="write back", fua=False, has_flush_counters=True
    )
    h = stacked([fs("/data"), disk_layer(nofua, 1)])
    v = engine.judge(h, [_o_dsync(40_000, [FlushDelta("sda", 0, 0, 1000)])])
    assert (v.path_verdict, v.decided_by) == (VOLATILE_CACHE, "flushes-not-sent")
    # the same write with nothing reaching the disk is dropped, FUA or not
    fua = BlockDevice(
        "nvme0n1", rotational=False, write_cache="write back", fua=True, has_flush_counters=True
    )
    h2 = stacked([fs("/data"), disk_layer(fua, 1)])
    v2 = engine.judge(h2, [_o_dsync(2_000, [FlushDelta("nvme0n1", 0, 0, 2)])])
    assert (v2.path_verdict, v2.decided_by) == (NO_FLUSH, "flushes-dropped")


# --- the stack reading functions themselves (fsyncbench.judge.stack), on hand-built stacks ---

SDA_WB = BlockDevice("sda", rotational=False, write_cache="write back", has_flush_counters=True)
ZRAM0 = BlockDevice("zram0", rotational=False, write_cache="write through", transport="zram")
#: A loop device whose backing file was not recorded (disk_layer: kind "loop", holds nothing).
LOOP1_UNFOLLOWED = BlockDevice("loop1", rotational=False, transport="loop")


def _partition(name="sda1", depth=1):
    return StorageLayer("partition", name, FLUSH_PASSES_DOWN, depth, device=BlockDevice(name))


def test_block_below_skips_partitions_and_layers_without_a_block_device():
    """block_below: the first block device below a layer, partitions skipped (their disk's
    cache is the one that counts) — ext4 on sda1 sends its flushes to sda's write-back cache;
    loop0's backing file sits on the ext4 "/" whose disk is vda."""
    part = _partition()
    fs_data = fs("/data", source="/dev/sda1")
    t = stacked([fs_data, part, disk_layer(SDA_WB, 2)]).target
    assert stack.device_below(t, fs_data) == "sda"
    assert stack.cache_below(t, fs_data) == "write back"
    assert stack.device_below(t, part) == "sda"

    top, lp = fs("/mnt"), loop()
    t2 = stacked([top, lp, fs("/", depth=2), disk_layer(VDA, 3)]).target
    assert stack.device_below(t2, top) == "loop0"
    assert stack.device_below(t2, lp) == "vda"
    assert stack.cache_below(t2, lp) == "write back"


def test_nothing_is_below_the_bottom_disk_or_below_a_sibling():
    """The bottom disk has no block device below it (None, not an error), and in btrfs over
    sda and zram0 the two disks are siblings (both depth 1): zram0 is not below sda."""
    sda, zram = disk_layer(SDA_WB, 1), disk_layer(ZRAM0, 1)
    t = stacked([fs("/pool", "btrfs"), sda, zram]).target
    assert stack.device_below(t, zram) is None
    assert stack.cache_below(t, zram) is None
    assert stack.device_below(t, sda) is None
    assert stack.cache_below(t, sda) is None


def test_top_block_device_is_none_on_tmpfs_and_the_loop_device_over_a_backing_file():
    """tmpfs holds the bytes in RAM with no block device under it (tmpfs.rst)."""
    assert stack.top_block_device(stacked([fs("/dev/shm", "tmpfs", "tmpfs")]).target) is None
    t = stacked([fs("/mnt"), loop(), fs("/", depth=2), disk_layer(VDA, 3)]).target
    assert stack.top_block_device(t) == "loop0"


def test_a_fully_walked_stack_has_nothing_unfollowed():
    """Every layer above reaches the disk holding the bytes: ext4 on a disk, a loop file on
    ext4 on vda, and a FUSE mount (its flush goes to the daemon: forwarded, not stuck)."""
    assert stack.unfollowed(stacked([fs("/data"), disk_layer(SDA_WB, 1)]).target) == []
    t = stacked([fs("/mnt"), loop(), fs("/", depth=2), disk_layer(VDA, 3)]).target
    assert stack.unfollowed(t) == []
    assert stack.unfollowed(stacked([fs("/fuse", "fuse.sshfs", "sshfs#h:/")]).target) == []


def test_a_loop_device_without_its_backing_file_is_unfollowed_beside_a_disk():
    """btrfs over sda and a loop device whose backing file was not recorded: the loop device
    is stuck whichever order the walk listed the two siblings in (a sibling at the same depth
    is not below it)."""
    lp = disk_layer(LOOP1_UNFOLLOWED, 1)
    after = stacked([fs("/pool", "btrfs"), disk_layer(SDA_WB, 1), lp]).target
    assert stack.unfollowed(after) == [lp]
    before = stacked([fs("/pool", "btrfs"), lp, disk_layer(SDA_WB, 1)]).target
    assert stack.unfollowed(before) == [lp]


def test_labels_name_ram_partitions_volatile_overlays_and_barrier_options():
    """The short phrases of stack.label's docstring (``ext4 /data``, ``loop0``,
    ``tmpfs /dev/shm (RAM)``), the RAM mark on a RAM block device (zram.rst), the volatile
    overlay (overlayfs.rst "Volatile mount") and the nobarrier options (ext4.rst), sorted."""
    assert stack.label(fs("/data")) == "ext4 /data"
    assert stack.label(loop()) == "loop0"
    assert stack.label(fs("/dev/shm", "tmpfs", "tmpfs")) == "tmpfs /dev/shm (RAM)"
    assert stack.label(disk_layer(ZRAM0, 1)) == "zram0 (RAM)"
    assert stack.label(disk_layer(SDA_WB, 1)) == "sda"
    assert stack.label(_partition()) == "sda1"
    assert (
        stack.label(fs("/merged", "overlay", "overlay", ("rw", "volatile")))
        == "overlay /merged (volatile)"
    )
    assert stack.label(fs("/merged", "overlay", "overlay", ("rw",))) == "overlay /merged"
    assert stack.label(fs("/data", options=("rw", "nobarrier"))) == "ext4 /data (nobarrier)"
    assert (
        stack.label(fs("/data", "xfs", options=("rw", "nobarrier", "barrier=0")))
        == "xfs /data (barrier=0, nobarrier)"
    )


def test_chain_text_joins_siblings_with_plus_and_says_unknown_for_no_stack():
    """chain_text's docstring: top first with arrows, dm/md/btrfs siblings joined with ``+``;
    a target with no mount, disk or layer recorded is "unknown"."""
    t = stacked([fs("/pool", "btrfs"), disk_layer(SDA_WB, 1), disk_layer(ZRAM0, 1)]).target
    assert stack.chain_text(t) == "btrfs /pool → sda + zram0 (RAM)"
    t2 = stacked([fs("/mnt"), loop(), fs("/dev/shm", "tmpfs", "tmpfs", depth=2)]).target
    assert stack.chain_text(t2) == "ext4 /mnt → loop0 → tmpfs /dev/shm (RAM)"
    assert stack.chain_text(StorageTarget(path="/x")) == "unknown"


# --- device classes and why a fast flush is allowed (fsyncbench.judge.devices) ---


def _ssd_class(model, cache, declared=()):
    d = BlockDevice(
        "nvme0n1", model=model, rotational=False, write_cache=cache, has_flush_counters=True
    )
    return devices.device_class(
        stacked([fs("/"), disk_layer(d, 1)], declared=declared), "fdatasync"
    )


def test_why_a_fast_flush_is_allowed_is_said_exactly():
    """The three reasons an SSD may acknowledge a flush in ~15 µs (PLP floor, DESIGN.md
    signal 7): the user's --assume plp, a 'write through' queue/write_cache (sysfs-block ABI;
    NVMe: the VWC bit), a vendor-documented PLP family (Samsung PM9A3, model MZQL2...)."""
    name = "SSD with power-loss protection or no volatile write cache"
    declared = _ssd_class("Samsung SSD 990 PRO 2TB", "write back", declared=("plp",))
    assert (declared.name, declared.floor_ns, declared.plp) == (
        name,
        15_000,
        "power-loss protection declared by the user (--assume plp), not verified",
    )
    through = _ssd_class("Samsung SSD 990 PRO 2TB", "write through")
    assert (through.name, through.floor_ns, through.plp) == (
        name,
        15_000,
        "the disk reports no volatile write cache (queue/write_cache 'write through'; "
        "for NVMe the kernel sets it from the controller's VWC bit)",
    )
    family = _ssd_class("SAMSUNG MZQL2960HCJR-00A07", "write back")
    assert (family.name, family.floor_ns, family.plp) == (
        name,
        15_000,
        "a drive family documented with power-loss protection: "
        "https://semiconductor.samsung.com/ssd/datacenter-ssd/ (Samsung PM883/PM893/"
        "PM983/PM9A3 data sheets: 'Power Loss Protection'); PM9A3",
    )
    consumer = _ssd_class("Samsung SSD 990 PRO 2TB", "write back")
    assert (consumer.name, consumer.floor_ns, consumer.plp) == (
        "SSD with a volatile write cache and no known power-loss protection",
        150_000,
        "",
    )


def test_the_apple_floor_needs_both_the_apple_fabric_and_f_fullfsync():
    """Apple SSD with F_FULLFSYNC about 1 ms (DESIGN.md signal 7); a plain fsync on macOS
    does not ask the drive to flush (fcntl(2) F_FULLFSYNC), so it is held to the 10 µs floor
    of anything with real block I/O, not to the Apple one."""
    h = simple_host(os_name="Darwin", fs_type="apfs", darwin={"BusProtocol": "Apple Fabric"})
    full = devices.device_class(h, "F_FULLFSYNC")
    assert (full.name, full.floor_ns) == ("Apple internal SSD (F_FULLFSYNC)", 1_000_000)
    plain = devices.device_class(h, "fsync")
    assert (plain.name, plain.floor_ns, plain.plp) == ("block device", 10_000, "")
