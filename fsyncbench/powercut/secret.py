"""The listener's shared secret: made by ``powercut listen``, given to ``write`` and
``verify``, proven on every connection without being sent.

Each connection opens with a fresh random ``challenge`` nonce from the listener; the peer
answers with :func:`proof`, an HMAC-SHA256 of the nonce keyed with the secret (RFC 2104,
https://www.rfc-editor.org/rfc/rfc2104), which the listener compares in constant time
(:func:`hmac.compare_digest`, https://docs.python.org/3/library/hmac.html#hmac.compare_digest).
The secret itself never crosses the network, and a recorded proof is worthless on another
connection. The channel is not encrypted and the listener does not prove itself to the
peer: the secret stops mistakes (a writer pointed at the wrong listener, a second writer)
and casual clients, not someone on the network path.

A :class:`Secret` never shows its value in ``repr`` or ``str``, so it cannot slip into a
log line, an error message or a report by accident; only :func:`write_secret_file`,
:func:`proof` and :func:`masked` (which hides it in text others wrote, such as a command's
output that ``powercut cycle`` quotes) read ``value``.
"""

from __future__ import annotations

import hmac
import ipaddress
import os
import re
import secrets
import shlex
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from fsyncbench.errors import FsyncbenchError
from fsyncbench.report.layout import width, wrap
from fsyncbench.report.store import durable_sync, fsync_dir

#: The environment variable ``write``, ``verify`` (and ``listen``) read the secret from.
ENV_VAR = "FSYNCBENCH_POWERCUT_SECRET"
#: What a secret may be: printable ASCII without spaces, long enough not to be guessed.
SECRET_RE = re.compile(r"[\x21-\x7e]{16,256}")
SECRET_RULE = "16 to 256 printable ASCII characters without spaces"
#: Random bytes in a secret ``listen`` makes (128 bits: secrets module's guidance,
#: https://docs.python.org/3/library/secrets.html#how-many-bytes-should-tokens-use).
SECRET_BYTES = 16
#: Random bytes in a challenge nonce (sent as 32 hex digits).
NONCE_BYTES = 16
#: What the HMAC covers besides the nonce: names the protocol and its version, so a proof
#: made for another purpose (or version) is never valid here.
_PROOF_LABEL = b"fsyncbench powercut 2 auth\x00"


@dataclass(frozen=True)
class Secret:
    """A shared secret; ``repr`` and ``str`` never show it."""

    value: str = field(repr=False)

    def __post_init__(self) -> None:
        if not isinstance(self.value, str) or not SECRET_RE.fullmatch(self.value):
            raise FsyncbenchError(f"not a powercut secret ({SECRET_RULE})")  # never shown

    def __str__(self) -> str:
        return "<secret>"


def generate() -> Secret:
    """A new random secret (:func:`secrets.token_urlsafe`: 22 URL-safe characters)."""
    return Secret(secrets.token_urlsafe(SECRET_BYTES))


def new_nonce() -> str:
    return secrets.token_hex(NONCE_BYTES)


def proof(secret: Secret, nonce: str) -> str:
    """The answer to a ``challenge``: HMAC-SHA256(secret, label + nonce), 64 hex digits."""
    mac = hmac.new(secret.value.encode("ascii"), _PROOF_LABEL + nonce.encode("ascii"), "sha256")
    return mac.hexdigest()


def proof_ok(secret: Secret, nonce: str, given: str) -> bool:
    """Is ``given`` the proof of ``nonce``? Constant-time in the proof's content."""
    return hmac.compare_digest(proof(secret, nonce), given)


def masked(text: str, secret: Secret) -> str:
    """``text`` with the secret's value, wherever it stands, shown as ``<secret>`` (as
    ``str`` shows a :class:`Secret`): for text this program did not write and quotes, such
    as what a command printed."""
    return text.replace(secret.value, str(secret))


def _parse(text: str, where: str) -> Secret:
    value = text.strip()
    if not SECRET_RE.fullmatch(value):
        raise FsyncbenchError(f"{where}: not a powercut secret ({SECRET_RULE})")
    return Secret(value)


def read_secret_file(path: Path) -> Secret:
    """The secret in ``path`` (surrounding whitespace ignored). Raises FsyncbenchError."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise FsyncbenchError(f"cannot read --secret-file {path}: {exc.strerror or exc}") from None
    try:
        text = data.decode("ascii")
    except UnicodeDecodeError:
        text = ""
    return _parse(text, f"--secret-file {path}")


def from_environment(environ: Mapping[str, str]) -> Secret | None:
    """The secret in :data:`ENV_VAR`, None when unset or empty. Raises FsyncbenchError."""
    text = environ.get(ENV_VAR, "")
    return _parse(text, ENV_VAR) if text.strip() else None


def client_secret(
    value: str | None, secret_file: Path | None, environ: Mapping[str, str]
) -> Secret:
    """The secret ``write`` or ``verify`` proves: ``value`` (the Python API only),
    else ``secret_file``, else the environment variable. None of them is an error, said in
    one line: a listener refuses every peer without the secret."""
    if value is not None and secret_file is not None:
        raise FsyncbenchError("give the secret or a --secret-file, not both")
    if value is not None:
        return _parse(value, "secret")
    if secret_file is not None:
        return read_secret_file(secret_file)
    found = from_environment(environ)
    if found is None:
        raise FsyncbenchError(
            "no listener secret: give --secret-file FILE (the file powercut listen wrote, "
            f"copied to this machine) or set {ENV_VAR}"
        )
    return found


def default_secret_file(state: Path) -> Path:
    """Where ``listen`` keeps its secret without ``--secret-file``: beside its state."""
    return state.with_name(state.name + ".secret")


@dataclass(frozen=True)
class ListenerSecret:
    """The secret a listener checks, and where it came from: ``path`` the file it is in
    (None: the environment variable), ``created`` True when this start made it."""

    secret: Secret
    path: Path | None
    created: bool


def listener_secret(
    state: Path, secret_file: Path | None, environ: Mapping[str, str]
) -> ListenerSecret:
    """The secret ``listen`` checks: the one in ``secret_file`` if that file exists, else
    the environment variable's (when no ``secret_file`` is named), else the one in the file
    beside ``state`` if it exists, else a new one (not yet written: :func:`write_secret_file`
    once the listener is bound). So a restarted listener keeps its secret, and the writers
    still running can reconnect. Raises FsyncbenchError."""
    if secret_file is None:
        found = from_environment(environ)
        if found is not None:
            return ListenerSecret(found, None, False)
    path = secret_file if secret_file is not None else default_secret_file(state)
    if path.exists():
        return ListenerSecret(read_secret_file(path), path, False)
    return ListenerSecret(generate(), path, True)


@dataclass(frozen=True)
class ListenerStart:
    """What ``listen`` tells its user once, when bound: where peers reach it (``address``,
    bound from ``bind``) and the secret they must prove. :func:`format_start` is the only
    place the secret's value is shown."""

    address: tuple[str, int]
    bind: str
    secret: ListenerSecret


