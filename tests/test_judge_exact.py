"""The verdict engine, the device classes and the rule facts, exactly where the broader
judge tests leave them loose: which commit stands in for a primitive when no raw flush was
measured (and which never does), the order the findings come in, the strength a path decided
without any result carries, which commit rows take which flush's verdict, the fullfsync
mapping applied only to commits that really used fullfsync, what ``rejudge`` keeps and adds,
the floors and reasons of the device classes behind a RAID controller's cache (read or
declared), ``nobarrier`` over a cache that survives a power cut, a disk's identity as the
device knowledge table matches it, and the words of the "flushes per sync" figure every
counter finding states.

Every fact here is written by hand (tests/factories.py): no measurement, no I/O."""

from __future__ import annotations

import dataclasses

from factories import BARE, PROTECTED, WB_SSD, commit, flush, host, write

from fsyncbench.host import known
from fsyncbench.judge import devices, engine, rule_facts
from fsyncbench.model import (
    HONEST_FLUSH,
    INFERRED,
    MEASURED,
    NO_FLUSH,
    VOLATILE_CACHE,
    BlockDevice,
    FlushDelta,
    RaidController,
    Report,
    ResultVerdict,
)

#: A flush on a consumer SSD (150 us floor) that took 2 ms: plausible, honest by latency.
SLOW_NS = 2_000_000
#: 20 us: below that floor, acknowledged from a volatile cache.
FAST_NS = 20_000


def _stances(v):
    return [(f.code, f.subject, f.strength, f.points_to, f.stance) for f in v.findings]


def _rows(v):
    return [
        (r.subject, r.path_verdict, r.config_durable, r.decided_by, r.strength) for r in v.results
    ]


# --------------------------------------------------------------------------- the engine


def test_a_path_judged_without_any_result_keeps_its_deciding_strength_and_stances():
    """No result at all (an audit of a tmpfs directory that measured nothing): the path's
    own rules decide, with the strength of the deciding finding (measured: tmpfs has no
    block device), and every weaker signal follows once, marked against that verdict."""
    v = engine.judge(host(fs_type="tmpfs", ld_preload="libeatmydata.so"), [])
    assert (v.path_verdict, v.decided_by, v.strength) == (NO_FLUSH, "no-flush-filesystem", MEASURED)
    assert _stances(v) == [
        ("no-flush-filesystem", "path", MEASURED, NO_FLUSH, "decides"),
        ("ram-backed-storage", "path", MEASURED, NO_FLUSH, "agrees"),
        ("sync-disabled-by-preload", "path", INFERRED, NO_FLUSH, "agrees"),
    ]


def test_without_raw_flushes_the_journals_stand_in_leads_the_findings():
    """macOS commits with and without fullfsync, no raw primitive: each primitive's first
    commit stands in for it, and the one the journal relies on (F_FULLFSYNC, MAIN_PRIMITIVES)
    is judged first, so its deciding finding leads the list whatever the results' order."""
    mac = host(os_name="Darwin", fs_type="apfs", disks=(WB_SSD,))
    plain = commit("WAL", "FULL", 30_000, primitive="fsync", fullfsync=False)
    full = commit("WAL", "FULL", SLOW_NS, primitive="F_FULLFSYNC", fullfsync=True)
    v = engine.judge(mac, [plain, full])
    assert (v.path_verdict, v.decided_by) == (HONEST_FLUSH, "flush-latency-plausible")
    assert [(f.code, f.subject, f.stance) for f in v.findings] == [
        ("flush-latency-plausible", "wal/full/fullfsync", "decides"),
        ("macos-fsync-stops-at-cache", "wal/full/no-fullfsync", "decides"),
        ("config-not-durable", "wal/full/no-fullfsync", ""),
    ]
    # results keep their order
    assert [r.subject for r in v.results] == ["wal/full/no-fullfsync", "wal/full/fullfsync"]


def test_a_commit_that_syncs_only_at_checkpoints_never_stands_in_beside_one_that_syncs():
    """WAL/NORMAL ("fdatasync (checkpoints only)") issues no sync in most commits, so its
    20 us says nothing of the flush: only the WAL/FULL commit stands in for fdatasync, and
    the WAL/NORMAL row takes fdatasync's verdict (its base primitive), not a floor finding of
    its own."""
    h = host(disks=(WB_SSD,), virt=BARE)
    normal = commit("WAL", "NORMAL", FAST_NS, primitive="fdatasync (checkpoints only)")
    full = commit("WAL", "FULL", SLOW_NS)
    v = engine.judge(h, [normal, full])
    assert _rows(v) == [
        ("wal/normal", HONEST_FLUSH, False, "flush-latency-plausible", INFERRED),
        ("wal/full", HONEST_FLUSH, True, "flush-latency-plausible", INFERRED),
    ]
    assert [f.code for f in v.findings if f.stance == "decides"] == ["flush-latency-plausible"]
    assert "flush-below-device-floor" not in [f.code for f in v.findings]


