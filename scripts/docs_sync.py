#!/usr/bin/env python3
"""Rewrite what README.md and docs/*.md quote from the code, so it cannot go stale.

    python scripts/docs_sync.py           # rewrite every stale block in place
    python scripts/docs_sync.py --check   # change nothing; exit 1 naming each stale block
    python scripts/docs_sync.py [--check] FILE...   # only these Markdown files

A quote of the code is marked, inline or over lines, and everything between the two markers
is generated (a marker right after a backtick is text, quoted in code)::

    <!-- fsyncbench:KIND ARGS -->what the code says today<!-- /fsyncbench -->

KIND ARGS                 what is generated
------------------------  -------------------------------------------------------------------
default CMD... OPTION     the option's default, as ``fsyncbench CMD --help`` states it: the
                          first value of its "(default ...)" clause (``8``, ``30``, ``./reports``),
                          else argparse's default; ``default CMD... OPTION all``: the whole
                          clause (``30, 90 on macOS, when adaptive``)
value MODULE:NAME         a constant of the code (``fsyncbench.measure.plan:DARWIN_MIN_SAMPLES``:
                          ``1,250``)
defaults CMD...           a Markdown table: every option and argument of CMD that has a default,
                          and the default as its --help states it
commands                  a Markdown table: every command and its one line from ``fsyncbench
                          --help``, linked to its page in docs/
show example              a ``text`` block: what ``fsyncbench show`` prints for the report in
                          examples/report/ at 100 columns (``COLUMNS=100``)
prometheus example        the command and an excerpt of what ``show --prometheus`` writes for it
cycle FILE                a ``text`` block: ``powercut cycle``'s summary, rendered from the JSON
                          it printed (``--format json``), FILE relative to the repository
devices                   a Markdown table: every row of the device knowledge table
                          (fsyncbench/host/device_knowledge.json) with its facts and sources

Sample screens of a real run are rendered from a committed JSON (examples/), never typed:
``python scripts/example_report.py`` refreshes the example report and then these blocks.
tests/test_docs_sync.py runs ``--check``, so a changed default, help line or wording fails the
suite until this script is run.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import json
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples" / "report"
#: the width sample screens and help are laid out for (the renderers read ``COLUMNS``)
COLUMNS = "100"

#: a marked block; a marker right after a backtick is quoted in code (`<!-- fsyncbench:...`)
BLOCK = re.compile(
    r"(?<!`)<!-- fsyncbench:(?P<spec>[^\n]*?) -->(?P<body>.*?)(?<!`)<!-- /fsyncbench -->",
    re.DOTALL,
)
OPENING = re.compile(r"(?<!`)<!-- fsyncbench:")
CLOSING = re.compile(r"(?<!`)<!-- /fsyncbench -->")
#: the kinds whose content is a block of lines (the others are inline)
BLOCK_KINDS = {"defaults", "commands", "show", "prometheus", "cycle", "devices"}
#: each command's page, for the commands table (a command without one is not linked)
PAGES = {
    "run": "run.md",
    "host": "audit.md",
    "crash": "crash.md",
    "audit": "audit.md",
    "show": "reports.md",
    "compare": "reports.md",
    "powercut": "powercut.md",
    "powerloss": "powerloss.md",
}
#: the lines of ``show --prometheus`` the excerpt keeps: (metric, label=value pairs all present)
PROMETHEUS_EXCERPT = (
    ("# TYPE fsyncbench_latency_seconds summary", ()),
    ("fsyncbench_latency_seconds", ('config="wal/full"', 'quantile="0.99"')),
    ("fsyncbench_latency_seconds_count", ('config="wal/full"',)),
    (
        "fsyncbench_latency_ci_seconds",
        ('bound="high"', 'config="wal/full"', 'for_quantile="0.99"'),
    ),
    ("fsyncbench_path_verdict", ()),
    ("fsyncbench_config_durable", ('config="wal/full"',)),
    ("fsyncbench_report_created_timestamp_seconds", ()),
)


class SyncError(Exception):
    """A marker this script cannot generate: its kind or arguments are wrong."""


# --------------------------------------------------------------------------- the parser


def _parser(path: tuple[str, ...]) -> argparse.ArgumentParser:
    """The parser of ``fsyncbench PATH...`` (e.g. ``("powercut", "cycle")``)."""
    from fsyncbench.cli import build_parser

    parser = build_parser()
    for name in path:
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if not subs or name not in subs[0].choices:
            raise SyncError(f"fsyncbench {' '.join(path)}: no such command")
        parser = subs[0].choices[name]
    return parser


def _help(parser: argparse.ArgumentParser, action: argparse.Action) -> str:
    """The action's help as ``--help`` prints it (``%%`` and ``%(default)s`` expanded), on
    one line."""
    if not action.help or action.help == argparse.SUPPRESS:
        return ""
    text = parser._get_formatter()._expand_help(action)
    return " ".join(text.split())


def default_clauses(help_text: str) -> list[str]:
    """Every "default ..." clause of a help text, without the word: what follows
    "(default", "; default" or ", default" (and a colon) up to the parenthesis that closes
    around it, or the end of the sentence outside one. "(default; ...)" states no value."""
    clauses = []
    for m in re.finditer(r"(?:^|\(|; |, )default:? (?=[^\s;])", help_text):
        depth = help_text[: m.start()].count("(") - help_text[: m.start()].count(")")
        depth += help_text[m.start() : m.end()].count("(")
        rest = help_text[m.end() :]
        if depth > 0:
            level, end = depth, len(rest)
            for i, ch in enumerate(rest):
                level += {"(": 1, ")": -1}.get(ch, 0)
                if level < depth:
                    end = i
                    break
        else:
            end = rest.find(". ") if ". " in rest else len(rest)
        clauses.append(rest[:end].strip())
    return clauses


def first_value(clause: str) -> str:
    """The clause's first value: up to its first ", ", "; " or " (" (``30`` of ``30, 90 on
    macOS``; ``5,000`` of ``5,000, Python's``; ``delete,truncate,wal`` whole)."""
    cut = [i for i in (clause.find(s) for s in (", ", "; ", " (")) if i >= 0]
    return clause[: min(cut)] if cut else clause


