"""fsyncbench powercut: the wire protocol's message codec, in process (issue 45, item 1).

What a peer sees of a message the codec turns down or writes: the exact one-line
ProtocolError for each kind of bad line (not UTF-8, not JSON, NaN, nested too deeply, too
long, not an object, no version, an unexpected type, unknown and missing fields, a field of
the wrong type or range, a bad ``ranges`` list, an ack span), the length limits at their
exact boundaries (a line of exactly the limit passes, one byte more does not), and the
compact bytes ``encode`` puts on the wire.

The field checks (``_int``, ``_text``) are closures built once when the module is imported;
they are also built here from their factories with the module's own bounds, so the checks'
rules are pinned where they are made.
"""

from __future__ import annotations

import json
import re

import pytest

from fsyncbench.powercut import protocol
from fsyncbench.powercut.protocol import (
    MAX_ACK_SPAN,
    MAX_LINE_BYTES,
    MAX_RANGES_PER_LINE,
    MAX_REPLY_BYTES,
    MAX_SEQ,
    TO_LISTENER,
    TO_VERIFIER,
    ProtocolError,
    decode,
    encode,
    validate,
)

RUN_A = "a" * 32
HELLO = {
    "run_id": RUN_A,
    "host": "h",
    "dir": "/d",
    "config": "wal/full",
    "pid": 1,
    "started_utc": "2026-01-01T00:00:00Z",
}


def _error(line: bytes, allowed: frozenset[str] = TO_LISTENER, limit: int = MAX_LINE_BYTES) -> str:
    with pytest.raises(ProtocolError) as info:
        decode(line, allowed, limit)
    return str(info.value)


def _message(**fields) -> bytes:
    return json.dumps({"v": 2, **fields}).encode()


def _ranges_error(ranges) -> str:
    return _error(
        _message(type="ranges", run_id=RUN_A, ranges=ranges), TO_VERIFIER, MAX_REPLY_BYTES
    )


# --------------------------------------------------------------------------- the field checks


def test_integer_check_takes_exactly_its_range_and_only_integers():
    pid = protocol._int(1, 2**31 - 1)
    assert pid(1) is None and pid(2**31 - 1) is None and pid(4242) is None
    assert pid(0) == "must be from 1 to 2147483647"
    assert pid(2**31) == "must be from 1 to 2147483647"
    for not_int in (True, 1.0, "1", None, [1]):
        assert pid(not_int) == "must be an integer"


def test_text_check_takes_1_to_max_characters_without_control_characters():
    host = protocol._text(protocol.MAX_HOST_CHARS)
    assert host("h") is None and host("h" * 255) is None and host("db2.lan") is None
    assert host("") == "must be 1 to 255 characters"
    assert host("h" * 256) == "must be 1 to 255 characters"
    assert host("a\x00b") == "must not contain control characters"
    assert host("a\x7fb") == "must not contain control characters"
    assert host(5) == "must be a string"
    assert host(None) == "must be a string"


def test_patterned_text_check_takes_only_its_pattern():
    run_id = protocol._text(32, protocol.RUN_ID_RE, "32 lower-case hex digits")
    assert run_id(RUN_A) is None and run_id("0123456789abcdef" * 2) is None
    assert run_id("A" * 32) == "must be 32 lower-case hex digits"
    assert run_id("a" * 31) == "must be 32 lower-case hex digits"
    assert run_id(1) == "must be a string"


def test_field_errors_name_the_message_and_the_field():
    ack = {"v": 2, "type": "ack", "run_id": RUN_A, "from": 1, "to": 2}
    with pytest.raises(ProtocolError, match=r"^ack: from must be an integer$"):
        validate({**ack, "from": 1.5}, TO_LISTENER)
    with pytest.raises(ProtocolError, match=r"^ack: to must be from 1 to 9007199254740991$"):
        validate({**ack, "to": 0}, TO_LISTENER)
    with pytest.raises(ProtocolError, match=r"^hello: host must be 1 to 255 characters$"):
        encode("hello", **{**HELLO, "host": ""})
    with pytest.raises(ProtocolError, match=r"^hello: dir must not contain control characters$"):
        encode("hello", **{**HELLO, "dir": "/d\n/e"})
    with pytest.raises(ProtocolError, match=r"^query: run_id must be 32 lower-case hex digits$"):
        encode("query", run_id="A" * 32)


# --------------------------------------------------------------------------- ranges


