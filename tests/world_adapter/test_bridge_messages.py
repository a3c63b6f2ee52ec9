"""Frames and the value codec: round trips, and a clear BadFrame for every kind of bad input."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from progs.types import ProgParameter, ProgSignature, ProgType, ValueType
from world_adapter.bridge.messages import (
    MAX_FRAME_BYTES,
    Error,
    ErrorCode,
    EventFrame,
    Hello,
    Ping,
    Pong,
    Request,
    Result,
    Subscribe,
    Subscribed,
    Welcome,
)
from world_adapter.bridge.methods import method, world_methods
from world_adapter.bridge.wire import BadFrame, FrameTooLarge, encode_frame, parse_frame
from world_adapter.codec import CodecError, decode, decode_event, encode, encode_event
from world_adapter.events import (
    CharacterState,
    Crime,
    Cursor,
    RoomEcho,
    Speech,
    StateChange,
    WorldEvent,
)
from world_adapter.facts import DoorRule, PathRule, RoomInfo
from world_adapter.replay import Gap, GapReason

AT = datetime(2026, 11, 22, 18, 4, 5, tzinfo=UTC)
C = Cursor("boot-1", 7)

EVENTS: list[WorldEvent] = [
    RoomEcho(cursor=C, cell_id=101, zone_id=1, occurred_at=AT, text="Maren waves."),
    Speech(
        cursor=C,
        cell_id=101,
        zone_id=None,
        occurred_at=AT,
        origin="prog",
        speaker_id=1,
        speaker_name="Maren",
        text="Hello",
        target_id=2,
        target_kind="character",
    ),
    Crime(
        cursor=C,
        cell_id=103,
        zone_id=1,
        occurred_at=AT,
        crime_id=4,
        crime_type="Theft",
        legal_authority="Watch",
        criminal_id=3,
        victim_id=None,
    ),
    StateChange(
        cursor=C,
        cell_id=202,
        zone_id=2,
        occurred_at=AT,
        character_id=5,
        state=CharacterState.PASS_OUT,
    ),
]

FRAMES = [
    Hello(1, "secret", "storyteller"),
    Welcome(1, C, "Harbour"),
    Subscribe((101, 102), C),
    Subscribe((), None),
    Subscribed((101,), C),
    Gap(GapReason.EXPIRED, Cursor("boot-1", 1), C),
    Request("r-1", "character", {"character_id": 5}),
    Result("r-1", {"anything": [1, None]}),
    Result("r-2", None),
    Error(ErrorCode.COMMAND_FAILED, "No such prog.", "r-3"),
    Error(ErrorCode.BAD_FRAME, "Bad.", None),
    Ping("p-1"),
    Pong("p-1"),
    *(EventFrame(e) for e in EVENTS),
]


@pytest.mark.parametrize("frame", FRAMES, ids=lambda f: type(f).__name__)
def test_every_frame_survives_a_round_trip(frame: object) -> None:
    text = encode_frame(frame)  # type: ignore[arg-type]
    assert parse_frame(text, strict=True) == frame
    assert json.loads(text)["type"]


def test_the_token_never_shows_in_a_repr() -> None:
    assert "secret" not in repr(Hello(1, "secret"))


def test_event_json_uses_the_event_field_names() -> None:
    data = encode_event(EVENTS[1])
    assert data["cursor"] == {"epoch": "boot-1", "seq": 7}
    assert data["occurred_at"] == "2026-11-22T18:04:05Z"
    assert data["kind"] == "speech" and data["origin"] == "prog" and data["zone_id"] is None
    assert decode_event(data) == EVENTS[1]


def test_optional_fields_may_be_left_out() -> None:
    frame = parse_frame(
        '{"type":"event","cursor":{"epoch":"e","seq":1},"kind":"room_echo","cell_id":1,'
        '"zone_id":null,"occurred_at":"2026-01-01T00:00:00+00:00","text":"x"}'
    )
    assert isinstance(frame, EventFrame)
    assert frame.event == RoomEcho(
        cursor=Cursor("e", 1),
        cell_id=1,
        zone_id=None,
        occurred_at=datetime(2026, 1, 1, tzinfo=UTC),
        text="x",
    )


def test_unknown_fields_are_ignored_unless_strict() -> None:
    text = '{"type":"ping","nonce":"n","added_in_a_later_version":true}'
    assert parse_frame(text) == Ping("n")
    with pytest.raises(BadFrame, match="unknown field"):
        parse_frame(text, strict=True)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("not json", "not valid JSON"),
        ("[1, 2]", "not a JSON object"),
        ('{"nonce": "n"}', "Unknown frame type None"),
        ('{"type": "shout"}', "Unknown frame type 'shout'"),
        ('{"type": "ping"}', "nonce: missing"),
        ('{"type": "ping", "nonce": 5}', "nonce: Input should be a valid string"),
        ('{"type": "ping", "nonce": ""}', "nonce must be 1-64"),
        (
            '{"type": "hello", "protocol": true, "token": "t"}',
            "protocol: Input should be a valid int",
        ),
        (
            '{"type": "subscribe", "cells": [1, "2"], "after": null}',
            r"cells\[1\]: Input should be a valid integer",
        ),
        ('{"type": "subscribe", "cells": [1]}', "after: missing"),
        (
            '{"type": "subscribed", "cells": [], "head": {"epoch": "", "seq": 1}}',
            "head: epoch must be 1-200",
        ),
        (
            '{"type": "welcome", "protocol": 1, "head": {"epoch": "e", "seq": -1}}',
            "head: seq must not be negative",
        ),
        (
            '{"type": "gap", "reason": "lost", "after": null}',
            "reason: Input should be 'epoch', 'exp",
        ),
        ('{"type": "error", "code": "oops", "message": "m"}', "code: Input should be 'bad_fr"),
        (
            '{"type": "event", "cursor": {"epoch": "e", "seq": 1}, "kind": "dance"}',
            "unknown event kind 'dance'",
        ),
        (
            '{"type": "event", "cursor": {"epoch": "e", "seq": 1}, "kind": "room_echo", '
            '"cell_id": 1, "zone_id": 1, "occurred_at": "2026-01-01T00:00:00", "text": "x"}',
            "occurred_at has no timezone",
        ),
    ],
)
def test_a_bad_frame_says_what_is_wrong(text: str, problem: str) -> None:
    with pytest.raises(BadFrame, match=problem):
        parse_frame(text)


def test_a_bad_request_keeps_its_id_so_the_error_can_answer_it() -> None:
    with pytest.raises(BadFrame) as caught:
        parse_frame('{"type": "request", "id": "r-9", "params": {}}')
    assert caught.value.request_id == "r-9"


def test_a_frame_over_the_limit_is_refused_before_sending() -> None:
    with pytest.raises(FrameTooLarge):
        encode_frame(Result("r-1", "é" * (MAX_FRAME_BYTES // 2)))
    encode_frame(Result("r-1", "x" * (MAX_FRAME_BYTES - 100)))


def test_values_take_their_documented_json_forms() -> None:
    signature = ProgSignature(
        1,
        "Echo",
        (ProgParameter("Room", ValueType(ProgType.LOCATION)),),
        ValueType(ProgType.TEXT, True),
    )
    assert encode(signature)["return_type"] == "Collection<Text>"
    assert decode(encode(signature), ProgSignature) == signature
    assert encode(timedelta(minutes=2)) == 120.0
    assert decode(120, timedelta) == timedelta(minutes=2)
    zones = {1: frozenset({102, 101})}
    assert encode(zones) == {"1": [101, 102]}
    assert decode({"1": [101, 102]}, dict[int, frozenset[int]]) == zones
    assert decode({"doors": "ignore"}, PathRule) == PathRule(DoorRule.IGNORE)
    room = RoomInfo(101, "Quay", 1, "Wet.", (1, 2))
    assert decode(encode(room), RoomInfo | None) == room
    assert decode(None, RoomInfo | None) is None


@pytest.mark.parametrize(
    ("data", "hint", "problem"),
    [
        ({"1": "x"}, dict[int, int], r"1: Input should be a valid integer"),
        ({"one": 1}, dict[int, int], "one: key: Input should be a valid integer"),
        (True, int, "Input should be a valid integer"),
        ("Text", int, "Input should be a valid integer"),
        ({"doors": "include_unlockable"}, PathRule, "needs the character holding keys"),
        ({"id": 1}, RoomInfo, "name: missing"),
        ([1], tuple[int, int], r"\[1\]: missing"),
        ("Blob", ValueType, "unknown prog type"),
        (5, RoomInfo | None, r"Input should be an object \(or null\)"),
    ],
)
def test_decoding_reports_the_path_of_the_problem(data: object, hint: object, problem: str) -> None:
    with pytest.raises(CodecError, match=problem):
        decode(data, hint)


def test_requests_are_read_from_the_world_client_protocol() -> None:
    methods = world_methods()
    assert {"zones", "character", "room", "progs", "execute_prog"} <= set(methods)
    assert "subscribe" not in methods
    execute = method("execute_prog")
    assert execute is not None
    assert [p.name for p in execute.params] == ["prog", "arguments", "idempotency_key"]
    with pytest.raises(CodecError, match="unknown parameter"):
        execute.decode_params({"prog": "x", "arguments": {}, "idempotency_key": "k", "extra": 1})
    with pytest.raises(CodecError, match="params.idempotency_key: missing"):
        execute.decode_params({"prog": "x", "arguments": {}})
    with pytest.raises(TypeError, match="no parameter"):
        execute.encode_params({"program": "x"})


def test_error_messages_are_short_even_when_a_bad_value_is_huge() -> None:
    with pytest.raises(BadFrame) as caught:
        parse_frame(
            '{"type": "event", "cursor": {"epoch": "e", "seq": 1}, "kind": "'
            + "x" * 2_000_000
            + '"}'
        )
    assert len(str(caught.value)) == 500 and str(caught.value).endswith("…")
    encode_frame(Error(ErrorCode.BAD_FRAME, str(caught.value)))


@pytest.mark.parametrize(
    ("escaped", "kept"),
    [
        ("a\\udc00b", "a\ufffdb"),
        ("\\ud800", "\ufffd"),
        ("\\ud83d\\ude00", "\U0001f600"),  # a pair is one character, kept as it is
        ("nul\\u0000", "nul\ufffd"),
    ],
)
def test_text_no_database_can_store_is_replaced_not_refused(escaped: str, kept: str) -> None:
    frame = parse_frame(f'{{"type": "ping", "nonce": "{escaped}"}}')
    assert frame == Ping(kept)
