"""What the experiments with their own processes or machines are given: ``powerloss``
(:func:`powerloss_plan`, its persistence models :func:`powerloss_models`) and ``powercut``
(a listener's :func:`address`, the secret a client proves: :func:`powercut_secret`, and
``powercut cycle``'s :func:`cycle_plan`)."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, cast

from fsyncbench.errors import FsyncbenchError
from fsyncbench.measure.plan import DEFAULT_PAYLOAD_BYTES, build_configs, parse_choices
from fsyncbench.options.values import (
    check_integer,
    check_list,
    check_number,
    check_path,
    check_text,
    choice,
    comma_list,
    fullfsync_list,
    given,
)

if TYPE_CHECKING:  # imported where used
    from fsyncbench.powercut.cycle import CyclePlan
    from fsyncbench.powercut.secret import Secret
    from fsyncbench.powerloss.plan import PowerlossPlan


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


def powerloss_models(value: str | Sequence[str] | None) -> tuple[str, ...]:
    """Persistence models as a comma list or a sequence (None: the default pair)."""
    from fsyncbench.powerloss.models import DEFAULT_MODELS, MODELS

    check_list(value, "models")
    text = comma_list(value)
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
            comma_list(journal_modes),
            comma_list(synchronous),
            fullfsync_list(fullfsync),
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
