"""A disk drive whose flush behaviour is known exactly: an nbdkit Python plugin.

The drive has a volatile write-back cache of ``cache_blocks`` blocks of ``block_bytes``
bytes in this process's memory, in front of a backing image file (its stable media). A
SIGKILL of nbdkit is a power cut: the cache is lost, the image keeps what reached it.

Semantics (the NBD protocol's, https://github.com/NetworkBlockDevice/nbd/blob/master/doc/proto.md,
"NBD_CMD_FLUSH" and "NBD_CMD_FLAG_FUA"):

- a write puts its blocks in the cache (a block already dirty is overwritten in place);
  when the cache holds more than ``cache_blocks`` blocks the oldest dirty one is written
  to the image (evicted);
- FLUSH writes every dirty block to the image and fdatasyncs it, then acknowledges;
- a write with FUA writes its own blocks through to the image (and fdatasyncs) before it
  is acknowledged; other dirty blocks stay in the cache;
- a clean shutdown (nbdkit unloading the plugin) writes the cache back, as a drive does
  on a standby command; only a kill loses it.

Modes (``mode=``):

- ``honest``: as above;
- ``lying``: FLUSH and FUA are acknowledged and ignored (a drive, or a hypervisor cache
  mode, that acknowledges what it did not make durable);
- ``lying-sometimes``: every ``lie_every``-th FLUSH (counting from a seeded offset) is
  acknowledged and ignored, the others honoured; FUA is honoured;
- ``write-through``: no cache: every write reaches the image (fdatasync'd) before it is
  acknowledged; FLUSH has nothing to do;
- ``slow``: honest, and each FLUSH (and FUA write) takes ``flush_latency_ms`` more, like a
  disk whose flush waits for its media.

Every FLUSH is logged to ``log=FILE`` when it arrives and when it is done (its number,
``received``, then ``honoured`` or ``dropped``, and how many blocks were dirty), every FUA
write when it is done, so a lost acknowledgement can be traced to
the layer that dropped it. The log is written with os.write: a SIGKILL does not lose it
(the kernel holds it), a host crash might.

Run: ``nbdkit --unix SOCK --foreground python lab/drive.py image=FILE [mode=honest]
[cache_blocks=1024] [block_bytes=4096] [flush_latency_ms=0] [lie_every=2] [seed=0]
[log=FILE]``; a bad setting or a missing image ends nbdkit before it listens. The class
:class:`Drive` holds the semantics and is unit-tested without nbdkit
(tests/test_lab_drive.py); the module-level functions are nbdkit's Python plugin API
version 2 (https://libguestfs.org/nbdkit-python-plugin.3.html).
"""

from __future__ import annotations

import os
import random
import time
from collections import OrderedDict

try:  # present only inside nbdkit's embedded interpreter
    import nbdkit  # type: ignore[import-not-found]
except ImportError:  # unit tests import the module for Drive alone
    nbdkit = None

API_VERSION = 2
MODES = ("honest", "lying", "lying-sometimes", "write-through", "slow")


