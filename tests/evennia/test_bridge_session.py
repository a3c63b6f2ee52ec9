"""The Evennia bridge's protocol logic, without a network or Evennia: frames in, frames out."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from world_adapter.bridges.evennia.eventlog import EventLog
from world_adapter.bridges.evennia.executor import ProgExecutor
from world_adapter.bridges.evennia.invocations import (
    NO_ANSWER,
    NOT_CONNECTED,
    InvocationDesk,
    Invoked,
    InvokeOutcome,
    Report,
    describe,
    invocation_words,
    invoke_frame,
)
from world_adapter.bridges.evennia.params import (
    BadParams,
    CommandFailed,
    int_list_param,
    int_param,
    optional_int_param,
    path_rule_param,
    seconds_param,
    str_param,
)
from world_adapter.bridges.evennia.registry import ProgError, ProgRegistry, ResultStore
from world_adapter.bridges.evennia.session import MAX_FRAME_BYTES, BridgeSession

TOKEN = "s3cret-token"


@dataclass
class Timer:
    seconds: float
    fn: Callable[[], None]
    cancelled: bool = False

    def cancel(self) -> None:
        self.cancelled = True


@dataclass
class Room:
    id: int


@dataclass
class Harness:
    """A session wired to lists instead of a socket, and a prog runner the test controls."""

    log: EventLog = field(default_factory=lambda: EventLog(5, epoch="e1", clock=lambda: 0.0))
    sent: list[dict[str, Any]] = field(default_factory=list)
    closes: list[tuple[int, str]] = field(default_factory=list)
    timers: list[Timer] = field(default_factory=list)
    calls: list[tuple[Any, ...]] = field(default_factory=list)
    pending: list[tuple[Callable[[], Any], Callable[[Any], None], Callable[[Any], None]]] = field(
        default_factory=list
    )
    run_now: bool = True
    registry: ProgRegistry = field(default_factory=ProgRegistry)
    invocations: InvocationDesk | None = None
    session: BridgeSession = field(init=False)

    def __post_init__(self) -> None:
        self.registry.register(
            self._echo, name="EchoToRoom", params=[("Room", "Location"), ("Text", "Text")],
            returns="Boolean",
        )  # fmt: skip
        self.registry.register(self._boom, name="Boom", returns="Text")
        executor = ProgExecutor(
            self.registry, ResultStore(), lookup=self._lookup, invoke=self._invoke
        )
        self.session = BridgeSession(
            token=TOKEN,
            game="Test Game",
            events=self.log,
            methods={
                "zones": lambda p: {"1": [2, 3]},
                "room": lambda p: {"id": int_param(p, "room_id")},
                "refuse": self._refuse,
                "broken": lambda p: 1 / 0,
                "huge": lambda p: "x" * MAX_FRAME_BYTES,
            },
            executor=executor,
            send_text=lambda text: self.sent.append(json.loads(text)),
            close=lambda code, reason: self.closes.append((code, reason)),
            call_later=self._call_later,
            invocations=self.invocations,
        )
        self.session.opened()

    def _call_later(self, seconds: float, fn: Callable[[], None]) -> Timer:
        timer = Timer(seconds, fn)
        self.timers.append(timer)
        return timer

    def _lookup(self, element: str, object_id: int) -> Room | None:
        return Room(object_id) if element == "Location" and object_id < 10 else None

    def _invoke(
        self, call: Callable[[], Any], ok: Callable[[Any], None], fail: Callable[[Any], None]
    ) -> None:
        if not self.run_now:
            self.pending.append((call, ok, fail))
            return
        try:
            value = call()
        except Exception as exc:
            fail(exc)
        else:
            ok(value)

    def _echo(self, room: Room, text: str) -> bool:
        self.calls.append((room.id, text))
        return True

    def _boom(self) -> str:
        raise RuntimeError("secret internals")

    def _refuse(self, params: dict[str, Any]) -> Any:
        raise CommandFailed("No.")

    def send(self, frame: dict[str, Any] | str) -> list[dict[str, Any]]:
        """Feed one frame; return what the session sent in answer."""
        before = len(self.sent)
        self.session.received(frame if isinstance(frame, str) else json.dumps(frame))
        return self.sent[before:]

    def hello(self) -> dict[str, Any]:
        [welcome] = self.send({"type": "hello", "protocol": 1, "token": TOKEN})
        return welcome

    def request(self, method: str, **params: Any) -> dict[str, Any]:
        [answer] = self.send({"type": "request", "id": "r1", "method": method, "params": params})
        return answer

    def run_prog(self, key: str, **arguments: Any) -> list[dict[str, Any]]:
        params = {"prog": "EchoToRoom", "arguments": arguments, "idempotency_key": key}
        return self.send({"type": "request", "id": key, "method": "execute_prog", "params": params})

    def say(self, cell: int, text: str) -> None:
        self.log.append({"kind": "room_echo", "cell_id": cell, "zone_id": None, "text": text})


@pytest.fixture
def h() -> Harness:
    return Harness()


# ---------------------------------------------------------------- handshake


def test_hello_with_the_token_gets_welcome_with_the_head(h: Harness) -> None:
    h.say(2, "before")
    assert h.hello() == {
        "type": "welcome",
        "protocol": 1,
        "game": "Test Game",
        "head": {"epoch": "e1", "seq": 1},
    }
    assert h.timers[0].cancelled and h.timers[-1].seconds == 60


@pytest.mark.parametrize(
    ("frame", "code"),
    [
        ({"type": "hello", "protocol": 1, "token": "wrong"}, 4001),
        ({"type": "hello", "protocol": 999, "token": "wrong"}, 4001),
        ({"type": "hello", "protocol": 999, "token": TOKEN}, 4002),
        ({"type": "hello", "protocol": True, "token": TOKEN}, 4002),
        ({"type": "ping", "nonce": "x"}, 4003),
        ({"type": "hello", "protocol": 1}, 4003),
        ("not json", 4003),
    ],
)
def test_a_bad_hello_closes_with_its_code(h: Harness, frame: Any, code: int) -> None:
    assert h.send(frame) == []
    assert h.closes[0][0] == code
    assert h.session.state == "closed"
    assert h.send({"type": "hello", "protocol": 1, "token": TOKEN}) == []


def test_silence_before_hello_closes_with_4003_and_later_with_4000(h: Harness) -> None:
    h.timers[0].fn()
    assert h.closes == [(4003, "no hello within 10 seconds")]
    late = Harness()
    late.hello()
    late.timers[-1].fn()
    assert late.closes[0][0] == 4000


def test_binary_frames_close_before_hello_and_are_bad_frames_after(h: Harness) -> None:
    h.hello()
    h.session.received_binary()
    assert h.sent[-1]["code"] == "bad_frame"
    fresh = Harness()
    fresh.session.received_binary()
    assert fresh.closes[0][0] == 4003


# ---------------------------------------------------------------- frames and requests


def test_ping_pong_and_bad_frames_keep_the_connection(h: Harness) -> None:
    h.hello()
    assert h.send({"type": "ping", "nonce": "p-1"}) == [{"type": "pong", "nonce": "p-1"}]
    for bad in ["{", "[1]", json.dumps({"type": "dance"}), json.dumps({"nonce": 1})]:
        [error] = h.send(bad)
        assert (error["type"], error["code"], error["id"]) == ("error", "bad_frame", None)
    assert h.send({"type": "pong", "nonce": "p-9"}) == []
    assert h.send({"type": "error", "code": "bad_frame", "message": "x"}) == []
    assert h.session.bad_frames == 4 and h.closes == []


def test_requests_are_answered_by_id_with_results_or_coded_errors(h: Harness) -> None:
    h.hello()
    assert h.request("zones") == {"type": "result", "id": "r1", "result": {"1": [2, 3]}}
    assert h.request("room", room_id=7)["result"] == {"id": 7}
    assert h.request("room", room_id="7")["code"] == "bad_params"
    assert h.request("room", room_id=True)["code"] == "bad_params"
    assert h.request("nope")["code"] == "unknown_method"
    assert h.request("refuse") == {
        "type": "error",
        "id": "r1",
        "code": "command_failed",
        "message": "No.",
    }
    assert h.request("broken")["code"] == "internal"
    assert h.request("huge")["code"] == "internal"
    [no_id] = h.send({"type": "request", "method": "zones", "params": {}})
    assert no_id["code"] == "bad_frame"


def test_params_are_checked_by_type() -> None:
    assert int_param({"a": 3}, "a") == 3
    for value in (None, "3", 3.0, False):
        with pytest.raises(BadParams):
            int_param({"a": value}, "a")
    assert optional_int_param({}, "a") is None
    assert str_param({"a": "x"}, "a") == "x"
    assert seconds_param({"a": 90}, "a") == 90.0
    assert int_list_param({"a": None}, "a") is None and int_list_param({"a": [1]}, "a") == [1]
    for call in (
        lambda: optional_int_param({"a": "1"}, "a"),
        lambda: str_param({}, "a"),
        lambda: seconds_param({"a": -1}, "a"),
        lambda: int_list_param({"a": [1, "2"]}, "a"),
    ):
        with pytest.raises(BadParams):
            call()


@pytest.mark.parametrize(
    ("rule", "error"),
    [
        ({"doors": "ignore"}, None),
        ({"doors": "include_unlockable", "character_id": 5}, None),
        ({"doors": "sideways"}, "'rule' must be an object"),
        ({"doors": "include_unlockable"}, "needs a 'character_id'"),
        ({"doors": "ignore", "character_must_cross": True}, "needs a 'character_id'"),
        ({"doors": "ignore", "character_must_cross": "yes", "character_id": 5}, "true or false"),
    ],
)
def test_path_rules_are_checked(rule: dict[str, Any], error: str | None) -> None:
    if error is None:
        assert path_rule_param({"rule": rule}, "rule")["doors"] == rule["doors"]
    else:
        with pytest.raises(BadParams, match=error):
            path_rule_param({"rule": rule}, "rule")


# ---------------------------------------------------------------- progs


def test_a_prog_runs_once_per_idempotency_key(h: Harness) -> None:
    h.hello()
    [first] = h.run_prog("k1", room=2, text="A gull screams.")
    [again] = h.run_prog("k1", room=2, text="A gull screams.")
    assert first["result"] == {
        "prog": "EchoToRoom",
        "return_type": "Boolean",
        "value": True,
        "replayed": False,
    }
    assert again["result"] == {**first["result"], "replayed": True}
    assert h.calls == [(2, "A gull screams.")]


def test_a_key_still_running_waits_for_that_run(h: Harness) -> None:
    h.hello()
    h.run_now = False
    assert h.run_prog("k1", Room=2, Text="x") == []
    assert h.run_prog("k1", Room=2, Text="x") == []
    call, ok, _ = h.pending.pop()
    ok(call())
    assert [(f["id"], f["result"]["replayed"]) for f in h.sent[-2:]] == [
        ("k1", False),
        ("k1", True),
    ]
    assert h.calls == [(2, "x")]


@pytest.mark.parametrize(
    ("params", "code", "message"),
    [
        ({"prog": "Nope", "arguments": {}, "idempotency_key": "k"}, "command_failed", "no prog"),
        ({"prog": "EchoToRoom", "arguments": {"Room": 2}, "idempotency_key": "k"}, "command_failed",
         "needs the argument 'Text'"),
        ({"prog": "EchoToRoom", "arguments": {"Room": 99, "Text": "x"}, "idempotency_key": "k"},
         "command_failed", "no room with id 99"),
        ({"prog": "EchoToRoom", "arguments": {"Room": "2", "Text": "x"}, "idempotency_key": "k"},
         "command_failed", "must be the id of a room"),
        ({"prog": "EchoToRoom", "arguments": {"Room": 2, "Text": 5}, "idempotency_key": "k"},
         "command_failed", "must be text"),
        ({"prog": "Boom", "arguments": {}, "idempotency_key": "k"}, "command_failed",
         "failed with an error inside the game"),
        ({"prog": "EchoToRoom", "arguments": [], "idempotency_key": "k"}, "bad_params",
         "arguments"),
        ({"prog": "EchoToRoom", "arguments": {}, "idempotency_key": ""}, "bad_params", "key"),
        ({"prog": None, "arguments": {}, "idempotency_key": "k"}, "bad_params", "prog"),
    ],
)  # fmt: skip
def test_prog_failures_are_plain_coded_errors(
    h: Harness, params: dict[str, Any], code: str, message: str
) -> None:
    h.hello()
    [error] = h.send({"type": "request", "id": "x", "method": "execute_prog", "params": params})
    assert (error["type"], error["id"], error["code"]) == ("error", "x", code)
    assert message in error["message"]
    assert "secret" not in error["message"]


def test_a_failed_run_is_not_stored_and_may_be_retried(h: Harness) -> None:
    h.hello()
    h.run_now = False
    h.run_prog("k1", Room=2, Text="x")
    _, _, fail = h.pending.pop()
    fail(TimeoutError())
    assert h.sent[-1]["message"] == "Prog EchoToRoom did not finish in time."
    h.run_now = True
    [retry] = h.run_prog("k1", Room=2, Text="x")
    assert retry["result"]["replayed"] is False


def test_progs_can_be_named_by_id_and_answers_after_close_are_dropped(h: Harness) -> None:
    h.hello()
    prog_id = h.registry.find("EchoToRoom").id
    params = {"prog": prog_id, "arguments": {"Room": 2, "Text": "x"}, "idempotency_key": "k"}
    [answer] = h.send({"type": "request", "id": "x", "method": "execute_prog", "params": params})
    assert answer["result"]["prog"] == "EchoToRoom"
    h.run_now = False
    h.run_prog("k2", Room=2, Text="y")
    h.session.closed()
    call, ok, _ = h.pending.pop()
    before = len(h.sent)
    ok(call())
    assert len(h.sent) == before


def test_prog_errors_raised_by_game_code_reach_the_model_as_written() -> None:
    registry = ProgRegistry()

    def refuse() -> None:
        raise ProgError("The harbour is closed tonight.")

    registry.register(refuse, name="Refuse")
    replies: list[Any] = []
    executor = ProgExecutor(
        registry,
        ResultStore(),
        lookup=lambda e, i: None,
        invoke=lambda c, ok, fail: fail(_raise(c)),
    )
    executor.execute("Refuse", {}, "k", lambda outcome, error: replies.append(str(error)))
    assert replies == ["The harbour is closed tonight."]


def _raise(call: Callable[[], Any]) -> BaseException:
    try:
        call()
    except BaseException as exc:
        return exc
    raise AssertionError("the call did not raise")


# ---------------------------------------------------------------- events


def _events(frames: list[dict[str, Any]]) -> list[tuple[str, Any]]:
    return [
        (f["type"], f["cursor"]["seq"] if f["type"] == "event" else f.get("reason")) for f in frames
    ]


def test_subscribe_replays_after_the_cursor_in_its_cells_then_goes_live(h: Harness) -> None:
    h.hello()
    for cell, text in [(2, "a"), (3, "b"), (2, "c")]:
        h.say(cell, text)
    sent = h.send({"type": "subscribe", "cells": [2], "after": {"epoch": "e1", "seq": 0}})
    assert sent[0] == {"type": "subscribed", "cells": [2], "head": {"epoch": "e1", "seq": 3}}
    assert _events(sent[1:]) == [("event", 1), ("event", 3)]
    assert sent[1]["text"] == "a" and sent[1]["occurred_at"] == "1970-01-01T00:00:00Z"
    before = len(h.sent)
    h.say(3, "d")
    h.say(2, "e")
    assert _events(h.sent[before:]) == [("event", 5)]


def test_subscribe_from_now_on_sends_only_new_events(h: Harness) -> None:
    h.hello()
    h.say(2, "old")
    assert _events(h.send({"type": "subscribe", "cells": [2], "after": None})[1:]) == []
    h.say(2, "new")
    assert _events(h.sent[-1:]) == [("event", 2)]


@pytest.mark.parametrize(
    ("after", "gap"),
    [
        ({"epoch": "old", "seq": 9}, {"reason": "epoch", "after": {"epoch": "old", "seq": 9},
                                      "resume_after": {"epoch": "e1", "seq": 2}}),
        ({"epoch": "e1", "seq": 1}, {"reason": "expired", "after": {"epoch": "e1", "seq": 1},
                                     "resume_after": {"epoch": "e1", "seq": 2}}),
        ({"epoch": "e1", "seq": 99}, {"reason": "ahead", "after": {"epoch": "e1", "seq": 99},
                                      "resume_after": {"epoch": "e1", "seq": 7}}),
    ],
)  # fmt: skip
def test_a_cursor_that_cannot_be_replayed_gets_one_gap(
    h: Harness, after: dict[str, Any], gap: dict[str, Any]
) -> None:
    h.hello()
    for n in range(7):  # the buffer holds 5: seqs 3..7
        h.say(2, str(n))
    sent = h.send({"type": "subscribe", "cells": [2], "after": after})
    assert sent[1] == {"type": "gap", **gap}
    expected = [] if gap["reason"] == "ahead" else [3, 4, 5, 6, 7]
    assert [f["cursor"]["seq"] for f in sent[2:]] == expected


def test_a_new_subscription_replaces_the_old(h: Harness) -> None:
    h.hello()
    h.send({"type": "subscribe", "cells": [2], "after": None})
    h.send({"type": "subscribe", "cells": [3], "after": None})
    before = len(h.sent)
    h.say(2, "not seen")
    h.say(3, "seen")
    assert [f["text"] for f in h.sent[before:]] == ["seen"]
    for bad in ({"cells": [True]}, {"cells": "2"}, {"cells": [2], "after": {"epoch": "e1"}}):
        assert h.send({"type": "subscribe", "after": None, **bad})[0]["code"] == "bad_frame"


def test_back_pressure_holds_events_and_a_slow_subscriber_gets_an_expired_gap(h: Harness) -> None:
    h.hello()
    h.send({"type": "subscribe", "cells": [2], "after": None})
    h.say(2, "first")
    h.session.pause()
    before = len(h.sent)
    for n in range(8):  # seqs 2..9; the buffer keeps 5..9, so 2..4 are lost unsent
        h.say(2, str(n))
    assert h.sent[before:] == []
    h.session.resume()
    sent = h.sent[before:]
    assert sent[0] == {
        "type": "gap",
        "reason": "expired",
        "after": {"epoch": "e1", "seq": 1},
        "resume_after": {"epoch": "e1", "seq": 4},
    }
    assert [f["cursor"]["seq"] for f in sent[1:]] == [5, 6, 7, 8, 9]


def test_closing_stops_the_subscription_and_the_timers(h: Harness) -> None:
    h.hello()
    h.send({"type": "subscribe", "cells": [2], "after": None})
    h.session.closed()
    before = len(h.sent)
    h.say(2, "unheard")
    assert h.sent[before:] == []
    assert h.timers[-1].cancelled


# ---------------------------------------------------------------- in-game admin commands


def _admin(h: Harness, replies: list[tuple[str | None, str | None]], *args: str) -> bool:
    return h.session.send_admin(
        "ais", "pause", list(args), "maren", "Admin", lambda t, e: replies.append((t, e))
    )


def test_admin_commands_go_to_the_daemon_and_its_answers_come_back(h: Harness) -> None:
    replies: list[tuple[str | None, str | None]] = []
    assert not _admin(h, replies, "3")  # before the daemon said hello
    h.hello()
    assert not h.session.subscribed
    h.send({"type": "subscribe", "cells": [2], "after": None})
    assert h.session.subscribed
    before = len(h.sent)
    assert _admin(h, replies, "3") and _admin(h, replies, "4")
    assert h.sent[before:] == [
        {"type": "admin", "id": f"a-{n}", "command": "ais", "verb": "pause", "args": [ref],
         "caller": "maren", "level": "Admin"}
        for n, ref in ((1, "3"), (2, "4"))
    ]  # fmt: skip
    assert h.send({"type": "error", "id": "a-2", "code": "command_failed", "message": "No."}) == []
    text = "Storyteller 3 is now paused."
    assert h.send({"type": "result", "id": "a-1", "result": {"text": text}}) == []
    assert replies == [(None, "No."), (text, None)]
    [late] = h.send({"type": "result", "id": "a-1", "result": {"text": text}})
    assert (late["code"], replies[-1]) == ("bad_frame", (text, None))  # answered once only


def test_an_unanswered_admin_command_times_out_or_ends_with_the_connection(h: Harness) -> None:
    replies: list[tuple[str | None, str | None]] = []
    h.hello()
    _admin(h, replies, "3")
    timer = h.timers[-1]
    assert timer.seconds == 45
    timer.fn()
    _admin(h, replies, "4")
    h.session.closed()
    assert replies == [
        (None, "The storyteller daemon did not answer in time."),
        (None, "The connection to the storyteller daemon closed; try again."),
    ]
    assert h.timers[-1].cancelled


# ---------------------------------------------------------------- a game invokes a storyteller


@dataclass
class Desk:
    """Two daemon connections sharing one desk, as the Server's connections do."""

    timers: list[Timer] = field(default_factory=list)
    reports: list[Report] = field(default_factory=list)
    desk: InvocationDesk = field(init=False)
    stream: Harness = field(init=False)
    requests: Harness = field(init=False)

    def __post_init__(self) -> None:
        self.desk = InvocationDesk(boot="b007", send=self._send, call_later=self._call_later)
        self.stream = Harness(invocations=self.desk)
        self.requests = Harness(invocations=self.desk)

    def _send(self, frame: dict[str, Any]) -> object | None:
        for h in (self.stream, self.requests):
            if h.session.send_invoke(frame):
                return h.session
        return None

    def _call_later(self, seconds: float, fn: Callable[[], None]) -> Timer:
        timer = Timer(seconds, fn)
        self.timers.append(timer)
        return timer

    def invoke(self, *args: Any, **kwargs: Any) -> str:
        return self.desk.invoke(*args, callback=self.reports.append, **kwargs)


