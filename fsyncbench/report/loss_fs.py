"""Which filesystems and mount options can leave the states of each persistence model
(``fsyncbench powerloss``, issue 31 item 5): a model's figures apply in full to storage
that can produce all its states, and are an upper bound on storage that never produces
some of them. Shown beside the loss table (:func:`filesystems_blocks`) and in
docs/powerloss.md.

Each row is marked with its sources; "inferred" marks what follows from a documented
mechanism rather than from a sentence that says it:

- fsync(2): "the call blocks until the device reports that the transfer has completed";
  nothing is promised for data not synced (https://man7.org/linux/man-pages/man2/fsync.2.html).
- ext4 (https://docs.kernel.org/filesystems/ext4/journal.html): by default (data=ordered)
  "ext4 ... only writes filesystem metadata through the journal. This means that file data
  blocks are /not/ guaranteed to be in any consistent state after a crash"; data=journal:
  "all data and metadata are written to disk through the journal"; data=writeback: "dirty
  data blocks are not flushed to the disk before the metadata"; the journal "can be
  replayed all the way to the latest commit record" (so metadata persists in commit order).
- The page cache holds a file page with every write made to it and writes it back whole,
  so a later write to a page cannot persist without the earlier ones to it (inferred from
  the mechanism; no source says it in one sentence).
- ext4 wiki, "Ext3 data mode tradeoffs" (https://ext4.wiki.kernel.org/index.php/Ext3_data_mode_tradeoffs):
  in writeback mode files written before a power failure "could contain previously
  written data or other garbage"; ordered mode "guarantees that any blocks in the file
  will be data written by the application".
- Pillai et al., "All File Systems Are Not Created Equal", OSDI 2014
  (https://www.usenix.org/conference/osdi14/technical-sessions/presentation/pillai): which
  orderings and atomicity ext3/ext4 (each data mode), btrfs and xfs keep across a crash.
- SQLite's powersafe overwrite (https://www.sqlite.org/psow.html): a write may damage the
  rest of its sector on storage without it; SQLite's crash VFS, src/test6.c.
- btrfs and APFS are copy-on-write (btrfs: https://btrfs.readthedocs.io/en/latest/Introduction.html;
  APFS: "a novel copy-on-write metadata scheme",
  https://developer.apple.com/documentation/foundation/file_system/about_apple_file_system).
"""

from __future__ import annotations

from fsyncbench.report.document import Block, Bullets, Paragraph

_FSYNC = "fsync(2)"
_EXT4 = "ext4 journal doc"
_WIKI = "ext4 wiki"
_PILLAI = "Pillai et al. 2014"
_PSOW = "SQLite psow"
_TEST6 = "SQLite src/test6.c"
_COW = "btrfs, APFS docs"

#: Per model: (the states it allows, storage that can leave them, storage that never
#: leaves some of them and which, sources). Sources are named in full in the module
#: docstring and in SOURCES.
MODEL_FILESYSTEMS: dict[str, tuple[str, str, str, str]] = {
    "synced-only": (
        "every file as of its last sync, the directory as of its last directory sync",
        "every filesystem (ext4 with any data=, xfs, btrfs, APFS), all of them: a cut "
        "before any writeback since the last sync",
        "none",
        _FSYNC,
    ),
    "prefix": (
        "the operations in issue order, up to some point after the last sync",
        "every filesystem, all of them (writeback in issue order); ext4 data=journal "
        "leaves only these (all data and metadata go through the journal, replayed in "
        "commit order)",
        "none; the others also leave states that are not prefixes, which this model leaves out",
        f"{_EXT4}; {_PILLAI}",
    ),
    "subset": (
        "each unsynced write, truncation and directory change kept or lost on its own",
        "no filesystem here leaves all of them; ext4 data=ordered and data=writeback and "
        "xfs leave those in which writes to different pages or files persist in any order",
        "every page-cache filesystem: a later write to a page kept while an earlier write "
        "to that page is lost (a page is written back whole; inferred); ext4 and xfs: a lost unlink or truncation with a later "
        "directory change or append kept (their journal commits metadata in order; "
        "inferred); ext4 data=journal, btrfs, APFS: anything out of commit order (inferred)",
        f"{_EXT4}; {_PILLAI}; {_COW}",
    ),
    "torn": (
        "as subset, and a sector a write covered only in part destroyed (zeros)",
        "as subset, on a drive that tears a 4 KiB page into 512 B sectors (powersafe "
        "overwrite off); zeros are what blocks never written read as",
        "as subset; ext4 data=journal and btrfs: a half-written page (journal, "
        "copy-on-write; inferred); a drive with powersafe overwrite: a torn sector",
        f"{_PSOW}; {_COW}",
    ),
    "torn-garbage": (
        "as torn, the destroyed sectors holding random bytes",
        "as torn; ext4 data=writeback, whose files may hold 'previously written data or "
        "other garbage'; a drive that leaves a torn sector unreadable or stale",
        "as torn; ext4 data=ordered: another file's stale data ('any blocks in the file "
        "will be data written by the application')",
        f"{_WIKI}; {_PSOW}",
    ),
    "test6": (
        "each unsynced write written, lost or its sectors trashed with garbage; directory "
        "changes durable at once",
        "storage as SQLite's own crash tests imagine it: data writes in no order, whole "
        "sectors trashed, directory changes durable at once (ext4 or xfs mounted dirsync "
        "come closest; inferred)",
        "as torn-garbage; a default mount: directory changes durable at once",
        _TEST6,
    ),
}

#: The sources of :data:`MODEL_FILESYSTEMS`, by the short names used there.
SOURCES = {
    _FSYNC: "https://man7.org/linux/man-pages/man2/fsync.2.html",
    _EXT4: "https://docs.kernel.org/filesystems/ext4/journal.html",
    _WIKI: "https://ext4.wiki.kernel.org/index.php/Ext3_data_mode_tradeoffs",
    _PILLAI: "https://www.usenix.org/conference/osdi14/technical-sessions/presentation/pillai",
    _PSOW: "https://www.sqlite.org/psow.html",
    _TEST6: "https://sqlite.org/src/file?name=src/test6.c",
    _COW: "https://btrfs.readthedocs.io/en/latest/Introduction.html, "
    "https://developer.apple.com/documentation/foundation/file_system/about_apple_file_system",
}


def filesystems_blocks(models: tuple[str, ...]) -> tuple[Block, ...]:
    """What :data:`MODEL_FILESYSTEMS` says of each model of ``models`` it knows, one bullet
    per model (its states; the storage that can produce all of them; the storage that never
    produces some; the sources), after a paragraph naming the sources in full; () when it
    knows none."""
    known = [m for m in models if m in MODEL_FILESYSTEMS]
    if not known:
        return ()
    items = tuple(
        (
            Paragraph(
                f"{states}. Can leave them: {can}. Never leaves some of them: {never} ({sources}).",
                lead=f"{m}:",
            ),
            (),
        )
        for m in known
        for states, can, never, sources in (MODEL_FILESYSTEMS[m],)
    )
    used = {s.strip() for m in known for s in MODEL_FILESYSTEMS[m][3].split(";")}
    return (
        Paragraph(
            "A model's figures apply in full to storage that can leave all its states, and "
            "are an upper bound on storage that never leaves some of them. 'inferred' "
            "follows from a documented mechanism, not from a sentence saying it. Sources: "
            + "; ".join(f"{name}: {url}" for name, url in SOURCES.items() if name in used)
            + "."
        ),
        Bullets(items),
    )
