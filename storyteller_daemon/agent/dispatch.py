"""One tool call of a turn, from the model's arguments to the envelope the model gets back.

Malformed argument JSON (blank, too long or too deeply nested for the ``[limits]``, checked
before it is parsed) is an error the loop counts; a tool the turn does not offer is refused
(naming the destructive rule when the policy withholds it); a call identical to one already
dispatched in the turn is skipped. The call then passes the policy point: a shadowed call gets a
simulated success, a refused one the rule's error, and one that needs approval is parked. Only
then does the tool run; a prog call that ran is counted for the turn and reported to the policy.
Calls are logged under the tool loop's logger.

A call an earlier attempt of the turn ran (its result kept in the turn journal) is answered
from there before anything else, policy included; a call to a tool that writes the
storyteller's notes keeps its result in the journal in one transaction with its writes, and
every other call's result is kept once it has run (see `loop`).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field

from storyteller_daemon.agent.dictation import CallVoice
from storyteller_daemon.agent.models.interface import FunctionCall, ResponseItem
from storyteller_daemon.agent.policy import Policy
from storyteller_daemon.agent.policy_rules import APPROVAL, DESTRUCTIVE_RULE, NOT_OFFERED, Decision
from storyteller_daemon.agent.records import CallRecord, TurnRecord
from storyteller_daemon.agent.tools.arguments import MalformedArguments, parse_arguments
from storyteller_daemon.agent.tools.base import (
    MALFORMED_PREFIX,
    Tool,
    canonical_arguments,
    error,
    idempotency_key,
    invoke,
    ok,
    texts_from_players,
)
from storyteller_daemon.agent.tools.context import ToolContext
from storyteller_daemon.agent.tools.registry import Toolset
from storyteller_daemon.agent.trigger import Trigger
from storyteller_daemon.config import LimitsConfig
from storyteller_daemon.domain.approvals import Approval, ApprovalState
from storyteller_daemon.domain.storytellers import Storyteller

log = logging.getLogger("storyteller_daemon.agent.loop")

SKIPPED_ERROR = "skipped: already done in this turn"
SHADOW_RESULT = {
    "simulated": True,
    "message": "Shadow mode: the call was recorded but not run; the game did not change.",
}


def parked_result(approval: Approval) -> dict[str, object]:
    """What the model sees for a call parked for approval (or found parked before)."""
    return {
        "awaiting_approval": approval.state is ApprovalState.PENDING,
        "approval": approval.id,
        "state": approval.state.value,
        "message": (
            "The call waits for an admin's approval and runs only if approved before "
            f"{approval.expires_at:%H:%M} UTC; the game has not changed yet. Do not call it again."
            if approval.state is ApprovalState.PENDING
            else f"This call was parked for approval before and is now {approval.state.value}."
        ),
    }


@dataclass
class TurnState:
    """The mutable state of one running turn."""

    storyteller: Storyteller
    trigger: Trigger
    ctx: ToolContext
    tools: Toolset
    instructions: str
    record: TurnRecord
    items: list[ResponseItem]
    seen_call: bool = False
    missing_retries: int = 0
    malformed_retries: int = 0
    dispatched: set[tuple[str, str]] = field(default_factory=set)
    acted: bool = False
    """Whether an earlier round ran a tool other than Noop successfully."""
    prog_calls: int = 0
    """Prog calls that ran (or were simulated in shadow mode) in this turn."""
    kept: dict[str, str] = field(default_factory=dict)
    """What an earlier attempt of this turn kept in the journal, by entry name."""
    limits: LimitsConfig = field(default_factory=LimitsConfig)
    """The turn's limits; a call's argument text is held to its size and depth bounds."""


async def note(turn: TurnState, entry: str, body: str) -> None:
    """Keep an entry in the turn's journal; a failure is logged and the turn goes on."""
    journal = turn.ctx.services.journal
    if journal is None:
        return
    try:
        await journal.note(turn.ctx.turn_key, entry, body)
    except Exception as exc:
        log.warning("turn %s: %s could not be journalled: %s", turn.ctx.turn_key, entry, exc)


def _read(turn: TurnState, tool: Tool | None, envelope: dict[str, object]) -> None:
    """Keep the players' words a call's result brought into the turn: everything an outside
    tool (MCP) answered, and the stored entries marked as written from players."""
    result = envelope.get("result")
    if tool is not None and tool.own_words:
        return
    if tool is not None and tool.outside:
        turn.ctx.taint.hear(texts_from_players(result, marked=True))
    else:
        turn.ctx.taint.note(texts_from_players(result))


async def run_call(
    turn: TurnState, call: FunctionCall, policy: Policy | None, position: int = 1
) -> CallRecord:
    """Run one call of the turn's current round and return its record.

    Args:
        turn: the running turn; its repeat set and prog-call count are updated.
        call: the model's call (with a call id).
        policy: the policy point every call passes (None: no limits beyond the offered tools).
        position: the call's place in its round (1 for the first), which names its journal
            entry.
    """
    entry = f"call:{turn.record.rounds}:{position}"
    kept = turn.kept.get(entry)
    if kept is not None:
        return _replayed(turn, call, json.loads(kept))
    outcome, journalled = await _run_call(turn, call, policy, entry)
    if not journalled:
        await note(turn, entry, json.dumps(outcome.envelope, ensure_ascii=False))
    return outcome


