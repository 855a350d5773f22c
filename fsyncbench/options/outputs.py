"""The files a command will write (``--output``, ``--csv``, ``--prometheus``,
``--report-dir``), checked before any work: :class:`Outputs`, :func:`writable_file`,
:func:`same_file`."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from fsyncbench.errors import FsyncbenchError
from fsyncbench.options.values import check_path


@dataclass(frozen=True)
class Outputs:
    """The files a command writes once its work is done, checked by :meth:`check` before it
    starts: ``output`` (what would be printed, ``-o``; None: standard output), ``csv`` (the
    raw samples), ``prometheus`` (the metrics for node_exporter's textfile collector),
    ``report_dir`` (the report files, for a command that saves them; not checked when
    ``no_report``)."""

    output: Path | None = None
    csv: Path | None = None
    report_dir: Path | None = None
    no_report: bool = False
    prometheus: Path | None = None

    def __post_init__(self) -> None:
        # a str or any os.PathLike is taken for a path, as everywhere in the API
        for field in ("output", "csv", "report_dir", "prometheus"):
            value = getattr(self, field)
            check_path(value, field, optional=True)
            if value is not None and not isinstance(value, Path):
                object.__setattr__(self, field, Path(value))

    @property
    def save_dir(self) -> Path | None:
        """Where report files go; None: none are saved."""
        return None if self.no_report else self.report_dir

    def check(self, source: Path | None = None) -> None:
        """--output FILE, --csv FILE, --prometheus FILE and --report-dir DIR can be written,
        and --output is not a directory (it was one for run, audit and powercut verify before
        --report-dir: the message says so); no two files are the same, and none is
        ``source``, the report being read."""
        from fsyncbench.report import store

        out, csv, report_dir = self.output, self.csv, self.report_dir
        if report_dir is not None and not self.no_report:
            store.check_output_dir(report_dir)
        if out is not None:
            if out.is_dir():
                hint = (
                    f"; to save the report files in it, use --report-dir {out}"
                    if report_dir is not None
                    else ""
                )
                raise FsyncbenchError(
                    f"--output {out} is a directory: --output takes the FILE to "
                    f"write the printed result to{hint}"
                )
            writable_file(out)
        writable_file(csv)
        writable_file(self.prometheus)
        named: list[tuple[str, Path]] = [
            (option, path)
            for option, path in (
                ("--output", out),
                ("--csv", csv),
                ("--prometheus", self.prometheus),
            )
            if path is not None
        ]
        for i, (first, a) in enumerate(named):
            for second, b in named[i + 1 :]:
                if same_file(a, b):
                    raise FsyncbenchError(f"{first} and {second} both name {a}: give two files")
        if source is not None:
            for _option, path in named:
                if same_file(path, source):
                    raise FsyncbenchError(
                        f"{path} is the report being shown: give another output file"
                    )


def writable_file(path: Path | None) -> None:
    """A file to be written later must have an existing, writable directory (checked before
    measuring, so a typo does not waste the run): an unnamed temporary file is really
    created there, as for --report-dir (root passes access(2) even on /proc)."""
    if path is None:
        return
    parent = path.parent
    if path.is_dir():
        raise FsyncbenchError(f"{path} is a directory, not a file")
    from fsyncbench.report.store import cannot_create_in, is_stream

    if is_stream(path):  # /dev/null, /dev/stderr, a named pipe: written to, not replaced
        if not os.access(path, os.W_OK):
            raise FsyncbenchError(f"cannot write {path}: permission denied")
        return
    if path.exists() and not path.is_file():
        # a regular file is replaced by rename: a block device or a socket never is
        raise FsyncbenchError(
            f"cannot write {path}: not a regular file (the other files written to are a "
            "FIFO, the null device and this session's own terminal)"
        )
    if not parent.is_dir():
        why = "is not a directory" if parent.exists() else "does not exist"
        raise FsyncbenchError(f"cannot write {path}: {parent} {why}")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise FsyncbenchError(f"cannot write {path}: directory {parent} is not writable")
    refused = cannot_create_in(parent)
    if refused:
        raise FsyncbenchError(
            f"cannot write {path}: directory {parent} refuses new files (creating one "
            f"there failed: {refused})"
        )


def same_file(a: Path, b: Path) -> bool:
    """True when ``a`` and ``b`` name the same existing file (or the same path)."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.abspath(a) == os.path.abspath(b)
