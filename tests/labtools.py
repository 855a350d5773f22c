"""Loading the proving ground's modules (lab/, outside the package) in tests."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]


def load(name: str) -> ModuleType:
    """lab/NAME.py as the module ``lab_NAME`` (registered, so its dataclasses resolve)."""
    spec = importlib.util.spec_from_file_location(f"lab_{name}", ROOT / "lab" / f"{name}.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules[f"lab_{name}"] = mod
    spec.loader.exec_module(mod)
    return mod
