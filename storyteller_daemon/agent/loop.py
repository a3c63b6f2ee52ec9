"""The tool loop: one storyteller turn as a series of stateless Responses-API requests.

The rules follow FutureMUD's storyteller loop, with its known bugs fixed:

* the input starts as the user prompt; every request resends the instructions, the turn's tools,
  ``parallel_tool_calls: true``, ``max_output_tokens`` and the model and reasoning effort of the
  trigger's scope (heartbeats use the time scope for both);
* ``tool_choice`` is ``required`` until a response has called a tool, then ``auto``;
* after a response with calls, its continuation items are appended, then one
  ``function_call_output`` per call, in call order; calls run one after another;
* before the first call, a response without calls earns a corrective message, at most
  ``missing_call_retries`` times; after it, a response without calls ends the turn;
* a batch with malformed argument JSON earns a corrective message, at most
  ``malformed_json_retries`` batches in a row (a clean batch resets the count);
* a batch of only Noop calls ends the turn; so does ``max_rounds``; so does the wall-clock
  budget ``turn_seconds``, checked before each round and bounding each request;
* beyond FutureMUD, a batch that ends with Noop after acts (progs, writing built-ins) that all
  succeeded ends the turn too (`_signed_off`): the model said in the same response that it had
  nothing more to do, so the round FutureMUD would ask only to hear Noop again is not asked.
  A batch with a look-up, or with a failed, refused or malformed call, goes on, so the model
  reads what it asked for or what went wrong;
* the model's free text is recorded, never acted on.

Beyond FutureMUD, a call identical to one already dispatched in this turn (same tool, same
canonical arguments) is not run again: it gets the error envelope
``{"ok": false, "error": "skipped: already done in this turn"}``, an error so the model does not
read it as a second success. A round in which every call was skipped ends the turn, since the
model is only repeating itself. Calls to tools not offered in this turn are refused.

How one call is run (repeat check, policy point, approval parking) is `dispatch`.

With a turn journal (`TurnServices.journal`) each answer is kept as it comes and each call's
result with it (a call that writes notes keeps it in the same transaction as its writes). A turn
run again under its key after a crash takes the answers and results kept before from the
journal, so it asks the model nothing twice and writes nothing twice; it goes on from where the
first attempt stopped.
"""

from __future__ import annotations

import hashlib
import json
import logging
import uuid
from collections.abc import Sequence
from dataclasses import replace

from storyteller_daemon.agent.dispatch import TurnState, note, run_call
from storyteller_daemon.agent.models.interface import (
    FunctionCall,
    Model,
    ModelRequest,
    ModelResponse,
    ResponseItem,
    api_body,
    response_from_json,
    response_to_json,
)
from storyteller_daemon.agent.policy import Policy
from storyteller_daemon.agent.policy_rules import DESTRUCTIVE_TOOLS
from storyteller_daemon.agent.prompts import tool_loop_instructions, user_message
from storyteller_daemon.agent.records import (
    CallRecord,
    RequestRecord,
    TurnOutcome,
    TurnRecord,
    response_summary,
)
from storyteller_daemon.agent.tools.base import dump_envelope
from storyteller_daemon.agent.tools.context import ToolContext
from storyteller_daemon.agent.tools.mcp import mcp_listings
from storyteller_daemon.agent.tools.registry import (
    Toolset,
    is_noop,
    plannable_tools,
    toolset,
    with_catalogue,
)
from storyteller_daemon.agent.trigger import Trigger
from storyteller_daemon.clock import Clock, DeadlinePassed, within
from storyteller_daemon.config import LimitsConfig
from storyteller_daemon.domain.mcp import PREFIX as MCP_PREFIX
from storyteller_daemon.domain.storytellers import Storyteller
from storyteller_daemon.domain.tool_names import READ_ONLY_TOOLS
from storyteller_daemon.errors import BudgetExceeded, ModelFatalError, ModelTransientError

log = logging.getLogger(__name__)