def test_when_every_syncing_commit_syncs_only_at_checkpoints_the_first_alone_stands_in():
    """macOS WAL/NORMAL with and without fullfsync: both sync only at checkpoints, so the
    first of them stands in for the path and the other row takes the path's verdict (its own
    primitive was never judged) rather than a verdict from its own commits' latency."""
    mac = host(os_name="Darwin", fs_type="apfs", disks=(WB_SSD,))
    first = commit(
        "WAL", "NORMAL", SLOW_NS, primitive="F_FULLFSYNC (checkpoints only)", fullfsync=True
    )
    second = commit("WAL", "NORMAL", FAST_NS, primitive="fsync (checkpoints only)", fullfsync=False)
    v = engine.judge(mac, [first, second])
    assert (v.path_verdict, v.decided_by) == (HONEST_FLUSH, "flush-latency-plausible")
    assert [(r.subject, r.path_verdict, r.decided_by) for r in v.results] == [
        ("wal/normal/fullfsync", HONEST_FLUSH, "flush-latency-plausible"),
        ("wal/normal/no-fullfsync", HONEST_FLUSH, "flush-latency-plausible"),
    ]
    assert [f.subject for f in v.findings if f.stance == "decides"] == ["wal/normal/fullfsync"]


def test_a_commit_takes_the_verdict_of_the_flush_with_its_own_primitive_name():
    """A volume that refuses F_FULLFSYNC: SQLite falls back to fsync, and the run measures
    that fallback as its own flush ("fsync (F_FULLFSYNC refused: ENOTSUP)") beside plain
    fsync. The fullfsync commit makes the fallback call, so it takes that flush's verdict,
    not plain fsync's (whose counters, in this hand-written report, show every flush dropped)."""
    refused = "fsync (F_FULLFSYNC refused: ENOTSUP)"
    mac = host(os_name="Darwin", fs_type="exfat", disks=(WB_SSD,))
    results = [
        flush("fsync", FAST_NS, flushes=0),
        flush(refused, SLOW_NS),
        commit("WAL", "FULL", SLOW_NS, primitive=refused, fullfsync=True),
    ]
    v = engine.judge(mac, results)
    rows = {r.subject: r for r in v.results}
    assert rows["write+fsync"] == ResultVerdict(
        "write+fsync", NO_FLUSH, None, "flushes-dropped", MEASURED
    )
    fallback = rows[f"write+{refused}"]
    assert (fallback.path_verdict, fallback.decided_by) != (NO_FLUSH, "flushes-dropped")
    assert rows["wal/full/fullfsync"] == ResultVerdict(
        "wal/full/fullfsync", fallback.path_verdict, False, fallback.decided_by, fallback.strength
    )


def test_a_primitive_left_unnamed_in_a_hand_written_report_is_judged_not_a_crash():
    """docs/report-schema.md requires ``primitive`` but not a name in it: a hand-written
    commit whose primitive is "" takes the path's verdict (a hand-written report is judged
    like a live run: fsyncbench.judge.engine)."""
    h = host(disks=(WB_SSD,), virt=BARE)
    v = engine.judge(h, [flush("fdatasync", SLOW_NS), commit("WAL", "FULL", SLOW_NS, primitive="")])
    assert _rows(v) == [
        ("write+fdatasync", HONEST_FLUSH, None, "flush-latency-plausible", INFERRED),
        ("wal/full", HONEST_FLUSH, True, "flush-latency-plausible", INFERRED),
    ]


# ---- the fullfsync mapping applied to each commit (commit_rules.fullfsync_mapping)


def _mac_mapping(*commits):
    """macOS with both primitives measured 3 ms apart from 100 us (F_FULLFSYNC, the
    barrier) and the given commits."""
    return engine.judge(
        host(os_name="Darwin", fs_type="apfs"),
        [flush("F_FULLFSYNC", 3_000_000), flush("F_BARRIERFSYNC", 100_000), *commits],
    )