def _invoked(request_id: str, **fields: Any) -> dict[str, Any]:
    frame = {"type": "invoked", "id": request_id, "accepted": True, "reason": "queued",
             "message": "", "storyteller_id": 3, "turn_key": f"st3:direct:game:{request_id}",
             "duplicate": False}  # fmt: skip
    return {**frame, **fields}


def _outcome(request_id: str, **fields: Any) -> dict[str, Any]:
    frame = {"type": "invoke_outcome", "id": request_id,
             "turn_key": f"st3:direct:game:{request_id}", "outcome": "completed", "message": "",
             "run_id": 5812, "tool_calls": [{"name": "EchoToRoom", "ok": True},
                                            {"name": "Noop", "ok": True}]}  # fmt: skip
    return {**frame, **fields}


def test_an_invocation_goes_out_and_its_answer_and_outcome_come_back_by_id() -> None:
    d = Desk()
    first = d.invoke("Harbour Watch", "The bell rings.")  # no daemon connection is open yet
    assert d.reports == [
        Invoked(first, False, NOT_CONNECTED, "The storyteller daemon is not connected.")
    ]
    assert d.desk.waiting == [] and d.stream.sent == [] and d.timers == []
    d.stream.hello()
    d.requests.hello()
    before = len(d.stream.sent)
    second = d.invoke("Harbour Watch", "The bell rings.", character_id=1001, room_id=101)
    assert (first, second) == ("inv-b007-1", "inv-b007-2")
    assert d.stream.sent[before:] == [
        {"type": "invoke", "id": second, "storyteller": "Harbour Watch",
         "text": "The bell rings.", "character_id": 1001, "room_id": 101}
    ]  # fmt: skip
    assert d.timers[-1].seconds == 45

    assert d.stream.send(_invoked("inv-elsewhere-1")) == []  # an id the game never sent: ignored
    assert d.stream.send(_invoked(second)) == []
    assert d.timers[-1].cancelled
    # The daemon sends the outcome on its request connection, not the one the invoke came on.
    assert d.requests.send(_outcome(second)) == []
    assert d.requests.send(_outcome(second)) == []  # said twice, reported once
    assert d.reports[1:] == [
        Invoked(second, True, "queued", "", 3, f"st3:direct:game:{second}"),
        InvokeOutcome(second, f"st3:direct:game:{second}", "completed", "", 5812,
                      (("EchoToRoom", True), ("Noop", True))),
    ]  # fmt: skip
    assert d.desk.waiting == []
    assert [describe(r) for r in d.reports[1:]] == [
        "Storyteller #3 accepted invocation inv-b007-2: its turn is queued.",
        "Invocation inv-b007-2 ended: completed (run 5812; tools: EchoToRoom ok, Noop ok).",
    ]


