"""The powercut secret and ``powercut cycle``'s plan, exactly, in process (issue 45, item 1).

The secret: what a secret may be and the message refusing one, the secret ``listen`` makes
(22 URL-safe characters), a secret file that is not ASCII, the secret masked in text a
command printed, a secret file that cannot be written (one error, no file left), the mode
check skipped on Windows; the lines ``listen`` prints for each kind of bind address (every
address, loopback by number or by name, one address), kept or made, wrapped to the
terminal; and the copyable command lines, broken only before an option when the option and
the trailing `` \\`` would not fit.

The plan: each command kept with its option and text, the numbers checked and named in one
line each (``--cycles``, ``--seed`` and the four timeouts, their bounds included), a
placeholder without a value left as it is, the cut moments rounded to the millisecond and
a drawn seed below 2**31."""

from __future__ import annotations

import errno
import os
import shlex
import string
import sys
from pathlib import Path

import pytest

from fsyncbench.errors import FsyncbenchError
from fsyncbench.powercut import secret as secret_module
from fsyncbench.powercut.cycle_plan import (
    MAX_CYCLES,
    MAX_SECONDS,
    Command,
    make_plan,
    parse_command,
    parse_seconds_range,
)
from fsyncbench.powercut.secret import (
    ListenerSecret,
    ListenerStart,
    Secret,
    format_start,
    generate,
    loose_permissions,
    masked,
    read_secret_file,
    shell_lines,
    write_secret_file,
)

RULE = "not a powercut secret (16 to 256 printable ASCII characters without spaces)"
VALUE = "S3cr3t-0123456789abcdef"
PY = shlex.quote(sys.executable)
#: A command that exists everywhere and does nothing (``true`` is not on Windows).
NOOP = f"{PY} -c pass"


# --------------------------------------------------------------------------- the secret


@pytest.mark.parametrize("value", ["short", "x" * 15, "has a space 0123456789", "x" * 257, 12345])
def test_a_value_that_is_no_secret_is_refused_with_the_rule(value):
    with pytest.raises(FsyncbenchError) as err:
        Secret(value)
    assert str(err.value) == RULE
    assert Secret("x" * 16).value == "x" * 16 and Secret("~" * 256).value == "~" * 256


def test_listen_makes_a_22_character_url_safe_secret():
    # secrets.token_urlsafe(16): 16 random bytes in base64url without padding, 22 characters
    # (https://docs.python.org/3/library/secrets.html#secrets.token_urlsafe)
    made = {generate().value for _ in range(20)}
    assert len(made) == 20
    alphabet = set(string.ascii_letters + string.digits + "-_")
    assert all(len(value) == 22 and set(value) <= alphabet for value in made)


def test_a_secret_file_that_is_not_ascii_is_refused_in_one_line(tmp_path):
    path = tmp_path / "s.secret"
    path.write_bytes("geheimnis-äöü-0123456789".encode())
    with pytest.raises(FsyncbenchError) as err:
        read_secret_file(path)
    assert str(err.value) == f"--secret-file {path}: {RULE}"


def test_the_secret_is_masked_wherever_it_stands_in_quoted_text():
    s = Secret(VALUE)
    text = f"using {VALUE}\n{VALUE}{VALUE} done"
    assert masked(text, s) == "using <secret>\n<secret><secret> done"
    assert masked("nothing secret here", s) == "nothing secret here"


def test_a_secret_file_that_cannot_be_written_is_one_error_and_no_file(tmp_path, monkeypatch):
    path = tmp_path / "state.db.secret"

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(secret_module, "durable_sync", full)
    with pytest.raises(FsyncbenchError) as err:
        write_secret_file(path, Secret(VALUE))
    assert str(err.value) == f"cannot write the secret file {path}: No space left on device"
    assert not path.exists()

    def gone_then_full(fd):  # another process removed it meanwhile: still the one error
        path.unlink()
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(secret_module, "durable_sync", gone_then_full)
    with pytest.raises(FsyncbenchError) as err:
        write_secret_file(path, Secret(VALUE))
    assert str(err.value) == f"cannot write the secret file {path}: No space left on device"