def test_a_fullfsync_commit_recorded_with_only_its_requested_pragmas_is_mapped_too():
    """A report that recorded the pragmas asked for but not those read back (``effective``
    null, as a hand-written report may): its WAL/FULL fullfsync commit labelled F_FULLFSYNC
    costs a barrier's 150 us, so it is F_BARRIERFSYNC and not durable, as with both
    recorded."""
    c = commit("WAL", "FULL", 150_000, primitive="F_FULLFSYNC", fullfsync=True)
    for recorded in (c, dataclasses.replace(c, effective=None)):
        v = _mac_mapping(recorded)
        (row,) = [r for r in v.results if r.subject == "wal/full/fullfsync"]
        assert row.config_durable is False
        assert "fullfsync-mapping-contradicts-label" in [f.code for f in v.findings]
    # and with only the pragmas read back recorded
    v = _mac_mapping(dataclasses.replace(c, requested=None))
    assert [r.config_durable for r in v.results if r.subject == "wal/full/fullfsync"] == [False]


def test_a_commit_that_fell_back_to_fsync_keeps_its_fallback_whatever_the_mapping():
    """The WAL/FULL fullfsync commit costs F_FULLFSYNC's 3 ms (measured F_FULLFSYNC,
    durable); a TRUNCATE/FULL fullfsync commit that recorded SQLite's fsync fallback (the
    volume refused F_FULLFSYNC for it) is not relabelled by that measurement: not durable,
    for the fallback's reason."""
    wal = commit("WAL", "FULL", 3_100_000, primitive="F_FULLFSYNC", fullfsync=True)
    fellback = commit(
        "TRUNCATE",
        "FULL",
        3_100_000,
        primitive="fsync (F_FULLFSYNC refused: ENOTSUP)",
        fullfsync=True,
    )
    v = _mac_mapping(wal, fellback)
    durable = {r.subject: r.config_durable for r in v.results if r.config_durable is not None}
    assert durable == {"wal/full/fullfsync": True, "truncate/full/fullfsync": False}
    (why,) = [f for f in v.findings if f.code == "config-not-durable"]
    assert why.subject == "truncate/full/fullfsync"
    assert "the volume refused F_FULLFSYNC, so SQLite fell back to fsync" in why.message


# ---- rejudge


def _report(h, results, verdict, notes=()):
    return Report(
        1,
        "0.0.0",
        "audit",
        "2024-05-01T12:00:00Z",
        ("fsyncbench", "audit"),
        h,
        tuple(results),
        verdict,
        notes=tuple(notes),
    )


def test_rejudge_keeps_old_notes_and_names_every_configuration_that_changed():
    """The overall verdict stands, two configurations' recorded verdicts do not: the note
    names both, "; "-separated, after the notes the report had."""
    h = host(fs_type="tmpfs")
    results = (flush("fdatasync", 1_000), commit("WAL", "FULL", 2_000), commit("WAL", "OFF", 2_000))
    judged = engine.judge(h, results)
    edited = tuple(
        dataclasses.replace(v, path_verdict=HONEST_FLUSH) if v.subject.startswith("wal/") else v
        for v in judged.results
    )
    report = _report(h, results, dataclasses.replace(judged, results=edited), ["an old note"])
    again = engine.rejudge(report)
    assert again.verdict == judged
    assert again.notes == (
        "an old note",
        "the report recorded other verdicts for some configurations; re-derived from its facts "
        f"(device knowledge version {judged.device_knowledge_version}): "
        "wal/full honest_flush -> no_flush; wal/off honest_flush -> no_flush",
    )


def test_rejudge_returns_the_host_completed_by_the_device_knowledge_table():
    """A RAID volume recorded without its controller (a report from before the row): the
    re-judged report shows the controller its model names, as the verdict reads it."""
    volume = BlockDevice("sda", vendor="DELL", model="PERC H730P Mini", rotational=True)
    h = host(disks=(volume,), virt=BARE)
    results = (flush("fdatasync", SLOW_NS),)
    report = _report(h, results, engine.judge(h, results))
    again = engine.rejudge(report)
    completed = known.apply(h)
    assert completed != h  # the table adds the controller
    assert again.host == completed
    assert again.host.target.disks[0].controller is not None
    assert again.verdict == engine.judge(h, results)


# --------------------------------------------------------------------------- device classes

PROTECTED_TEXT = (
    "the RAID controller's write-back cache has its backup power ready (CacheVault CVPM05 "
    "Optimal; read with storcli64 /call show all): read, not verified by a power cut"
)


def _volume(controller, rotational=True):
    return BlockDevice(
        "sda", vendor="AVAGO", model="MR9361-8i", rotational=rotational, controller=controller
    )


