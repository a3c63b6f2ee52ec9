"""``storyteller ais situation …`` and ``storyteller ais memory …``: what a storyteller keeps.

Situations are open narrative threads (resolved by the model, never deleted); memories are notes
about one character (forgetting deletes them). Admins can inspect both, re-scope a situation,
forget a memory and read every change made to a memory (its edit history).
"""

from __future__ import annotations

from typing import Annotated

import typer

from storyteller_daemon.cli.ais_io import command_group, format_time, parse_id, register, say, table
from storyteller_daemon.cli.ais_view import (
    HISTORY_COLUMNS,
    HISTORY_WIDE,
    MEMORY_COLUMNS,
    SITUATION_COLUMNS,
    edit_json,
    edit_row,
    memory_json,
    memory_row,
    situation_json,
    situation_row,
)
from storyteller_daemon.cli.common import JsonFlag, open_store, print_json, run_async, yes_no
from storyteller_daemon.errors import ValidationError

situations = command_group(
    "A storyteller's situations: list, show, change scope. Alias: situations."
)
memories = command_group(
    "A storyteller's character memories: list, show, forget, history. Alias: memories."
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
    if json_out:
        print_json([situation_json(s) for s in found])
    else:
        table(f"Situations of {st.name}", SITUATION_COLUMNS, [situation_row(s) for s in found])


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


@register(memories, "list")
@run_async
async def list_memories(
    ctx: typer.Context,
    ref: Ref,
    character: Annotated[
        str | None, typer.Option("--character", metavar="N", help="Only about this character.")
    ] = None,
    json_out: JsonFlag = False,
) -> None:
    """Memories of a storyteller, oldest first."""
    who = parse_id(character, "character") if character is not None else None
    async with open_store(ctx) as store:
        st = await store.storytellers.get(ref)
        assert st.id is not None
        found = await store.memories.list(st.id, who)
    if json_out:
        print_json([memory_json(m) for m in found])
    else:
        table(f"Memories of {st.name}", MEMORY_COLUMNS, [memory_row(m) for m in found])


@register(memories, "show")
@run_async
async def show_memory(
    ctx: typer.Context, ref: Ref, memory: ItemId, json_out: JsonFlag = False
) -> None:
    """One memory with its full text."""
    ident = parse_id(memory, "memory")
    async with open_store(ctx) as store:
        st = await store.storytellers.get(ref)
        assert st.id is not None
        m = await store.memories.get(st.id, ident)
    if json_out:
        print_json(memory_json(m))
        return
    say(f"Memory #{m.id}: {m.title}")
    say(f"Storyteller: {st.name} (#{st.id})")
    say(f"Character: #{m.character_id}")
    say(f"Created: {format_time(m.created_on)}")
    say(m.text)


@register(memories, "forget")
@run_async
async def forget_memory(ctx: typer.Context, ref: Ref, memory: ItemId) -> None:
    """Delete a memory for good."""
    ident = parse_id(memory, "memory")
    async with open_store(ctx) as store:
        st = await store.storytellers.get(ref)
        assert st.id is not None
        gone = await store.memories.forget(st.id, ident)
    say(f"{st.name} forgot memory #{gone.id} ({gone.title}) about character #{gone.character_id}.")


@register(memories, "history")
@run_async
async def memory_history(
    ctx: typer.Context,
    ref: Ref,
    memory: Annotated[
        str | None, typer.Argument(metavar="ID", help="The memory (omit with --character).")
    ] = None,
    character: Annotated[
        str | None,
        typer.Option("--character", metavar="N", help="Every memory about this character."),
    ] = None,
    json_out: JsonFlag = False,
) -> None:
    """Every change to a memory, or to the memories about one character, oldest first.

    Forgotten and merged memories keep their history until the character is erased.
    """
    if (memory is None) == (character is None):
        raise ValidationError("Give a memory ID or --character N, not both.")
    memory_id = parse_id(memory, "memory") if memory is not None else None
    character_id = parse_id(character, "character") if character is not None else None
    async with open_store(ctx) as store:
        st = await store.storytellers.get(ref)
        assert st.id is not None
        edits = await store.memories.history(st.id, memory_id=memory_id, character_id=character_id)
    if json_out:
        print_json([edit_json(e) for e in edits])
        return
    about = f"memory #{memory_id}" if memory_id else f"memories about character #{character_id}"
    rows = [edit_row(e) for e in edits]
    table(f"History of {st.name}'s {about}", HISTORY_COLUMNS, rows, wide=HISTORY_WIDE)
