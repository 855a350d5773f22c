"""The listener: the second machine's server, which keeps the durable record of every
commit a writer reports (:mod:`.listener_state`) and serves each peer on a connection of its
own (:mod:`.connection`: the handshake that proves the secret, one run per connection).

Bounded: connections (:data:`MAX_CONNECTIONS`; those over the limit are told so, at most
:data:`MAX_REFUSING` at once, the others just closed). Nothing a peer sends ends the
listener: an internal error ends that peer's connection only. :func:`listen` is
``powercut listen``; :func:`opened` is the start it shares with ``powercut cycle``.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

from fsyncbench.errors import FsyncbenchError
from fsyncbench.powercut import protocol
from fsyncbench.powercut.connection import (
    AUTH_TIMEOUT_S,
    IDLE_TIMEOUT_S,
    LINGER_S,
    Bindings,
    Connection,
    Log,
    linger_close,
)
from fsyncbench.powercut.listener_state import ListenerState, utc_now
from fsyncbench.powercut.protocol import encode
from fsyncbench.powercut.run import install_stop_handlers, restore_handlers
from fsyncbench.powercut.secret import (
    ENV_VAR,
    ListenerSecret,
    ListenerStart,
    Secret,
    listener_secret,
    loose_permissions,
    write_secret_file,
)

MAX_CONNECTIONS = 32
#: Connections over the limit being told so at once; beyond that they are just closed.
MAX_REFUSING = 4


class Listener:
    """Accepts writers and verifiers; one thread per connection (at most MAX_CONNECTIONS)."""

    def __init__(
        self,
        state: ListenerState,
        bind: str,
        port: int,
        log: Log,
        secret: Secret,
        idle_timeout_s: float = IDLE_TIMEOUT_S,
        auth_timeout_s: float = AUTH_TIMEOUT_S,
    ) -> None:
        self.state = state
        self.log = log
        self.secret = secret
        self.idle_timeout_s = idle_timeout_s
        self.auth_timeout_s = auth_timeout_s
        self._bindings = Bindings()
        family = socket.AF_INET6 if ":" in bind else socket.AF_INET
        try:
            self.sock = socket.create_server((bind, port), family=family, backlog=16)
        except OSError as exc:
            raise FsyncbenchError(
                f"cannot listen on {protocol.format_address(bind, port)}: {exc.strerror or exc}"
            ) from None
        self.sock.settimeout(0.5)
        self.address = self.sock.getsockname()[:2]
        self._slots = threading.BoundedSemaphore(MAX_CONNECTIONS)
        self._refusals = threading.BoundedSemaphore(MAX_REFUSING)
        self._open: set[socket.socket] = set()
        self._open_lock = threading.Lock()
        self._threads: list[threading.Thread] = []

    def serve(self, stop: threading.Event) -> None:
        """Accept until ``stop`` is set; then close every connection."""
        try:
            while not stop.is_set():
                try:
                    conn, addr = self.sock.accept()
                except TimeoutError:
                    continue
                except OSError as exc:  # e.g. EMFILE: keep serving the others
                    self.log(f"accept failed: {exc.strerror or exc}")
                    time.sleep(0.1)
                    continue
                peer = protocol.format_address(addr[0], addr[1])
                if not self._slots.acquire(blocking=False):
                    self.log(f"refused {peer}: {MAX_CONNECTIONS} connections already open")
                    if self._refusals.acquire(blocking=False):
                        threading.Thread(target=self._refuse, args=(conn,), daemon=True).start()
                    else:
                        conn.close()
                    continue
                thread = threading.Thread(
                    target=self._run, args=(conn, peer), daemon=True, name=f"powercut-{peer}"
                )
                self._threads = [t for t in self._threads if t.is_alive()]
                self._threads.append(thread)
                thread.start()
        finally:
            self.close()

    def _refuse(self, conn: socket.socket) -> None:
        """Tell a peer over the connection limit, then close it without a reset."""
        try:
            conn.settimeout(LINGER_S)
            conn.sendall(encode("error", error=protocol.TOO_MANY_CONNECTIONS))
            linger_close(conn)
        except OSError:
            pass
        finally:
            conn.close()
            self._refusals.release()

    def _run(self, conn: socket.socket, peer: str) -> None:
        with self._open_lock:
            self._open.add(conn)
        try:
            Connection(
                conn,
                peer,
                self.state,
                self.log,
                self.secret,
                self._bindings,
                self.idle_timeout_s,
                self.auth_timeout_s,
            ).serve()
        except Exception as exc:  # never let one peer end the listener
            self.log(f"{peer}: internal error {type(exc).__name__}: {exc}; closing the connection")
        finally:
            with self._open_lock:
                self._open.discard(conn)
            try:
                conn.close()
            except OSError:
                pass
            self._slots.release()

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass
        with self._open_lock:
            for conn in list(self._open):
                try:
                    conn.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
        for t in self._threads:
            t.join(timeout=2.0)


def _is_loopback(bind: str) -> bool:
    try:
        return ipaddress.ip_address(bind).is_loopback
    except ValueError:
        return bind == "localhost"


def _timestamped(log: Log) -> Log:
    return lambda line: log(f"{utc_now()} {line}")


@contextlib.contextmanager
def opened(
    bind: str,
    port: int,
    state_path: Path,
    secret_file: Path | None,
    environ: Mapping[str, str],
    log: Log,
) -> Iterator[tuple[ListenerState, Listener, ListenerSecret]]:
    """A listener's start, for ``listen`` and ``cycle``: its secret
    (:func:`.secret.listener_secret`: the one in ``secret_file``, in ``environ``'s
    FSYNCBENCH_POWERCUT_SECRET, or a new one), its record in ``state_path`` and its address
    bound, then a new secret written to its file (mode 0600); yields (record, server,
    secret) and closes both when the block ends. Raises FsyncbenchError if the secret file
    cannot be read or written, the state cannot be opened or the address cannot be bound; a
    state file this call created is then removed again (one that existed is kept as it
    was)."""
    keys = listener_secret(state_path, secret_file, environ)
    existed = state_path.exists()
    state = ListenerState(state_path)
    try:
        server: Listener | None = None
        try:
            server = Listener(state, bind, port, log, keys.secret)
            if keys.created and keys.path is not None:
                write_secret_file(keys.path, keys.secret)
        except BaseException:
            if server is not None:
                server.close()
            if not existed:  # a listener that never listened leaves no state behind
                state.close()
                for suffix in ("", "-wal", "-shm", "-journal"):
                    Path(f"{state_path}{suffix}").unlink(missing_ok=True)
            raise
        try:
            yield state, server, keys
        finally:
            server.close()
    finally:
        state.close()


def listen(
    bind: str,
    port: int,
    state_path: Path,
    log: Log,
    ready: Callable[[tuple[str, int]], None] | None = None,
    *,
    secret_file: Path | None = None,
    environ: Mapping[str, str] | None = None,
    announce: Callable[[ListenerStart], None] | None = None,
) -> None:
    """Run the listener until SIGINT/SIGTERM (a clean stop). Its secret: the one in
    ``secret_file`` (default: the state's name + ``.secret``), or in ``environ``'s
    FSYNCBENCH_POWERCUT_SECRET (default ``os.environ``; not read when ``secret_file`` is
    named), or a new one written to that file (mode 0600) once the address is bound
    (:func:`opened`). ``announce`` gets it, once, with the bound address, for the user;
    ``log`` never does. Raises FsyncbenchError as :func:`opened` does."""
    if not 0 <= port <= 65535:
        raise FsyncbenchError(f"--port must be from 0 to 65535, got {port}")
    log = _timestamped(log)
    env = os.environ if environ is None else environ
    with opened(bind, port, state_path, secret_file, env, log) as (state, server, keys):
        runs, acks = state.summary()
        host, bound_port = server.address
        log(
            f"listening on {protocol.format_address(host, bound_port)}; state "
            f"{state_path} ({runs:,} runs, {acks:,} commits recorded); Ctrl-C stops"
        )
        if keys.path is None:
            log(f"peers must prove the secret in {ENV_VAR}")
        else:
            made = "made now" if keys.created else "kept from an earlier start"
            log(f"peers must prove the secret in {keys.path} ({made})")
            loose = None if keys.created else loose_permissions(keys.path)
            if loose:
                log(
                    f"warning: {keys.path} may be read by other users (mode {loose}): "
                    f"chmod 600 {keys.path}"
                )
        if not _is_loopback(bind):
            log(
                "note: the connections are not encrypted: the secret keeps out other "
                "clients, not someone who can read or alter this network's traffic"
            )
        if announce:
            announce(ListenerStart((host, bound_port), bind, keys))
        if ready:
            ready((host, bound_port))
        stop = threading.Event()
        previous = install_stop_handlers(stop)
        try:
            server.serve(stop)
        finally:
            restore_handlers(previous)
        log(f"listener stopped; the record is in {state_path}")
