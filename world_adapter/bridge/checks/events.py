"""``bridge check --events``: one event of each kind, and an invocation, caused and checked.

The checks share one subscription to every room the game reports, opened from now on. For
each kind the checker first asks the game's optional ``cause_event`` hook; a game without it
(``unknown_method``) leaves it to the operator, who is told what to do in the game. The event
must then arrive within the time allowed, parse as a valid frame (ids in range, fields typed),
be of the kind asked for, and come after the events before it. An ``invoke`` frame must parse
too; the checker answers it with ``invoked`` (``not_supported``) and an ``invoke_outcome``,
which the game must take without an ``error`` frame.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable, Callable

from world_adapter.bridge.checks.context import CheckContext
from world_adapter.bridge.messages import (
    CAUSE_EVENT,
    Error,
    ErrorCode,
    EventFrame,
    Frame,
    Ping,
    Pong,
    Request,
    Result,
)
from world_adapter.bridge.probe import CheckFailed, Closed, Probe
from world_adapter.events import Cursor
from world_adapter.invocations import (
    GameInvocation,
    InvocationAnswer,
    InvocationOutcome,
    RefusalCode,
)

OPERATOR_STEPS = {
    "room_echo": "make something every occupant of a room sees happen (an emote, an arrival)",
    "speech": "have a character say something in a room",
    "crime": "have a character commit a crime the game records",
    "state_change": "knock a character out, make one pass out, or kill one",
    "invoke": "run the game's command that invokes a storyteller (any storyteller, any text)",
}
"""What the operator is asked to do in the game for each kind, when the game has no hook."""

Tell = Callable[[str], None]


class EventChecks(CheckContext):
    """The checks of ``--events``: each event kind and an invocation, caused and checked."""

    _event_probe: Probe | None = None
    _held: deque[Frame | Closed]
    _hook: bool = True
    _last: Cursor | None = None
    _request_number = 0

    def event_check(self, kind: str, tell: Tell, seconds: float) -> Callable[[], Awaitable[str]]:
        """The check of one kind (``room_echo``... or ``invoke``)."""

        async def check() -> str:
            return await self._caused(kind, tell, seconds)

        return check

    async def close_events(self) -> None:
        """Close the shared subscription, if one was opened."""
        probe, self._event_probe = self._event_probe, None
        if probe is not None:
            await probe.ws.close()

    async def _stream(self) -> Probe:
        if self._event_probe is None:
            cells = await self._cells_or_skip()
            probe = await self._session_probe()
            await probe.subscribe(cells, None)
            self._event_probe, self._held = probe, deque()
        return self._event_probe

    async def _caused(self, kind: str, tell: Tell, seconds: float) -> str:
        probe = await self._stream()
        how = await self._cause(probe, kind, tell, seconds)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + seconds
        while (remaining := deadline - loop.time()) > 0:
            frame = await self._next(probe, remaining)
            if frame is None:
                break
            if isinstance(frame, EventFrame):
                event = frame.event
                self._in_order(event.cursor)
                if event.kind.value == kind:
                    return f"{kind} at {event.cursor} in room {event.cell_id} ({how})"
            elif isinstance(frame, GameInvocation) and kind == "invoke":
                await self._answer_invocation(probe, frame)
                return (
                    f"invoke {frame.id!r} for {frame.storyteller!r} answered without error ({how})"
                )
            elif isinstance(frame, Closed):
                raise CheckFailed(f"the game closed the subscription ({frame.code})")
        raise CheckFailed(f"no {kind} arrived within {seconds:g} s ({how})")

    async def _cause(self, probe: Probe, kind: str, tell: Tell, seconds: float) -> str:
        """Ask the game's hook for the event, else the operator; says which did."""
        if self._hook:
            self._request_number += 1
            request_id = f"cause-{self._request_number}"
            await probe.send(Request(request_id, CAUSE_EVENT, {"kind": kind}))
            answer = await self._answer_to(probe, request_id)
            if isinstance(answer, Result):
                return "caused by the game's cause_event hook"
            if answer.code is not ErrorCode.UNKNOWN_METHOD:
                raise CheckFailed(f"cause_event {kind} answered {answer.code}: {answer.message}")
            self._hook = False
        tell(f"In the game, within {seconds:g} s: {OPERATOR_STEPS[kind]}.")
        return "caused by the operator"

    async def _answer_to(self, probe: Probe, request_id: str) -> Result | Error:
        """The answer to a request; frames that come first are held for the event checks."""
        while True:
            frame = await probe.receive()
            if isinstance(frame, Result | Error) and frame.id == request_id:
                return frame
            if isinstance(frame, Ping):
                await probe.send(Pong(frame.nonce))
            else:
                self._held.append(frame)

    async def _next(self, probe: Probe, seconds: float) -> Frame | Closed | None:
        if self._held:
            return self._held.popleft()
        while True:
            try:
                frame = await probe.receive(seconds)
            except CheckFailed as exc:
                if "nothing arrived" in str(exc):
                    return None
                raise
            if not isinstance(frame, Ping):
                return frame
            await probe.send(Pong(frame.nonce))

    def _in_order(self, cursor: Cursor) -> None:
        last = self._last
        if last is not None and cursor.epoch == last.epoch and cursor.seq <= last.seq:
            raise CheckFailed(f"event {cursor} came after {last}: not in seq order")
        self._last = cursor

    async def _answer_invocation(self, probe: Probe, invocation: GameInvocation) -> None:
        await probe.send(
            InvocationAnswer(
                invocation.id,
                accepted=False,
                reason=RefusalCode.NOT_SUPPORTED.value,
                message="storyteller bridge check runs no turns",
            )
        )
        turn_key = f"st0:direct:game:{invocation.id}"
        await probe.send(InvocationOutcome(invocation.id, turn_key, "not_run", "a check"))
        await probe.send(Ping("after-invoke"))
        while True:
            frame = await self._next(probe, probe.seconds)
            if frame is None:
                raise CheckFailed("no pong after answering the invoke")
            if isinstance(frame, Pong):
                return
            if isinstance(frame, Error):
                raise CheckFailed(f"the game refused the invoke's answer: {frame.message}")
            if isinstance(frame, Closed):
                raise CheckFailed(f"the game closed after the invoke's answer ({frame.code})")
