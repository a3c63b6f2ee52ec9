"""Story plan tools: the storyteller makes a plan, and marks, replans or abandons it.

Named *story* plans to keep them apart from `plans`, FutureMUD's ``RecentCharacterPlans`` and
``CharacterPlans``, which read what players say their characters intend.

A plan is an action menu, not a way around the policy: every step must name a tool this
storyteller may call on its heartbeat turns (`ToolContext.plannable`: the full profile's
built-ins, its valid custom tools, its granted MCP tools), checked when the plan is made and
when it is replanned; the daemon never runs a step itself. When a step comes due, the turn's
prompt says so and the model makes the call, through the policy like any other; the turn runner
then marks the step done or failed by what that call returned (`agent.director`).
"""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

from progs.scalars import is_id
from storyteller_daemon.agent.ports import StoryPlanStore
from storyteller_daemon.agent.tools.arguments import (
    optional_id,
    optional_int,
    optional_text,
    required_id,
    required_text,
)
from storyteller_daemon.agent.tools.base import Tool, from_players, iso
from storyteller_daemon.agent.tools.context import ToolContext
from storyteller_daemon.domain.argument_limits import (
    GOAL_CHARS,
    INTENT_CHARS,
    PLAN_REASON_CHARS,
    STEP_ARGUMENTS_CHARS,
    WORD_CHARS,
)
from storyteller_daemon.domain.story_plans import (
    EVENT_KINDS,
    MAX_STEPS,
    PlanStep,
    StoryPlan,
    WaitFor,
)
from storyteller_daemon.errors import ToolError, ValidationError

DEFAULT_EXPIRY_HOURS = 24
MAX_EXPIRY_HOURS = 168
ACTIONS = ("step_done", "step_failed", "replan", "abandon")

_WAIT_FOR = {
    "type": "object",
    "description": "Wait for an event meeting every field given before the step is due (null: "
    "due at the next heartbeat).",
    "properties": {
        "Kind": {"type": "string", "enum": list(EVENT_KINDS), "description": "Event kind."},
        "RoomId": {"type": "integer", "description": "The room it happens in."},
        "CharacterId": {"type": "integer", "description": "A character it involves."},
        "Words": {"type": "string", "description": "Words its text contains."},
    },
    "required": [],
}
_STEP = {
    "type": "object",
    "properties": {
        "Tool": {"type": "string", "description": "The tool the step will call."},
        "Intent": {"type": "string", "description": "What the step means to achieve."},
        "Arguments": {
            "type": "string",
            "description": "The arguments in mind as a JSON object's text (null: decide then).",
        },
        "WaitFor": _WAIT_FOR,
    },
    "required": ["Tool", "Intent"],
}
_STEPS = {
    "type": "array",
    "items": _STEP,
    "description": f"The steps in order, 1 to {MAX_STEPS}, one per heartbeat.",
}
_STEP_LIMITS = {
    "Steps[].Tool": WORD_CHARS,
    "Steps[].Intent": INTENT_CHARS,
    "Steps[].Arguments": STEP_ARGUMENTS_CHARS,
    "Steps[].WaitFor.Kind": WORD_CHARS,
    "Steps[].WaitFor.Words": WORD_CHARS,
}
_EXPIRY = {
    "type": "integer",
    "description": f"Hours until the plan lapses (1-{MAX_EXPIRY_HOURS}; null: "
    f"{DEFAULT_EXPIRY_HOURS}).",
}


def _store(ctx: ToolContext) -> StoryPlanStore:
    if ctx.services.plans is None:
        raise ToolError("Story plans are not kept by this daemon.")
    return ctx.services.plans


def _wait_for(value: Any, where: str) -> WaitFor | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise ToolError(f"{where} WaitFor must be an object or null.")
    room_id, character_id = optional_id(value, "RoomId"), optional_id(value, "CharacterId")
    for key, number in (("RoomId", room_id), ("CharacterId", character_id)):
        if number is not None and not is_id(number):
            raise ToolError(f"{where} WaitFor {key} must be a positive id, not {number}.")
    try:
        return WaitFor(
            kind=optional_text(value, "Kind"),
            room_id=room_id,
            character_id=character_id,
            words=optional_text(value, "Words"),
        )
    except ValidationError as exc:
        raise ToolError(f"{where}: {exc}") from None


def parse_steps(arguments: dict[str, Any], ctx: ToolContext) -> tuple[PlanStep, ...]:
    """The plan's steps, each naming a tool this storyteller may use.

    Raises:
        ToolError: missing or malformed steps, or a tool the storyteller may not call.
    """
    raw = arguments.get("Steps")
    if not isinstance(raw, list) or not raw:
        raise ToolError("Missing required property 'Steps' (a list of 1 or more steps).")
    if len(raw) > MAX_STEPS:
        raise ToolError(f"A plan may have at most {MAX_STEPS} steps.")
    allowed = {name.lower(): name for name in ctx.plannable}
    steps: list[PlanStep] = []
    for number, entry in enumerate(raw, start=1):
        where = f"Step {number}"
        if not isinstance(entry, dict):
            raise ToolError(f"{where} must be an object.")
        tool = required_text(entry, "Tool").strip()
        proper = allowed.get(tool.lower())
        if proper is None:
            raise ToolError(
                f"{where} names '{tool}', which this storyteller may not call; a plan's steps "
                "may only use its own tools."
            )
        arguments_text = entry.get("Arguments")
        if isinstance(arguments_text, dict):
            arguments_text = json.dumps(arguments_text, ensure_ascii=False, sort_keys=True)
        try:
            steps.append(
                PlanStep(
                    tool=proper,
                    intent=required_text(entry, "Intent"),
                    arguments=arguments_text if isinstance(arguments_text, str) else None,
                    wait_for=_wait_for(entry.get("WaitFor"), where),
                )
            )
        except ValidationError as exc:
            raise ToolError(f"{where}: {exc}") from None
    return tuple(steps)


