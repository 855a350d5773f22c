"""Run tests as if on macOS or Windows, as far as Linux can pretend (issue 43, item 5): CI
runs the whole suite on macOS and Windows runners, and none is at hand here.

``pytest --simulate-platform darwin`` (or ``win32``) applies :func:`apply` before any test or
fsyncbench module is imported, and every Python process the tests start (the CLI, the round
workers, the writers) applies it too: :data:`SIMULATE_ENV` names the platform and
``tests/fixtures/simulate`` (first on ``PYTHONPATH``) holds a ``sitecustomize`` that reads it.
``tests/test_platform_simulation.py`` runs the platform-dependent test files that way.

What is simulated, for the project's own code (fsyncbench, the tests, scripts, ``python -c``;
libraries such as psutil, numpy and pytest keep Linux's, as they keep their own system's on a
real Mac or Windows machine):

- ``sys.platform`` (``darwin``, ``win32``) and ``platform.system()`` (``Darwin``,
  ``Windows``): what fsyncbench dispatches on (its plans, primitives, host facts, judge);
- the ``os`` functions and constants that system's CPython lacks (the "Availability" notes of
  https://docs.python.org/3/library/os.html): on macOS ``fdatasync`` (CPython's configure
  finds no declaration of it there), ``memfd_create``, ``sched_getaffinity``,
  ``posix_fadvise``, ``O_DIRECT``, ...; on Windows every POSIX call as in
  ``tests/fixtures/windows/import_as_windows.py`` (``fork``, ``geteuid``, ``pwrite``,
  ``O_DSYNC``, ...), with the POSIX-only modules (``fcntl``, ``resource``, ...), the POSIX
  signals (``SIGKILL``, ``SIGHUP``, ...), ``socket.AF_UNIX`` and ``time.tzset``;
- Linux's pseudo-filesystems: ``/proc``, ``/sys``, ``/dev/shm`` and ``/dev/full`` do not
  exist;
- on macOS, the fcntl commands Linux lacks, as a Mac's APFS volume answers them:
  F_FULLFSYNC and F_BARRIERFSYNC accepted (done as an fsync), F_GETPATH (the path a
  descriptor names now); and a ``sysctl`` first on PATH answering macOS's names
  (``kern.boottime``, ``kern.hv_vmm_present``: tests/fixtures/simulate/darwin/sysctl);
- on Windows, ``os.chmod`` as CPython has it there (only a file's write bit counts, a
  directory's mode is ignored); the kernel32 calls fsyncbench makes through ctypes
  (``MoveFileExW`` renames, every other call fails as on a volume that does not answer);
  ``Popen.send_signal`` taking only SIGTERM and the console events; ``os.devnull`` ``nul``,
  the null device by that name in any directory; a drive path
  (``C:\\data``) resolved as Windows resolves it; and the ANSI code page of Python before
  3.15: text files opened without an encoding are cp1252, and so are the standard streams of
  the processes the tests start (what cp1252 lacks fails, as there).

What is not (and is left to the real CI runners): path syntax (``os.sep`` stays ``/``,
``os.name`` ``posix``, ``os.path`` is ``posixpath``), the
kernels' own behaviour (the latency of F_FULLFSYNC; SQLite here is Linux's build, whose
PRAGMA fullfsync does nothing; Windows' refusal to rename a directory with open files), the
user (this VM runs the tests as root; the CI runners do not), what ``shutil.which`` finds on
a runner's PATH, and how the standard library chose its own behaviour when it was imported
(multiprocessing's start method, subprocess's POSIX implementation).
"""

from __future__ import annotations

import builtins
import errno
import io
import os
import sys
import sysconfig
from pathlib import Path
from typing import Any

#: The environment variable that names the simulated platform (a ``sys.platform`` value).
SIMULATE_ENV = "FSYNCBENCH_SIMULATE_PLATFORM"
#: ``sys.platform`` -> ``platform.system()``.
PLATFORMS = {"darwin": "Darwin", "win32": "Windows"}

ROOT = Path(__file__).resolve().parent.parent
SITE_DIR = ROOT / "tests" / "fixtures" / "simulate"

#: Linux's pseudo-filesystems and devices that neither macOS nor Windows has.
LINUX_ONLY_PATHS = ("/proc", "/sys", "/dev/shm", "/dev/full")

