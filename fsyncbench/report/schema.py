"""The JSON Schema of a saved report, generated from the dataclasses of
:mod:`fsyncbench.model` so the two cannot drift.

``docs/report.schema.json`` is this function's output (``scripts/gen_schema.py`` writes it;
a test fails when the committed file differs). Draft 2020-12
(https://json-schema.org/draft/2020-12/schema): one ``$defs`` entry per dataclass, every
field without a default required, no other properties; counts and durations (the field names
:mod:`fsyncbench.model` refuses negative on load) have ``minimum`` 0; ``schema_version`` runs
from 1 to this version, as the loader accepts (a newer report is refused with "upgrade
fsyncbench"). Reports of ``fsyncbench powercut verify``, ``run --powerloss``, ``powerloss``
and ``crash`` are the same type (the last two keep their experiment in ``powerloss``,
``crash`` or ``crash_power_loss``); the figures :func:`fsyncbench.render` gives of a bare
kill-matrix experiment as JSON are not a report and are not covered.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from typing import Any, Union

from fsyncbench.jsonable import MAY_BE_NEGATIVE, NON_NEGATIVE
from fsyncbench.model import SCHEMA_VERSION, Report

#: A URN, not a URL: the schema is published in the repository (docs/report.schema.json),
#: not served from an address of its own.
SCHEMA_ID = f"urn:fsyncbench:report-schema:{SCHEMA_VERSION}"


def report_schema() -> dict[str, Any]:
    """The schema of :class:`fsyncbench.model.Report` as JSON-ready data."""
    defs: dict[str, Any] = {}
    root = _of(Report, defs, "Report")
    schema: dict[str, Any] = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        "title": f"fsyncbench report, schema version {SCHEMA_VERSION}",
        "description": "Generated from fsyncbench.model (fsyncbench/report/schema.py, "
        "scripts/gen_schema.py); durations in ns in fields named *_ns.",
        **root,
        "$defs": dict(sorted(defs.items())),
    }
    props = defs["Report"]["properties"]
    props["schema_version"] = {"type": "integer", "minimum": 1, "maximum": SCHEMA_VERSION}
    return schema


def _of(hint: Any, defs: dict[str, Any], name: str) -> dict[str, Any]:
    origin = typing.get_origin(hint)
    if hint is Any:
        return {}
    if origin in (Union, types.UnionType):
        options = [_of(a, defs, name) for a in typing.get_args(hint) if a is not type(None)]
        if type(None) in typing.get_args(hint):
            options.append({"type": "null"})
        return options[0] if len(options) == 1 else {"anyOf": options}
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        key = hint.__name__
        if key not in defs:
            defs[key] = {}  # reserved first: a dataclass may refer to itself
            hints = typing.get_type_hints(hint)
            fields = dataclasses.fields(hint)
            defs[key] = {
                "type": "object",
                "properties": {
                    f.name: _bounded(f.name, _of(hints[f.name], defs, f.name)) for f in fields
                },
                "required": [
                    f.name
                    for f in fields
                    if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
                ],
                "additionalProperties": False,
            }
        return {"$ref": f"#/$defs/{key}"}
    if origin is tuple:
        args = typing.get_args(hint)
        if len(args) == 2 and args[1] is Ellipsis:
            listed = {"type": "array", "items": _bounded(name, _of(args[0], defs, name))}
            if name.endswith("samples_ns"):
                # from 4,096 samples on, packed into one string (store.pack_samples)
                return {"anyOf": [listed, {"type": "string", "pattern": "^zb85-u(32|64):"}]}
            return listed
        return {
            "type": "array",
            "prefixItems": [_of(a, defs, name) for a in args],
            "items": False,
            "minItems": len(args),
        }
    if origin is dict:
        return {"type": "object", "additionalProperties": _of(typing.get_args(hint)[1], defs, name)}
    simple = {bool: "boolean", int: "integer", float: "number", str: "string"}
    if hint in simple:
        return {"type": simple[hint]}
    raise TypeError(f"no JSON Schema for {hint!r} (field {name})")


def _bounded(name: str, schema: dict[str, Any]) -> dict[str, Any]:
    """``minimum: 0`` on the numbers of a count or duration field (as the loader checks)."""
    if NON_NEGATIVE.search(name) and name not in MAY_BE_NEGATIVE:
        if schema.get("type") in ("integer", "number"):
            return {**schema, "minimum": 0}
        if "anyOf" in schema:
            return {"anyOf": [_bounded(name, s) for s in schema["anyOf"]]}
    return schema
