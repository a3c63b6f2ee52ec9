"""``storyteller ais set REF rule memory|forget``: the verdict memory, listed and cleared.

The verdict memory (`domain.verdict_memory`) keeps the texts the attention model ignored, so a
repeat within ``[attention] verdict_memory_hours`` is settled by rule without a model call.
``memory`` lists what holds now (made under the storyteller's current prompts, within the
horizon); ``forget`` clears entries, or all of them, so those texts are judged again. ``ais
show`` gives the count (`summary`).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Annotated, Any

import typer

from storyteller_daemon.cli.ais_io import parse_id, register, say, table
from storyteller_daemon.cli.ais_rules import app
from storyteller_daemon.cli.ais_set import selected
from storyteller_daemon.cli.common import JsonFlag, open_store, print_json, run_async, state
from storyteller_daemon.domain.settings import Storyteller
from storyteller_daemon.domain.verdict_memory import SettledVerdict, prompts_digest
from storyteller_daemon.errors import NotFoundError, ValidationError

COLUMNS = ("Id", "Kind", "Room class", "Text", "Item", "Hits", "Ignored at")


async def holding(store: Any, st: Storyteller, hours: float, now: datetime) -> list[SettledVerdict]:
    """The entries that settle events now: current prompts, within the horizon."""
    if hours <= 0 or st.id is None:
        return []
    prompts = prompts_digest(st.system_prompt, st.attention_prompt)
    entries = await store.verdicts.list(st.id, since=now - timedelta(hours=hours))
    return [e for e in entries if e.prompts == prompts]


def summary(entries: list[SettledVerdict], hours: float) -> dict[str, Any]:
    """What ``ais show`` says of the memory (its JSON ``verdict_memory``)."""
    return {
        "hours": hours,
        "texts": len(entries),
        "events_settled": sum(e.hits for e in entries),
    }


def summary_line(facts: dict[str, Any], ref: object) -> str:
    """One line for ``ais show`` (`ref` names the storyteller in the command it suggests)."""
    if not facts["hours"]:
        return "Verdict memory: off ([attention] verdict_memory_hours = 0)"
    return (
        f"Verdict memory: {facts['texts']} ignored texts settle repeats without a model call "
        f"({facts['events_settled']} events settled so far; horizon {facts['hours']:g} h; "
        f"`ais set {ref} rule memory` lists them)"
    )


def _json(entry: SettledVerdict) -> dict[str, Any]:
    return {
        "id": entry.id,
        "kind": entry.kind,
        "speaker_id": entry.speaker_id,
        "room_class": entry.room_class,
        "text": entry.text,
        "item_id": entry.item_id,
        "hits": entry.hits,
        "ignored_at": entry.ignored_at.isoformat(),
        "last_hit_at": entry.last_hit_at.isoformat() if entry.last_hit_at else None,
    }


@register(app, "memory", "settled")
@run_async
async def list_memory(ctx: typer.Context, json_out: JsonFlag = False) -> None:
    """List the ignored texts that settle repeats without a model call (the verdict memory)."""
    hours = state(ctx).config().attention.verdict_memory_hours
    async with open_store(ctx) as store:
        st = await store.storytellers.get(selected(ctx))
        entries = await holding(store, st, hours, store.clock.now())
    if json_out:
        print_json(
            {"storyteller": st.name, **summary(entries, hours)}
            | {"entries": [_json(e) for e in entries]}
        )
        return
    say(summary_line(summary(entries, hours), st.id))
    kind = {"room_echo": "echo", "speech": "speech"}
    rows = [
        (
            e.id,
            kind.get(e.kind, e.kind) + (f" by #{e.speaker_id}" if e.speaker_id else ""),
            e.room_class,
            e.text,
            e.item_id,
            e.hits,
            e.ignored_at.strftime("%Y-%m-%d %H:%M"),
        )
        for e in entries
    ]
    if rows:
        table(f"Verdict memory of {st.name}", COLUMNS, rows)


@register(app, "forget", "clear")
@run_async
async def forget(
    ctx: typer.Context,
    ids: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="ID", help="Entries to clear (ids from `rule memory`).", show_default=False
        ),
    ] = None,
    everything: Annotated[
        bool, typer.Option("--all", help="Clear every entry of the storyteller.")
    ] = False,
) -> None:
    """Clear verdict-memory entries, so those texts are judged by the model again."""
    if bool(ids) == everything:
        raise ValidationError("Give the ids of the entries to clear, or --all (not both).")
    wanted = None if everything else {parse_id(i, "verdict memory entry") for i in ids or []}
    async with open_store(ctx) as store:
        st = await store.storytellers.get(selected(ctx))
        assert st.id is not None
        if wanted is not None:
            held = {e.id for e in await store.verdicts.list(st.id, limit=1_000_000)}
            if missing := sorted(wanted - held):
                raise NotFoundError(
                    f"Storyteller {st.name} has no verdict-memory entry "
                    f"{', '.join(map(str, missing))}; `ais set {st.id} rule memory` lists them."
                )
        cleared = await store.verdicts.clear(st.id, wanted)
    say(f"Cleared {cleared} verdict-memory entries of {st.name}; those texts are judged again.")