def test_the_same_id_again_is_reported_as_the_daemons_duplicate() -> None:
    d = Desk()
    d.stream.hello()
    d.requests.hello()
    first = d.invoke(3, "Night falls.")
    d.stream.send(_invoked(first))
    d.stream.send(_outcome(first))
    before = len(d.stream.sent)
    again = d.invoke(3, "Night falls.", request_id=first)
    assert again == first and d.stream.sent[before:] == [
        {"type": "invoke", "id": first, "storyteller": 3, "text": "Night falls."}
    ]
    # A turn that has ended: the daemon sends its outcome again, on its request connection,
    # where it may overtake the answer; it is reported after the answer all the same.
    assert d.requests.send(_outcome(first)) == []
    assert len(d.reports) == 2
    d.stream.send(_invoked(first, duplicate=True))
    assert [type(r).__name__ for r in d.reports] == ["Invoked", "InvokeOutcome"] * 2
    assert d.reports[2] == Invoked(first, True, "queued", "", 3, f"st3:direct:game:{first}", True)
    assert describe(d.reports[2]) == (
        "Storyteller #3 already took invocation inv-b007-1; nothing new was queued."
    )
    assert d.reports[3] == d.reports[1]
    assert d.desk.new_id() == "inv-b007-2"  # a given id does not move the counter