def _bind_kind(bind: str) -> str:
    """ "loopback", "any" (every address of the machine) or "one"."""
    if bind in ("", "localhost"):
        return "any" if not bind else "loopback"
    try:
        ip = ipaddress.ip_address(bind.split("%")[0])
    except ValueError:
        return "one"
    return "loopback" if ip.is_loopback else "any" if ip.is_unspecified else "one"


def format_start(s: ListenerStart) -> str:
    """The lines ``listen`` prints once on startup: the secret, where it is kept, and the
    ``write`` and ``verify`` command lines to copy (never a command line holding the
    secret: ps and the shell history show those)."""
    host, port = s.address
    kind = _bind_kind(s.bind)
    where = (
        f"HOST:{port}" if kind == "any" else f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    )
    keys = s.secret
    if keys.path is None:
        lines = [
            f"This listener's secret: the one in {ENV_VAR} (not shown).",
            f"On the machine under test, set the same {ENV_VAR}, then run:",
        ]
        option = ""
    else:
        path = os.path.abspath(keys.path)
        kept = "made now" if keys.created else "kept from an earlier start"
        lines = [
            f"This listener's secret: in {path} (not shown: a terminal's scrollback and a "
            "shared screen keep what is printed)",
            f"  ({kept}; readable by you only; a listener restarted with that file keeps it)",
            f"Give it to write and verify in a file (--secret-file) or in {ENV_VAR}, never on "
            "a command line (ps and the shell history show those).",
        ]
        if kind == "loopback":
            lines.append("On this machine (the listener takes loopback connections only), run:")
            option = f" --secret-file {shlex.quote(path)}"
        else:
            lines.append(
                f"On the machine under test, copy {path} there as powercut.secret, readable by "
                "its owner only (e.g. scp it, then chmod 600 powercut.secret); then run:"
            )
            option = " --secret-file powercut.secret"
    out = [line for text in lines for line in wrap(text, "", "  ")]
    out += shell_lines(f"fsyncbench powercut write --to {where}{option} DIR")
    out.append("and after the power cut and the reboot:")
    out += shell_lines(f"fsyncbench powercut verify --from {where}{option} DIR")
    if kind == "any":
        out += wrap("(HOST: this machine's address on the network the writer is on)", "", "  ")
    return "\n".join(out) + "\n"


def shell_lines(command: str, indent: str = "  ") -> list[str]:
    """``command`` to copy, indented, on as many lines as the terminal needs: broken only
    before an option (an option stays with its value), each line but the last ending in
    `` \\`` so the shell reads one command (a word longer than the line, a path, is never
    broken)."""
    cols = width()
    groups: list[str] = []
    for word in command.split(" "):
        if word.startswith("--") or not groups:
            groups.append(word)
        else:
            groups[-1] += " " + word
    lines: list[str] = []
    current = indent + groups[0]
    for group in groups[1:]:
        if len(current) + 1 + len(group) + 2 > cols:
            lines.append(current + " \\")
            current = indent + "    " + group
        else:
            current += " " + group
    return [*lines, current]


def write_secret_file(path: Path, secret: Secret) -> None:
    """Create ``path`` holding the secret, readable and writable by its owner only
    (mode 0600; on Windows the directory's access rules apply), durably. Never replaces
    an existing file. Raises FsyncbenchError."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(path, flags, 0o600)
    except OSError as exc:
        raise FsyncbenchError(
            f"cannot create the secret file {path}: {exc.strerror or exc}"
        ) from None
    try:
        try:
            os.write(fd, (secret.value + "\n").encode("ascii"))
            durable_sync(fd)
        finally:
            os.close(fd)
        fsync_dir(path.parent)
    except OSError as exc:
        path.unlink(missing_ok=True)
        raise FsyncbenchError(
            f"cannot write the secret file {path}: {exc.strerror or exc}"
        ) from None


def loose_permissions(path: Path) -> str | None:
    """``"0644"`` when others than the owner may read ``path`` (POSIX), else None."""
    if os.name == "nt":
        return None
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
    except OSError:
        return None
    return f"{mode:04o}" if mode & 0o077 else None


__all__ = [
    "ENV_VAR",
    "Secret",
    "ListenerSecret",
    "ListenerStart",
    "format_start",
    "generate",
    "proof",
    "proof_ok",
    "masked",
    "client_secret",
    "listener_secret",
    "write_secret_file",
    "default_secret_file",
    "read_secret_file",
]