#: os names CPython on macOS does not have (Linux-only calls and flags).
NOT_ON_MACOS = (
    "fdatasync",
    "memfd_create",
    "sched_getaffinity",
    "sched_setaffinity",
    "posix_fadvise",
    "posix_fallocate",
    "pipe2",
    "O_DIRECT",
    "O_TMPFILE",
    "O_NOATIME",
    "O_PATH",
    "sync_file_range",
    "copy_file_range",
    "eventfd",
    "pidfd_open",
    "splice",
)
#: os names CPython on Windows does not have ("Availability: Unix"), as
#: tests/fixtures/windows/import_as_windows.py takes them away, and some more.
NOT_ON_WINDOWS = (
    *NOT_ON_MACOS,
    "geteuid",
    "getuid",
    "getegid",
    "getgid",
    "fork",
    "pwrite",
    "pread",
    "statvfs",
    "fstatvfs",
    "major",
    "minor",
    "makedev",
    "mknod",
    "mkfifo",
    "getpgid",
    "killpg",
    "setsid",
    "setpgid",
    "WIFSIGNALED",
    "WTERMSIG",
    "WIFEXITED",
    "WEXITSTATUS",
    "O_DSYNC",
    "O_SYNC",
    "O_CLOEXEC",
    "O_NOFOLLOW",
    "sync",
    "fchmod",
    "fchown",
    "chown",
    "lchown",
    "uname",
    "getloadavg",
)
#: socket names CPython on Windows does not have (AF_UNIX: https://bugs.python.org/issue33408).
NOT_IN_WINDOWS_SOCKET = ("AF_UNIX",)
#: time names CPython on Windows does not have ("Availability: Unix").
NOT_IN_WINDOWS_TIME = ("tzset",)
POSIX_MODULES = ("fcntl", "resource", "termios", "pwd", "grp", "pty", "tty")
POSIX_SIGNALS = (
    "SIGHUP",
    "SIGQUIT",
    "SIGKILL",
    "SIGUSR1",
    "SIGUSR2",
    "SIGALRM",
    "SIGCHLD",
    "SIGPIPE",
    "SIGSTOP",
    "SIGCONT",
    "SIGTSTP",
    "pthread_sigmask",
    "pthread_kill",
    "SIG_BLOCK",
    "SIG_UNBLOCK",
    "SIG_SETMASK",
    "setitimer",
    "getitimer",
    "alarm",
    "pause",
    "ITIMER_REAL",
    "siginterrupt",
)


#: Standard modules imported before the platform changes: they chose their implementation
#: for the system they run on, as on a real Mac or Windows machine. Modules imported later
#: that are not fsyncbench's or the tests' are imported with the real platform too
#: (:class:`_LibraryImports`).
_FIRST = (
    "asyncio",
    "concurrent.futures",
    "ctypes",
    "ctypes.util",
    "ctypes.wintypes",
    "getpass",
    "multiprocessing",
    "pathlib",
    "platform",
    "selectors",
    "shutil",
    "signal",
    "socket",
    "sqlite3",
    "subprocess",
    "tempfile",
    "threading",
)

_MARK = "_fsyncbench_simulated_platform"
_STDLIB = str(Path(os.__file__).resolve().parent) + os.sep
#: Where installed packages live (pip's and Debian's).
_PACKAGES = (os.sep + "site-packages" + os.sep, os.sep + "dist-packages" + os.sep)


def applied() -> str | None:
    """The platform this process simulates (``darwin``, ``win32``), or None."""
    return getattr(sys, _MARK, None)


def child_environ(platform: str, env: dict[str, str] | None = None) -> dict[str, str]:
    """``env`` (default: this process's) with what makes a child Python process simulate
    ``platform``: :data:`SIMULATE_ENV` and :data:`SITE_DIR` first on ``PYTHONPATH``."""
    env = dict(os.environ if env is None else env)
    env[SIMULATE_ENV] = platform
    paths = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and p != str(SITE_DIR)]
    env["PYTHONPATH"] = os.pathsep.join([str(SITE_DIR), *paths])
    return env