def _call_record(
    turn: TurnState,
    call: FunctionCall,
    envelope: dict[str, object],
    rule: str | None = None,
    **flags: bool,
) -> CallRecord:
    return CallRecord(
        turn.record.rounds, call.call_id, call.name, call.arguments, envelope, rule=rule, **flags
    )


def _replayed(turn: TurnState, call: FunctionCall, envelope: dict[str, object]) -> CallRecord:
    """The record of a call an earlier attempt of the turn ran: its kept result, nothing run."""
    tool = turn.tools.find(call.name)
    try:
        arguments = parse_arguments(
            call.arguments,
            max_chars=turn.limits.max_argument_chars,
            max_depth=turn.limits.max_argument_depth,
        )
        turn.dispatched.add((call.name, canonical_arguments(arguments)))
    except MalformedArguments:
        pass
    if tool is not None and tool.effect is not None and envelope.get("ok"):
        turn.prog_calls += 1
    _read(turn, tool, envelope)
    return _call_record(turn, call, envelope, replayed=True)


async def _run_call(
    turn: TurnState, call: FunctionCall, policy: Policy | None, entry: str
) -> tuple[CallRecord, bool]:
    """Run the call; the record, and whether its result is in the journal already (kept with
    its writes, or by an earlier attempt)."""
    record = await _dispatch(turn, call, policy, entry)
    return record, record.replayed or _journalled(turn, call, record)


def _journalled(turn: TurnState, call: FunctionCall, record: CallRecord) -> bool:
    """Whether `_dispatch` ran the call through `TurnJournal.once` (a tool that writes notes,
    past the policy: neither refused, skipped, shadowed nor parked)."""
    tool = turn.tools.find(call.name)
    passed = not (record.malformed or record.refused or record.skipped)
    passed = passed and not (record.shadowed or record.parked)
    return tool is not None and tool.writes and turn.ctx.services.journal is not None and passed


async def _dispatch(
    turn: TurnState, call: FunctionCall, policy: Policy | None, entry: str
) -> CallRecord:
    def record(envelope: dict[str, object], rule: str | None = None, **flags: bool) -> CallRecord:
        return _call_record(turn, call, envelope, rule, **flags)

    try:
        arguments = parse_arguments(
            call.arguments,
            max_chars=turn.limits.max_argument_chars,
            max_depth=turn.limits.max_argument_depth,
        )
    except MalformedArguments as exc:
        return record(error(MALFORMED_PREFIX + str(exc)), malformed=True)
    tool = turn.tools.find(call.name)
    if tool is None:
        rule = DESTRUCTIVE_RULE if turn.tools.withholds(call.name) else NOT_OFFERED
        return record(error(turn.tools.refusal(call.name)), refused=True, rule=rule)
    key = (tool.name, canonical_arguments(arguments))
    if key in turn.dispatched:
        return record(error(SKIPPED_ERROR), skipped=True)
    turn.dispatched.add(key)
    effect = tool.effect(arguments) if tool.effect is not None else None
    if policy is not None:
        decision = await policy.check_call(
            turn.storyteller,
            turn.trigger,
            tool.name,
            arguments,
            effect=effect,
            names=tool.names(arguments) if tool.names is not None else None,
            world=turn.ctx.services.world,
            calls_this_turn=turn.prog_calls,
            voice=CallVoice(
                heard=tuple(turn.ctx.taint.heard),
                noted=tuple(turn.ctx.taint.noted),
                from_player=turn.ctx.taint.seen,
                modes=tool.dictation,
                properties=tool.parameters.get("properties") or {},
                stores=tool.writes,
            ),
        )
        if decision.shadow:
            turn.prog_calls += 1
            return record(ok(SHADOW_RESULT), shadowed=True, rule=decision.rule)
        if not decision.allowed:
            return record(error(decision.message()), refused=True, rule=decision.rule)
        if effect is not None and policy.needs_approval(turn.storyteller, tool.name):
            parked = await policy.park(
                turn.storyteller,
                turn.trigger,
                tool.name,
                canonical_arguments(arguments),
                key=idempotency_key(turn.ctx.turn_key, tool.name, arguments),
                turn_key=turn.ctx.turn_key,
                effect=effect,
            )
            if isinstance(parked, Decision):
                return record(error(parked.message()), refused=True, rule=parked.rule)
            turn.prog_calls += 1
            return record(ok(parked_result(parked)), rule=APPROVAL, parked=True)
    journal = turn.ctx.services.journal
    if tool.writes and journal is not None:

        async def write() -> str:
            return json.dumps(await invoke(tool, arguments, turn.ctx), ensure_ascii=False)

        body, before = await journal.once(turn.ctx.turn_key, entry, write)
        envelope = json.loads(body)
        if before:
            _read(turn, tool, envelope)
            return record(envelope, replayed=True)
    else:
        envelope = await invoke(tool, arguments, turn.ctx)
    _read(turn, tool, envelope)
    if effect is not None and envelope["ok"]:
        turn.prog_calls += 1
        if policy is not None:
            await policy.ran(turn.storyteller, tool.name, effect, turn.trigger)
    log.debug(
        "storyteller %s called %s: %s",
        turn.storyteller.id,
        tool.name,
        "ok" if envelope["ok"] else "error",
    )
    return record(envelope)
