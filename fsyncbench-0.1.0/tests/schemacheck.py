"""The published report schema for the tests: its validator, and report JSON with the
raw-sample arrays cut short (their items share one schema; validating a million numbers one
by one takes minutes)."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema

SCHEMA_FILE = Path(__file__).resolve().parents[1] / "docs" / "report.schema.json"


def validator() -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(json.loads(SCHEMA_FILE.read_text()))


def cut_samples(value, keep: int = 50):
    """``value`` (parsed report JSON) with every ``*samples_ns`` list cut to ``keep`` items."""
    if isinstance(value, dict):
        return {
            k: (v[:keep] if k.endswith("samples_ns") and isinstance(v, list) else cut_samples(v))
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [cut_samples(v) for v in value]
    return value