def _ours(filename: str) -> bool:
    """The code the simulation is for: fsyncbench's, the tests', the project's scripts and
    code run with ``python -c`` (``<string>``); not the standard library's, an installed
    package's (psutil, numpy, pytest) or a built-in module's."""
    if any(p + "fsyncbench" + os.sep in filename for p in _PACKAGES):
        return True  # fsyncbench installed (not editable), as CI's clean clone has it
    return not (
        _library(filename)
        or any(p in filename for p in _PACKAGES)
        or filename in ("built-in", "frozen", "")
    )


#: The harness: this simulation and the suite's conftest (its UTF-8 file default wraps
#: open() for everyone, as the standard library would).
_HARNESS = (str(Path(__file__).resolve()), str(ROOT / "tests" / "conftest.py"))


def _library(filename: str) -> bool:
    """The standard library's own code (frozen modules included, not site-packages), and
    the harness's."""
    return (
        filename.startswith("<frozen")
        or filename == __file__
        or filename in _HARNESS
        or (filename.startswith(_STDLIB) and not any(p in filename for p in _PACKAGES))
    )


def _caller_is_ours(depth: int) -> bool:
    """True when the code ``depth`` frames up (0: the caller of this function) is
    fsyncbench's or a test's."""
    try:
        frame = sys._getframe(depth + 1)
    except ValueError:
        return False
    return _ours(frame.f_code.co_filename)


def _first_caller_is_ours(depth: int) -> bool:
    """True when the first frame from ``depth`` up that is not the standard library's is
    fsyncbench's or a test's (``Path.exists`` asks for a test)."""
    try:
        frame: Any = sys._getframe(depth + 1)
    except ValueError:
        return False
    while frame is not None and _library(frame.f_code.co_filename):
        frame = frame.f_back
    return frame is not None and _ours(frame.f_code.co_filename)


def apply(platform: str) -> None:
    """Make this process look like ``platform`` (``darwin`` or ``win32``) to fsyncbench and
    the tests, and the Python processes it starts too. Call it before fsyncbench is
    imported (modules that test ``sys.platform`` when they load). Idempotent."""
    if platform not in PLATFORMS:
        raise ValueError(f"cannot simulate {platform!r}: one of {', '.join(PLATFORMS)}")
    if applied() == platform:
        return
    if applied() is not None:
        raise RuntimeError(f"this process already simulates {applied()}")
    import importlib

    for name in _FIRST:
        try:
            importlib.import_module(name)
        except ImportError:
            pass
    sysconfig.get_config_vars()  # read once, for this system (it names its file by platform)
    os.environ.update(child_environ(platform))
    setattr(sys, _MARK, platform)
    _SWAP.simulated = platform
    _take_away(
        os,
        NOT_ON_WINDOWS if platform == "win32" else NOT_ON_MACOS,
        {"devnull": WINDOWS_DEVNULL} if platform == "win32" else None,
    )
    _swap_system(PLATFORMS[platform])
    _hide_linux_paths()
    if platform == "darwin":
        _as_macos()
        # macOS's sysctl names (kern.boottime: the powercut writer's boot id)
        darwin_bin = str(SITE_DIR / "darwin")
        if not os.environ.get("PATH", "").startswith(darwin_bin + os.pathsep):
            os.environ["PATH"] = darwin_bin + os.pathsep + os.environ.get("PATH", "")
    if platform == "win32":
        import signal
        import socket
        import time

        _take_away(signal, POSIX_SIGNALS)
        _take_away(socket, NOT_IN_WINDOWS_SOCKET)
        _take_away(time, NOT_IN_WINDOWS_TIME)
        _refuse_modules(POSIX_MODULES)
        _as_windows()
    sys.meta_path.insert(0, _LibraryImports())
    sys.platform = platform  # type: ignore[misc]  # (the type checker's platform is fixed)


class _Swap:
    """sys.platform as the importing library must see it (:class:`_LibraryImports`)."""

    simulated = ""
    real = sys.platform
    depth = 0
    saved = ""

    def __enter__(self) -> None:
        if self.depth == 0:
            self.saved = sys.platform  # the simulated one, or what a test set meanwhile
            sys.platform = self.real  # type: ignore[misc]
        self.depth += 1

    def __exit__(self, *exc: object) -> None:
        self.depth -= 1
        if self.depth == 0:
            sys.platform = self.saved  # type: ignore[misc]


_SWAP = _Swap()


