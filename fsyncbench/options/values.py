"""Single values a command is given, checked: the API arguments' types (``check_*``, with
the value shown by :func:`given`), the target directory, a choice among allowed words, a
percentage, --model-call-ms, --assume, one fullfsync value, --vs and comma lists of
whole numbers; the comma lists of pragma values as the CLI takes them; the --format choices."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import overload

from fsyncbench.errors import FsyncbenchError
from fsyncbench.measure import runner
from fsyncbench.measure.plan import parse_fullfsync

#: --format choices per kind of result (text is the default everywhere).
REPORT_FORMATS = ("text", "markdown", "json", "html")
TABLE_FORMATS = ("text", "markdown", "json")
COMPARE_FORMATS = ("text", "markdown", "json", "html")
VERIFY_FORMATS = ("text", "json")

#: --model-call-ms bounds, in milliseconds (one microsecond to one hour).
MODEL_CALL_MS_MIN, MODEL_CALL_MS_MAX = 0.001, 3_600_000


def given(value: object) -> str:
    """``value`` as a type message shows it: its repr (shortened), or its type's name."""
    if value is None or isinstance(value, (str, bytes, int, float, list, tuple, dict, set)):
        text = repr(value)
        return text if len(text) <= 60 else text[:57] + "..."
    return f"a {type(value).__name__}"


# The type checks of the API's arguments, done at each entry before any work. ``name`` is
# the API parameter; the CLI never passes a value these refuse (argparse has parsed it), so
# the CLI's messages for bad *values* are untouched.


def check_path(value: object, name: str, *, optional: bool = False) -> None:
    """A path: a ``str`` or an ``os.PathLike`` (None where ``optional``)."""
    if optional and value is None:
        return
    if not isinstance(value, (str, os.PathLike)):
        none = " or None" if optional else ""
        raise FsyncbenchError(
            f"{name} must be a path (str or os.PathLike){none}, got {given(value)}"
        )


def check_integer(value: object, name: str, *, optional: bool = False) -> None:
    """An ``int`` and not a ``bool`` (a float such as 2.5 is refused, not rounded)."""
    if optional and value is None:
        return
    if not isinstance(value, int) or isinstance(value, bool):
        none = " or None" if optional else ""
        raise FsyncbenchError(f"{name} must be an integer{none}, got {given(value)}")


def check_number(value: object, name: str, *, optional: bool = False) -> None:
    """An ``int`` or a ``float``, not a ``bool``."""
    if optional and value is None:
        return
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        none = " or None" if optional else ""
        raise FsyncbenchError(f"{name} must be a number{none}, got {given(value)}")


def check_text(value: object, name: str, *, optional: bool = False) -> None:
    """A ``str`` (None where ``optional``)."""
    if optional and value is None:
        return
    if not isinstance(value, str):
        none = " or None" if optional else ""
        raise FsyncbenchError(f"{name} must be a string{none}, got {given(value)}")


def check_list(
    value: object, name: str, *, comma: bool = True, flags: bool = False, optional: bool = True
) -> None:
    """A list: a comma-separated ``str`` (when ``comma``) or a sequence of ``str`` (and of
    ``bool`` too, when ``flags``); None where ``optional``."""
    if optional and value is None:
        return
    items = (str, bool) if flags else (str,)
    if flags and isinstance(value, bool):
        return
    if isinstance(value, str) and comma:
        return
    if (
        isinstance(value, Sequence)
        and not isinstance(value, (str, bytes))
        and all(isinstance(v, items) for v in value)
    ):
        return
    what = (
        "a comma-separated string, a bool or a sequence of them"
        if flags
        else "a comma-separated string or a sequence of strings"
        if comma
        else "a sequence of strings"
    )
    raise FsyncbenchError(
        f"{name} must be {what}{' or None' if optional else ''}, got {given(value)}"
    )


def check_instance(value: object, kind: type, name: str, *, optional: bool = True) -> None:
    """An instance of ``kind`` (None where ``optional``)."""
    if optional and value is None:
        return
    if not isinstance(value, kind):
        article = "an" if kind.__name__[0] in "AEIOU" else "a"
        none = " or None" if optional else ""
        raise FsyncbenchError(f"{name} must be {article} {kind.__name__}{none}, got {given(value)}")


def check_callback(value: object, name: str, *, optional: bool = True) -> None:
    """A callable (None where ``optional``)."""
    if optional and value is None:
        return
    if not callable(value):
        none = " or None" if optional else ""
        raise FsyncbenchError(f"{name} must be callable{none}, got {given(value)}")


def target_dir(path: str | os.PathLike[str], name: str = "target") -> Path:
    """DIR resolved, after checking it is a path (``name``: the API parameter) to an
    existing, readable directory (:func:`fsyncbench.measure.runner.check_target`)."""
    check_path(path, name)
    return runner.check_target(Path(path))


