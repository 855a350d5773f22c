"""The example in reports/ is what fsyncbench renders from its own JSON today: a real run on
this repository's Firecracker VM, refreshed whenever the report's wording changes."""

from pathlib import Path

import pytest

from fsyncbench import report as report_out
from fsyncbench.report import store

EXAMPLES = sorted((Path(__file__).resolve().parent.parent / "reports").glob("*.json"))


def test_there_is_an_example():
    assert EXAMPLES, "reports/ holds no example report"


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_example_markdown_is_what_show_renders(path):
    """Refresh with: fsyncbench show reports/X.json --format markdown -o reports/X.md"""
    committed = path.with_suffix(".md").read_text()
    assert report_out.render(store.load_report(path), "markdown") == committed