def _plain(value: object) -> str:
    """argparse's default as a help text writes it: 4.0 as 4, 5000 as 5,000, a path as is."""
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def _same(stated: str, value: object) -> bool:
    """Does the help's stated default name argparse's (``./reports`` and ``reports``,
    ``5,000`` and 5000, ``4`` and 4.0 do)?"""

    def norm(s: str) -> str:
        return s.removeprefix("./").replace(",", "")

    return norm(stated) == norm(_plain(value))


def option_default(path: tuple[str, ...], option: str) -> tuple[list[str], object]:
    """(the default clauses of ``option``'s help, argparse's default) in ``fsyncbench
    PATH...``; raises when the help states a default other than argparse's."""
    parser = _parser(path)
    for action in parser._actions:
        names = action.option_strings or [action.metavar or action.dest]
        if option in names:
            clauses = default_clauses(_help(parser, action))
            value = action.default
            if value in (None, argparse.SUPPRESS) or isinstance(value, bool):
                value = None
            stated = first_value(clauses[0]) if clauses else ""
            # a value, not words ("current directory"), must be argparse's
            if value is not None and stated and " " not in stated and not _same(stated, value):
                raise SyncError(
                    f"fsyncbench {' '.join(path)} {option}: its help says default "
                    f"{stated!r}, argparse's default is {value!r}"
                )
            return clauses, value
    raise SyncError(f"fsyncbench {' '.join(path)}: no option {option}")


def render_default(args: list[str]) -> str:
    whole = args[-1] == "all"
    if whole:
        args = args[:-1]
    if len(args) < 2:
        raise SyncError("default needs CMD... OPTION")
    path, option = tuple(args[:-1]), args[-1]
    clauses, value = option_default(path, option)
    if clauses:
        return "; ".join(clauses) if whole else first_value(clauses[0])
    if value is None:
        raise SyncError(f"fsyncbench {' '.join(path)} {option} states no default")
    return _plain(value)


def render_value(args: list[str]) -> str:
    if len(args) != 1 or ":" not in args[0]:
        raise SyncError("value needs MODULE:NAME")
    module, name = args[0].split(":")
    value = getattr(importlib.import_module(module), name)
    return _plain(value)


