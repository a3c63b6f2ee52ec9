"""A game's invocations of a storyteller, sans I/O: ``invoke`` out, ``invoked`` and
``invoke_outcome`` back (docs/bridge-protocol.md, "A game invokes a storyteller").

`InvocationDesk` keeps the invocations the game has sent, by id, and routes the daemon's answers
to each one's callback: first an `Invoked` (accepted or refused, at once), then, for an accepted
one, an `InvokeOutcome` once its turn has ended. The outcome may arrive on any daemon connection,
so there is one desk per Server process (`service` holds it) and every session hands it what it
receives.

Ids are ``inv-<boot>-<n>``: ``boot`` is chosen at random when the Server process starts, ``n``
counts up, so an id is never reused across reloads and restarts (the daemon treats a repeated id
as the same invocation). An outcome the daemon could not deliver (it restarted while the turn
waited) comes when the same id is sent again: `InvocationDesk.invoke` with ``request_id``; its
duplicate ``invoked`` answer then says so.

The engine glue supplies ``send(frame)`` (send on an open daemon connection; something naming
that connection, or None when none is open) and ``call_later(seconds, fn)``.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

log = logging.getLogger(__name__)

MAX_TEXT_CHARS = 4_000
MAX_NAME_CHARS = 200
ANSWER_SECONDS = 45.0
"""How long an invocation waits for the daemon's ``invoked`` answer."""
KEEP_WAITING = 1_000
"""Accepted invocations kept waiting for their outcome; the oldest is forgotten beyond this."""

NOT_CONNECTED = "not_connected"
"""A refusal of the game's own: no daemon connection was open."""
NO_ANSWER = "no_answer"
"""A refusal of the game's own: the daemon did not answer in time, or its connection closed."""


class Cancellable(Protocol):
    def cancel(self) -> None: ...


@dataclass(frozen=True)
class Invoked:
    """The daemon's answer (``invoked``), or the game's own refusal when none could come.

    ``reason`` is ``queued`` when accepted, else the daemon's refusal (``unknown_storyteller``,
    ``paused``, ``queue_full``, ``kill_switch``, ``budget``, ``blank_text``, ``no_model``,
    ``not_running``) or the game's own: `NOT_CONNECTED`, `NO_ANSWER`.
    """

    id: str
    accepted: bool
    reason: str
    message: str = ""
    storyteller_id: int | None = None
    turn_key: str | None = None
    duplicate: bool = False


@dataclass(frozen=True)
class InvokeOutcome:
    """How an accepted invocation's turn ended (``invoke_outcome``)."""

    id: str
    turn_key: str
    outcome: str
    message: str = ""
    run_id: int | None = None
    tool_calls: tuple[tuple[str, bool], ...] = ()


Report = Invoked | InvokeOutcome
InvocationCallback = Callable[[Report], None]
"""Called with the `Invoked` answer, then (when accepted) with the `InvokeOutcome`."""


class BadFrame(ValueError):
    """An ``invoked`` or ``invoke_outcome`` frame with a missing or mistyped field."""


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _optional_int(frame: dict[str, Any], name: str) -> int | None:
    value = frame.get(name)
    if value is not None and not _is_int(value):
        raise BadFrame(f"'{name}' must be an integer or null.")
    return value


def _optional_str(frame: dict[str, Any], name: str) -> str | None:
    value = frame.get(name)
    if value is not None and not isinstance(value, str):
        raise BadFrame(f"'{name}' must be a string or null.")
    return value


def _str(frame: dict[str, Any], name: str, default: str | None = None) -> str:
    value = frame.get(name, default)
    if not isinstance(value, str):
        raise BadFrame(f"'{name}' must be a string.")
    return value


def parse_invoked(frame: dict[str, Any]) -> Invoked:
    """An ``invoked`` frame as an `Invoked`.

    Raises:
        BadFrame: A field is missing or mistyped.
    """
    accepted, duplicate = frame.get("accepted"), frame.get("duplicate", False)
    if not isinstance(accepted, bool) or not isinstance(duplicate, bool):
        raise BadFrame("'accepted' and 'duplicate' must be booleans.")
    return Invoked(
        id=_str(frame, "id"),
        accepted=accepted,
        reason=_str(frame, "reason"),
        message=_str(frame, "message", ""),
        storyteller_id=_optional_int(frame, "storyteller_id"),
        turn_key=_optional_str(frame, "turn_key"),
        duplicate=duplicate,
    )