def test_a_refusal_ends_the_invocation_and_names_its_reason() -> None:
    d = Desk()
    d.stream.hello()
    request_id = d.invoke("Harbour Watch", "Hello.")
    refused = _invoked(request_id, accepted=False, reason="paused",
                       message="storyteller is paused", turn_key=None)  # fmt: skip
    assert d.stream.send(refused) == []
    assert d.stream.send(_outcome(request_id)) == []  # nothing waits for it any more
    [report] = d.reports
    assert (report.accepted, report.reason) == (False, "paused")  # type: ignore[union-attr]
    assert describe(report) == "Invocation inv-b007-1 refused (paused): storyteller is paused"
    assert d.desk.waiting == []


def test_no_answer_in_time_or_a_closed_connection_is_a_refusal_an_accepted_one_waits_on() -> None:
    d = Desk()
    d.stream.hello()
    late, cut, accepted = (d.invoke(3, f"Call {n}.") for n in range(3))
    d.stream.send(_invoked(accepted))
    d.timers[0].fn()
    d.stream.session.closed()
    assert [(r.id, r.reason) for r in d.reports] == [  # type: ignore[union-attr]
        (accepted, "queued"),
        (late, NO_ANSWER),
        (cut, NO_ANSWER),
    ]
    assert "ask again with id inv-b007-2" in d.reports[2].message
    d.requests.hello()
    d.requests.send(_outcome(accepted))  # the accepted one's outcome still finds it
    assert d.reports[-1].id == accepted and d.desk.waiting == []

    # An answer lost while the outcome came: the outcome says the turn ran.
    lost = d.invoke(3, "Call 3.")
    d.requests.send(_outcome(lost))
    d.timers[-1].fn()
    assert d.reports[-1] == InvokeOutcome(
        lost, f"st3:direct:game:{lost}", "completed", "", 5812,
        (("EchoToRoom", True), ("Noop", True)),
    )  # fmt: skip
    assert d.desk.waiting == []