def choice(value: str, allowed: Sequence[str], option: str) -> str:
    """``value`` if it is one of ``allowed``; else argparse's words for a bad choice."""
    if value not in allowed:
        offered = ", ".join(repr(a) for a in allowed)
        raise FsyncbenchError(
            f"argument {option}: invalid choice: {value!r} (choose from {offered})"
        )
    return value


def model_call_ms(value: float, shown: str | None = None) -> float:
    """--model-call-ms: milliseconds between 0.001 and 3,600,000 (one hour); ``shown`` is
    the value as the user wrote it, for the message."""
    check_number(value, "model_call_ms")
    if not MODEL_CALL_MS_MIN <= value <= MODEL_CALL_MS_MAX:  # worded like every other range check
        raise FsyncbenchError(
            "--model-call-ms must be between 0.001 and 3600000, got "
            + (shown if shown is not None else f"{value:g}")
        )
    return value


def percent(value: str | float) -> float:
    """A percentage of 0 or more: ``"20"``, ``"20%"`` or a number."""
    try:
        pct = float(value.strip().rstrip("%")) if isinstance(value, str) else float(value)
    except (TypeError, ValueError):
        raise FsyncbenchError(f"invalid percentage {value!r}: give a number such as 20") from None
    if pct != pct or pct in (float("inf"), float("-inf")):
        raise FsyncbenchError(f"invalid percentage {value!r}: give a finite number such as 20")
    if pct < 0:
        raise FsyncbenchError(f"invalid percentage {value!r}: must be 0 or more")
    return pct


def assumed(facts: str | Sequence[str] | None) -> tuple[str, ...]:
    """--assume facts (the user-declared facts a machine cannot show; a comma-separated
    string or a sequence), each known, in order, without repeats."""
    from fsyncbench.judge.devices import DECLARABLE

    check_list(facts, "assume")
    given = [f.strip() for f in facts.split(",")] if isinstance(facts, str) else facts or ()
    for fact in given:
        choice(fact, sorted(DECLARABLE), "--assume")
    return tuple(dict.fromkeys(given))


@overload
def comma_list(value: str | Sequence[str]) -> str: ...
@overload
def comma_list(value: None) -> None: ...
@overload
def comma_list(value: str | Sequence[str] | None) -> str | None: ...


def comma_list(value: str | Sequence[str] | None) -> str | None:
    """A comma list as the CLI takes it: a string as it is, a sequence joined."""
    if value is None or isinstance(value, str):
        return value
    return ",".join(str(v) for v in value)


def fullfsync_list(value: str | bool | Sequence[str | bool] | None) -> str | None:
    """fullfsync values as the CLI takes them: a string as it is, a bool or a sequence of
    bools and strings joined (a bool written "on" or "off")."""
    if isinstance(value, bool):
        value = [value]
    if value is None or isinstance(value, str):
        return value
    return ",".join(("on" if v else "off") if isinstance(v, bool) else str(v) for v in value)


def fullfsync_value(value: str | bool) -> bool:
    """One fullfsync value: a bool, or "on"/"off" (any case). Raises FsyncbenchError."""
    if isinstance(value, bool):
        return value
    check_text(value, "fullfsync")
    full = parse_fullfsync(value)
    if len(full) != 1:
        raise FsyncbenchError(f"fullfsync takes one value, on or off; got {value!r}")
    return full[0]


def vs_names(value: str | Sequence[str] | None, same: bool = False) -> tuple[str, ...]:
    """``--vs A,B``: two configuration labels, lower case (() for None); ``same``: A and B
    may be one label (two reports' wal/full against each other). Raises FsyncbenchError
    unless exactly two (different, without ``same``) are named."""
    if value is None:
        return ()
    check_list(value, "vs")
    names = tuple(n.strip().lower() for n in (comma_list(value) or "").split(",") if n.strip())
    if len(names) != 2 or (names[0] == names[1] and not same):
        raise FsyncbenchError(
            f"--vs takes two different configurations, e.g. wal/full,truncate/full; got "
            f"{comma_list(value)!r}"
        )
    return names


def int_list(
    value: str | int | Sequence[int] | None, name: str, low: int, high: int
) -> tuple[int, ...]:
    """A comma list of whole numbers in [``low``, ``high``] (a string as the CLI takes it,
    an int or a sequence), duplicates dropped, order kept. Raises FsyncbenchError with one
    line naming ``name``."""
    if isinstance(value, bool):
        raise FsyncbenchError(f"{name} must be whole numbers, got {given(value)}")
    if value is None:
        return ()
    items = (
        value.split(",")
        if isinstance(value, str)
        else [value]
        if isinstance(value, int)
        else list(value)
    )
    out: list[int] = []
    for item in items:
        try:
            n = int(str(item).strip())
        except ValueError:
            raise FsyncbenchError(f"{name} must be whole numbers, got {item!r}") from None
        if not low <= n <= high:
            raise FsyncbenchError(f"{name} must be between {low} and {high}, got {n}")
        if n not in out:
            out.append(n)
    if not out:
        raise FsyncbenchError(f"{name} must name at least one number")
    return tuple(out)