def render_defaults(args: list[str]) -> str:
    """| option | default | for every option and argument of the command with one."""
    if not args:
        raise SyncError("defaults needs CMD...")
    parser = _parser(tuple(args))
    rows = ["| option | default |", "|---|---|"]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) or action.help == argparse.SUPPRESS:
            continue
        name = action.option_strings[-1] if action.option_strings else None
        clauses, value = option_default(tuple(args), name or (action.metavar or action.dest))
        if not clauses and value is None:
            continue
        metavar = action.metavar or (
            "{" + ",".join(map(str, action.choices)) + "}"
            if action.choices
            else action.dest.upper()
        )
        text = "; ".join(clauses) if clauses else _plain(value)
        if name is None:
            label = str(metavar)
        elif action.nargs == 0:
            label = ", ".join(action.option_strings)
        elif action.nargs == "?" and action.const is not None:
            # an option that may be given alone: off without it, its const alone
            label = f"{name} [{metavar}]"
            text = f"not given: off; {name} alone: {text}"
        else:
            label = f"{name} {metavar}"
        rows.append(f"| `{label}` | {text.replace('|', '&#124;')} |")
    return "\n".join(rows)


def render_commands(args: list[str], doc: Path) -> str:
    """| command | what it does | for every command of ``fsyncbench --help``."""
    if args:
        raise SyncError("commands takes no arguments")
    parser = _parser(())
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    docs = os.path.relpath(ROOT / "docs", doc.parent)
    rows = ["| command | what it does |", "|---|---|"]
    for choice in sub._choices_actions:
        name = choice.dest
        page = PAGES.get(name)
        cell = f"[`{name}`]({docs}/{page})" if page else f"`{name}`"
        rows.append(f"| {cell} | {choice.help} |")
    return "\n".join(rows)


# --------------------------------------------------------------------------- sample screens


def example_report() -> Path:
    """The one report JSON in examples/report/ (scripts/example_report.py keeps it)."""
    found = sorted(EXAMPLES.glob("*.json"))
    if len(found) != 1:
        raise SyncError(f"examples/report/ holds {len(found)} report JSON files, not one")
    return found[0]


