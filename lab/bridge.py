#!/usr/bin/python3
"""TCP connections out of a lab guest without a guest network: virtio-serial ports.

QEMU gives the guest :data:`PORTS` virtio-serial ports named ``fsb.powercut.0``,
``fsb.powercut.1``, ..., each backed by a socket chardev that QEMU connects to a unix
socket here (:func:`qemu_argv`; the ``-device virtio-serial``, ``-chardev socket`` and
``-device virtserialport`` options of qemu-system-x86_64(1)). On this machine
:class:`HostRelay` accepts those connections and, for each, opens a TCP connection to the
powercut listener when the guest sends its first byte, then copies bytes both ways. In the
guest (module ``virtio_console``, lab/guest.py MODULES) each port is a character device
``/dev/vportNpM`` whose name is in ``/sys/class/virtio-ports/vportNpM/name`` (the Linux
virtio_console driver's sysfs; the ``/dev/virtio-ports/`` links are udev's, absent here);
:func:`serve`, run in the guest, listens on the guest's loopback address and gives each
connection it accepts a port of its own. So ``fsyncbench powercut write --to
127.0.0.1:PORT`` in the guest talks to the listener here, one TCP connection per guest
connection, and the listener sees a connection only when the guest's client starts its
handshake (a chardev connected straight to the listener is closed unused after 30 s,
fsyncbench.powercut.connection.AUTH_TIMEOUT_S, which a slow guest boot outlasts).

A port carries one connection per guest boot (QEMU connects it once): several ports serve
the writer's connection, a reconnect, and verify's two (the run list, then the run). When
the ports run out a connection is closed at once. When the listener ends a connection the
relay closes that port's chardev connection: the guest reads end-of-file there and closes
its client's connection.

Run in the guest: ``python3 lab/bridge.py PORT`` (brings ``lo`` up with busybox ``ip link
set lo up``, as the guest's init does not, prints ``bridge: ready`` once it listens, then
serves until killed). Standard library only: it runs under the guest's view of this
machine's Python.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

PORT_NAME = "fsb.powercut"
#: Ports per guest: connections a guest can make to the listener in one boot.
PORTS = 4


def qemu_argv(relay_socket: Path, ports: int = PORTS) -> list[str]:
    """QEMU arguments for ``ports`` virtio-serial ports, each connected (QEMU the client) to
    the unix socket of a :class:`HostRelay`, which must listen before QEMU starts."""
    argv = ["-device", "virtio-serial"]
    for i in range(ports):
        argv += [
            "-chardev",
            f"socket,path={relay_socket},id=fsbpc{i}",
            "-device",
            f"virtserialport,chardev=fsbpc{i},name={PORT_NAME}.{i}",
        ]
    return argv


def _pump(src: socket.socket, dst: socket.socket) -> None:
    """Copy until ``src`` ends, then end ``dst``'s sending side."""
    try:
        while True:
            data = src.recv(65536)
            if not data:
                return
            dst.sendall(data)
    except OSError:
        return
    finally:
        for sock, how in ((dst, socket.SHUT_WR), (src, socket.SHUT_RD)):
            try:
                sock.shutdown(how)
            except OSError:
                pass


class HostRelay:
    """On this machine: accepts QEMU's chardev connections on a unix socket (``path``, in
    a short temporary directory: a unix socket's path holds at most 107 bytes, unix(7))
    and joins each to a new TCP connection to ``target`` (HOST, PORT), opened when the
    guest sends its first byte, until :meth:`close`. Threads only; a context manager."""

    def __init__(self, target: tuple[str, int]) -> None:
        self._dir = Path(tempfile.mkdtemp(prefix="fsb-bridge-"))
        self.path = self._dir / "s"
        self.target = target
        self.server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.server.bind(str(self.path))
        self.server.listen(16)
        self._open: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _addr = self.server.accept()
            except OSError:  # closed
                return
            self._open.append(conn)
            threading.Thread(target=self._join, args=(conn,), daemon=True).start()

    def _join(self, chardev: socket.socket) -> None:
        try:
            first = chardev.recv(65536)  # the guest's client began its handshake
            if not first:
                return
            up = socket.create_connection(self.target, timeout=10)
        except OSError:
            chardev.close()
            return
        up.settimeout(None)
        self._open.append(up)
        try:
            up.sendall(first)
        except OSError:
            pass
        threading.Thread(target=_pump, args=(up, chardev), daemon=True).start()
        _pump(chardev, up)

    def close(self) -> None:
        self.server.close()
        for sock in self._open:
            try:
                sock.close()
            except OSError:
                pass
        shutil.rmtree(self._dir, ignore_errors=True)

    def __enter__(self) -> HostRelay:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


def find_ports(
    prefix: str = PORT_NAME, sysfs: Path = Path("/sys/class/virtio-ports")
) -> list[Path]:
    """The guest's character devices of the ports named ``prefix.N``, by N."""
    found = []
    for d in sysfs.glob("vport*"):
        try:
            name = (d / "name").read_text().strip()
        except OSError:
            continue
        head, _, index = name.rpartition(".")
        if head == prefix and index.isdigit():
            found.append((int(index), Path("/dev") / d.name))
    return [dev for _i, dev in sorted(found)]


def _to_port(conn: socket.socket, fd: int) -> None:
    try:
        while True:
            data = conn.recv(65536)
            if not data:
                return
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
    except OSError:
        return
    finally:
        try:
            conn.shutdown(socket.SHUT_RD)
        except OSError:
            pass


def _from_port(fd: int, conn: socket.socket) -> None:
    try:
        while True:
            data = os.read(fd, 65536)
            if not data:  # the host side closed (the listener ended the connection)
                return
            conn.sendall(data)
    except OSError:
        return
    finally:
        try:
            conn.shutdown(socket.SHUT_WR)
        except OSError:
            pass


def serve(port: int) -> None:
    """Relay each connection to guest 127.0.0.1:``port`` to a port of its own, until
    killed."""
    subprocess.run(["busybox", "ip", "link", "set", "lo", "up"], check=False)
    free = find_ports()
    if not free:
        raise SystemExit(f"bridge: no virtio-serial port named {PORT_NAME}.N")
    server = socket.create_server(("127.0.0.1", port))
    print(f"bridge: ready ({len(free)} ports)", flush=True)
    while True:
        conn, _addr = server.accept()
        if not free:
            print("bridge: no port left for a connection; closed", flush=True)
            conn.close()
            continue
        device = free.pop(0)
        fd = os.open(device, os.O_RDWR)
        print(f"bridge: connection on {device}", flush=True)
        threading.Thread(target=_to_port, args=(conn, fd), daemon=True).start()
        threading.Thread(target=_from_port, args=(fd, conn), daemon=True).start()


if __name__ == "__main__":
    serve(int(sys.argv[1]))
