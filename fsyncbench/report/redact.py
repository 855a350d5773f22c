"""Redaction for sharing: a copy of a report without the hostname, serial numbers and
user paths, still a valid report of the same schema (so ``compare`` works on it).

Removed: the hostname (also wherever it appears inside another value, e.g. a mount source
or a finding), disk serial numbers (of every layer of the storage stack too), the target
path, user paths (under /home, /Users, /root, /var/home or $HOME) anywhere in the host
record, network mount sources (they name a server; also those of FUSE and network layers
of the stack, wherever a finding quotes them), every path in the recorded command line, and
the file names of earlier runs (``Result.earlier``: they are named after the host; their
times and figures stay). Measurements, verdicts and the
facts that explain them (filesystem, mount options, device model, cache mode) stay.

Every format is rendered from the redacted report, so text, Markdown, JSON, HTML and CSV
all come out clean. ``audit`` reports go through the same :func:`redact_report`.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Iterable
from typing import Any

from fsyncbench.jsonable import from_jsonable, to_jsonable
from fsyncbench.model import Report

REDACTED = "[redacted]"
#: Stands in for the hostname; also a safe file-name part (reports are named after the host).
REDACTED_HOST = "redacted-host"

#: Options of any subcommand whose values are not paths, so they stay in the command line.
PLAIN_VALUE_OPTIONS = frozenset(
    {
        "--journal-mode",
        "--synchronous",
        "--fullfsync",
        "--samples",
        "--budget-seconds",
        "--warmup",
        "--payload-bytes",
        "--format",
        "--max-p99",
        "--config",
        "--fail-on",
        "--fail-on-regression",
        "--model-call-ms",
        "--ci-target-pct",
        "--min-samples",
        "--run-budget-seconds",
        "--compare-syncs",
        "--sweep-repeats",
        "--sweep-max-mib",
        "--trace-commits",
    }
)

_HOME_ROOTS = ("/home/", "/Users/", "/var/home/", "/root/", "/export/home/")
_PATH_CHARS = r"[^\s'\",;:()\[\]<>]"
#: A path under a home directory, not inside a longer path (``/dev/root`` is not one).
_USER_PATH = re.compile(
    rf"(?<![\w./~-])(?:(?:/var|/export)?/home|/Users)/{_PATH_CHARS}+|(?<![\w./~-])/root(?:/{_PATH_CHARS}*)?(?![\w.-])"
)


def redact_report(report: Report, home: str | None = None) -> Report:
    """A redacted copy of ``report`` (see the module docstring). ``home`` defaults to
    $HOME; pass it in tests."""
    home = (os.path.expanduser("~") if home is None else home).rstrip("/") or "/"
    host = report.host
    target = host.target
    literal = _secrets(report, home)

    mount = target.mount
    if mount is not None:
        mount = dataclasses.replace(
            mount,
            mount_point=_path_or_redacted(mount.mount_point, home),
            source=_source(mount.source, home),
        )
    disks = tuple(
        dataclasses.replace(d, serial=REDACTED if d.serial else d.serial) for d in target.disks
    )
    layers = tuple(
        dataclasses.replace(
            layer,
            name=_path_or_redacted(layer.name, home),
            source=None if layer.source is None else _source(layer.source, home),
            device=None
            if layer.device is None
            else dataclasses.replace(
                layer.device, serial=REDACTED if layer.device.serial else layer.device.serial
            ),
        )
        for layer in target.layers
    )
    darwin = target.darwin
    if darwin is not None:
        darwin = {
            k: (_path_or_redacted(v, home) if isinstance(v, str) else v) for k, v in darwin.items()
        }
    new_host = dataclasses.replace(
        host,
        hostname=REDACTED_HOST,
        target=dataclasses.replace(
            target, path=REDACTED, mount=mount, disks=disks, darwin=darwin, layers=layers
        ),
    )
    results = tuple(
        dataclasses.replace(
            r, earlier=tuple(dataclasses.replace(e, report=REDACTED) for e in r.earlier)
        )
        if r.earlier
        else r
        for r in report.results
    )
    redacted = dataclasses.replace(
        report,
        host=new_host,
        results=results,
        command_line=redact_command_line(report.command_line, home),
    )
    # A last pass over every string catches the secrets wherever else they appear
    # (findings, notes, evidence, LD_PRELOAD, the SQLite library path, ...).
    data = _scrub(to_jsonable(redacted), literal, host.hostname)
    scrubbed: Report = from_jsonable(Report, data)
    return scrubbed


def redact_command_line(argv: Iterable[str], home: str | None = None) -> tuple[str, ...]:
    """The command line with every path replaced: positional arguments after the
    subcommand, values of path options (``--output``, ``--csv``, ...), and any token that
    looks like a path. Option names and plain values (``--samples 200``) stay."""
    home = (os.path.expanduser("~") if home is None else home).rstrip("/") or "/"
    argv = list(argv)
    out: list[str] = []
    expect_value: str | None = None
    for i, tok in enumerate(argv):
        if i <= 1 and not _looks_like_path(tok, home):  # program name and subcommand
            out.append(tok)
            continue
        if expect_value is not None:
            plain = expect_value in PLAIN_VALUE_OPTIONS and not _is_user_path(tok, home)
            out.append(tok if plain else REDACTED)
            expect_value = None
            continue
        if tok.startswith("-") and tok != "-":
            name, eq, value = tok.partition("=")
            if eq:
                plain = name in PLAIN_VALUE_OPTIONS and not _is_user_path(value, home)
                out.append(tok if plain else f"{name}={REDACTED}")
            else:
                out.append(tok)
                if _takes_value(name):
                    expect_value = name
            continue
        out.append(REDACTED)  # a positional argument: a directory or report path
    return tuple(out)


#: Options that take no value (flags); any other option is assumed to take one.
_FLAGS = frozenset(
    {
        "--redact",
        "--quiet",
        "-q",
        "--verbose",
        "-v",
        "--no-primitives",
        "--no-trace",
        "--no-report",
        "--no-history",
        "--max-p99-strict",
        "--accept-disturbed",
        "--retake-disturbed",
        "--no-retake-disturbed",
        "--json",
        "--help",
        "-h",
        "--version",
    }
)


def _takes_value(option: str) -> bool:
    return option not in _FLAGS


def _looks_like_path(text: str, home: str) -> bool:
    return "/" in text or "\\" in text or text.startswith("~") or bool(home and home in text)


def _is_user_path(text: str, home: str) -> bool:
    if home and home not in ("/", "") and (text == home or text.startswith(home.rstrip("/") + "/")):
        return True
    return text.startswith(_HOME_ROOTS) or text in ("/root", "~") or text.startswith("~/")


def _path_or_redacted(text: str, home: str) -> str:
    return REDACTED if _is_user_path(text, home) else text


def _source(text: str, home: str) -> str:
    """A mount source: user paths and network sources (``server:/export``,
    ``//server/share``) are redacted; device names and pseudo sources stay."""
    if _is_user_path(text, home) or text.startswith("//") or re.match(r"^[^/\s]+:/", text):
        return REDACTED
    return text


def _secrets(report: Report, home: str) -> list[str]:
    """Literal strings to remove from every value, longest first."""
    values = {report.host.target.path}
    devices = [
        *report.host.target.disks,
        *(layer.device for layer in report.host.target.layers if layer.device is not None),
    ]
    values.update(d.serial for d in devices if d.serial and len(d.serial) >= 4)
    # network sources of forwarding layers (server:/export) wherever they are quoted
    values.update(
        layer.source
        for layer in report.host.target.layers
        if layer.source and _source(layer.source, home) == REDACTED
    )
    if home and home not in ("/", ""):
        values.add(home)
    return sorted((v for v in values if v and v not in ("/", ".")), key=len, reverse=True)


def _scrub(data: Any, literal: list[str], hostname: str) -> Any:
    if isinstance(data, str):
        return scrub_text(data, literal, hostname)
    if isinstance(data, list):
        return [_scrub(v, literal, hostname) for v in data]
    if isinstance(data, dict):
        return {k: _scrub(v, literal, hostname) for k, v in data.items()}
    return data


def scrub_text(text: str, literal: Iterable[str], hostname: str) -> str:
    """``text`` with each literal, every user path, and the hostname (as a whole word; its
    short form too; case-insensitive from 4 characters) replaced."""
    for value in literal:
        if value.startswith("/"):  # a path, with anything below it
            pattern = rf"(?<![\w./-]){re.escape(value)}(?:/{_PATH_CHARS}*)?(?![\w.-])"
        else:  # a serial number: a whole word
            pattern = rf"(?<!\w){re.escape(value)}(?!\w)"
        text = re.sub(pattern, REDACTED, text)
    text = _USER_PATH.sub(REDACTED, text)
    names = {hostname, hostname.split(".")[0]} - {"", REDACTED_HOST}
    for name in sorted(names, key=len, reverse=True):
        flags = re.IGNORECASE if len(name) >= 4 else 0
        text = re.sub(rf"(?<![\w.-]){re.escape(name)}(?![\w-])", REDACTED_HOST, text, flags=flags)
    return text