def _take_away(module: Any, names: tuple[str, ...], ours: dict[str, Any] | None = None) -> None:
    """Remove ``names`` from ``module`` for the project's code (or give it ``ours``' value
    instead); any other code (the standard library, psutil, numpy) still finds them (PEP 562
    ``__getattr__``), as it was built for this system."""
    ours = ours or {}
    kept = {n: getattr(module, n) for n in (*names, *ours) if hasattr(module, n)}
    for name in kept:
        delattr(module, name)
    before = module.__dict__.get("__getattr__")

    def __getattr__(name: str) -> Any:
        if name in kept:
            if not _caller_is_ours(1):
                return kept[name]
            if name in ours:
                return ours[name]
        if before is not None:
            return before(name)
        raise AttributeError(
            f"module {module.__name__!r} has no attribute {name!r} (simulated {_SWAP.simulated})"
        )

    module.__getattr__ = __getattr__


def _refuse_modules(names: tuple[str, ...]) -> None:
    """``import fcntl`` (and the other ``names``) fails in the project's code (the frame
    that imports: a module's, a function's, ``python -c``'s)."""
    real_import = builtins.__import__

    def __import__(name: str, globals: Any = None, *args: Any, **kwargs: Any) -> Any:
        if name.split(".")[0] in names and _caller_is_ours(1):
            raise ModuleNotFoundError(
                f"No module named {name!r} (simulated {_SWAP.simulated})", name=name
            )
        return real_import(name, globals, *args, **kwargs)

    builtins.__import__ = __import__


def _swap_system(system: str) -> None:
    import platform as platform_module

    real = platform_module.system

    def simulated_system() -> str:
        return system if _caller_is_ours(1) else real()

    platform_module.system = simulated_system


