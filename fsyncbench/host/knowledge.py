"""The device knowledge table: what a disk's model string alone tells about how it treats a
flush, read from one versioned data file in the package (``device_knowledge.json``).

Each row is a pattern over a disk's identity and the facts it carries, each fact with its
source (a line of source code, a vendor document, smartmontools' drive database):

- ``emulated``: the disk is emulated by this hypervisor or emulator (``QEMU``,
  ``VirtualBox``...): its flush goes to the host, whose cache mode cannot be seen from the
  guest;
- ``ignores_flush``: the emulator acknowledges this disk's flushes without flushing by
  default (the value says which setting changes it);
- ``cloud_block``: network block storage of this cloud provider, which documents durable,
  replicated writes;
- ``raid``: the disk is a volume of a hardware RAID controller of this family, named by the
  family's kernel driver (``megaraid_sas``, ``hpsa``, ``aacraid``, ``arcmsr``:
  :data:`fsyncbench.host._raid.FAMILIES`): a write-back cache sits in front of the drives;
- ``hybrid``: a hybrid drive (SSHD) whose NAND cache can answer a write before the platters
  do (the value says what the cache is);
- ``plp``: a drive family whose vendor documents power-loss protection (the value names
  the family);
- ``power_cut``: a published power-cut result for this model (the value says what was seen).

The same rows serve the live host reader (:mod:`fsyncbench.host.layers`,
:mod:`fsyncbench.host._raid`) and the judge re-judging a stored report
(:mod:`fsyncbench.judge.known`), so a verdict does not depend on the version that read the
facts. A model string is identity, not measurement: verdicts resting on a row are inferred.

A disk's identity is ``"vendor model"`` lower case with runs of white space made one, as
Linux shows them (``/sys/block/<dev>/device/vendor`` and ``model``: 8 and 16 characters for
SCSI and SATA, whose vendor is ``ATA`` and whose model keeps the first 16 characters of
the ATA model, drivers/ata/libata-scsi.c; NVMe has no vendor file and a 40-character model),
as macOS (diskutil's Device / Media Name) and Windows (STORAGE_DEVICE_DESCRIPTOR's vendor
and product) report them.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from pathlib import Path

#: The data file (shipped in the package beside this module).
TABLE_FILE = Path(__file__).with_name("device_knowledge.json")

EMULATED = "emulated"
IGNORES_FLUSH = "ignores_flush"
CLOUD_BLOCK = "cloud_block"
RAID = "raid"
HYBRID = "hybrid"
PLP = "plp"
POWER_CUT = "power_cut"
#: Every fact a row may carry, in the order a description names them.
FACTS = (EMULATED, IGNORES_FLUSH, CLOUD_BLOCK, RAID, HYBRID, PLP, POWER_CUT)


@dataclass(frozen=True)
class KnownDevice:
    """One row: ``id`` (unique, stable), ``pattern`` (a regular expression searched in a
    disk's identity, module docstring), ``name`` (what it is, in words), ``facts`` and
    ``sources`` ((fact, value) and (fact, source) pairs, one source per fact)."""

    id: str
    pattern: str
    name: str
    facts: tuple[tuple[str, str], ...]
    sources: tuple[tuple[str, str], ...]

    def fact(self, name: str) -> str | None:
        """The value of fact ``name`` (one of :data:`FACTS`), or None."""
        return dict(self.facts).get(name)

    def source(self, name: str) -> str:
        """The source of fact ``name`` ("" when the row does not carry it)."""
        return dict(self.sources).get(name, "")


@dataclass(frozen=True)
class Knowledge:
    """The table: its ``version`` (raised whenever a row changes what is judged),
    ``updated`` (ISO date) and ``devices`` (rows in file order; the first match of a fact
    wins)."""

    version: int
    updated: str
    devices: tuple[KnownDevice, ...]


def parse(data: object) -> Knowledge:
    """The table from the file's parsed JSON. Raises ValueError naming the first row that
    breaks a rule: a unique id, a pattern that compiles, known facts only, each fact with a
    non-empty value and a non-empty source, no source without its fact."""
    if not isinstance(data, dict) or not isinstance(data.get("version"), int):
        raise ValueError("device knowledge: no integer 'version'")
    rows = data.get("devices")
    if not isinstance(rows, list):
        raise ValueError("device knowledge: no 'devices' list")
    out: list[KnownDevice] = []
    seen: set[str] = set()
    for row in rows:
        rid = row.get("id") if isinstance(row, dict) else None
        if not isinstance(rid, str) or not rid or rid in seen:
            raise ValueError(f"device knowledge: a row without a unique id ({rid!r})")
        seen.add(rid)
        pattern = row.get("match")
        try:
            re.compile(str(pattern))
        except re.error as e:
            raise ValueError(f"device knowledge {rid}: match does not compile: {e}") from e
        facts, sources = row.get("facts") or {}, row.get("sources") or {}
        if not facts or not isinstance(facts, dict) or not isinstance(sources, dict):
            raise ValueError(f"device knowledge {rid}: no facts")
        unknown = set(facts) - set(FACTS)
        if unknown:
            raise ValueError(f"device knowledge {rid}: unknown facts {sorted(unknown)}")
        for name, value in facts.items():
            if not str(value).strip() or not str(sources.get(name, "")).strip():
                raise ValueError(f"device knowledge {rid}: fact {name} without value or source")
        if set(sources) - set(facts):
            raise ValueError(f"device knowledge {rid}: a source without its fact")
        out.append(
            KnownDevice(
                rid,
                str(pattern),
                str(row.get("name") or rid),
                tuple((k, str(v)) for k, v in facts.items()),
                tuple((k, str(sources[k])) for k in facts),
            )
        )
    return Knowledge(data["version"], str(data.get("updated", "")), tuple(out))


@functools.lru_cache(maxsize=1)
def table() -> Knowledge:
    """The table shipped with fsyncbench (:data:`TABLE_FILE`), read once. Raises ValueError
    (:func:`parse`) or OSError when the installed file is broken or missing: a defect of the
    installation, not of the user's input."""
    return parse(json.loads(TABLE_FILE.read_text(encoding="utf-8")))


def identity(vendor: str | None, model: str | None) -> str:
    """A disk's identity as the rows match it (module docstring): ``"ata st1000lm014-1ej1"``."""
    return " ".join(f"{vendor or ''} {model or ''}".lower().split())


@functools.lru_cache(maxsize=512)
def _matching(ident: str) -> tuple[KnownDevice, ...]:
    return tuple(row for row in table().devices if re.search(row.pattern, ident))


def matches(vendor: str | None, model: str | None) -> tuple[KnownDevice, ...]:
    """Every row whose pattern is found in the disk's identity, in table order."""
    ident = identity(vendor, model)
    return _matching(ident) if ident else ()


def known(vendor: str | None, model: str | None, fact: str) -> KnownDevice | None:
    """The first row matching the disk that carries ``fact`` (one of :data:`FACTS`), or None."""
    return next((row for row in matches(vendor, model) if row.fact(fact)), None)