def test_bad_invocation_frames_are_bad_frames_and_a_failing_callback_is_contained(
    caplog: pytest.LogCaptureFixture,
) -> None:
    d = Desk()
    d.stream.hello()
    request_id = d.desk.invoke(3, "Hello.", callback=lambda report: 1 / 0)  # type: ignore[func-returns-value]
    for frame, error in [
        (_invoked(request_id, accepted="yes"), "'accepted' and 'duplicate' must be booleans."),
        (_invoked(request_id, storyteller_id="3"), "'storyteller_id' must be an integer or null."),
        (_outcome(request_id, tool_calls=[{"name": "Noop"}]), "'tool_calls' must be an array"),
        ({"type": "invoke_outcome", "id": request_id}, "'turn_key' must be a string."),
    ]:
        [answer] = d.stream.send(frame)
        assert (answer["code"], answer["id"]) == ("bad_frame", request_id)
        assert error in answer["message"]
    assert d.stream.send(_invoked(request_id)) == []
    assert "an invocation callback failed" in caplog.text
    assert d.desk.waiting == [request_id]  # accepted: its outcome is still awaited


def test_a_session_without_a_desk_ignores_invocation_frames(h: Harness) -> None:
    h.hello()
    assert h.send(_invoked("inv-x-1")) == [] and h.send(_outcome("inv-x-1")) == []