class Drive:
    """The drive's state and semantics (module docstring). ``image``: path of the backing
    file, which must exist and have the drive's size; ``log``: path of the flush log or
    "" for none. Raises ValueError for an unknown mode or a non-positive size."""

    def __init__(
        self,
        image: str,
        mode: str = "honest",
        cache_blocks: int = 1024,
        block_bytes: int = 4096,
        flush_latency_s: float = 0.0,
        lie_every: int = 2,
        seed: int = 0,
        log: str = "",
    ) -> None:
        if mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
        if cache_blocks < 1 or block_bytes < 512 or lie_every < 1:
            raise ValueError("cache_blocks, lie_every >= 1 and block_bytes >= 512 please")
        self.mode = mode
        self.cache_blocks = cache_blocks
        self.block = block_bytes
        self.flush_latency_s = flush_latency_s
        self.lie_every = lie_every
        self.lie_offset = random.Random(seed).randrange(lie_every)
        self.fd = os.open(image, os.O_RDWR)
        self.size = os.fstat(self.fd).st_size
        self.log_fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644) if log else -1
        self.dirty: OrderedDict[int, bytes] = OrderedDict()
        self.flushes = 0
        self.fuas = 0
        self.dropped = 0

    # ------------------------------------------------------------------ the block layer

    def _media_block(self, index: int) -> bytes:
        data = os.pread(self.fd, self.block, index * self.block)
        return data + bytes(self.block - len(data))

    def _block(self, index: int) -> bytes:
        cached = self.dirty.get(index)
        return cached if cached is not None else self._media_block(index)

    def _to_media(self, index: int, data: bytes) -> None:
        os.pwrite(self.fd, data, index * self.block)

    def _evict(self) -> None:
        while len(self.dirty) > self.cache_blocks:
            index, data = self.dirty.popitem(last=False)
            self._to_media(index, data)

    def read(self, offset: int, length: int) -> bytes:
        """``length`` bytes at ``offset`` as the host sees them (the cache over the media)."""
        out = bytearray()
        first, last = offset // self.block, (offset + length - 1) // self.block
        for index in range(first, last + 1):
            out += self._block(index)
        start = offset - first * self.block
        return bytes(out[start : start + length])

    def write(self, offset: int, data: bytes, fua: bool = False) -> None:
        """Write ``data`` at ``offset`` (into the cache, or through it: module docstring)."""
        first, last = offset // self.block, (offset + len(data) - 1) // self.block
        blocks = {}
        for index in range(first, last + 1):
            base = index * self.block
            lo, hi = max(offset, base), min(offset + len(data), base + self.block)
            if lo == base and hi == base + self.block:
                blocks[index] = bytes(data[lo - offset : hi - offset])
            else:
                block = bytearray(self._block(index))
                block[lo - base : hi - base] = data[lo - offset : hi - offset]
                blocks[index] = bytes(block)
        through = self.mode == "write-through" or (fua and self.mode != "lying")
        if fua:
            self.fuas += 1
        for index, block in blocks.items():
            if through:
                self.dirty.pop(index, None)
                self._to_media(index, block)
            else:
                self.dirty[index] = block
        if through:
            os.fdatasync(self.fd)
            if fua and self.mode == "slow":
                time.sleep(self.flush_latency_s)
        else:
            self._evict()
        if fua:
            self._log(
                f"fua {self.fuas} {'through' if through else 'ignored'} @{offset}+{len(data)}"
            )

    def flush(self) -> None:
        """FLUSH: the whole cache to the media and fdatasync, unless this mode drops it."""
        self.flushes += 1
        drop = self.mode == "lying" or (
            self.mode == "lying-sometimes"
            and (self.flushes + self.lie_offset) % self.lie_every == 0
        )
        dirty = len(self.dirty)
        self._log(f"flush {self.flushes} received dirty={dirty}")
        if drop:
            self.dropped += 1
        else:
            self.write_back()
            if self.mode == "slow":
                time.sleep(self.flush_latency_s)
        self._log(f"flush {self.flushes} {'dropped' if drop else 'honoured'} dirty={dirty}")

    def write_back(self) -> None:
        """Every dirty block to the media, oldest first, then fdatasync."""
        while self.dirty:
            index, data = self.dirty.popitem(last=False)
            self._to_media(index, data)
        os.fdatasync(self.fd)

    def _log(self, line: str) -> None:
        if self.log_fd >= 0:
            os.write(self.log_fd, f"{time.time():.6f} {line}\n".encode())

    def close(self) -> None:
        """A clean shutdown: the cache is written back (only a kill loses it)."""
        self.write_back()
        self._log(f"shutdown: cache written back; {self.flushes} flushes, {self.dropped} dropped")
        os.close(self.fd)
        if self.log_fd >= 0:
            os.close(self.log_fd)


# ---------------------------------------------------------------- nbdkit plugin API v2

_config: dict[str, str] = {}
_drive: Drive | None = None


def config(key: str, value: str) -> None:
    _config[key] = value


def config_complete() -> None:
    if "image" not in _config:
        raise RuntimeError("image=FILE is required")
    _the_drive()  # every setting checked, the image opened, before nbdkit listens


def _the_drive() -> Drive:
    global _drive
    if _drive is None:
        c = _config
        _drive = Drive(
            c["image"],
            c.get("mode", "honest"),
            int(c.get("cache_blocks", "1024")),
            int(c.get("block_bytes", "4096")),
            float(c.get("flush_latency_ms", "0")) / 1000,
            int(c.get("lie_every", "2")),
            int(c.get("seed", "0")),
            c.get("log", ""),
        )
    return _drive


def thread_model() -> int:
    return nbdkit.THREAD_MODEL_SERIALIZE_ALL_REQUESTS


def open(readonly: bool) -> int:
    _the_drive()
    return 1


def get_size(h: int) -> int:
    return _the_drive().size


def can_write(h: int) -> bool:
    return True


def can_flush(h: int) -> bool:
    return True


def can_fua(h: int) -> int:
    return nbdkit.FUA_NATIVE


def can_multi_conn(h: int) -> bool:
    return False


def pread(h: int, buf: bytearray, offset: int, flags: int) -> None:
    buf[:] = _the_drive().read(offset, len(buf))


def pwrite(h: int, buf: bytes, offset: int, flags: int) -> None:
    _the_drive().write(offset, bytes(buf), bool(flags & nbdkit.FLAG_FUA))


def flush(h: int, flags: int) -> None:
    _the_drive().flush()


def unload() -> None:
    if _drive is not None:
        _drive.close()