MISSING_CALL_FEEDBACK = (
    "You must respond with at least one tool call. If no world change is needed, call Noop."
)
_LOOKUPS = frozenset(name.lower() for name in READ_ONLY_TOOLS)
"""The built-ins that only read, lower-cased (names match case-insensitively)."""
MALFORMED_FEEDBACK = (
    "One or more tool calls used malformed JSON. Retry with valid JSON arguments that exactly "
    "match the declared tool schemas."
)


class ToolLoop:
    """Runs storyteller turns against a `Model`.

    Args:
        model: the endpoint.
        limits: rounds, time, retries and output-token bounds.
        clock: times the turn (its monotonic seconds) and cuts a request off at the turn's
            time budget (its sleep); injected so tests control time.
        policy: the policy point every call passes before it runs (None: no limits beyond
            the offered tools).
    """

    def __init__(
        self,
        model: Model,
        limits: LimitsConfig,
        clock: Clock,
        *,
        policy: Policy | None = None,
    ) -> None:
        self._model = model
        self._limits = limits
        self._clock = clock
        self._policy = policy

    async def run(
        self,
        storyteller: Storyteller,
        trigger: Trigger,
        user_prompt: str,
        ctx: ToolContext,
        *,
        turn_key: str,
        offered: Toolset | None = None,
    ) -> TurnRecord:
        """Run one turn and return its record; model failures end the turn, never raise.

        Args:
            storyteller: whose turn it is (must have an id).
            trigger: why the turn runs; decides profile, echo tools and scope.
            user_prompt: the prompt for the trigger (see `agent.prompts`).
            ctx: the tools' services; bound to this turn here.
            turn_key: a stable key of this turn; prog calls derive idempotency keys from it.
            offered: the turn's tools, when the caller has read them already (`offered`, for
                the prompt's budget); by default they are read here.

        Raises:
            ValueError: the storyteller has no id, or the turn key is blank.
        """
        started = self._clock.monotonic()
        ctx = await with_catalogue(ctx.for_turn(storyteller, turn_key, trigger))
        if storyteller.direction.plans:
            ctx = replace(ctx, plannable=plannable_tools(storyteller, ctx))
        assert storyteller.id is not None  # checked by for_turn
        turn = TurnState(
            storyteller=storyteller,
            trigger=trigger,
            ctx=ctx,
            tools=offered or await self.offered(storyteller, trigger, ctx),
            instructions=tool_loop_instructions(storyteller, trigger),
            record=TurnRecord(turn_key, storyteller.id, trigger.label),
            items=[user_message(user_prompt)],
            kept=await _kept(ctx, turn_key),
            limits=self._limits,
        )
        try:
            turn.record.outcome = await self._drive(turn, started)
        except ModelTransientError as exc:
            turn.record.outcome = TurnOutcome.MODEL_TRANSIENT_ERROR
            turn.record.error = f"{type(exc).__name__}: {exc}"
        except ModelFatalError as exc:
            turn.record.outcome = TurnOutcome.MODEL_FATAL_ERROR
            turn.record.error = f"{type(exc).__name__}: {exc}"
        except BudgetExceeded as exc:
            turn.record.outcome = TurnOutcome.BUDGET_EXCEEDED
            turn.record.error = f"{type(exc).__name__}: {exc}"
        finally:
            turn.record.duration_seconds = self._clock.monotonic() - started
        log.info(
            "storyteller %s turn %s (%s) ended: %s after %d round(s), %d call(s)",
            storyteller.id,
            turn_key,
            trigger.label,
            turn.record.outcome.value,
            turn.record.rounds,
            len(turn.record.calls),
        )
        return turn.record

    async def offered(
        self, storyteller: Storyteller, trigger: Trigger, ctx: ToolContext
    ) -> Toolset:
        """The tools a turn for `trigger` offers (`ctx.progs` loaded, see `with_catalogue`),
        with what the storyteller's MCP servers list."""
        return toolset(
            storyteller,
            trigger,
            ctx,
            withheld=self._withheld(storyteller, trigger),
            mcp=await mcp_listings(ctx, storyteller),
        )

    def _withheld(self, storyteller: Storyteller, trigger: Trigger) -> frozenset[str]:
        if self._policy is None or self._policy.offers_destructive(storyteller, trigger):
            return frozenset()
        return DESTRUCTIVE_TOOLS

    async def _drive(self, turn: TurnState, started: float) -> TurnOutcome:
        limits = self._limits
        while True:
            if turn.record.rounds >= limits.max_rounds:
                return TurnOutcome.ROUND_BUDGET
            remaining = limits.turn_seconds - (self._clock.monotonic() - started)
            if remaining <= 0:
                return TurnOutcome.TIME_BUDGET
            request = self._request(turn)
            response = await self._send(turn, request, remaining)
            if response is None:
                return TurnOutcome.TIME_BUDGET
            if not response.function_calls:
                if turn.seen_call:
                    return TurnOutcome.COMPLETED
                turn.missing_retries += 1
                if turn.missing_retries > limits.missing_call_retries:
                    return TurnOutcome.NO_TOOL_CALL
                turn.items.append(user_message(MISSING_CALL_FEEDBACK))
                continue
            turn.seen_call = True
            turn.missing_retries = 0
            calls = await self._run_batch(turn, response)
            if any(c.malformed for c in calls):
                turn.malformed_retries += 1
                if turn.malformed_retries > limits.malformed_json_retries:
                    return TurnOutcome.MALFORMED_BUDGET
                turn.items.append(user_message(MALFORMED_FEEDBACK))
            else:
                turn.malformed_retries = 0
            if all(is_noop(c.name) for c in calls):
                # A Noop after real work closes a turn that acted; Noop alone means "nothing".
                return TurnOutcome.COMPLETED if turn.acted else TurnOutcome.NOOP
            turn.acted = turn.acted or any(
                c.envelope.get("ok") and not c.skipped and not is_noop(c.name) for c in calls
            )
            if all(c.skipped for c in calls):
                return TurnOutcome.COMPLETED
            if _signed_off(calls):
                return TurnOutcome.COMPLETED

    def _request(self, turn: TurnState) -> ModelRequest:
        scope = turn.trigger.scope
        return ModelRequest(
            model=turn.storyteller.model_for(scope),
            input=list(turn.items),
            instructions=turn.instructions,
            tools=turn.tools.specs(),
            tool_choice="auto" if turn.seen_call else "required",
            parallel_tool_calls=True,
            reasoning_effort=turn.storyteller.effort_for(scope).value,
            max_output_tokens=self._limits.max_output_tokens,
            prompt_cache_key=cache_key(turn.storyteller, scope.value, request_prefix(turn)),
        )

    async def _send(
        self, turn: TurnState, request: ModelRequest, remaining: float
    ) -> ModelResponse | None:
        """Send one request within the remaining time; None when the time ran out."""
        turn.record.rounds += 1
        entry = RequestRecord(round=turn.record.rounds, request=api_body(request))
        turn.record.requests.append(entry)
        name = f"round:{turn.record.rounds}"
        kept = turn.kept.get(name)
        if kept is not None:  # an earlier attempt of the turn got this answer
            response = response_from_json(json.loads(kept))
            entry.replayed = True
            entry.response = response_summary(response)
            return response
        began = self._clock.monotonic()
        try:
            response = await within(self._clock.sleep, remaining, self._model.respond(request))
        except DeadlinePassed:
            entry.error = f"TimeoutError: no answer within the turn's remaining {remaining:.3g} s"
            return None
        except (ModelTransientError, ModelFatalError) as exc:
            entry.error = f"{type(exc).__name__}: {exc}"
            raise
        except BudgetExceeded:
            # The budget refused it before it was sent: not a round, and nothing was asked.
            turn.record.rounds -= 1
            turn.record.requests.remove(entry)
            raise
        finally:
            entry.duration_seconds = self._clock.monotonic() - began
        entry.response = response_summary(response)
        entry.usage = response.usage
        turn.record.usage = turn.record.usage + response.usage
        await note(turn, name, json.dumps(response_to_json(response), ensure_ascii=False))
        return response

    async def _run_batch(self, turn: TurnState, response: ModelResponse) -> list[CallRecord]:
        """Append the response's items, run its calls in order, append one output per call."""
        turn.items.extend(response.continuation)
        calls = _with_call_ids(response.function_calls)
        turn.items.extend(_missing_call_items(response.continuation, calls))
        records: list[CallRecord] = []
        for position, call in enumerate(calls, start=1):
            record = await run_call(turn, call, self._policy, position)
            records.append(record)
            turn.record.calls.append(record)
            turn.items.append(
                {
                    "type": "function_call_output",
                    "call_id": call.call_id,
                    "output": dump_envelope(record.envelope),
                }
            )
        return records


