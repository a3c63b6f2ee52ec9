"""``storyteller ais plan …``: the story plans of storytellers that plan.

Storytellers that plan (``ais set REF direction plans on``) keep story plans: a goal, ordered
steps each naming a tool, an expiry, and a history of every change with its reason. ``plan
list`` lists them, ``plan show`` prints one with its history.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from storyteller_daemon.cli.support import (
    JsonFlag,
    command_group,
    format_time,
    open_store,
    print_json,
    register,
    run_async,
    say,
    table,
)

if TYPE_CHECKING:
    from storyteller_daemon.domain.story_plans import StoryPlan

plans = command_group("Story plans of storytellers that plan: list them, or show one.")


def plan_json(plan: StoryPlan) -> dict[str, Any]:
    """A plan with stable keys."""
    return {
        "id": plan.id,
        "storyteller_id": plan.storyteller_id,
        "goal": plan.goal,
        "status": plan.status.value,
        "due_step": None if plan.due_index is None else plan.due_index + 1,
        "steps": [
            {
                "tool": s.tool,
                "intent": s.intent,
                "arguments": s.parsed_arguments(),
                "wait_for": None
                if s.wait_for is None
                else {
                    "kind": s.wait_for.kind,
                    "room_id": s.wait_for.room_id,
                    "character_id": s.wait_for.character_id,
                    "words": s.wait_for.words,
                },
                "state": s.state.value,
                "note": s.note,
            }
            for s in plan.steps
        ],
        "expires_at": plan.expires_at.isoformat(),
        "created_on": plan.created_on.isoformat() if plan.created_on else None,
        "updated_on": plan.updated_on.isoformat() if plan.updated_on else None,
        "from_player": plan.from_player,
        "history": [
            {
                "at": e.at.isoformat(),
                "action": e.action,
                "step": e.step,
                "reason": e.reason,
                "run": e.run,
            }
            for e in plan.history
        ],  # fmt: skip
    }


@register(plans, "list")
@run_async
async def list_plans(
    ctx: typer.Context,
    ref: Annotated[
        str | None, typer.Argument(metavar="[REF]", help="Storyteller id or name (default: all).")
    ] = None,
    open_only: Annotated[
        bool, typer.Option("--open", help="Only plans still steering (active or to replan).")
    ] = False,
    json_out: JsonFlag = False,
) -> None:
    """List story plans, newest first."""
    async with open_store(ctx) as store:
        storyteller_id = None
        if ref is not None:
            storyteller_id = (await store.storytellers.get(ref)).id
        found = await store.plans.list(storyteller_id, include_closed=not open_only)
    if json_out:
        print_json([plan_json(p) for p in found])
        return
    if not found:
        say("No story plans.")
        return
    rows = [
        (
            p.id,
            p.storyteller_id,
            p.status.value,
            f"{sum(s.state.value == 'done' for s in p.steps)}/{len(p.steps)}",
            p.goal,
            format_time(p.expires_at),
        )
        for p in found
    ]
    table("Story plans", ("Id", "Storyteller", "Status", "Done", "Goal", "Lapses"), rows)


@register(plans, "show")
@run_async
async def show_plan(
    ctx: typer.Context,
    plan_id: Annotated[int, typer.Argument(metavar="ID", help="The plan's id.")],
    json_out: JsonFlag = False,
) -> None:
    """Show one plan: its steps and every change, each replan with its reason."""
    async with open_store(ctx) as store:
        plan = await store.plans.find(plan_id)
    if json_out:
        print_json(plan_json(plan))
        return
    say(f"Plan #{plan.id} of storyteller #{plan.storyteller_id}: {plan.goal}")
    say(f"Status: {plan.status.value}; lapses {format_time(plan.expires_at)}")
    for number, s in enumerate(plan.steps, start=1):
        wait = f" (waits for {s.wait_for.describe()})" if s.wait_for is not None else ""
        note = f" - {s.note}" if s.note else ""
        say(f"  {number}. [{s.state.value}] {s.tool}: {s.intent}{wait}{note}")
    say("History:")
    for e in plan.history:
        step = f" step {e.step}" if e.step is not None else ""
        reason = f": {e.reason}" if e.reason else ""
        say(f"  {format_time(e.at)} {e.action}{step}{reason}")