def test_a_protected_controller_cache_is_the_floor_and_the_reason():
    """Read protected: 15 us, and the class says why (the controller's backup power as read);
    the medium alone (cache_in_front False) keeps its spinning-disk floor."""
    h = host(disks=(_volume(PROTECTED),), virt=BARE)
    assert devices.controller_protection([_volume(PROTECTED)]) == PROTECTED_TEXT
    assert devices.device_class(h, "fdatasync") == devices.DeviceClass(
        "disk behind a protected write-back cache",
        devices.PLP_SSD_FLOOR_NS,
        devices.LATENCY_BANDS_DOC,
        PROTECTED_TEXT,
    )
    assert devices.device_class(h, "fdatasync", cache_in_front=False) == devices.DeviceClass(
        "spinning disk", devices.SPINNING_FLOOR_NS, devices.LATENCY_BANDS_DOC
    )


def test_drive_caches_enabled_behind_the_controller_leave_it_unprotected():
    """The drives' own caches behind the controller are not protected (CONTROLLER_CACHE_DOC):
    with them enabled the controller's backup power does not make the path safe."""
    enabled = dataclasses.replace(PROTECTED, drive_cache="enabled")
    assert devices.controller_protection([_volume(enabled)]) == ""
    h = host(disks=(_volume(enabled),), virt=BARE)
    assert devices.device_class(h, "fdatasync").floor_ns == devices.SPINNING_FLOOR_NS
    # not read (None) or disabled: protected
    for words in (None, "disabled"):
        ok = dataclasses.replace(PROTECTED, drive_cache=words)
        assert devices.controller_protection([_volume(ok)]) == PROTECTED_TEXT


def _declared(word, controller):
    h = host(disks=(_volume(controller),), virt=BARE)
    return dataclasses.replace(h, target=dataclasses.replace(h.target, declared=(word,)))


def test_plp_declared_on_a_raid_volume_is_the_controller_caches_word():
    """``--assume plp`` on a volume of a RAID controller with a cache (its backup power not
    read) declares that cache protected: the class behind a protected cache, the reason in
    the user's words; ``--assume protected-cache`` alike."""
    unread = RaidController("megaraid_sas", "Broadcom/LSI MegaRAID (also Dell PERC, Intel RAID)")
    for word in ("plp", "protected-cache"):
        h = _declared(word, unread)
        said = (
            "the write-back cache in front of the disks is declared protected by the user "
            f"(--assume {word}), not verified"
        )
        assert devices.declared_cache_protection(h) == said
        assert devices.device_class(h, "fdatasync") == devices.DeviceClass(
            "disk behind a protected write-back cache",
            devices.PLP_SSD_FLOOR_NS,
            devices.LATENCY_BANDS_DOC,
            said,
        )


def test_plp_declared_on_a_disk_without_a_controller_cache_is_not_the_caches_word():
    """An HBA without a cache of its own, and a plain disk: ``--assume plp`` speaks of the
    drive, so no cache in front is declared (the drive's own declaration applies)."""
    hba = RaidController("mpt3sas", "Broadcom SAS HBA", has_cache=False)
    for controller in (hba, None):
        h = _declared("plp", controller)
        assert devices.declared_cache_protection(h) == ""
        assert devices.device_class(h, "fdatasync") == devices.DeviceClass(
            "spinning disk with power-loss protection declared",
            devices.PLP_SSD_FLOOR_NS,
            devices.LATENCY_BANDS_DOC,
            devices.DECLARED_PLP_REASON,
        )


def test_a_disks_identity_is_its_vendor_and_model_together():
    """The device knowledge table matches ``"vendor model"`` (knowledge.identity), so a
    drive named in the vendor field of a hand-written report (model left empty) is
    recognised by the device classes as by the table: a Seagate Laptop SSHD keeps the
    consumer-SSD floor of its NAND cache, a Micron 5300 its power-loss protection."""
    sshd = BlockDevice("sda", vendor="ST1000LM014-1EJ164", rotational=True)
    h = host(disks=(sshd,), virt=BARE)
    assert devices.hybrid(sshd) is not None
    cls = devices.device_class(h, "fdatasync")
    assert (cls.name, cls.floor_ns) == (
        "hybrid drive (SSHD) whose NAND cache may answer a flush",
        devices.CONSUMER_SSD_FLOOR_NS,
    )
    micron = BlockDevice(
        "sdb", vendor="Micron_5300_MTFDDAK960TDS", rotational=False, write_cache="write back"
    )
    cls = devices.device_class(host(disks=(micron,), virt=BARE), "fdatasync")
    assert (cls.floor_ns, cls.plp) == (
        devices.PLP_SSD_FLOOR_NS,
        "a drive family documented with power-loss protection: "
        + str(devices.plp_source(micron.vendor, None)),
    )
    assert devices.plp_source(micron.vendor, None) is not None