def test_the_written_secret_file_is_the_value_and_a_newline(tmp_path):
    path = tmp_path / "state.db.secret"
    write_secret_file(path, Secret(VALUE))
    assert path.read_bytes() == VALUE.encode() + b"\n"  # binary: no \r\n on Windows
    assert read_secret_file(path) == Secret(VALUE)


def test_windows_has_no_mode_bits_to_judge(tmp_path, monkeypatch):
    path = tmp_path / "state.db.secret"
    path.write_text(VALUE + "\n")
    os.chmod(path, 0o644)
    monkeypatch.setattr(os, "name", "nt")
    loose = loose_permissions(path)
    monkeypatch.undo()
    assert loose is None


# --------------------------------------------------------------------------- listen's lines


def _start(bind: str, host: str, created: bool = True, path: str = "/srv/fsb/state.db.secret"):
    keys = ListenerSecret(Secret(VALUE), Path(path), created)
    return format_start(ListenerStart((host, 5400), bind, keys))


def test_a_loopback_listener_names_its_secret_file_in_the_commands(monkeypatch):
    monkeypatch.setenv("COLUMNS", "1000")
    path = os.path.abspath("/srv/fsb dir/state.db.secret")  # quoted for the shell
    option = f"--secret-file {shlex.quote(path)}"
    for bind, host in (("127.0.0.1", "127.0.0.1"), ("localhost", "127.0.0.1"), ("::1", "::1")):
        to = "[::1]:5400" if host == "::1" else "127.0.0.1:5400"
        lines = _start(bind, host, path=path).splitlines()
        assert lines[3:] == [
            "On this machine (the listener takes loopback connections only), run:",
            f"  fsyncbench powercut write --to {to} {option} DIR",
            "and after the power cut and the reboot:",
            f"  fsyncbench powercut verify --from {to} {option} DIR",
        ], bind


def test_a_listener_on_every_address_or_one_asks_for_the_file_to_be_copied(monkeypatch):
    monkeypatch.setenv("COLUMNS", "1000")
    path = os.path.abspath("/srv/fsb/state.db.secret")
    copy = (
        f"On the machine under test, copy {path} there as powercut.secret, readable by its "
        "owner only (e.g. scp it, then chmod 600 powercut.secret); then run:"
    )
    for bind, host, to in (
        ("", "0.0.0.0", "HOST:5400"),  # no address: every address of the machine
        ("::", "::", "HOST:5400"),
        ("fsb-listener.example", "192.0.2.20", "192.0.2.20:5400"),  # a name, not loopback
        ("fe80::1%eth0", "fe80::1", "[fe80::1]:5400"),
    ):
        lines = _start(bind, host).splitlines()
        commands = [
            copy,
            f"  fsyncbench powercut write --to {to} --secret-file powercut.secret DIR",
            "and after the power cut and the reboot:",
            f"  fsyncbench powercut verify --from {to} --secret-file powercut.secret DIR",
        ]
        if to.startswith("HOST"):
            commands.append("(HOST: this machine's address on the network the writer is on)")
        assert lines[3:] == commands, bind


def test_listen_says_whether_its_secret_was_made_or_kept(monkeypatch):
    monkeypatch.setenv("COLUMNS", "1000")
    made, kept = (_start("127.0.0.1", "127.0.0.1", created).splitlines()[1] for created in (1, 0))
    assert (
        made == "  (made now; readable by you only; a listener restarted with that file keeps it)"
    )
    assert kept == (
        "  (kept from an earlier start; readable by you only; a listener restarted with that "
        "file keeps it)"
    )


def test_listens_lines_wrap_under_a_two_column_indent(monkeypatch):
    monkeypatch.setenv("COLUMNS", "60")
    path = os.path.abspath("/srv/fsb/state.db.secret")
    option = f"--secret-file {shlex.quote(path)}"
    assert _start("127.0.0.1", "127.0.0.1", False, path) == (
        f"This listener's secret: in {path} (not\n"
        "  shown: a terminal's scrollback and a shared screen keep\n"
        "  what is printed)\n"
        "  (kept from an earlier start; readable by you only; a\n"
        "  listener restarted with that file keeps it)\n"
        "Give it to write and verify in a file (--secret-file) or in\n"
        "  FSYNCBENCH_POWERCUT_SECRET, never on a command line (ps\n"
        "  and the shell history show those).\n"
        "On this machine (the listener takes loopback connections\n"
        "  only), run:\n"
        "  fsyncbench powercut write --to 127.0.0.1:5400 \\\n"
        f"      {option} DIR\n"
        "and after the power cut and the reboot:\n"
        "  fsyncbench powercut verify --from 127.0.0.1:5400 \\\n"
        f"      {option} DIR\n"
    )