class _LibraryImports:
    """A meta path finder: modules that are not fsyncbench's or the tests' are executed
    with the real ``sys.platform`` (numpy, psutil, matplotlib, ... choose their
    implementation when they load)."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                break
        else:
            return None
        origin = spec.origin or ""
        if spec.loader is None or _ours(origin):
            return spec
        spec.loader = _RealPlatformLoader(spec.loader)
        return spec


class _RealPlatformLoader:
    def __init__(self, real: Any) -> None:
        self.real = real

    def create_module(self, spec: Any) -> Any:
        with _SWAP:
            return self.real.create_module(spec)

    def exec_module(self, module: Any) -> None:
        try:
            with _SWAP:
                self.real.exec_module(module)
        finally:
            module.__loader__ = self.real
            if getattr(module, "__spec__", None) is not None:
                module.__spec__.loader = self.real

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)


#: fcntl(2) commands of macOS that Linux lacks and the simulation answers as macOS does
#: (<sys/fcntl.h>).
F_GETPATH = 50
F_FULLFSYNC = 51
F_BARRIERFSYNC = 85


def _as_macos() -> None:
    """fcntl as on a Mac's own APFS volume: F_FULLFSYNC and F_BARRIERFSYNC accepted (done as
    an fsync, the nearest Linux has), F_GETPATH answered with the path the descriptor names
    now (MAXPATHLEN bytes, from /proc/self/fd); every other command goes to Linux."""
    import fcntl

    real_fcntl = fcntl.fcntl

    def simulated_fcntl(fd: Any, cmd: int, arg: Any = 0) -> Any:
        if cmd in (F_GETPATH, F_FULLFSYNC, F_BARRIERFSYNC) and _caller_is_ours(1):
            number = fd if isinstance(fd, int) else fd.fileno()
            if cmd != F_GETPATH:
                os.fsync(number)
                return 0
            path = os.fsencode(_REAL_READLINK(f"/proc/self/fd/{number}"))
            size = len(arg) if isinstance(arg, (bytes, bytearray)) else 1024
            return path + bytes(size - len(path))
        return real_fcntl(fd, cmd, arg)

    fcntl.fcntl = simulated_fcntl


#: The encoding of a Windows process's standard streams when they are pipes or files (not a
#: console) before Python 3.15 (PEP 686 makes UTF-8 the default there): the ANSI code page,
#: cp1252 on an English Windows such as GitHub's runners.
WINDOWS_PIPE_ENCODING = "cp1252"


class _WindowsPipe:
    """A standard stream encoding as a Windows pipe's does (cp1252, errors "strict" unless
    reconfigured): what the code page cannot encode raises UnicodeEncodeError, or goes
    through the stream's error handler; the result is written to this system's stream."""

    encoding = WINDOWS_PIPE_ENCODING

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.errors = "strict"

    def write(self, text: str) -> int:
        self._inner.write(
            text.encode(WINDOWS_PIPE_ENCODING, self.errors).decode(WINDOWS_PIPE_ENCODING)
        )
        return len(text)

    def reconfigure(self, *, errors: str | None = None, **kwargs: Any) -> None:
        if errors is not None:
            self.errors = errors
        if kwargs:
            self._inner.reconfigure(**kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def windows_pipes() -> None:
    """Standard output and error as a Windows process that is not on a console has them
    (Python before 3.15): what cp1252 cannot encode fails. For the processes the tests start
    (their output is a pipe or a file): tests/fixtures/simulate/sitecustomize.py."""
    if sys.version_info >= (3, 15) or os.environ.get("PYTHONIOENCODING"):
        return
    if os.environ.get("PYTHONUTF8") == "1":
        return
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if stream is not None and not stream.isatty() and hasattr(stream, "errors"):
            setattr(sys, name, _WindowsPipe(stream))


def _windows_text_encoding() -> None:
    """A text file opened without an encoding is read and written in the ANSI code page,
    cp1252, as on Windows before Python 3.15 (fsyncbench's and the tests' code only)."""
    real_text_encoding = io.text_encoding
    real_open = builtins.open

    def text_encoding(encoding: Any, stacklevel: int = 2) -> Any:
        if encoding is None and _first_caller_is_ours(0):
            return WINDOWS_PIPE_ENCODING
        return real_text_encoding(encoding, stacklevel + 1)

    def open_text(
        file: Any,
        mode: str = "r",
        buffering: int = -1,
        encoding: Any = None,
        *args: Any,
        **kwargs: Any,
    ) -> Any:
        if encoding is None and "b" not in mode and _first_caller_is_ours(0):
            encoding = WINDOWS_PIPE_ENCODING
        return real_open(file, mode, buffering, encoding, *args, **kwargs)

    io.text_encoding = text_encoding
    builtins.open = open_text
    io.open = open_text


def _windows_send_signal() -> None:
    """Popen.send_signal as CPython has it on Windows: SIGTERM ends the process
    (TerminateProcess), CTRL_C_EVENT and CTRL_BREAK_EVENT go to its console group; any other
    signal is a ValueError (SIGINT, SIGKILL, ...)."""
    import signal
    import subprocess

    real = subprocess.Popen.send_signal
    allowed = {signal.SIGTERM, 0, 1}  # (CTRL_C_EVENT, CTRL_BREAK_EVENT)

    def send_signal(self: Any, sig: int) -> None:
        if sig not in allowed and _caller_is_ours(1):  # (Popen.kill: TerminateProcess)
            raise ValueError(f"Unsupported signal: {sig} (simulated win32)")
        real(self, sig)

    subprocess.Popen.send_signal = send_signal  # type: ignore[method-assign]


def _as_windows() -> None:
    import ctypes
    import ntpath

    real_chmod = os.chmod

    def chmod(path: Any, mode: int, *args: Any, **kwargs: Any) -> None:
        """CPython's os.chmod on Windows: the read-only attribute from the write bit; a
        directory's is ignored (it does not stop files being created in it)."""
        if not _first_caller_is_ours(0):
            return real_chmod(path, mode, *args, **kwargs)
        if os.path.isdir(path):
            return None
        return real_chmod(path, 0o666 if mode & 0o200 else 0o444, *args, **kwargs)

    os.chmod = chmod
    real_realpath = os.path.realpath

    def realpath(path: Any, *args: Any, **kwargs: Any) -> Any:
        """A path with a drive (``C:\\data``) is Windows's own: normalised, as ntpath does."""
        if isinstance(path, str) and ntpath.splitdrive(path)[0]:
            return ntpath.normpath(path)
        return real_realpath(path, *args, **kwargs)

    os.path.realpath = realpath
    _windows_text_encoding()
    _windows_send_signal()
    ctypes.WinDLL = _WinDLL  # type: ignore[attr-defined,misc]
    ctypes.WinError = _win_error  # type: ignore[attr-defined]
    ctypes.get_last_error = lambda: _LAST_ERROR[0]  # type: ignore[attr-defined]


_LAST_ERROR = [0]
ERROR_FILE_NOT_FOUND = 2
ERROR_ACCESS_DENIED = 5
ERROR_NOT_SUPPORTED = 50


