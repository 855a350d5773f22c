"""The example in examples/report/ is what fsyncbench renders from its own JSON today: a real run on
this repository's Firecracker VM, refreshed whenever the report's wording changes."""

from pathlib import Path

import pytest

from fsyncbench import report as report_out
from fsyncbench.report import store

EXAMPLES = sorted((Path(__file__).resolve().parent.parent / "examples" / "report").glob("*.json"))


def test_there_is_an_example():
    assert EXAMPLES, "examples/report/ holds no example report"


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_example_markdown_is_what_show_renders(path):
    """Refresh with: python scripts/example_report.py (--measure for a new run)"""
    committed = path.with_suffix(".md").read_text()
    assert report_out.render(store.load_report(path), "markdown") == committed


ROOT = Path(__file__).resolve().parent.parent


def test_the_example_never_lands_among_the_users_reports():
    """reports/ is where run saves the user's reports (the default --report-dir): the project
    ships no report there, so none joins the user's history, compare or fleet, and git ignores
    what the user saves there."""
    import shutil
    import subprocess

    from fsyncbench.cli import build_parser

    run = build_parser().parse_args(["run", "."])
    assert run.report_dir == Path("reports")
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout: which files git tracks cannot be asked")
    tracked = subprocess.run(
        ["git", "ls-files", "reports"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    assert sorted(tracked) == ["reports/.gitignore", "reports/README.md"]
    ignored = subprocess.run(
        ["git", "check-ignore", "-q", "reports/myhost-20260101T000000Z.json"], cwd=ROOT
    )
    assert ignored.returncode == 0  # a user's report is not an untracked file of the checkout