def request_prefix(turn: TurnState) -> str:
    """What every request of the turn starts with: its instructions and tool schemas."""
    tools = [spec.to_api() for spec in turn.tools.specs()]
    return turn.instructions + "\n" + json.dumps(tools, ensure_ascii=False, sort_keys=True)


def cache_key(storyteller: Storyteller, scope: str, prefix: str) -> str:
    """The ``prompt_cache_key`` of a turn's requests: one per storyteller and stable prefix.

    Instructions and tools come first and repeat across a storyteller's turns of one class
    (a room echo or speech, a crime, a state change, a heartbeat...), so the provider can serve
    them from its prompt cache. Turn classes differ in their tools (echo-only tools, the tools
    a player's words withhold, the full profile's look-ups), so each stable prefix gets a key
    of its own: requests routed together then share the longest prefix there is.
    """
    digest = hashlib.sha256(prefix.encode()).hexdigest()[:12]
    return f"storyteller-{storyteller.id}-{scope}-{digest}"


def _signed_off(calls: Sequence[CallRecord]) -> bool:
    """Whether a batch ends with Noop after acts that all succeeded (see the module notes).

    An act is a call that changes something: a custom tool (a prog) or a built-in that writes.
    A look-up (a read-only built-in, an MCP server's tool) is made to be read, so a batch
    holding one goes on to the next round whatever comes after it.
    """
    *acts, last = calls
    return (
        bool(acts)
        and is_noop(last.name)
        and all(
            c.envelope.get("ok") is True
            and not c.malformed
            and c.name.strip().lower() not in _LOOKUPS
            and not c.name.strip().lower().startswith(MCP_PREFIX)
            for c in acts
        )
    )