def _expiry(arguments: dict[str, Any], default: int | None) -> timedelta | None:
    hours = optional_int(arguments, "ExpiresInHours")
    if hours is None:
        return None if default is None else timedelta(hours=default)
    if not 1 <= hours <= MAX_EXPIRY_HOURS:
        raise ToolError(f"ExpiresInHours must be 1-{MAX_EXPIRY_HOURS}.")
    return timedelta(hours=hours)


def summary(plan: StoryPlan) -> dict[str, Any]:
    """The payload of both tools."""
    due = plan.due_index
    entry = {
        "Id": plan.id,
        "Goal": plan.goal,
        "Status": plan.status.value,
        "DueStep": None if due is None else due + 1,
        "Steps": [
            {"Step": n, "Tool": s.tool, "Intent": s.intent, "State": s.state.value}
            for n, s in enumerate(plan.steps, start=1)
        ],
        "ExpiresAt": iso(plan.expires_at),
    }
    return from_players(entry, plan.from_player)


async def create_story_plan(arguments: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    """CreateStoryPlan."""
    goal = required_text(arguments, "Goal")
    steps = parse_steps(arguments, ctx)
    expires_in = _expiry(arguments, DEFAULT_EXPIRY_HOURS)
    assert expires_in is not None
    plan = await _store(ctx).create(
        ctx.storyteller_id,
        goal,
        steps,
        expires_in=expires_in,
        run=ctx.turn_key,
        from_player=ctx.taint.seen,
    )
    return summary(plan)


async def update_story_plan(arguments: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    """UpdateStoryPlan."""
    plan_id = required_id(arguments, "Id")
    action = required_text(arguments, "Action").strip().lower()
    reason = optional_text(arguments, "Reason") or ""
    store, sid, run = _store(ctx), ctx.storyteller_id, ctx.turn_key
    if action == "step_done":
        plan = await store.step_done(sid, plan_id, note=reason, run=run)
    elif action == "step_failed":
        plan = await store.step_failed(sid, plan_id, reason=reason, run=run)
    elif action == "replan":
        plan = await store.replan(
            sid,
            plan_id,
            parse_steps(arguments, ctx),
            reason=reason,
            run=run,
            goal=optional_text(arguments, "Goal"),
            expires_in=_expiry(arguments, None),
        )
    elif action == "abandon":
        plan = await store.abandon(sid, plan_id, reason=reason, run=run)
    else:
        raise ToolError(f"Action must be one of {', '.join(ACTIONS)}, not '{action}'.")
    return summary(plan)


_OWN_WORDS = {"*": "refuse"}
"""A plan is what the director will do in its own voice: none of its texts (goal, steps and
their arguments, reasons) may copy players' words, so acting on a plan never repeats them."""

TOOLS: tuple[Tool, ...] = (
    Tool.define(
        "CreateStoryPlan",
        "Makes a plan for the coming heartbeats: a goal and ordered steps, each naming one of "
        "your tools and what it should achieve, optionally waiting for an event. One step comes "
        "due per heartbeat (or when its event happens); your prompt will say which.",
        create_story_plan,
        {
            "Goal": {"type": "string", "description": "What the plan is for."},
            "Steps": _STEPS,
            "ExpiresInHours": _EXPIRY,
        },  # fmt: skip
        required=("Goal", "Steps"),
        writes=True,
        limits={"Goal": GOAL_CHARS, **_STEP_LIMITS},
        dictation=_OWN_WORDS,
        own_words=True,
    ),
    Tool.define(
        "UpdateStoryPlan",
        "Changes a plan: step_done or step_failed for its due step (a due step's own tool call "
        "marks it already), replan (new steps in place of the pending ones; say why), or "
        "abandon (say why).",
        update_story_plan,
        {
            "Id": {"type": "integer", "description": "The plan's id."},
            "Action": {"type": "string", "enum": list(ACTIONS)},
            "Reason": {"type": "string", "description": "Why (kept with the plan's history)."},
            "Steps": {**_STEPS, "description": "For replan: the new pending steps."},
            "Goal": {"type": "string", "description": "For replan: a new goal (null: keep)."},
            "ExpiresInHours": _EXPIRY,
        },
        required=("Id", "Action"),
        writes=True,
        limits={
            "Action": WORD_CHARS,
            "Reason": PLAN_REASON_CHARS,
            "Goal": GOAL_CHARS,
            **_STEP_LIMITS,
        },
        dictation=_OWN_WORDS,
        own_words=True,
    ),
)
