"""``storyteller ais situation …``: a storyteller's situations, open narrative threads (resolved
by the model, never deleted). Admins can list and inspect them and re-scope one.
"""

from __future__ import annotations

from typing import Annotated

import typer

from storyteller_daemon.cli.support import (
    JsonFlag,
    command_group,
    format_time,
    listing,
    open_store,
    parse_id,
    print_json,
    register,
    run_async,
    say,
    yes_no,
)
from storyteller_daemon.cli.views.storytellers import (
    SITUATION_COLUMNS,
    situation_json,
    situation_row,
)
from storyteller_daemon.errors import ValidationError

situations = command_group(
    "A storyteller's situations: list, show, change scope. Alias: situations."
)

Ref = Annotated[str, typer.Argument(metavar="REF", help="Storyteller id or name.")]
ItemId = Annotated[str, typer.Argument(metavar="ID")]

_UNIVERSAL = {"none", "universal", "global"}
_CHARACTER = {"character", "char"}
_ROOM = {"room", "cell"}


@register(situations, "list")
@run_async
async def list_situations(
    ctx: typer.Context,
    ref: Ref,
    open_only: Annotated[bool, typer.Option("--open", help="Hide resolved situations.")] = False,
    json_out: JsonFlag = False,
) -> None:
    """Situations of a storyteller, unresolved first, then oldest first."""
    async with open_store(ctx) as store:
        st = await store.storytellers.get(ref)
        assert st.id is not None
        found = await store.situations.list(st.id, include_resolved=not open_only)
    listing(
        found,
        as_json=json_out,
        data=situation_json,
        title=f"Situations of {st.name}",
        columns=SITUATION_COLUMNS,
        row=situation_row,
    )


@register(situations, "show")
@run_async
async def show_situation(
    ctx: typer.Context, ref: Ref, situation: ItemId, json_out: JsonFlag = False
) -> None:
    """One situation with its full text."""
    ident = parse_id(situation, "situation")
    async with open_store(ctx) as store:
        st = await store.storytellers.get(ref)
        assert st.id is not None
        s = await store.situations.get(st.id, ident)
    if json_out:
        print_json(situation_json(s))
        return
    say(f"Situation #{s.id}: {s.title}")
    say(f"Storyteller: {st.name} (#{st.id})")
    say(f"Scope: {s.scope_label}")
    say(f"Resolved: {yes_no(s.resolved)}")
    say(f"Created: {format_time(s.created_on)}")
    say(s.text)


def _parse_scope(kind: str, target: str | None) -> tuple[int | None, int | None]:
    """(character id, room id) for ``none|universal|global``, ``character N`` or ``room N``."""
    word = kind.strip().lower()
    if word in _UNIVERSAL:
        if target is not None:
            raise ValidationError(f"Scope '{kind}' takes no id.")
        return None, None
    if word not in _CHARACTER | _ROOM:
        raise ValidationError(f"'{kind}' is not a scope; use none, character N or room N.")
    label = "character" if word in _CHARACTER else "room"
    if target is None:
        raise ValidationError(f"Give the {label} id: scope {label} N.")
    ident = parse_id(target, label)
    return (ident, None) if label == "character" else (None, ident)


@register(situations, "scope")
@run_async
async def scope_situation(
    ctx: typer.Context,
    ref: Ref,
    situation: ItemId,
    kind: Annotated[str, typer.Argument(metavar="SCOPE", help="none, character or room.")],
    target: Annotated[str | None, typer.Argument(metavar="N", help="Character or room id.")] = None,
) -> None:
    """Scope a situation to one character or one room, or make it universal again."""
    ident = parse_id(situation, "situation")
    character_id, room_id = _parse_scope(kind, target)
    async with open_store(ctx) as store:
        st = await store.storytellers.get(ref)
        assert st.id is not None
        current = await store.situations.get(st.id, ident)
        if (current.character_id, current.room_id) == (character_id, room_id):
            raise ValidationError(f"Situation #{ident} already has scope {current.scope_label}.")
        changed = await store.situations.set_scope(st.id, ident, character_id, room_id)
    say(f"Situation #{ident} of {st.name} now has scope {changed.scope_label}.")