def test_ranges_accept_single_sequence_numbers_up_to_max_seq_and_a_full_line():
    full = [[2 * i + 1, 2 * i + 1] for i in range(MAX_RANGES_PER_LINE)]
    for ranges in ([[3, 3]], [[1, MAX_SEQ]], [[1, 2], [4, 4], [MAX_SEQ, MAX_SEQ]], full):
        line = encode("ranges", MAX_REPLY_BYTES, run_id=RUN_A, ranges=ranges)
        assert decode(line[:-1], TO_VERIFIER, MAX_REPLY_BYTES)["ranges"] == ranges


@pytest.mark.parametrize(
    "ranges",
    [
        [],
        None,
        5,
        "1-2",
        {"1": 2},
        [[2 * i + 1, 2 * i + 1] for i in range(MAX_RANGES_PER_LINE + 1)],
    ],
)
def test_ranges_must_be_a_list_of_1_to_256(ranges):
    assert _ranges_error(ranges) == "ranges: ranges must be a list of 1 to 256 ranges"


@pytest.mark.parametrize(
    "ranges", [[5], [[1, 2], 5], [[1, 2, 3]], [[1]], [[1, "2"]], [[1.0, 2]], [[True, 2]], ["ab"]]
)
def test_ranges_must_hold_integer_pairs(ranges):
    assert _ranges_error(ranges) == "ranges: ranges must hold [first, last] integer pairs"


@pytest.mark.parametrize(
    "ranges",
    [[[0, 1]], [[3, 2]], [[1, MAX_SEQ + 1]], [[5, 9], [9, 12]], [[5, 9], [1, 2]], [[5, 9], [5, 9]]],
)
def test_ranges_must_be_ascending_disjoint_sequence_numbers(ranges):
    assert (
        _ranges_error(ranges)
        == "ranges: ranges must be ascending, disjoint ranges of sequence numbers"
    )


# --------------------------------------------------------------------------- ack spans


@pytest.mark.parametrize("kind", ["ack", "recorded"])
def test_ack_and_recorded_spans_are_checked(kind):
    allowed = frozenset({kind})
    assert encode(kind, run_id=RUN_A, **{"from": 5, "to": 5})
    assert encode(kind, run_id=RUN_A, **{"from": 1, "to": MAX_ACK_SPAN})
    with pytest.raises(ProtocolError) as info:
        decode(_message(type=kind, run_id=RUN_A, **{"from": 5, "to": 4}), allowed)
    assert str(info.value) == f"{kind}: 'to' must not be below 'from'"
    with pytest.raises(ProtocolError) as info:
        encode(kind, run_id=RUN_A, **{"from": 1, "to": 1 + MAX_ACK_SPAN})
    assert str(info.value) == f"{kind}: an ack covers at most 4096 commits"


# --------------------------------------------------------------------------- the envelope


@pytest.mark.parametrize("line", [b"[1, 2]", b'"ping"', b"2", b"null"])
def test_a_message_must_be_a_json_object(line):
    assert _error(line) == "a message must be a JSON object"


@pytest.mark.parametrize(
    "line", [b'{"type":"ping"}', b'{"v":"2","type":"ping"}', b'{"v":2.0,"type":"ping"}']
)
def test_a_message_must_carry_an_integer_version(line):
    assert _error(line) == "missing or invalid protocol version 'v'"


def test_another_version_is_told_both_versions():
    assert _error(b'{"v":1,"type":"ping"}') == (
        "unsupported protocol version 1 (this fsyncbench speaks 2): "
        "run the same fsyncbench version on both machines"
    )


@pytest.mark.parametrize(
    "kind,shown",
    [
        ("welcome", "'welcome'"),
        ("t" * 20, repr("t" * 20)),
        ("t" * 21, "'?'"),
        ("x" * 500, "'?'"),
        (5, "'?'"),
        (None, "'?'"),
        (["ping"], "'?'"),
    ],
)
def test_an_unexpected_type_is_shown_only_when_short_text(kind, shown):
    assert _error(_message(type=kind)) == (
        f"unexpected message type {shown} "
        "(expected one of ack, auth, hello, list, ping, query, start)"
    )


def test_unknown_fields_are_named_at_most_five_and_cut_to_20_characters():
    extra = {name: 1 for name in "fedcba"}
    assert _error(_message(type="ping", **extra)) == (
        "ping: unknown field(s) 'a', 'b', 'c', 'd', 'e'"
    )
    assert _error(_message(type="ping", **{"k" * 25: 1})) == f"ping: unknown field(s) {'k' * 20!r}"


