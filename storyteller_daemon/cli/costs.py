"""``storyteller costs``: what the model requests cost, from the cost ledger.

Every model request (attention, turn, digest, replay) is one ledger row with its tokens and USD,
answered or not (a failed request's row says how it failed and what it may be billed),
attributed to a storyteller, a trigger kind, a room and, when a tool of the turn touched one, a
situation. This command sums them by one of those, over a time window.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any

import typer

from storyteller_daemon.cli.support import JsonFlag, open_store, print_json, run_async, say, table
from storyteller_daemon.cli.views.runs import (
    Since,
    StorytellerOption,
    Until,
    storyteller_filter,
    usd,
)
from storyteller_daemon.cli.views.runs import time_window as window


class Grouping(StrEnum):
    """What ``--by`` sums over."""

    DAY = "day"
    STORYTELLER = "storyteller"
    TRIGGER = "trigger"
    SITUATION = "situation"
    ROOM = "room"
    MODEL = "model"
    PURPOSE = "purpose"
    STATUS = "status"


COLUMNS = ("Requests", "Failed", "Input", "Cached", "Output", "Reasoning", "Cost")


def _line_json(line: Any) -> dict[str, Any]:
    return {
        "key": line.key,
        "label": line.label,
        "requests": line.requests,
        "failed": line.failed,
        "input_tokens": line.input_tokens,
        "cached_tokens": line.cached_tokens,
        "output_tokens": line.output_tokens,
        "reasoning_tokens": line.reasoning_tokens,
        "cost_usd": line.cost_usd,
    }


@run_async
async def costs(
    ctx: typer.Context,
    by: Annotated[Grouping, typer.Option("--by", "-b", help="What to sum over.")] = Grouping.DAY,
    since: Since = None,
    until: Until = None,
    storyteller: StorytellerOption = None,
    json_out: JsonFlag = False,
) -> None:
    """Tokens and USD of model requests, summed by day, storyteller, trigger, situation or
    status (failed requests included, with what they may be billed)."""

    storyteller_id, storyteller_name = storyteller_filter(storyteller)
    async with open_store(ctx) as store:
        start, end = window(since, until, store.clock.now())
        lines = await store.ledger.totals(
            by.value,
            since=start,
            until=end,
            storyteller_id=storyteller_id,
            storyteller_name=storyteller_name,
        )
    total = {
        "requests": sum(line.requests for line in lines),
        "failed": sum(line.failed for line in lines),
        "input_tokens": sum(line.input_tokens for line in lines),
        "cached_tokens": sum(line.cached_tokens for line in lines),
        "output_tokens": sum(line.output_tokens for line in lines),
        "reasoning_tokens": sum(line.reasoning_tokens for line in lines),
        "cost_usd": sum(line.cost_usd for line in lines),
    }
    if json_out:
        print_json({"by": by.value, "lines": [_line_json(line) for line in lines], "total": total})
        return
    rows = [
        (
            line.label,
            line.requests,
            line.failed,
            line.input_tokens,
            line.cached_tokens,
            line.output_tokens,
            line.reasoning_tokens,
            usd(line.cost_usd),
        )
        for line in lines
    ]
    table(f"Costs by {by.value}", (by.value.capitalize(), *COLUMNS), rows, wide={"Situation"})
    if lines:
        failed = f" ({total['failed']} without an answer)" if total["failed"] else ""
        say(
            f"Total: {total['requests']} request(s){failed}, {total['input_tokens']} input "
            f"({total['cached_tokens']} cached) and {total['output_tokens']} output "
            f"({total['reasoning_tokens']} reasoning) tokens, {usd(total['cost_usd'])}"
        )
