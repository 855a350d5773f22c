"""User input, checked in one place before any work is done.

What the CLI's options and the Python API's keyword arguments say, turned into validated
plans and specifications: :func:`run_plan`, :func:`audit_plans`, :func:`one_pragmas`,
:class:`Gates`, :class:`Outputs`, and single values. Every check raises
:class:`~fsyncbench.errors.FsyncbenchError` with one line naming the CLI option, so a bad
value reads the same through ``fsyncbench`` and through :mod:`fsyncbench.api`. Nothing here
measures, prints or writes (the output checks create an unnamed temporary file that
vanishes again, to learn that a directory really is writable).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast, overload

from fsyncbench.errors import FsyncbenchError
from fsyncbench.measure import runner
from fsyncbench.measure import writers as writers_measure
from fsyncbench.measure.plan import (
    DEFAULT_CI_TARGET_PCT,
    DEFAULT_PAYLOAD_BYTES,
    DEFAULT_ROUNDS,
    DEFAULT_WARMUP,
    RunPlan,
    build_configs,
    default_budgets,
    default_min_samples,
    parse_choices,
    parse_fullfsync,
)
from fsyncbench.model import Pragmas

if TYPE_CHECKING:  # imported where used: measure.evidence is heavy
    from fsyncbench.measure.evidence import EvidencePlan
    from fsyncbench.powercut.cycle import CyclePlan
    from fsyncbench.powercut.secret import Secret
    from fsyncbench.powerloss.plan import PowerlossPlan

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
def _comma_list(value: str | Sequence[str]) -> str: ...
@overload
def _comma_list(value: None) -> None: ...
@overload
def _comma_list(value: str | Sequence[str] | None) -> str | None: ...


def _comma_list(value: str | Sequence[str] | None) -> str | None:
    """A comma list as the CLI takes it: a string as it is, a sequence joined."""
    if value is None or isinstance(value, str):
        return value
    return ",".join(str(v) for v in value)


def _fullfsync_list(value: str | bool | Sequence[str | bool] | None) -> str | None:
    if isinstance(value, bool):
        value = [value]
    if value is None or isinstance(value, str):
        return value
    return ",".join(("on" if v else "off") if isinstance(v, bool) else str(v) for v in value)


def run_plan(
    target: Path,
    *,
    journal_modes: str | Sequence[str] | None = None,
    synchronous: str | Sequence[str] | None = None,
    fullfsync: str | bool | Sequence[str | bool] | None = None,
    samples: int | None = None,
    ci_target_pct: float | None = None,
    min_samples: int | None = None,
    budget_seconds: float | None = None,
    run_budget_seconds: float | None = None,
    rounds: int = DEFAULT_ROUNDS,
    warmup: int = DEFAULT_WARMUP,
    payload_bytes: int = DEFAULT_PAYLOAD_BYTES,
    primitives: bool = True,
    platform: str = sys.platform,
) -> RunPlan:
    """The plan of ``fsyncbench run`` (``target`` already checked) on ``platform``: the
    pragma lists parsed (comma strings or sequences), the defaults of an adaptive or a fixed
    run filled in (the budgets: :func:`fsyncbench.measure.plan.default_budgets`), and every
    bound checked (:class:`fsyncbench.measure.plan.RunPlan`)."""
    check_list(journal_modes, "journal_modes")
    check_list(synchronous, "synchronous")
    check_list(fullfsync, "fullfsync", flags=True)
    check_integer(samples, "samples", optional=True)
    check_number(ci_target_pct, "ci_target_pct", optional=True)
    check_integer(min_samples, "min_samples", optional=True)
    check_number(budget_seconds, "budget_seconds", optional=True)
    check_number(run_budget_seconds, "run_budget_seconds", optional=True)
    check_integer(rounds, "rounds")
    check_integer(warmup, "warmup")
    check_integer(payload_bytes, "payload_bytes")
    if samples is not None and (ci_target_pct is not None or min_samples is not None):
        raise FsyncbenchError(
            "--samples fixes the sample count; it cannot be combined with "
            "--ci-target-pct or --min-samples"
        )
    adaptive = samples is None
    default_run_budget_s, default_budget_s = default_budgets(platform)
    return RunPlan(
        target=target,
        configs=build_configs(
            _comma_list(journal_modes),
            _comma_list(synchronous),
            _fullfsync_list(fullfsync),
            platform,
        ),
        samples=samples,
        budget_s=default_budget_s if budget_seconds is None else budget_seconds,
        warmup=warmup,
        payload_bytes=payload_bytes,
        primitives=primitives,
        ci_target_pct=DEFAULT_CI_TARGET_PCT if ci_target_pct is None else ci_target_pct,
        min_samples=default_min_samples(platform) if min_samples is None else min_samples,
        run_budget_s=run_budget_seconds
        if run_budget_seconds is not None
        else (default_run_budget_s if adaptive else None),
        rounds=rounds,
    )


def audit_plans(
    target: Path,
    *,
    samples: int = 200,
    budget_seconds: float = 5.0,
    compare_syncs: int = 200,
    sweep_repeats: int = 3,
    sweep_max_mib: int = 64,
    trace_commits: int = 20,
    trace: bool = True,
) -> tuple[RunPlan, EvidencePlan]:
    """(RunPlan, EvidencePlan) of ``fsyncbench audit`` (``target`` already checked): a fixed
    sample count of the flush primitives and :data:`fsyncbench.measure.evidence.TIMED_CONFIGS`
    in one round, then the evidence (:class:`fsyncbench.measure.evidence.EvidencePlan`)."""
    from fsyncbench.measure import evidence

    audit_types(samples, budget_seconds, compare_syncs, sweep_repeats, sweep_max_mib, trace_commits)
    if samples < 1:
        raise FsyncbenchError(f"--samples must be at least 1, got {samples}")
    plan = RunPlan(
        target=target,
        configs=evidence.TIMED_CONFIGS,
        samples=samples,
        budget_s=budget_seconds,
        warmup=10,
        run_budget_s=None,
    )
    ev_plan = evidence.EvidencePlan(
        compare_syncs=compare_syncs,
        sweep_repeats=sweep_repeats,
        sweep_max_bytes=sweep_max_mib << 20,
        trace_commits=trace_commits,
        trace=trace,
    )
    return plan, ev_plan


def audit_types(
    samples: Any,
    budget_seconds: Any,
    compare_syncs: Any,
    sweep_repeats: Any,
    sweep_max_mib: Any,
    trace_commits: Any,
) -> None:
    """The types of ``audit``'s numbers (checked with ``from_report`` too, where they are
    not used)."""
    check_integer(samples, "samples")
    check_number(budget_seconds, "budget_seconds")
    check_integer(compare_syncs, "compare_syncs")
    check_integer(sweep_repeats, "sweep_repeats")
    check_integer(sweep_max_mib, "sweep_max_mib")
    check_integer(trace_commits, "trace_commits")


def one_pragmas(
    journal_mode: str, synchronous: str, fullfsync: str | bool | None = None, *, command: str
) -> Pragmas:
    """One pragma combination (``crash``, ``powercut write``): ``fullfsync`` None or empty
    means on on macOS, unset elsewhere (``crash`` has no fullfsync)."""
    from fsyncbench.measure.workloads import JOURNAL_MODES, SYNCHRONOUS

    check_text(journal_mode, "journal_mode")
    check_text(synchronous, "synchronous")
    check_list(fullfsync, "fullfsync", flags=True)
    mode = parse_choices(journal_mode, JOURNAL_MODES, "journal_mode")
    sync = parse_choices(synchronous, SYNCHRONOUS, "synchronous")
    if command == "crash":
        if len(mode) != 1 or len(sync) != 1:
            raise FsyncbenchError("crash takes one journal_mode and one synchronous value")
        return Pragmas(mode[0], sync[0])
    text = _fullfsync_list(fullfsync)
    full = parse_fullfsync(text) if text else (True,) if sys.platform == "darwin" else (None,)
    if len(mode) != 1 or len(sync) != 1 or len(full) != 1:
        raise FsyncbenchError(f"{command} takes one journal_mode, synchronous and fullfsync value")
    return Pragmas(mode[0], sync[0], full[0])


def address(text: str, option: str) -> tuple[str, int]:
    """HOST:PORT of a powercut listener (:func:`fsyncbench.powercut.parse_address`)."""
    from fsyncbench.powercut import parse_address

    return parse_address(text, option)


def cycle_plan(
    start: object,
    cut: object,
    verify: object,
    restore: object,
    cycles: object,
    cut_after: object,
    seed: object,
    timeouts_s: Sequence[object],
) -> CyclePlan:
    """``powercut cycle``'s plan: the four commands (argv strings, split with shlex), the
    cycle count, the cut moments' range (``"2..10"`` seconds), the seed (None: a random
    one) and the timeouts (start, command, verify, retry interval; seconds), each checked
    (:func:`fsyncbench.powercut.cycle.make_plan`)."""
    from fsyncbench.powercut.cycle import make_plan

    for value, name in ((start, "start"), (cut, "cut"), (verify, "verify")):
        check_text(value, name)
    check_text(restore, "restore", optional=True)
    check_integer(cycles, "cycles")
    check_text(cut_after, "cut_after")
    check_integer(seed, "seed", optional=True)
    for value, name in zip(timeouts_s, ("start", "command", "verify", "retry_every")):
        check_number(value, f"{name}_timeout_s" if name != "retry_every" else "retry_every_s")
    start_s, command_s, verify_s, retry_s = (float(cast(float, v)) for v in timeouts_s)
    return make_plan(
        cast(str, start),
        cast(str, cut),
        cast(str, verify),
        restore=cast("str | None", restore),
        cycles=cast(int, cycles),
        cut_after=cast(str, cut_after),
        seed=cast("int | None", seed),
        start_timeout_s=start_s,
        command_timeout_s=command_s,
        verify_timeout_s=verify_s,
        retry_every_s=retry_s,
    )


def powercut_secret(secret: object, secret_file: object) -> Secret:
    """The listener's secret ``powercut write`` and ``verify`` prove: ``secret`` (the
    Python API only: a command-line value would show in ps and the shell history), else
    the one in ``secret_file`` (--secret-file), else FSYNCBENCH_POWERCUT_SECRET; none of
    them is an error (:func:`fsyncbench.powercut.secret.client_secret`)."""
    from fsyncbench.powercut.secret import client_secret

    if secret is not None and not isinstance(secret, str):  # never shown: it may be one
        raise FsyncbenchError(f"secret must be a string or None, got a {type(secret).__name__}")
    check_path(secret_file, "secret_file", optional=True)
    path = None if secret_file is None else Path(cast("str | os.PathLike[str]", secret_file))
    return client_secret(secret, path, os.environ)


@dataclass(frozen=True)
class Gates:
    """The CI gates (``--max-p99``, ``--fail-on``, ``--config``), parsed: ``max_p99_ns`` a
    p99 limit in ns (None: none), ``fail_on`` path verdicts that fail
    (:data:`fsyncbench.model.PATH_VERDICTS`), ``configs`` the configurations they look at
    (empty: all but the no-sync write baseline), ``accept_disturbed`` whether ``max_p99``
    judges a run that stayed disturbed. Build with :meth:`parse`."""

    max_p99_ns: int | None = None
    fail_on: tuple[str, ...] = ()
    configs: tuple[str, ...] = ()
    max_p99_strict: bool = False
    accept_disturbed: bool = False

    @classmethod
    def parse(
        cls,
        max_p99: str | int | None = None,
        fail_on: str | Sequence[str] | None = None,
        configs: str | Sequence[str] | None = None,
        max_p99_strict: bool = False,
        accept_disturbed: bool = False,
    ) -> Gates:
        """``max_p99`` a duration with a unit (``"10ms"``, ``"500us"``) or ns as an int;
        ``fail_on`` and ``configs`` comma lists or sequences (``--config`` may repeat);
        ``max_p99_strict``: judge ``max_p99`` by the upper bound of p99's interval
        (:func:`fsyncbench.judge.gates.check`); ``accept_disturbed``: judge ``max_p99`` on a
        run that stayed disturbed too (else "cannot tell"). Raises FsyncbenchError."""
        from fsyncbench.judge import gates

        check_list(fail_on, "fail_on")
        check_list(configs, "configs")
        if max_p99 is None:
            max_ns = None
        elif isinstance(max_p99, int) and not isinstance(max_p99, bool):
            if max_p99 < 1:
                raise FsyncbenchError(f"invalid --max-p99 {max_p99!r}: must be at least 1 ns")
            max_ns = max_p99
        elif isinstance(max_p99, bool):  # not a duration: parse_duration's message for it
            raise FsyncbenchError(
                f"invalid --max-p99 {max_p99!r}: give a number with a unit, e.g. 10ms, 500us, 2s"
            )
        elif isinstance(max_p99, str):
            max_ns = gates.parse_duration(max_p99, "--max-p99")
        else:
            raise FsyncbenchError(
                "max_p99 must be a duration such as '10ms' or an integer of ns, got "
                + given(max_p99)
            )
        verdicts = gates.parse_verdicts(_comma_list(fail_on)) if fail_on is not None else ()
        names = gates.parse_names([configs] if isinstance(configs, str) else configs)
        if max_p99_strict and max_ns is None:
            raise FsyncbenchError("--max-p99-strict needs --max-p99 DURATION")
        if not isinstance(accept_disturbed, bool):
            raise FsyncbenchError(
                f"accept_disturbed must be True or False, got {given(accept_disturbed)}"
            )
        return cls(max_ns, verdicts, names, bool(max_p99_strict), accept_disturbed)

    @property
    def active(self) -> bool:
        """True when a gate is set (``configs`` alone gates nothing)."""
        return self.max_p99_ns is not None or bool(self.fail_on)

    def check_configs(self, known: Sequence[str], where: str = "this report has") -> None:
        """Every configuration named is one of ``known`` (case-insensitive)."""
        from fsyncbench.judge import gates

        if self.configs:
            gates.check_names(self.configs, known, where)


@dataclass(frozen=True)
class Outputs:
    """The files a command writes once its work is done, checked by :meth:`check` before it
    starts: ``output`` (what would be printed, ``-o``; None: standard output), ``csv`` (the
    raw samples), ``prometheus`` (the metrics for node_exporter's textfile collector),
    ``report_dir`` (the report files, for a command that saves them; not checked when
    ``no_report``)."""

    output: Path | None = None
    csv: Path | None = None
    report_dir: Path | None = None
    no_report: bool = False
    prometheus: Path | None = None

    def __post_init__(self) -> None:
        # a str or any os.PathLike is taken for a path, as everywhere in the API
        for field in ("output", "csv", "report_dir", "prometheus"):
            value = getattr(self, field)
            check_path(value, field, optional=True)
            if value is not None and not isinstance(value, Path):
                object.__setattr__(self, field, Path(value))

    @property
    def save_dir(self) -> Path | None:
        """Where report files go; None: none are saved."""
        return None if self.no_report else self.report_dir

    def check(self, source: Path | None = None) -> None:
        """--output FILE, --csv FILE, --prometheus FILE and --report-dir DIR can be written,
        and --output is not a directory (it was one for run, audit and powercut verify before
        --report-dir: the message says so); no two files are the same, and none is
        ``source``, the report being read."""
        from fsyncbench.report import store

        out, csv, report_dir = self.output, self.csv, self.report_dir
        if report_dir is not None and not self.no_report:
            store.check_output_dir(report_dir)
        if out is not None:
            if out.is_dir():
                hint = (
                    f"; to save the report files in it, use --report-dir {out}"
                    if report_dir is not None
                    else ""
                )
                raise FsyncbenchError(
                    f"--output {out} is a directory: --output takes the FILE to "
                    f"write the printed result to{hint}"
                )
            writable_file(out)
        writable_file(csv)
        writable_file(self.prometheus)
        named: list[tuple[str, Path]] = [
            (option, path)
            for option, path in (
                ("--output", out),
                ("--csv", csv),
                ("--prometheus", self.prometheus),
            )
            if path is not None
        ]
        for i, (first, a) in enumerate(named):
            for second, b in named[i + 1 :]:
                if same_file(a, b):
                    raise FsyncbenchError(f"{first} and {second} both name {a}: give two files")
        if source is not None:
            for _option, path in named:
                if same_file(path, source):
                    raise FsyncbenchError(
                        f"{path} is the report being shown: give another output file"
                    )


def writable_file(path: Path | None) -> None:
    """A file to be written later must have an existing, writable directory (checked before
    measuring, so a typo does not waste the run): an unnamed temporary file is really
    created there, as for --report-dir (root passes access(2) even on /proc)."""
    if path is None:
        return
    parent = path.parent
    if path.is_dir():
        raise FsyncbenchError(f"{path} is a directory, not a file")
    from fsyncbench.report.store import cannot_create_in, is_stream

    if is_stream(path):  # /dev/null, /dev/stderr, a named pipe: written to, not replaced
        if not os.access(path, os.W_OK):
            raise FsyncbenchError(f"cannot write {path}: permission denied")
        return
    if path.exists() and not path.is_file():
        # a regular file is replaced by rename: a block device or a socket never is
        raise FsyncbenchError(
            f"cannot write {path}: not a regular file (the other files written to are a "
            "FIFO, the null device and this session's own terminal)"
        )
    if not parent.is_dir():
        why = "is not a directory" if parent.exists() else "does not exist"
        raise FsyncbenchError(f"cannot write {path}: {parent} {why}")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise FsyncbenchError(f"cannot write {path}: directory {parent} is not writable")
    refused = cannot_create_in(parent)
    if refused:
        raise FsyncbenchError(
            f"cannot write {path}: directory {parent} refuses new files (creating one "
            f"there failed: {refused})"
        )


def same_file(a: Path, b: Path) -> bool:
    """True when ``a`` and ``b`` name the same existing file (or the same path)."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.abspath(a) == os.path.abspath(b)


def powerloss_models(value: str | Sequence[str] | None) -> tuple[str, ...]:
    """Persistence models as a comma list or a sequence (None: the default pair)."""
    from fsyncbench.powerloss.models import DEFAULT_MODELS, MODELS

    check_list(value, "models")
    text = _comma_list(value)
    if text is None:
        return DEFAULT_MODELS
    try:
        upper = parse_choices(text, [m.upper() for m in MODELS], "persistence model")
    except FsyncbenchError as exc:
        if os.sep in text or os.path.exists(text):  # run --powerloss DIR: DIR taken as MODELS
            raise FsyncbenchError(
                f"{exc} (a directory? write DIR before --powerloss, or --powerloss "
                "synced-only,prefix DIR)"
            ) from None
        raise
    return tuple(m.lower() for m in upper)


def powerloss_plan(
    *,
    journal_modes: str | Sequence[str] | None = None,
    synchronous: str | Sequence[str] | None = None,
    fullfsync: str | bool | Sequence[str | bool] | None = None,
    models: str | Sequence[str] | None = None,
    semantics: str | None = None,
    commits: int | None = None,
    payload_bytes: int = DEFAULT_PAYLOAD_BYTES,
    sector_bytes: int = 512,
    psow: bool | None = None,
    max_states: int | None = None,
    samples: int | None = None,
    seed: int = 0,
    keep_failures: str | os.PathLike[str] | None = None,
    platform: str = sys.platform,
    wal_autocheckpoint: int | None = None,
) -> PowerlossPlan:
    """The plan of ``fsyncbench powerloss`` (:class:`fsyncbench.powerloss.PowerlossPlan`):
    pragma lists as ``run`` takes them, ``models`` (comma list), ``semantics`` (default:
    macos on macOS, windows on Windows, else linux), ``commits`` 1-200 per configuration, ``sector_bytes`` 512
    or 4096, ``max_states`` and ``samples`` 1-4096, ``seed`` >= 0, ``keep_failures`` a
    directory to create or reuse (its parent must exist), ``wal_autocheckpoint`` 0 to
    1,000,000 WAL pages (None: SQLite's default)."""
    from fsyncbench.powerloss.models import (
        DEFAULT_MAX_STATES,
        DEFAULT_SAMPLES,
        SECTOR_SIZES,
        SEMANTICS,
        default_semantics,
    )
    from fsyncbench.powerloss.plan import (
        DEFAULT_COMMITS,
        MAX_COMMITS,
        MAX_WAL_AUTOCHECKPOINT,
        PowerlossPlan,
    )

    check_list(journal_modes, "journal_modes")
    check_list(synchronous, "synchronous")
    check_list(fullfsync, "fullfsync", flags=True)
    check_text(semantics, "semantics", optional=True)
    for name, value in (
        ("commits", commits),
        ("max_states", max_states),
        ("samples", samples),
        ("wal_autocheckpoint", wal_autocheckpoint),
    ):
        check_integer(value, name, optional=True)
    check_integer(payload_bytes, "payload_bytes")
    check_integer(sector_bytes, "sector_bytes")
    check_integer(seed, "seed")
    if psow is not None and not isinstance(psow, bool):
        raise FsyncbenchError(f"psow must be a bool or None, got {given(psow)}")
    check_path(keep_failures, "keep_failures", optional=True)
    plan = PowerlossPlan(
        configs=build_configs(
            _comma_list(journal_modes),
            _comma_list(synchronous),
            _fullfsync_list(fullfsync),
            platform,
        ),
        models=powerloss_models(models),
        semantics=choice(semantics or default_semantics(platform), SEMANTICS, "--semantics"),
        commits=DEFAULT_COMMITS if commits is None else commits,
        payload_bytes=payload_bytes,
        sector_bytes=sector_bytes,
        psow=psow,
        max_states=DEFAULT_MAX_STATES if max_states is None else max_states,
        samples=DEFAULT_SAMPLES if samples is None else samples,
        seed=seed,
        keep_failures=None if keep_failures is None else Path(keep_failures),
        wal_autocheckpoint=wal_autocheckpoint,
    )
    if not 1 <= plan.commits <= MAX_COMMITS:
        raise FsyncbenchError(f"--commits must be 1 to {MAX_COMMITS}, got {plan.commits}")
    if not 0 <= plan.payload_bytes <= 1 << 20:
        raise FsyncbenchError(f"--payload-bytes must be 0 to 1048576, got {plan.payload_bytes}")
    if plan.sector_bytes not in SECTOR_SIZES:
        raise FsyncbenchError(
            f"--sector-bytes must be one of {', '.join(map(str, SECTOR_SIZES))}, "
            f"got {plan.sector_bytes}"
        )
    for option, value in (("--max-states", plan.max_states), ("--samples", plan.samples)):
        if not 1 <= value <= 4096:
            raise FsyncbenchError(f"{option} must be 1 to 4096, got {value}")
    if plan.seed < 0:
        raise FsyncbenchError(f"--seed must be 0 or more, got {plan.seed}")
    pages = plan.wal_autocheckpoint
    if pages is not None and not 0 <= pages <= MAX_WAL_AUTOCHECKPOINT:
        raise FsyncbenchError(
            f"--wal-autocheckpoint must be 0 to {MAX_WAL_AUTOCHECKPOINT:,}, got {pages}"
        )
    if plan.keep_failures is not None:
        keep = plan.keep_failures
        if keep.is_symlink() or (keep.exists() and not keep.is_dir()):
            raise FsyncbenchError(f"--keep-failures {keep}: not a directory")
        if not keep.exists():
            parent = keep.parent
            if not parent.exists():
                raise FsyncbenchError(f"--keep-failures {keep}: {parent} does not exist")
            if not parent.is_dir():
                raise FsyncbenchError(f"--keep-failures {keep}: {parent} is not a directory")
        from fsyncbench.report.store import check_output_dir

        try:  # writable, before any work (a real probe file, as for --report-dir)
            check_output_dir(keep)
        except FsyncbenchError as exc:
            raise FsyncbenchError(f"--keep-failures: {exc}") from None
    return plan


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
    names = tuple(n.strip().lower() for n in (_comma_list(value) or "").split(",") if n.strip())
    if len(names) != 2 or (names[0] == names[1] and not same):
        raise FsyncbenchError(
            f"--vs takes two different configurations, e.g. wal/full,truncate/full; got "
            f"{_comma_list(value)!r}"
        )
    return names


#: Most steps one commit of ``run --steps-per-commit`` may hold.
MAX_STEPS_PER_COMMIT = 10_000
#: Longest busy timeout ``run --busy-timeout-ms`` takes (ms): 10 minutes.
MAX_BUSY_TIMEOUT_MS = 600_000


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


def writers_plan(
    configs: Sequence[Pragmas],
    *,
    writers: str | int | Sequence[int] | None,
    steps_per_commit: str | int | Sequence[int] | None = None,
    payload_bytes: Sequence[int] = (DEFAULT_PAYLOAD_BYTES,),
    begin: str = "immediate",
    busy_timeout_ms: int = writers_measure.DEFAULT_BUSY_TIMEOUT_MS,
    seconds: float = writers_measure.DEFAULT_WINDOW_S,
) -> writers_measure.WritersPlan | None:
    """The concurrent-writers plan of ``run --writers`` over the run's ``configs``; None
    when neither ``writers`` nor ``steps_per_commit`` is given and ``payload_bytes`` holds
    one size (the default run). Steps per commit or payload sizes alone measure one writer.
    Raises FsyncbenchError with one line on a bad value."""
    counts = int_list(writers, "--writers", 1, writers_measure.MAX_WRITERS)
    steps = int_list(steps_per_commit, "--steps-per-commit", 1, MAX_STEPS_PER_COMMIT)
    sizes = tuple(payload_bytes) or (DEFAULT_PAYLOAD_BYTES,)
    # every value checked, used or not: a bad one is refused before anything is measured
    check_integer(busy_timeout_ms, "busy_timeout_ms")
    if not 0 <= busy_timeout_ms <= MAX_BUSY_TIMEOUT_MS:
        raise FsyncbenchError(
            f"--busy-timeout-ms must be between 0 and {MAX_BUSY_TIMEOUT_MS}, got {busy_timeout_ms}"
        )
    check_number(seconds, "writers_seconds")
    if not 0.5 <= seconds <= 3600 or seconds != seconds:
        raise FsyncbenchError(f"--writers-seconds must be between 0.5 and 3600, got {seconds}")
    mode = choice(begin, writers_measure.BEGIN_MODES, "--begin")
    if not counts and not steps and len(sizes) < 2:
        return None
    return writers_measure.WritersPlan(
        configs=tuple(configs),
        counts=counts or (1,),
        begin=mode,
        busy_timeout_ms=busy_timeout_ms,
        steps_per_commit=steps or (1,),
        payload_bytes=sizes,
        window_s=float(seconds),
    )
