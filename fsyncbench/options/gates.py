"""The CI gates a command is given (``--max-p99``, ``--fail-on``, ``--config``,
``--max-p99-strict``, ``--accept-disturbed``), parsed into :class:`Gates`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from fsyncbench.errors import FsyncbenchError
from fsyncbench.options.values import check_list, comma_list, given


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
        verdicts = gates.parse_verdicts(comma_list(fail_on)) if fail_on is not None else ()
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