def parse_outcome(frame: dict[str, Any]) -> InvokeOutcome:
    """An ``invoke_outcome`` frame as an `InvokeOutcome`.

    Raises:
        BadFrame: A field is missing or mistyped.
    """
    calls = frame.get("tool_calls", [])
    if not isinstance(calls, list) or not all(
        isinstance(c, dict) and isinstance(c.get("name"), str) and isinstance(c.get("ok"), bool)
        for c in calls
    ):
        raise BadFrame("'tool_calls' must be an array of {name, ok}.")
    return InvokeOutcome(
        id=_str(frame, "id"),
        turn_key=_str(frame, "turn_key"),
        outcome=_str(frame, "outcome"),
        message=_str(frame, "message", ""),
        run_id=_optional_int(frame, "run_id"),
        tool_calls=tuple((c["name"], c["ok"]) for c in calls),
    )


def invoke_frame(
    request_id: Any,
    storyteller: Any,
    text: Any,
    character_id: Any = None,
    room_id: Any = None,
) -> dict[str, Any]:
    """The ``invoke`` frame, its fields checked first (they come from game scripts, unchecked).

    Raises:
        ValueError: One line naming the field that does not fit the protocol.
    """
    if not isinstance(request_id, str) or not 1 <= len(request_id) <= 64:
        raise ValueError("request_id must be 1-64 characters.")
    if _is_int(storyteller):
        if storyteller < 1:
            raise ValueError("storyteller must be a positive id or a name.")
    elif not isinstance(storyteller, str) or not 1 <= len(storyteller.strip()) <= MAX_NAME_CHARS:
        raise ValueError(f"storyteller must be an id or a name of 1-{MAX_NAME_CHARS} characters.")
    if not isinstance(text, str) or len(text) > MAX_TEXT_CHARS:
        raise ValueError(f"text must be a string of at most {MAX_TEXT_CHARS} characters.")
    for name, value in (("character", character_id), ("room", room_id)):
        if value is not None and (not _is_int(value) or value < 1):
            raise ValueError(f"{name} must be a positive id, a game object or None.")
    frame: dict[str, Any] = {"type": "invoke", "id": request_id, "storyteller": storyteller,
                             "text": text}  # fmt: skip
    if character_id is not None:
        frame["character_id"] = character_id
    if room_id is not None:
        frame["room_id"] = room_id
    return frame


@dataclass
class _Waiting:
    frame: dict[str, Any]
    callback: InvocationCallback | None
    via: object | None = None
    timer: Cancellable | None = None
    accepted: bool = False
    early: InvokeOutcome | None = None
    """An outcome that came before the answer (they travel on different connections)."""


