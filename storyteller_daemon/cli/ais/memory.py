"""``storyteller ais memory …``: a storyteller's notes about one character. Admins can list and
inspect them, forget one (deleting it) and read every change made to one (its edit history).
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
    table,
)
from storyteller_daemon.cli.views.storytellers import (
    HISTORY_COLUMNS,
    HISTORY_WIDE,
    MEMORY_COLUMNS,
    edit_json,
    edit_row,
    memory_json,
    memory_row,
)
from storyteller_daemon.errors import ValidationError

memories = command_group(
    "A storyteller's character memories: list, show, forget, history. Alias: memories."
)

Ref = Annotated[str, typer.Argument(metavar="REF", help="Storyteller id or name.")]
ItemId = Annotated[str, typer.Argument(metavar="ID")]


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
    listing(
        found,
        as_json=json_out,
        data=memory_json,
        title=f"Memories of {st.name}",
        columns=MEMORY_COLUMNS,
        row=memory_row,
    )


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
