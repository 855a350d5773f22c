"""What ``fsyncbench powerloss`` and ``run --powerloss`` find (:mod:`fsyncbench.powerloss`):
each configuration x persistence model's losses after simulated power cuts, and what the
documentation and the recording say of the configuration."""

from __future__ import annotations

from dataclasses import dataclass

from fsyncbench.model.results import Pragmas


@dataclass(frozen=True)
class PowerlossModelOutcome:
    """What one persistence model lost for one configuration (``fsyncbench powerloss``,
    :mod:`fsyncbench.powerloss.matrix`).

    ``states``: crash states checked (a state reached from two crash points counts twice);
    ``distinct_states``: of them, different on disk; ``sampled``: some points had more states
    than were tried (the figures are then lower bounds); ``states_losing``: states missing
    at least one acknowledged commit; ``worst_lost``/``mean_lost``: acknowledged commits
    missing, over the states that are not corrupt; ``corrupt_states``: unopenable or failing
    integrity_check; ``invalid``: why the model does not apply ("" if it does; then every
    figure is 0); ``worst``: how to rebuild the worst state and what it lost; ``psow``: the
    powersafe-overwrite flag of the trace this model was applied to; ``kept_at``: where
    ``--keep-failures`` wrote the worst state ("" if nowhere); ``known_corrupt``: the
    known-corrupt states built from the same trace (:mod:`fsyncbench.powerloss.proofs`)
    that the same checker opened, ``known_corrupt_flagged`` how many of them it called
    corrupt and ``known_corrupt_missed`` the names of the others (0, 0, "" in reports
    written before the proof existed): ``corrupt_states`` 0 is evidence only when every
    known-corrupt state was flagged."""

    model: str
    crash_points: int
    states: int
    distinct_states: int
    sampled: bool
    states_losing: int
    worst_lost: int
    mean_lost: float
    corrupt_states: int
    invalid: str
    worst: str
    psow: bool = True
    kept_at: str = ""
    known_corrupt: int = 0
    known_corrupt_flagged: int = 0
    known_corrupt_missed: str = ""

    @property
    def checker_proven(self) -> bool:
        """True when the checker flagged every known-corrupt state of this trace (and there
        was at least one)."""
        return self.known_corrupt > 0 and self.known_corrupt_flagged == self.known_corrupt

    @property
    def loses(self) -> bool:
        """True when some state lost an acknowledged commit or was corrupt."""
        return self.worst_lost > 0 or self.corrupt_states > 0


@dataclass(frozen=True)
class PowerlossClaim:
    """One source's word on a configuration after a power cut
    (:mod:`fsyncbench.powerloss.promises`): ``durable`` "durable", "not durable" or "not
    stated"; ``consistent`` False where the source says it may corrupt, None where it says
    nothing of it; ``why`` (a quote, or what the recording showed) and ``source`` (a URL,
    or the recording's SQLite)."""

    durable: str
    consistent: bool | None
    why: str
    source: str

    def short(self) -> str:
        """``not durable, may corrupt`` / ``durable``: a table cell."""
        return self.durable + (", may corrupt" if self.consistent is False else "")


#: :meth:`PowerlossConfig.agreement` where a model lost nothing the documentation allows.
NO_LOSS_UNDER_MODEL = "no loss under this model"


@dataclass(frozen=True)
class PowerlossConfig:
    """One configuration: its recorded trace's size, what is expected of it
    (``documented_durable``, ``documented_consistent``, ``documented_why`` with its sources:
    the documentation where it states durability, else what the recording observed; the
    figures are compared with these) and each model's outcome; the two sources apart in
    ``documentation`` and ``observation`` (None in reports written before they were kept
    apart); in WAL mode ``checkpoints`` (the close's included) and ``wal_restarts`` the
    recording crossed (0 in reports written before they were counted)."""

    pragmas: Pragmas
    commits: int
    writes: int
    syncs: int
    dirsyncs: int
    psow: bool
    documented_durable: bool
    documented_consistent: bool
    documented_why: str
    models: tuple[PowerlossModelOutcome, ...]
    checkpoints: int = 0
    wal_restarts: int = 0
    documentation: PowerlossClaim | None = None
    observation: PowerlossClaim | None = None

    def agreement(self, m: PowerlossModelOutcome) -> str:
        """``agrees``; ``DISAGREES`` (documented durable or consistent, and this model
        lost a commit or corrupted the database); ``no loss under this model`` (documented
        not durable, nothing lost here: one model's silence does not show the documentation
        too cautious, a harsher model or real storage may lose); "" for an invalid model."""
        if m.invalid:
            return ""
        if (self.documented_durable and m.worst_lost) or (
            self.documented_consistent and m.corrupt_states
        ):
            return "DISAGREES"
        if not self.documented_durable and not m.loses:
            return NO_LOSS_UNDER_MODEL
        return "agrees"


@dataclass(frozen=True)
class PowerlossResult:
    """Every configuration x model, with how it was made: ``semantics`` (linux/macos),
    ``sector_bytes`` (torn), ``seed``, ``max_states``/``samples`` per crash point, the SQLite
    that recorded (apsw's) and the stdlib's, the wall time, and ``wal_autocheckpoint`` (the
    WAL pages between automatic checkpoints; None: SQLite's default, 1000)."""

    configs: tuple[PowerlossConfig, ...]
    models: tuple[str, ...]
    semantics: str
    commits: int
    payload_bytes: int
    sector_bytes: int
    seed: int
    max_states: int
    samples: int
    sqlite_version: str
    stdlib_sqlite_version: str
    apsw_version: str
    elapsed_ns: int
    wal_autocheckpoint: int | None = None
