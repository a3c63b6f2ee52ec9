"""Invocations: a storyteller's turn asked for directly or over the bridge, answered, reported.

Direct invocation (`Invocations.invoke`, FutureMUD's ``InvokeStorytellerAttention``) finds a
storyteller by id or name in the routing table and queues its turn. `Invocations` also answers
each ``invoke`` the game sends through `invoke` (the same admission
as every direct invocation: pause, model, blank text, queue, budget, kill switch) with the
game's request id in the work item's source, ``direct:game:<id>``. The backlog's one item per
storyteller and source makes the request id an idempotency key: an id already accepted is
answered from the stored item (``duplicate``) and never queued again. Once an accepted
invocation's turn has ended, its outcome — how the turn ended, the run record's id and the tool
calls it made — is sent to the game; an invocation whose outcome the game missed (a broken
connection, a daemon restart) is reported again when the game sends its id again. In a
cluster, an invocation for a storyteller another daemon runs is answered by that daemon
(`forwarder`), which also sends its outcome.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from storyteller_daemon.agent.records import TurnOutcome
from storyteller_daemon.domain.storytellers import Storyteller
from storyteller_daemon.domain.work import WorkItem, WorkState
from storyteller_daemon.errors import StorageError
from storyteller_daemon.runtime.daemon.ports import Forward, TurnRuns
from storyteller_daemon.runtime.daemon.state import OpenInvocation, log
from storyteller_daemon.runtime.pipeline import Pipeline
from world_adapter.errors import WorldAdapterError
from world_adapter.invocations import (
    GameInvocation,
    InvocationAnswer,
    InvocationChannel,
    InvocationOutcome,
    RefusalCode,
    ToolCall,
)

GAME_SOURCE = "direct:game:"
"""The source prefix of a game's invocations in the backlog (the request id follows)."""

REFUSAL_CODES = {
    "not_running": RefusalCode.NOT_RUNNING,
    "intake": RefusalCode.NOT_RUNNING,
    "unknown": RefusalCode.UNKNOWN_STORYTELLER,
    "pause": RefusalCode.PAUSED,
    "api_key": RefusalCode.NO_MODEL,
    "text": RefusalCode.BLANK_TEXT,
    "queue": RefusalCode.QUEUE_FULL,
    "budget": RefusalCode.BUDGET,
    "kill_switch": RefusalCode.KILL_SWITCH,
}
"""The refusal code the game is told for each stage that can refuse an invocation."""

TURN_OUTCOMES = frozenset({*(o.value for o in TurnOutcome), "crashed"})
"""How a turn that ran can end (the backlog's reason for a done or failed item)."""

NOT_RUN = "not_run"
"""The outcome of an accepted invocation whose turn a last check stopped before the model."""


@dataclass(frozen=True)
class InvocationResult:
    """The answer to a direct invocation.

    Attributes:
        accepted: True once the turn is queued (it runs later; the result does not wait).
        reason: why it was refused, or ``queued``.
        storyteller_id: the storyteller the reference named, when it named one.
        stage: what refused it: ``not_running``, ``unknown``, or a pipeline stage (``pause``,
            ``api_key``, ``text``, ``queue``, ``budget``, ``kill_switch``...); empty when
            accepted.
    """

    accepted: bool
    reason: str
    storyteller_id: int | None = None
    stage: str = ""