COMMAND = "fsyncbench powercut write --to 192.0.2.20:5400 --secret-file powercut.secret DIR"


def test_a_command_line_breaks_before_an_option_only_when_it_would_not_fit(monkeypatch):
    # "  fsyncbench powercut write --to 192.0.2.20:5400" and its " \" take exactly 50 columns
    monkeypatch.setenv("COLUMNS", "50")
    assert shell_lines(COMMAND) == [
        "  fsyncbench powercut write --to 192.0.2.20:5400 \\",
        "      --secret-file powercut.secret DIR",
    ]
    monkeypatch.setenv("COLUMNS", "49")
    assert shell_lines(COMMAND) == [
        "  fsyncbench powercut write \\",
        "      --to 192.0.2.20:5400 \\",
        "      --secret-file powercut.secret DIR",
    ]
    monkeypatch.setenv("COLUMNS", "1000")
    assert shell_lines(COMMAND) == [f"  {COMMAND}"]
    assert shell_lines(COMMAND, indent="") == [COMMAND]


def test_a_command_line_keeps_a_quoted_path_as_it_is(monkeypatch):
    # two spaces and a tab in a path: the shell reads the quoted word back unchanged
    monkeypatch.setenv("COLUMNS", "1000")
    path = shlex.quote("/srv/fsb  two\tspaces/state.db.secret")
    command = f"fsyncbench powercut write --to 127.0.0.1:5400 --secret-file {path} DIR"
    (line,) = shell_lines(command)
    assert shlex.split(line) == shlex.split(command) and line == f"  {command}"
    monkeypatch.setenv("COLUMNS", "40")
    lines = shell_lines(command)
    assert lines[-1] == f"      --secret-file {path} DIR"  # longer than the line: whole
    assert shlex.split(" ".join(line.removesuffix(" \\") for line in lines)) == shlex.split(command)


# --------------------------------------------------------------------------- the plan


def test_a_plan_keeps_each_command_its_option_and_its_numbers():
    cut, restore, verify = f"{NOOP} {{cycle}}", f"{NOOP} {{port}}", f"{NOOP} {{run_id}}"
    plan = make_plan(
        NOOP,
        cut,
        verify,
        restore=restore,
        cycles=3,
        cut_after="1..2",
        seed=5,
        start_timeout_s=7,
        command_timeout_s=8,
        verify_timeout_s=9,
        retry_every_s=1,
    )
    assert plan.start == Command("--start", NOOP, tuple(shlex.split(NOOP)))
    assert plan.cut == Command("--cut", cut, tuple(shlex.split(cut)))
    assert plan.restore == Command("--restore", restore, tuple(shlex.split(restore)))
    assert plan.verify == Command("--verify", verify, tuple(shlex.split(verify)))
    assert (plan.cycles, plan.cut_after_s, plan.seed) == (3, (1.0, 2.0), 5)
    timeouts = (
        plan.start_timeout_s,
        plan.command_timeout_s,
        plan.verify_timeout_s,
        plan.retry_every_s,
    )
    assert timeouts == (7.0, 8.0, 9.0, 1.0) and all(type(t) is float for t in timeouts)
    assert make_plan(NOOP, NOOP, NOOP, seed=1).restore is None


def test_a_placeholder_without_a_value_is_left_as_it_is():
    c = parse_command(f"{PY} --to={{address}}:{{port}} {{run_id}} {{cycle}}", "--verify")
    assert c.expand({"port": "5400", "cycle": "2"}) == [
        sys.executable,
        "--to={address}:5400",
        "{run_id}",
        "2",
    ]