def fsyncbench(*args: str) -> str:
    """What ``fsyncbench ARGS`` prints at :data:`COLUMNS` columns (this checkout's code)."""
    env = {**os.environ, "COLUMNS": COLUMNS}
    env.pop("LINES", None)
    proc = subprocess.run(
        [sys.executable, "-m", "fsyncbench", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        raise SyncError(f"fsyncbench {' '.join(args)} exited {proc.returncode}: {proc.stderr}")
    return proc.stdout


def _fenced(text: str, lang: str = "text") -> str:
    return f"```{lang}\n{text.rstrip()}\n```"


def render_show(args: list[str]) -> str:
    if args != ["example"]:
        raise SyncError("show takes: example")
    rel = example_report().relative_to(ROOT)
    return _fenced(fsyncbench("show", str(rel)))


def render_prometheus(args: list[str]) -> str:
    if args != ["example"]:
        raise SyncError("prometheus takes: example")
    rel = example_report().relative_to(ROOT)
    shown = "/tmp/fsyncbench.prom"
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "fsyncbench.prom"
        fsyncbench("show", str(rel), "--prometheus", str(out), "-o", os.devnull)
        lines = out.read_text(encoding="utf-8").splitlines()
    kept = []
    for metric, labels in PROMETHEUS_EXCERPT:
        for line in lines:
            name = line if line.startswith("#") else line.split("{", 1)[0]
            if name == metric and all(label in line for label in labels):
                kept.append(line)
    if len(kept) < len(PROMETHEUS_EXCERPT):
        raise SyncError("show --prometheus no longer writes every line of the excerpt")
    command = f"fsyncbench show {rel} --prometheus {shown}"
    return _fenced(command, "sh") + "\n\n" + _fenced("\n".join(kept))


def render_cycle(args: list[str]) -> str:
    """``powercut cycle``'s summary (cycle_results.format_summary) from its JSON."""
    from fsyncbench.powercut.cycle_results import CycleResult, CycleSummary, format_summary

    if len(args) != 1:
        raise SyncError("cycle needs FILE")
    data = json.loads((ROOT / args[0]).read_text(encoding="utf-8"))
    results = tuple(
        CycleResult(
            **{
                **r,
                "lost_ranges": tuple((int(a), int(b)) for a, b in r.get("lost_ranges") or ()),
            }
        )
        for r in data["results"]
    )
    fields = {f.name for f in dataclasses.fields(CycleSummary)} - {"results"}
    kept = {k: v for k, v in data.items() if k in fields}
    kept["cut_after_s"] = tuple(kept["cut_after_s"])
    kept["notes"] = tuple(kept.get("notes") or ())
    summary = CycleSummary(**kept, results=results)
    return _fenced(format_summary(summary))


def render_devices(args: list[str]) -> str:
    """A Markdown table of the device knowledge table (fsyncbench/host/device_knowledge.json):
    each row's id, pattern, what it is, and its facts with their sources."""
    from tabulate import tabulate

    from fsyncbench.host import knowledge

    if args:
        raise SyncError("devices takes no arguments")
    t = knowledge.table()
    rows = [
        (
            f"`{row.id}`",
            "`" + row.pattern.replace("|", "\\|") + "`",
            row.name,
            "; ".join(f"{k}: {v}" for k, v in row.facts),
            " ".join(f"({k}) {row.source(k)}" for k, _ in row.facts).replace("|", "\\|"),
        )
        for row in t.devices
    ]
    head = f"Version {t.version}, updated {t.updated}: {len(rows)} rows.\n\n"
    return head + tabulate(rows, ["row", "pattern", "what", "facts", "sources"], tablefmt="github")


RENDERERS: dict[str, Callable[[list[str]], str]] = {
    "devices": render_devices,
    "default": render_default,
    "value": render_value,
    "defaults": render_defaults,
    "show": render_show,
    "prometheus": render_prometheus,
    "cycle": render_cycle,
}


# --------------------------------------------------------------------------- the documents


def documents() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def render(spec: str, doc: Path) -> str:
    """The body a marker ``spec`` stands for (newlines around a block kind's lines)."""
    kind, *args = spec.split()
    if kind == "commands":
        text = render_commands(args, doc)
    elif kind in RENDERERS:
        text = RENDERERS[kind](args)
    else:
        raise SyncError(f"unknown kind {kind!r} (known: {', '.join(sorted(BLOCK_KINDS))}, ...)")
    return f"\n{text}\n" if kind in BLOCK_KINDS else text


def blocks(text: str) -> Iterator[re.Match[str]]:
    yield from BLOCK.finditer(text)


def sync_text(text: str, doc: Path) -> tuple[str, list[tuple[int, str]]]:
    """(``text`` with every block generated again, [(line, spec) of each block that
    changed])."""
    if len(OPENING.findall(text)) != len(CLOSING.findall(text)):
        raise SyncError(f"{doc.name}: a marker without its <!-- /fsyncbench --> (or one too many)")
    stale: list[tuple[int, str]] = []
    cache: dict[str, str] = {}
    out, pos = [], 0
    for m in blocks(text):
        spec = m.group("spec").strip()
        if spec not in cache:
            try:
                cache[spec] = render(spec, doc)
            except SyncError as e:
                raise SyncError(f"{doc.name}:{text.count(chr(10), 0, m.start()) + 1}: {e}") from e
        body = cache[spec]
        if body != m.group("body"):
            stale.append((text.count("\n", 0, m.start()) + 1, spec))
        out.append(text[pos : m.start("body")])
        out.append(body)
        pos = m.end("body")
    out.append(text[pos:])
    return "".join(out), stale


def sync(check: bool, paths: list[Path] | None = None) -> list[str]:
    """Generate every block of ``paths`` (README.md and docs/*.md); rewrite the files unless
    ``check``. Returns one line per stale block."""
    lines = []
    for doc in paths or documents():
        text = doc.read_text(encoding="utf-8")
        new, stale = sync_text(text, doc)
        rel = doc.relative_to(ROOT) if doc.is_relative_to(ROOT) else doc
        lines += [f"{rel}:{line}: <!-- fsyncbench:{spec} --> is stale" for line, spec in stale]
        if stale and not check:
            doc.write_text(new, encoding="utf-8")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--check", action="store_true", help="change nothing; exit 1 when a block is stale"
    )
    parser.add_argument(
        "files", nargs="*", type=Path, help="Markdown files (default: README.md, docs/*.md)"
    )
    args = parser.parse_args(argv)
    try:
        stale = sync(args.check, [f.resolve() for f in args.files] or None)
    except SyncError as e:
        print(f"docs_sync: {e}", file=sys.stderr)
        return 2
    for line in stale:
        print(line, file=sys.stderr if args.check else sys.stdout)
    if args.check and stale:
        print("run: python scripts/docs_sync.py", file=sys.stderr)
        return 1
    if not args.check:
        print(f"{len(stale)} block(s) rewritten")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
