"""The report's dataclasses as plain JSON and back: :func:`to_jsonable` (dataclasses to
dicts, tuples to lists) and :func:`from_jsonable` (rebuild a dataclass or type hint from that,
checking every value against its type hint, refusing numbers out of a 64-bit range and
negative counts or durations). Generic: it knows the types only through their hints, so
:mod:`fsyncbench.model` is the schema and this module its codec."""

from __future__ import annotations

import dataclasses
import math
import re
import types
import typing
from typing import Any, Union

__all__ = ["MAX_JSON_INT", "MAY_BE_NEGATIVE", "NON_NEGATIVE", "from_jsonable", "to_jsonable"]


#: Types :func:`to_jsonable` passes through unchanged.
_SCALARS = frozenset({int, float, str, bool, type(None)})


def to_jsonable(obj: Any) -> Any:
    """Dataclasses -> dicts, tuples -> lists, recursively (JSON-ready)."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_jsonable(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, (list, tuple)):
        if all(type(v) in _SCALARS for v in obj):  # samples: 1e5 ints a round, ~10x faster
            return list(obj)
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    return obj


#: Largest integer a report may hold (a 64-bit counter); larger ones are refused on load.
MAX_JSON_INT = 2**63

#: Field names that are counts or durations and cannot be negative (on load).
NON_NEGATIVE = re.compile(
    r"(_ns|_ms|_bytes|_s)$|^(count|flushes|writes|syncs_issued|syncs|"
    r"commits|samples_ns\[\]|slice_counts\[\]|slice_rounds\[\]|blocks|df|"
    r"warmup|target_samples|elapsed_ns|"
    r"libc_flushes|syscall_flushes|same_fd_flushes|second_fd_flushes)$"
)


#: Fitted values that may fall below zero (a least-squares intercept).
MAY_BE_NEGATIVE = frozenset({"flush_cost_ns"})


def _check_sign(where: str, value: float) -> None:
    """Refuse a negative count or duration (the last component of ``where`` names it)."""
    name = where.rsplit(".", 1)[-1]
    if value < 0 and NON_NEGATIVE.search(name) and name not in MAY_BE_NEGATIVE:
        raise ValueError(f"{where}: negative {name}")


def from_jsonable(cls: Any, data: Any) -> Any:
    """Rebuild ``cls`` (a dataclass or a type hint) from :func:`to_jsonable` output.

    Raises ValueError naming the field when ``data`` does not fit the type.
    """
    return _convert(cls, data, cls.__name__ if isinstance(cls, type) else "value")


def _convert(hint: Any, data: Any, where: str) -> Any:
    origin = typing.get_origin(hint)
    if hint is Any:
        return data
    if origin in (Union, types.UnionType):
        args = typing.get_args(hint)
        if data is None and type(None) in args:
            return None
        errors = []
        for arg in args:
            if arg is type(None):
                continue
            try:
                return _convert(arg, data, where)
            except ValueError as exc:
                errors.append(str(exc))
        raise ValueError(errors[0] if errors else f"{where}: unexpected null")
    if dataclasses.is_dataclass(hint):
        if not isinstance(data, dict):
            raise ValueError(f"{where}: expected an object")
        hints = typing.get_type_hints(hint)
        kwargs = {}
        for f in dataclasses.fields(hint):
            if f.name in data:
                kwargs[f.name] = _convert(hints[f.name], data[f.name], f"{where}.{f.name}")
            elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise ValueError(f"{where}: missing field {f.name!r}")
        return typing.cast("type[Any]", hint)(**kwargs)  # a dataclass type, not an instance
    if origin is tuple:
        if not isinstance(data, list):
            raise ValueError(f"{where}: expected a list")
        args = typing.get_args(hint)
        if len(args) == 2 and args[1] is Ellipsis:
            if args[0] is int and set(map(type, data)) <= {int}:
                # a million raw samples: the same checks as below, at C speed
                if data and max(-min(data), max(data)) > MAX_JSON_INT:
                    raise ValueError(f"{where}[]: number out of range")
                if data:
                    _check_sign(f"{where}[]", min(data))
                return tuple(data)
            return tuple(_convert(args[0], v, f"{where}[]") for v in data)
        if len(args) != len(data):
            raise ValueError(f"{where}: expected {len(args)} items")
        return tuple(_convert(a, v, f"{where}[]") for a, v in zip(args, data))
    if origin is dict:
        if not isinstance(data, dict):
            raise ValueError(f"{where}: expected an object")
        _, value_hint = typing.get_args(hint)
        return {k: _convert(value_hint, v, f"{where}.{k}") for k, v in data.items()}
    if hint is float:
        if isinstance(data, (int, float)) and not isinstance(data, bool):
            if isinstance(data, int) and abs(data) > MAX_JSON_INT:
                raise ValueError(f"{where}: number out of range")
            value = float(data)
            if not math.isfinite(value):
                raise ValueError(f"{where}: not a finite number")
            _check_sign(where, value)
            return value
        raise ValueError(f"{where}: expected a number")
    if hint in (int, str, bool):
        if isinstance(data, hint) and not (hint is int and isinstance(data, bool)):
            if hint is int:
                if abs(data) > MAX_JSON_INT:
                    raise ValueError(f"{where}: number out of range")
                _check_sign(where, data)
            return data
        raise ValueError(f"{where}: expected {hint.__name__}")
    raise ValueError(f"{where}: unsupported type {hint!r}")