async def _kept(ctx: ToolContext, turn_key: str) -> dict[str, str]:
    """What an earlier attempt of the turn kept in the journal (nothing without one)."""
    if ctx.services.journal is None:
        return {}
    try:
        return await ctx.services.journal.entries(turn_key)
    except Exception as exc:  # a re-run without it still runs no prog twice (their keys)
        log.warning("the journal of turn %s could not be read: %s", turn_key, exc)
        return {}


def _with_call_ids(calls: Sequence[FunctionCall]) -> list[FunctionCall]:
    """The calls, each with a call id (one is made up where the model sent none)."""
    return [
        c if c.call_id else FunctionCall(f"call_{uuid.uuid4().hex}", c.name, c.arguments)
        for c in calls
    ]


def _missing_call_items(
    continuation: Sequence[ResponseItem], calls: Sequence[FunctionCall]
) -> list[ResponseItem]:
    """``function_call`` items for calls the continuation does not carry.

    Every ``function_call_output`` must follow the call it answers; a `Model` that reports calls
    without echoing them as items (or a call whose id had to be made up) still gets a valid
    history this way.
    """
    present = {item.get("call_id") for item in continuation if item.get("type") == "function_call"}
    return [
        {"type": "function_call", "call_id": c.call_id, "name": c.name, "arguments": c.arguments}
        for c in calls
        if c.call_id not in present
    ]
