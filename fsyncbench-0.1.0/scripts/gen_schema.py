#!/usr/bin/env python3
"""Write docs/report.schema.json from fsyncbench's dataclasses (fsyncbench.report.schema).

Usage: python scripts/gen_schema.py [--check]

--check writes nothing and exits 1 when the committed file differs from what the code
generates (tests/test_schema.py runs the same comparison).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from fsyncbench.report.schema import report_schema
from fsyncbench.report.store import write_durably

PATH = Path(__file__).resolve().parents[1] / "docs" / "report.schema.json"


def render() -> str:
    """The schema file's text: indented JSON, one trailing newline."""
    return json.dumps(report_schema(), indent=2) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="compare, write nothing")
    args = parser.parse_args()
    text = render()
    if args.check:
        same = PATH.exists() and PATH.read_text() == text
        print(f"{PATH}: {'up to date' if same else 'differs from the code'}")
        return 0 if same else 1
    write_durably(PATH, text)
    print(f"wrote {PATH}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