BAD_NUMBERS = [
    ({"cycles": 0}, "--cycles must be from 1 to 10000, got 0"),
    ({"cycles": MAX_CYCLES + 1}, "--cycles must be from 1 to 10000, got 10001"),
    ({"cycles": True}, "--cycles must be from 1 to 10000, got True"),
    ({"cycles": 2.0}, "--cycles must be from 1 to 10000, got 2.0"),
    ({"seed": "7"}, "--seed must be an integer, got '7'"),
    ({"seed": True}, "--seed must be an integer, got True"),
    ({"seed": 1.5}, "--seed must be an integer, got 1.5"),
]
for _option in ("start-timeout", "command-timeout", "verify-timeout", "retry-every"):
    _key = _option.replace("-", "_") + "_s"
    _message = f"--{_option}-seconds must be more than 0 and at most 86400, got "
    BAD_NUMBERS += [
        ({_key: 0}, _message + "0"),
        ({_key: -1.0}, _message + "-1.0"),
        ({_key: MAX_SECONDS + 0.5}, _message + "86400.5"),
        ({_key: True}, _message + "True"),
        ({_key: "5"}, _message + "'5'"),
    ]


@pytest.mark.parametrize("numbers,message", BAD_NUMBERS)
def test_a_bad_number_is_refused_naming_its_option(numbers, message):
    with pytest.raises(FsyncbenchError) as err:
        make_plan(NOOP, NOOP, NOOP, **numbers)
    assert str(err.value) == message


def test_the_bounds_themselves_are_allowed():
    plan = make_plan(
        NOOP,
        NOOP,
        NOOP,
        cycles=MAX_CYCLES,
        cut_after=f"0..{MAX_SECONDS:g}",
        seed=0,
        start_timeout_s=MAX_SECONDS,
        command_timeout_s=MAX_SECONDS,
        verify_timeout_s=MAX_SECONDS,
        retry_every_s=MAX_SECONDS,
    )
    assert (plan.cycles, plan.cut_after_s) == (10_000, (0.0, 86_400.0))
    assert plan.start_timeout_s == plan.retry_every_s == 86_400.0
    assert parse_seconds_range("86400") == (86_400.0, 86_400.0)


@pytest.mark.parametrize(
    "commands,message",
    [
        (
            {"start": f"{NOOP} {{run_id}}"},
            "--start: {run_id} is not known yet when this command runs",
        ),
        ({"restore": ""}, "--restore: the command is empty"),
        ({"restore": "no-such-program-fsb"}, "--restore: command not found: no-such-program-fsb"),
        ({"verify": ""}, "--verify: the command is empty"),
        ({"cut": "'"}, '--cut: cannot split "\'": No closing quotation'),
    ],
)
def test_a_bad_command_is_refused_naming_its_option(commands, message):
    args = {"start": NOOP, "cut": NOOP, "verify": NOOP, **commands}
    with pytest.raises(FsyncbenchError) as err:
        make_plan(args.pop("start"), args.pop("cut"), args.pop("verify"), **args)
    assert str(err.value) == message


def test_the_run_id_is_known_to_every_command_but_start():
    plan = make_plan(NOOP, f"{NOOP} {{run_id}}", f"{NOOP} {{run_id}}", restore=f"{NOOP} {{run_id}}")
    assert plan.cut.argv[-1] == plan.verify.argv[-1] == plan.restore.argv[-1] == "{run_id}"


def test_the_cut_moments_are_rounded_to_the_millisecond():
    moments = make_plan(NOOP, NOOP, NOOP, cycles=50, cut_after="0..10", seed=3).moments_s()
    assert all(m == round(m, 3) for m in moments)
    assert any(m != round(m, 2) for m in moments)  # and not coarser


def test_a_drawn_seed_is_a_non_negative_31_bit_integer():
    # (what --seed gives back: it fits a signed 32-bit seed in any other tool)
    seeds = [make_plan(NOOP, NOOP, NOOP).seed for _ in range(100)]
    assert all(0 <= s < 2**31 for s in seeds)  # half of them would not, below 2**32
    assert len(set(seeds)) > 90


def test_the_host_placeholder_note_wraps_under_the_same_indent(monkeypatch):
    # a listener on every address ends with what HOST stands for: wrapped like every other
    # paragraph (its continuation lines indented), never a bare word on a line of its own
    monkeypatch.setenv("COLUMNS", "60")
    lines = _start("0.0.0.0", "0.0.0.0").splitlines()
    assert lines[-2:] == [
        "(HOST: this machine's address on the network the writer is",
        "  on)",
    ]
