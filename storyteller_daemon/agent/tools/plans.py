"""Plan tools: what characters say they intend, short term and long term.

A plan counts as recently updated for 90 days after it last changed. Unlike FutureMUD, whose
numbers came from the remaining time of a 14-day effect, the times here mean what their names
say: ``UpdatedAgo`` is the time since the plans last changed, by the world's clock, and
``WindowRemaining`` is 90 days minus that. Both are written as .NET ``c`` TimeSpans
(``2.03:04:05``), to the second.

`RecentCharacterPlans` lists online player characters only: a storyteller reacts to what players
announce, and NPC plans are written by builders. `CharacterPlans` reads anyone's plans.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from progs.results import format_timespan
from progs.scalars import is_id
from storyteller_daemon.agent.tools.arguments import required_id
from storyteller_daemon.agent.tools.base import Tool
from storyteller_daemon.agent.tools.context import ToolContext
from storyteller_daemon.errors import ToolError
from world_adapter.facts import CharacterPlan

WINDOW_DAYS = 90
WINDOW = timedelta(days=WINDOW_DAYS)


def _age(plan: CharacterPlan) -> timedelta | None:
    """The plan's age to the whole second, so that age and remaining window add up to 90 days."""
    if plan.updated_ago is None:
        return None
    return timedelta(seconds=int(plan.updated_ago.total_seconds()))


def _is_recent(plan: CharacterPlan) -> bool:
    age = _age(plan)
    return age is not None and age <= WINDOW


def _remaining(plan: CharacterPlan) -> timedelta:
    age = _age(plan)
    assert age is not None  # callers check _is_recent first
    return WINDOW - age


def _common(plan: CharacterPlan) -> dict[str, Any]:
    return {
        "Id": plan.character_id,
        "Name": plan.name,
        "ShortDescription": plan.short_description,
        "ShortTermPlan": plan.short_term,
        "LongTermPlan": plan.long_term,
    }


async def recent_character_plans(arguments: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    """RecentCharacterPlans: soonest to leave the window first."""
    plans = [p for p in await ctx.services.world.recent_plans(WINDOW) if _is_recent(p)]
    plans.sort(key=lambda p: (_remaining(p), p.character_id))
    return {
        "WindowDays": WINDOW_DAYS,
        "Plans": [
            {
                **_common(p),
                "UpdatedAgo": format_timespan(WINDOW - _remaining(p)),
                "WindowRemaining": format_timespan(_remaining(p)),
            }
            for p in plans
        ],
    }


async def character_plans(arguments: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    """CharacterPlans: ``UpdatedAgo`` whenever the plans ever changed, the window only if recent."""
    character_id = required_id(arguments, "Id")
    plan = await ctx.services.world.character_plan(character_id) if is_id(character_id) else None
    if plan is None:
        raise ToolError(f"No character with id {character_id} exists.")
    age = _age(plan)
    recent = _is_recent(plan)
    return {
        **_common(plan),
        "RecentlyUpdated": recent,
        "UpdatedAgo": None if age is None else format_timespan(age),
        "WindowRemaining": format_timespan(_remaining(plan)) if recent else None,
    }


TOOLS: tuple[Tool, ...] = (
    Tool.define(
        "RecentCharacterPlans",
        f"Lists the short- and long-term plans of online player characters who changed them in "
        f"the last {WINDOW_DAYS} days, those closest to leaving that window first.",
        recent_character_plans,
    ),
    Tool.define(
        "CharacterPlans",
        "Shows one character's short- and long-term plans and how long ago they changed.",
        character_plans,
        {"Id": {"type": "integer", "description": "The character's id."}},
        required=("Id",),
    ),
)