# --------------------------------------------------------------------------- rule facts


def _counted(syncs, flushes, elapsed_ns, base_flushes=None, base_elapsed_ns=1_000):
    """A fdatasync flush result with its media counters, and (``base_flushes``) the no-sync
    baseline whose counter window sets the background rate."""
    r = dataclasses.replace(
        flush("fdatasync", SLOW_NS, flushes=flushes, syncs=syncs), elapsed_ns=elapsed_ns
    )
    results = [r]
    if base_flushes is not None:
        base = dataclasses.replace(
            write(5_000),
            elapsed_ns=base_elapsed_ns,
            device_flushes=(FlushDelta("sda", base_flushes, 0),),
        )
        results.insert(0, base)
    return rule_facts.Facts(host(disks=(WB_SSD,), virt=BARE), tuple(results)), r


def test_flushes_per_sync_words_without_a_counted_ratio_are_empty():
    f, r = _counted(10, 10, 1_000)  # below COUNTER_MIN_SYNCS: not counted
    assert rule_facts.flushes_per_sync_words(f, r) == ""
    f, r = _counted(1000, None, 1_000)  # no counter
    assert rule_facts.flushes_per_sync_words(f, r) == ""


def test_flushes_per_sync_words_when_other_io_could_explain_most_of_them():
    """The baseline saw 1 flush per 1,000 ns; over this result's 600,000 ns that is 600
    flushes for 1,000 syncs: 0.60 per sync, above REACHED_FLUSH_RATIO, so no net figure."""
    f, r = _counted(1000, 1030, 600_000, base_flushes=1)
    assert rule_facts.flushes_per_sync_words(f, r) == (
        "1.03 device flushes per sync counted (other I/O's flushes, estimated at 0.60 per "
        "sync from the no-sync baseline's rate, could explain most of them)"
    )


def test_flushes_per_sync_words_name_a_background_that_shows_in_two_decimals():
    """The correction is named once it shows in the figures' two decimals: 0.005 flushes
    per sync prints as 0.01; 0.004 prints as 0.00 and is left out."""
    f, r = _counted(1000, 1038, 5_000, base_flushes=1)  # 5 background flushes: 0.005
    assert rule_facts.flushes_per_sync_words(f, r) == (
        "1.04 device flushes per sync counted (1.03 net of other I/O's 0.01, estimated from "
        "the no-sync baseline's rate)"
    )
    f, r = _counted(1000, 1038, 4_000, base_flushes=1)  # 4: 0.004
    assert rule_facts.flushes_per_sync_words(f, r) == "1.04 device flushes per sync counted"


def test_nobarrier_over_a_cache_that_survives_a_power_cut_is_the_case_the_option_exists_for():
    """``nobarrier`` drops the flushes, which only matters where the disk's cache is volatile:
    a disk that reports a battery-backed cache (Windows NVCacheEnabled, as a hand-written
    report records it), a RAID volume whose controller cache reads protected, or one the user
    declared protected, is not judged barriers-disabled; a plain write-back disk is."""
    unread = RaidController("megaraid_sas", "Broadcom/LSI MegaRAID (also Dell PERC, Intel RAID)")
    cases = {
        "plain": (BlockDevice("sda", rotational=True, write_cache="write back"), ()),
        "reported": (
            BlockDevice(
                "sda", rotational=True, write_cache="write back", power_protection=("nv-cache",)
            ),
            (),
        ),
        "read": (dataclasses.replace(_volume(PROTECTED), write_cache="write back"), ()),
        "declared": (
            dataclasses.replace(_volume(unread), write_cache="write back"),
            ("protected-cache",),
        ),
    }
    decided = {}
    for name, (disk, declared) in cases.items():
        h = host(disks=(disk,), virt=BARE, mount_options=("rw", "nobarrier"))
        h = dataclasses.replace(h, target=dataclasses.replace(h.target, declared=declared))
        v = engine.judge(h, [flush("fdatasync", 200_000)])
        decided[name] = (v.path_verdict, v.decided_by)
    assert decided == {
        "plain": (VOLATILE_CACHE, "barriers-disabled"),
        "reported": (HONEST_FLUSH, "flush-latency-plausible"),
        "read": (HONEST_FLUSH, "controller-cache-protected"),
        "declared": (HONEST_FLUSH, "controller-cache-declared"),
    }