def test_a_missing_field_is_named():
    assert _error(_message(type="query")) == "query: missing field 'run_id'"


# --------------------------------------------------------------------------- decoding


def test_a_line_of_exactly_the_limit_is_accepted_and_one_byte_more_is_not():
    line = encode("ping")[:-1]
    assert decode(line, TO_LISTENER, len(line) + 1) == {"v": 2, "type": "ping"}
    assert _error(line, TO_LISTENER, len(line)) == "message of 22 bytes exceeds the 21-byte limit"
    assert _error(b"x" * MAX_LINE_BYTES) == "message of 8193 bytes exceeds the 8192-byte limit"


def test_a_line_that_is_not_utf8_is_refused():
    assert _error(b'{"v":2,"type":"ping","x":"\xff"}') == "message is not valid UTF-8"
    assert _error(b"\xc3") == "message is not valid UTF-8"


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_json_constants_are_refused(constant):
    line = b'{"v":2,"type":"ack","run_id":"' + RUN_A.encode() + b'","from":1,"to":'
    line += constant.encode() + b"}"
    assert _error(line) == f"message is not valid JSON ({constant} is not allowed)"


def test_invalid_json_is_refused_with_the_parsers_reason_cut_to_80_characters():
    assert _error(b'{"v":2,') == (
        "message is not valid JSON (Expecting property name enclosed in double quotes: "
        "line 1 column 8 (char 7))"
    )
    line = b"{" + b" " * 99998 + b"x"
    with pytest.raises(ValueError) as info:
        json.loads(line)
    reason = str(info.value)
    assert len(reason) > 80
    assert _error(line, limit=len(line) + 1) == f"message is not valid JSON ({reason[:80]})"


def test_a_deeply_nested_line_is_refused():
    assert _error(b"[" * 5000) == "message is nested too deeply"


# --------------------------------------------------------------------------- encoding


def test_encode_writes_compact_json_on_one_line():
    assert encode("ping") == b'{"v":2,"type":"ping"}\n'
    assert encode("ack", run_id=RUN_A, **{"from": 1, "to": 2}) == (
        b'{"v":2,"type":"ack","run_id":"' + RUN_A.encode() + b'","from":1,"to":2}\n'
    )
    assert encode("hello", **{**HELLO, "dir": "/d\u00e9"}).endswith(
        b'"dir":"/d\\u00e9","config":"wal/full","pid":1,"started_utc":"2026-01-01T00:00:00Z"}\n'
    )


def test_a_hello_with_a_1024_character_escaped_directory_fits():
    # the module's claim for MAX_LINE_BYTES: every character of host and dir needing a
    # 6-byte JSON escape still fits
    line = encode("hello", **{**HELLO, "host": "\u00e9" * 255, "dir": "\u00e9" * 1024})
    assert len(line) <= MAX_LINE_BYTES
    assert decode(line[:-1], TO_LISTENER)["dir"] == "\u00e9" * 1024


def test_encode_takes_a_line_of_exactly_the_limit_and_refuses_one_byte_more():
    assert encode("ping", limit=22) == b'{"v":2,"type":"ping"}\n'
    with pytest.raises(ProtocolError) as info:
        encode("ping", limit=21)
    assert str(info.value) == "ping message of 22 bytes exceeds the 21-byte limit"
    ranges = [[MAX_SEQ - 2 * i - 1, MAX_SEQ - 2 * i] for i in reversed(range(MAX_RANGES_PER_LINE))]
    line = encode("ranges", MAX_REPLY_BYTES, run_id=RUN_A, ranges=ranges)
    with pytest.raises(ProtocolError) as info:
        encode("ranges", run_id=RUN_A, ranges=ranges)
    assert str(info.value) == f"ranges message of {len(line)} bytes exceeds the 8192-byte limit"


def test_encode_checks_the_message_like_an_incoming_one():
    with pytest.raises(ProtocolError, match=re.escape("ping: unknown field(s) 'x'")):
        encode("ping", x=1)


def test_an_ipv6_listener_address_is_written_in_brackets_and_read_back():
    assert protocol.format_address("::1", 7000) == "[::1]:7000"
    assert protocol.format_address("fe80::1%eth0", 1) == "[fe80::1%eth0]:1"
    assert protocol.format_address("192.0.2.7", 65535) == "192.0.2.7:65535"
    assert protocol.format_address("listener.example", 9) == "listener.example:9"
    for host, port in (("::1", 7000), ("192.0.2.7", 65535)):
        assert protocol.parse_address(protocol.format_address(host, port)) == (host, port)