class Invocations:
    """Answers direct invocations and the game's, and sends each accepted one's outcome.

    Args:
        pipeline: where the invocations' turns are stored, and whose routing table names the
            storytellers.
        ready: set while the daemon runs (invocations are refused otherwise).
        channel: the world's channel for the game's invocations (None: the world sends none).
        turn_runs: where an invocation's run record is read for its outcome (None: nowhere).
        forwarder: in a cluster, the answer of the daemon holding a storyteller this one does
            not run (None when no storyteller has the name or id; `cluster.forwarding`).
    """

    def __init__(
        self,
        *,
        pipeline: Pipeline,
        ready: asyncio.Event,
        channel: InvocationChannel | None,
        turn_runs: TurnRuns | None,
        forwarder: Forward | None = None,
    ) -> None:
        self._pipeline = pipeline
        self._forwarder = forwarder
        self._ready = ready
        self._channel = channel
        self._turn_runs = turn_runs
        self._open: dict[str, OpenInvocation] = {}
        """Turn key → an accepted invocation waiting for its outcome to be sent."""
        self._ended_turns: asyncio.Queue[str] = asyncio.Queue()
        """Turn keys of open invocations whose turns ended (one per invocation at most)."""

    def find_storyteller(self, ref: str | int) -> Storyteller | None:
        """A storyteller by id, or by name ignoring case (a text of digits is an id)."""
        if isinstance(ref, bool):  # a bool is an int to Python, but never an id
            return None
        text = str(ref).strip()
        if isinstance(ref, int) or text.isdigit():
            return self._pipeline.router.storyteller(int(text))
        wanted = text.casefold()
        return next(
            (s for s in self._pipeline.router.storytellers if s.name.casefold() == wanted), None
        )

    async def invoke(
        self,
        storyteller_ref: str | int,
        text: str,
        *,
        source: str | None = None,
        character_id: int | None = None,
        room_id: int | None = None,
    ) -> InvocationResult:
        """Store a direct-invocation turn for a storyteller, with the game's text.

        Args:
            storyteller_ref: the storyteller's id, or its name in any case.
            text: what the game wants the storyteller to attend to (trimmed).
            source: the work item's source, for an invocation with the game's request id
                (the same source is stored once); default: a new one.
            character_id: the character it concerns, if any.
            room_id: the room it concerns, if any.

        Returns:
            Accepted once the turn is queued. Refused, with the reason and the stage, when the
            daemon is not running, the storyteller is unknown or paused, the text is blank, no
            model is configured, the storyteller's queue is full, its budget is spent or the
            kill switch is on.
        """
        if not self._ready.is_set():
            return InvocationResult(False, "the daemon is not running", stage="not_running")
        storyteller = self.find_storyteller(storyteller_ref)
        if storyteller is None:
            return InvocationResult(False, f"no storyteller '{storyteller_ref}'", stage="unknown")
        refusal = await self._pipeline.submit_direct(
            storyteller, text, source=source, character_id=character_id, room_id=room_id
        )
        if refusal is not None:
            return InvocationResult(False, refusal.reason, storyteller.id, refusal.stage)
        return InvocationResult(True, "queued", storyteller.id)

    async def answer_invocation(self, invocation: GameInvocation) -> InvocationAnswer:
        """Answer the game's invocation here, or, in a cluster, have the daemon that runs its
        storyteller answer it."""
        forwarder = self._forwarder
        if forwarder is not None and self.find_storyteller(invocation.storyteller) is None:
            forwarded = await forwarder.forward(invocation)
            if forwarded is not None:
                return forwarded
        return await self.answer_here(invocation)

    async def answer_here(self, invocation: GameInvocation) -> InvocationAnswer:
        """Store the invocation's turn (or find it stored under its request id) and answer."""
        source = GAME_SOURCE + invocation.id
        storyteller = self.find_storyteller(invocation.storyteller)
        watching = None
        if storyteller is not None and storyteller.id is not None and self._ready.is_set():
            stored = await self._pipeline.stored_work(storyteller.id, source)
            if stored is not None:
                return await self._duplicate(invocation, stored)
            # Watched before it is stored: its turn may end before `invoke` returns.
            watching = f"st{storyteller.id}:{source}"  # as the turn lane names it
            self._open[watching] = OpenInvocation(invocation.id, storyteller.id, source)
        result = await self.invoke(
            invocation.storyteller,
            invocation.text,
            source=source,
            character_id=invocation.character_id,
            room_id=invocation.room_id,
        )
        if watching is not None and (not result.accepted or result.storyteller_id is None):
            self._open.pop(watching, None)
        if not result.accepted or result.storyteller_id is None:
            return self._refusal(invocation, result)
        turn_key = f"st{result.storyteller_id}:{source}"
        self._open.setdefault(
            turn_key, OpenInvocation(invocation.id, result.storyteller_id, source)
        )
        log.info(
            "the game invoked storyteller #%s (request %s): queued as turn %s",
            result.storyteller_id,
            invocation.id,
            turn_key,
        )
        return InvocationAnswer(
            invocation.id,
            accepted=True,
            reason="queued",
            storyteller_id=result.storyteller_id,
            turn_key=turn_key,
        )

    async def _duplicate(self, invocation: GameInvocation, stored: WorkItem) -> InvocationAnswer:
        turn_key = stored.turn_key or f"st{stored.storyteller_id}:{stored.source}"
        self._open[turn_key] = OpenInvocation(invocation.id, stored.storyteller_id, stored.source)
        if stored.state.final:  # the outcome is known: send it again after the answer
            self._ended_turns.put_nowait(turn_key)
        return InvocationAnswer(
            invocation.id,
            accepted=True,
            reason="queued",
            message=f"request {invocation.id} was accepted before; its turn is {stored.state}",
            storyteller_id=stored.storyteller_id,
            turn_key=turn_key,
            duplicate=True,
        )

    @staticmethod
    def _refusal(invocation: GameInvocation, result: InvocationResult) -> InvocationAnswer:
        code = REFUSAL_CODES.get(result.stage)
        if code is None:  # a stage with no code of its own: say it in the message
            log.warning("invocation refused at an unexpected stage %r", result.stage)
        return InvocationAnswer(
            invocation.id,
            accepted=False,
            reason=(code or RefusalCode.NOT_RUNNING).value,
            message=result.reason,
            storyteller_id=result.storyteller_id,
        )

    def _invocation_turn_ended(self, turn_key: str) -> None:
        if turn_key in self._open:
            self._ended_turns.put_nowait(turn_key)

    async def send_outcomes(self) -> None:
        """Send each ended invocation's outcome to the game, while running."""
        assert self._channel is not None
        while True:
            turn_key = await self._ended_turns.get()
            waiting = self._open.pop(turn_key, None)
            if waiting is None:
                continue
            try:
                outcome = await self._outcome(turn_key, waiting)
                if outcome is None:  # not ended after all (a duplicate raced the turn's end)
                    self._open[turn_key] = waiting
                    continue
                await self._channel.send_outcome(outcome)
            except (WorldAdapterError, StorageError) as exc:
                log.warning(
                    "could not tell the game the outcome of request %s (%s); it gets it "
                    "when it sends the same request again",
                    waiting.request_id,
                    exc,
                )
            except Exception:  # a bug must not stop the daemon: the game can ask again
                log.exception("reporting the outcome of request %s failed", waiting.request_id)

    async def _outcome(self, turn_key: str, waiting: OpenInvocation) -> InvocationOutcome | None:
        item = await self._pipeline.stored_work(waiting.storyteller_id, waiting.source)
        if item is None or not item.state.final:
            return None
        run = await self._turn_runs.turn_run(turn_key) if self._turn_runs is not None else None
        turn = (run.record.get("turn") if run is not None else None) or {}
        calls = tuple(
            ToolCall(str(call["name"]), bool((call.get("envelope") or {}).get("ok")))
            for call in turn.get("calls", [])
        )
        reason = item.reason or ""
        if item.state not in (WorkState.DONE, WorkState.FAILED):
            outcome, message = NOT_RUN, reason or item.state.value
        elif reason in TURN_OUTCOMES:
            outcome, message = reason, ""
        else:  # given up without an outcome of its own (interrupted too often)
            outcome, message = item.state.value, reason
        return InvocationOutcome(
            waiting.request_id,
            turn_key=turn_key,
            outcome=outcome,
            message=message,
            run_id=run.summary.id if run is not None else None,
            tool_calls=calls,
        )

    async def serve_forwarded(self) -> None:
        """Answer the invocations other daemons of a cluster forward here, until cancelled."""
        if self._forwarder is not None:
            await self._forwarder.serve(self.answer_here)

    def serve(self) -> bool:
        """Start taking the game's invocations; False when the world carries none."""
        if self._channel is None:
            return False
        self._channel.serve_invocations(self.answer_invocation)
        if self._invocation_turn_ended not in self._pipeline.turn_listeners:
            self._pipeline.turn_listeners.append(self._invocation_turn_ended)
        return True