def test_only_the_newest_accepted_invocations_wait_for_their_outcome() -> None:
    sent: list[dict[str, Any]] = []
    desk = InvocationDesk(boot="b", send=lambda f: sent.append(f) or "via",
                          call_later=lambda s, fn: Timer(s, fn), keep=2)  # fmt: skip
    ids = [desk.invoke(3, f"Call {n}.") for n in range(3)]
    for request_id in ids:
        desk.answered(_invoked(request_id))
    assert desk.waiting == ids[1:]


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (("", 3, "x"), "request_id must be 1-64 characters."),
        (("i", 0, "x"), "storyteller must be a positive id or a name."),
        (("i", "  ", "x"), "storyteller must be an id or a name of 1-200 characters."),
        (("i", True, "x"), "storyteller must be an id or a name of 1-200 characters."),
        (("i", 3, "x" * 4001), "text must be a string of at most 4000 characters."),
        (("i", 3, "x", "1001"), "character must be a positive id, a game object or None."),
        (("i", 3, "x", None, -2), "room must be a positive id, a game object or None."),
    ],
)
def test_invoke_fields_are_checked_before_anything_is_sent(
    args: tuple[Any, ...], error: str
) -> None:
    with pytest.raises(ValueError, match=f"^{re.escape(error)}$"):
        invoke_frame(*args)


def test_the_ais_invoke_words_name_a_storyteller_and_a_text() -> None:
    assert invocation_words(["invoke", "3", "The", "bells", "ring."]) == (3, "The bells ring.")
    assert invocation_words(["invoke", "Harbour Watch", "Ring."]) == ("Harbour Watch", "Ring.")
    with pytest.raises(ValueError, match="Usage: ais invoke <storyteller> <text>"):
        invocation_words(["invoke", "3"])
    outcome = InvokeOutcome("i", "k", "not_run", "storyteller was paused")
    assert describe(outcome) == "Invocation i ended: not_run - storyteller was paused."