class InvocationDesk:
    """The game's invocations waiting for the daemon, by id."""

    def __init__(
        self,
        *,
        boot: str,
        send: Callable[[dict[str, Any]], object | None],
        call_later: Callable[[float, Callable[[], None]], Cancellable],
        answer_seconds: float = ANSWER_SECONDS,
        keep: int = KEEP_WAITING,
    ) -> None:
        self._boot = boot
        self._send = send
        self._call_later = call_later
        self._answer_seconds = answer_seconds
        self._keep = keep
        self._count = 0
        self._waiting: OrderedDict[str, _Waiting] = OrderedDict()

    def new_id(self) -> str:
        """A request id unused by this game before: ``inv-<boot>-<n>``."""
        self._count += 1
        return f"inv-{self._boot}-{self._count}"

    @property
    def waiting(self) -> list[str]:
        """The ids still waiting for an answer or an outcome, oldest first."""
        return list(self._waiting)

    def invoke(
        self,
        storyteller: str | int,
        text: str,
        *,
        character_id: int | None = None,
        room_id: int | None = None,
        callback: InvocationCallback | None = None,
        request_id: str | None = None,
    ) -> str:
        """Send an ``invoke`` frame and return its id; `callback` hears the answer and outcome.

        Give an earlier `request_id` to ask again about the same invocation: the daemon answers
        it as a duplicate (running nothing twice) and sends its outcome again if its turn ended.

        Raises:
            ValueError: A field does not fit the protocol (see `invoke_frame`).
        """
        request_id = self.new_id() if request_id is None else request_id
        frame = invoke_frame(request_id, storyteller, text, character_id, room_id)
        earlier = self._waiting.pop(request_id, None)
        if earlier is not None and earlier.timer is not None:
            earlier.timer.cancel()
        waiting = _Waiting(frame, callback)
        self._waiting[request_id] = waiting
        self._dispatch(request_id, waiting)
        return request_id

    def _dispatch(self, request_id: str, waiting: _Waiting) -> None:
        waiting.via = self._send(waiting.frame)
        if waiting.via is None:
            self._refuse(request_id, NOT_CONNECTED, "The storyteller daemon is not connected.")
            return
        waiting.timer = self._call_later(self._answer_seconds, lambda: self._no_answer(request_id))

    def _no_answer(self, request_id: str) -> None:
        waiting = self._waiting.get(request_id)
        if waiting is not None and not waiting.accepted:
            waiting.timer = None
            self._refuse(
                request_id, NO_ANSWER,
                f"The storyteller daemon did not answer in time; ask again with id {request_id}.",
            )  # fmt: skip

    def _refuse(self, request_id: str, reason: str, message: str) -> None:
        waiting = self._waiting.pop(request_id)
        if waiting.early is not None:  # the answer was lost, but the turn ran: say how it ended
            self._report(waiting, waiting.early)
            return
        self._report(waiting, Invoked(request_id, accepted=False, reason=reason, message=message))

    def answered(self, frame: dict[str, Any]) -> None:
        """An ``invoked`` frame arrived; one for an id not waiting is ignored.

        Raises:
            BadFrame: A field is missing or mistyped.
        """
        answer = parse_invoked(frame)
        waiting = self._waiting.get(answer.id)
        if waiting is None or waiting.accepted:
            return  # unknown, or answered before
        if waiting.timer is not None:
            waiting.timer.cancel()
            waiting.timer = None
        if answer.accepted:
            waiting.accepted = True
            self._waiting.move_to_end(answer.id)
            accepted = [i for i, w in self._waiting.items() if w.accepted]
            for forgotten in accepted[: max(0, len(accepted) - self._keep)]:
                del self._waiting[forgotten]
                log.warning("forgot invocation %s: too many wait for their outcome", forgotten)
        if not answer.accepted or waiting.early is not None:
            self._waiting.pop(answer.id, None)
        self._report(waiting, answer)
        if answer.accepted and waiting.early is not None:
            self._report(waiting, waiting.early)

    def outcome_arrived(self, frame: dict[str, Any]) -> None:
        """An ``invoke_outcome`` frame arrived; one for an id not waiting is ignored.

        Raises:
            BadFrame: A field is missing or mistyped.
        """
        outcome = parse_outcome(frame)
        waiting = self._waiting.get(outcome.id)
        if waiting is None:
            return
        if not waiting.accepted:  # the outcome came first: report it after the answer
            waiting.early = outcome
            return
        del self._waiting[outcome.id]
        self._report(waiting, outcome)

    def connection_closed(self, via: object) -> None:
        """A daemon connection closed: invocations sent on it and not yet answered fail."""
        for request_id, waiting in list(self._waiting.items()):
            if waiting.via is via and not waiting.accepted:
                if waiting.timer is not None:
                    waiting.timer.cancel()
                self._refuse(
                    request_id, NO_ANSWER,
                    "The connection to the storyteller daemon closed before it answered; "
                    f"ask again with id {request_id}.",
                )  # fmt: skip

    def _report(self, waiting: _Waiting, report: Report) -> None:
        if waiting.callback is None:
            return
        try:
            waiting.callback(report)
        except Exception:
            log.exception("an invocation callback failed on %s", report)


def invocation_words(words: list[str]) -> tuple[str | int, str]:
    """``invoke REF TEXT...`` as the storyteller (an id when REF is a number) and the text.

    Raises:
        ValueError: The storyteller or the text is missing.
    """
    if len(words) < 3:
        raise ValueError("Usage: ais invoke <storyteller> <text>.")
    ref = words[1]
    return (int(ref) if ref.isdecimal() else ref), " ".join(words[2:])


def describe(report: Report) -> str:
    """One line for an admin: the answer or the outcome."""
    if isinstance(report, Invoked):
        if report.accepted:
            who = f"Storyteller #{report.storyteller_id}"
            if report.duplicate:
                return f"{who} already took invocation {report.id}; nothing new was queued."
            return f"{who} accepted invocation {report.id}: its turn is queued."
        why = f": {report.message}" if report.message else ""
        return f"Invocation {report.id} refused ({report.reason}){why}"
    calls = ", ".join(f"{name} {'ok' if ok else 'failed'}" for name, ok in report.tool_calls)
    parts = [
        f"run {report.run_id}" if report.run_id is not None else "",
        calls and f"tools: {calls}",
    ]
    detail = "; ".join(p for p in parts if p)
    why = f" - {report.message}" if report.message else ""
    return f"Invocation {report.id} ended: {report.outcome}{why}" + (
        f" ({detail})." if detail else "."
    )
