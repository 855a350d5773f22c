#!/usr/bin/python3
"""Append numbered records to an NBD drive and acknowledge each once it is durable.

Run with the system Python, which has libnbd's binding (Debian python3-libnbd;
https://libguestfs.org/libnbd.3.html): ``/usr/bin/python3 lab/cutcheck.py SOCKET
[--batch K] [--sync flush|fua] [--block-bytes N] [--seed S]``.

Record ``n`` (from 1) is one block at offset ``n * block_bytes``: an 8-byte magic, ``n``,
its length and a payload drawn from a generator seeded with (seed, n), so a checker
rebuilds it exactly (:func:`record`). After every ``batch`` records the client makes them
durable (``flush``: NBD_CMD_FLUSH; ``fua``: the batch's last write carries
NBD_CMD_FLAG_FUA, the others a FLUSH before it) and prints ``ACK n`` for each, then
flushes stdout: an ACK line means the drive acknowledged it durable. It runs until the
drive is full or the connection dies (the cut), and exits 0 either way.

:func:`check` reads an image after a cut and says which acknowledged records it lacks.
"""

from __future__ import annotations

import argparse
import random
import struct
import sys

MAGIC = b"FSBCUTv1"
HEADER = struct.Struct("<8sQQ")


def record(n: int, block_bytes: int, seed: int) -> bytes:
    """Record ``n``'s block: header (magic, n, payload length) and its seeded payload."""
    payload_len = block_bytes - HEADER.size
    rng = random.Random(f"{seed}/{n}")
    return HEADER.pack(MAGIC, n, payload_len) + rng.randbytes(payload_len)


def check(image: str, acked: list[int], block_bytes: int, seed: int) -> list[int]:
    """The acknowledged record numbers the image at ``image`` lacks (or holds damaged)."""
    missing = []
    with open(image, "rb") as f:
        for n in acked:
            f.seek(n * block_bytes)
            if f.read(block_bytes) != record(n, block_bytes, seed):
                missing.append(n)
    return missing


def main() -> int:
    import nbd  # type: ignore[import-not-found]  # the system Python's libnbd binding

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("socket")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--sync", choices=("flush", "fua"), default="flush")
    ap.add_argument("--block-bytes", type=int, default=4096)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    h = nbd.NBD()
    h.connect_unix(args.socket)
    blocks = h.get_size() // args.block_bytes
    n = 0
    try:
        while n + args.batch < blocks:
            first = n + 1
            for k in range(first, first + args.batch):
                last = k == first + args.batch - 1
                flags = nbd.CMD_FLAG_FUA if (last and args.sync == "fua") else 0
                if last and args.sync == "fua" and args.batch > 1:
                    h.flush()
                h.pwrite(record(k, args.block_bytes, args.seed), k * args.block_bytes, flags)
            if args.sync == "flush":
                h.flush()
            n = first + args.batch - 1
            sys.stdout.write("".join(f"ACK {k}\n" for k in range(first, n + 1)))
            sys.stdout.flush()
    except nbd.Error as exc:  # the cut
        sys.stderr.write(f"cutcheck: connection ended after record {n}: {exc}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