def _win_error(code: int | None = None, descr: str | None = None) -> OSError:
    code = _LAST_ERROR[0] if code is None else code
    number = {ERROR_FILE_NOT_FOUND: errno.ENOENT, ERROR_ACCESS_DENIED: errno.EACCES}
    return OSError(number.get(code, errno.EIO), descr or f"[WinError {code}] (simulated)")


class _Function:
    """A kernel32 function: takes argtypes and restype, and fails (returns 0, sets the last
    error) unless :class:`_WinDLL` gives it a body."""

    def __init__(self, name: str, body: Any = None) -> None:
        self.name = name
        self.body = body
        self.argtypes: Any = None
        self.restype: Any = None

    def __call__(self, *args: Any) -> Any:
        if self.body is not None:
            return self.body(*args)
        _LAST_ERROR[0] = ERROR_NOT_SUPPORTED
        if self.name == "CreateFileW":
            _LAST_ERROR[0] = ERROR_FILE_NOT_FOUND
            import ctypes

            return ctypes.c_void_p(-1).value  # INVALID_HANDLE_VALUE
        return 0


def _move_file_ex(src: str, dst: str, _flags: int) -> int:
    """MoveFileExW(REPLACE_EXISTING | WRITE_THROUGH) as a rename."""
    try:
        os.replace(src, dst)
    except PermissionError:
        _LAST_ERROR[0] = ERROR_ACCESS_DENIED
        return 0
    except OSError:
        _LAST_ERROR[0] = ERROR_FILE_NOT_FOUND
        return 0
    return 1


class _WinDLL:
    """``ctypes.WinDLL("kernel32")`` on the simulated Windows."""

    def __init__(self, name: str, *args: Any, **kwargs: Any) -> None:
        self._name = name
        self._functions: dict[str, _Function] = {}

    def __getattr__(self, name: str) -> _Function:
        if name.startswith("_"):
            raise AttributeError(name)
        bodies = {"MoveFileExW": _move_file_ex}
        return self._functions.setdefault(name, _Function(name, bodies.get(name)))


def _linux_only(path: Any) -> bool:
    """True when ``path`` is under one of :data:`LINUX_ONLY_PATHS` and the code asking
    (past the standard library's frames) is fsyncbench's or a test's."""
    if isinstance(path, int) or path is None:
        return False
    try:
        text = os.fsdecode(path)
    except TypeError:
        return False
    if not text.startswith(("/proc", "/sys", "/dev/")):
        return False
    if not any(text == p or text.startswith(p + "/") for p in LINUX_ONLY_PATHS):
        return False
    return _first_caller_is_ours(2)


_REAL_READLINK = os.readlink
#: Windows' null device (os.devnull there): its name in any directory opens the device.
WINDOWS_DEVNULL = "nul"


def _windows_null_device(path: Any) -> bool:
    if not isinstance(path, (str, os.PathLike)):
        return False
    text = os.fspath(path)
    return isinstance(text, str) and Path(text).name.lower() == WINDOWS_DEVNULL


def _hide_linux_paths() -> None:
    def wrap(function: Any, keyword: str) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            path = args[0] if args else kwargs.get(keyword)
            if _SWAP.simulated == "win32" and _windows_null_device(path):
                path = "/dev/null"  # the device Windows' "nul" is
                if args:
                    args = (path, *args[1:])
                else:
                    kwargs[keyword] = path
            if _linux_only(path):
                raise FileNotFoundError(
                    errno.ENOENT, f"No such file or directory (simulated {_SWAP.simulated})", path
                )
            return function(*args, **kwargs)

        call.__name__ = function.__name__
        call.__qualname__ = function.__qualname__
        call.__doc__ = function.__doc__
        return call

    for name in ("open", "stat", "lstat", "listdir", "scandir", "access", "readlink", "statvfs"):
        if name in os.__dict__:
            real = os.__dict__[name]
            wrapped = wrap(real, "path")
            setattr(os, name, wrapped)
            for supports in (os.supports_dir_fd, os.supports_fd, os.supports_follow_symlinks):
                if real in supports:  # os.stat in os.supports_dir_fd still holds
                    supports.add(wrapped)
    opened = wrap(builtins.open, "file")
    builtins.open = opened
    io.open = opened
