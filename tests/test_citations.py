"""Everything the product cites is in the product or a primary source: no path outside the
project (``../shared/…`` or any ``../``) in the package, its docs, its examples, the shipped
example report, or what it prints."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import sampled

from fsyncbench import api
from fsyncbench.judge import devices

ROOT = Path(__file__).resolve().parent.parent
#: the design notes outside the project, by path or by name
OUTSIDE = re.compile(r"\.\./shared|DESIGN\.md|shared/cases")
#: a Markdown link target
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")

SHIPPED = sorted(
    [
        *ROOT.glob("fsyncbench/**/*.py"),
        *ROOT.glob("docs/*"),
        *ROOT.glob("examples/**/*.*"),
        ROOT / "reports" / "README.md",
        ROOT / "README.md",
        ROOT / "ARCHITECTURE.md",
        ROOT / "CHANGELOG.md",
    ]
)


@pytest.mark.parametrize("path", SHIPPED, ids=[str(p.relative_to(ROOT)) for p in SHIPPED])
def test_no_shipped_file_cites_a_path_outside_the_project(path):
    text = path.read_text(encoding="utf-8", errors="replace")
    hits = [m.group(0) for m in OUTSIDE.finditer(text)]
    assert hits == [], f"{path.relative_to(ROOT)} cites outside the project: {hits[:3]}"


MARKDOWN = sorted([*ROOT.glob("docs/*.md"), *ROOT.glob("examples/**/*.md"), ROOT / "README.md"])


@pytest.mark.parametrize("path", MARKDOWN, ids=[str(p.relative_to(ROOT)) for p in MARKDOWN])
def test_every_relative_link_of_the_docs_stays_in_the_project_and_exists(path):
    text = path.read_text(encoding="utf-8")
    for target in LINK.findall(text):
        if "://" in target or target.startswith("mailto:"):
            continue
        resolved = (path.parent / target).resolve()
        assert resolved.is_relative_to(ROOT), f"{path.name}: {target} leaves the project"
        assert resolved.exists(), f"{path.name}: {target} does not exist"


def test_the_pattern_catches_what_it_is_for():
    """A test that cannot fail is a defect: the pattern finds the old citations."""
    for old in ("../shared/DESIGN.md, signal 7", "see ../shared/cases E3", "DESIGN.md"):
        assert OUTSIDE.search(old), old
    assert not OUTSIDE.search("docs/verdicts.md, https://www.sqlite.org/pragma.html")


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["text", "markdown", "html", "json"])
def test_no_output_cites_a_path_outside_the_project(fmt):
    """Every finding's source and every paragraph of a report as printed, in each format."""
    rep = sampled.report(rounds=5)
    assert not OUTSIDE.search(api.render(rep, fmt))


def test_the_latency_bands_name_their_page_and_primary_sources():
    assert "docs/verdicts.md" in devices.LATENCY_BANDS_DOC
    assert "http" in devices.LATENCY_BANDS_DOC
    page = (ROOT / "docs" / "verdicts.md").read_text(encoding="utf-8")
    for floor in ("2 ms", "150 µs", "15 µs", "100 µs", "1 ms", "10 µs"):
        assert f"| {floor} |" in page, floor


@pytest.mark.parametrize("fmt", ["text", "markdown", "json"])
def test_no_printed_report_cites_a_path_outside_the_project(fmt):
    """The slow test above without the HTML page (its charts take the time; its words are
    the Markdown's): every finding's source and every paragraph, verbose too."""
    rep = sampled.report(rounds=5)
    assert not OUTSIDE.search(api.render(rep, fmt))
    if fmt == "text":
        assert not OUTSIDE.search(api.render(rep, fmt, verbose=True))
