"""``storyteller ais``: storytellers, after FutureMUD's ``ais`` admin command.

FutureMUD edits one storyteller at a time in the game; here every command names the storyteller
it works on (an id or a case-insensitive name). Delete and clone, missing in FutureMUD, exist.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Annotated

import typer

from storyteller_daemon.cli.ais import character, claim, digest, memory, plan, situation, xml
from storyteller_daemon.cli.ais import set as ais_set
from storyteller_daemon.cli.ais.set import budget, direction, inputs, mcp, provider, rule, tool
from storyteller_daemon.cli.support import (
    JsonFlag,
    acting_user,
    alias,
    check_new_name,
    command_group,
    listing,
    open_store,
    print_json,
    register,
    run_async,
    say,
    state,
)
from storyteller_daemon.cli.views import settled
from storyteller_daemon.cli.views.budget import budget_json, show_budget
from storyteller_daemon.cli.views.catalogue import load_catalogue
from storyteller_daemon.cli.views.documents import DOCUMENT_COLUMNS, document_json, document_row
from storyteller_daemon.cli.views.storytellers import (
    LIST_COLUMNS,
    list_row,
    show_policy,
    show_storyteller,
    storyteller_json,
    summary_json,
)
from storyteller_daemon.domain.storytellers import Storyteller
from storyteller_daemon.errors import ValidationError

app = command_group("Storytellers: list, create, show, configure, pause, delete, clone.")

Ref = Annotated[str, typer.Argument(metavar="REF", help="Storyteller id or name.")]
NewName = Annotated[list[str], typer.Argument(metavar="NAME", help="Unique name (ignoring case).")]


def filter_storytellers(storytellers: list[Storyteller], filters: list[str]) -> list[Storyteller]:
    """Apply ``ais list`` filters in order: ``N`` id, ``+kw`` / ``kw`` name has, ``-kw`` lacks."""
    for raw in filters:
        word = raw.strip()
        if word.isdigit():
            storytellers = [s for s in storytellers if s.id == int(word)]
        elif word.startswith("-") and len(word) > 1:
            key = word[1:].casefold()
            storytellers = [s for s in storytellers if key not in s.name.casefold()]
        else:
            key = word.removeprefix("+").casefold()
            storytellers = [s for s in storytellers if key in s.name.casefold()]
    return storytellers


@register(app, "list", lenient=True)
@run_async
async def list_storytellers(
    ctx: typer.Context,
    filters: Annotated[
        list[str] | None,
        typer.Argument(metavar="FILTER", help="An id, +word (name has), -word (name lacks), word."),
    ] = None,
    json_out: JsonFlag = False,
) -> None:
    """List storytellers, narrowed by filters applied in order."""
    async with open_store(ctx) as store:
        found = filter_storytellers(await store.storytellers.list(), filters or [])
    listing(
        found,
        as_json=json_out,
        data=summary_json,
        title="Storytellers",
        columns=LIST_COLUMNS,
        row=list_row,
    )


@register(app, "create", "new")
@run_async
async def create(ctx: typer.Context, name: NewName) -> None:
    """Create a storyteller with default settings; it starts paused."""
    clean = check_new_name(" ".join(name), "storyteller")
    async with open_store(ctx) as store:
        st = await store.storytellers.create(clean)
    say(f"Created storyteller #{st.id} ({st.name}); it starts paused.")


@register(app, "show", "view")
@run_async
async def show(ctx: typer.Context, ref: Ref, json_out: JsonFlag = False) -> None:
    """Show every setting of a storyteller, its custom tools and its situations."""
    async with open_store(ctx) as store:
        st = await store.storytellers.get(ref)
        assert st.id is not None
        situations = await store.situations.list(st.id)
        cfg = state(ctx).config()
        hours = cfg.attention.verdict_memory_hours
        verdicts = settled.summary(
            await settled.holding(store, st, hours, store.clock.now()), hours
        )
    catalogue = await load_catalogue(ctx)
    limits = cfg.policy.for_storyteller(
        st.name,
        [t.name for t in st.custom_tools],
        {t.name: t.dictated for t in st.custom_tools},
    )
    if json_out:
        print_json(
            storyteller_json(st, catalogue, situations)
            | {"policy": limits, "budget": budget_json(st, cfg.budgets), "verdict_memory": verdicts}
        )
    else:
        show_storyteller(st, catalogue, situations, settled=settled.summary_line(verdicts, st.id))
        show_budget(st, cfg.budgets)
        show_policy(limits)


@register(app, "delete")
@run_async
async def delete(
    ctx: typer.Context,
    ref: Ref,
    yes: Annotated[bool, typer.Option("--yes", help="Really delete.")] = False,
) -> None:
    """Delete a storyteller with its situations and memories (needs --yes)."""
    async with open_store(ctx) as store:
        st = await store.storytellers.get(ref)
        assert st.id is not None
        n_situations = len(await store.situations.list(st.id))
        n_memories = len(await store.memories.list(st.id))
        held = f"{n_situations} situation(s) and {n_memories} memory(ies)"
        if not yes:
            raise ValidationError(
                f"Storyteller #{st.id} ({st.name}) has {held}; add --yes to delete them all."
            )
        await store.storytellers.delete(st.id)
    say(f"Deleted storyteller #{st.id} ({st.name}) with its {held}.")


@register(app, "clone")
@run_async
async def clone(ctx: typer.Context, ref: Ref, name: NewName) -> None:
    """Copy a storyteller's settings (not situations or memories); the copy starts paused."""
    clean = check_new_name(" ".join(name), "storyteller")
    async with open_store(ctx) as store:
        source = await store.storytellers.get(ref)
        copy = await store.storytellers.clone(ref, clean)
    say(
        f"Cloned storyteller #{source.id} ({source.name}) as #{copy.id} ({copy.name}); "
        "it starts paused."
    )


async def _set_paused(ctx: typer.Context, ref: str, paused: bool) -> None:
    word = "paused" if paused else "unpaused"
    async with open_store(ctx) as store:
        st = await store.storytellers.get(ref)
        if st.paused == paused:
            raise ValidationError(f"Storyteller {st.name} is already {word}.")
        await store.storytellers.save(replace(st, paused=paused))
        action = "pause" if paused else "resume"
        await store.audit.add(acting_user(ctx), action, f"storyteller {st.id}", {})
    say(f"Storyteller {st.name} is now {word}.")


@register(app, "pause")
@run_async
async def pause(ctx: typer.Context, ref: Ref) -> None:
    """Stop a storyteller reacting to anything."""
    await _set_paused(ctx, ref, True)


@register(app, "unpause")
@run_async
async def unpause(ctx: typer.Context, ref: Ref) -> None:
    """Let a paused storyteller react again."""
    await _set_paused(ctx, ref, False)


@register(app, "refsearch", "reference", "references")
@run_async
async def refsearch(
    ctx: typer.Context,
    ref: Ref,
    query: Annotated[list[str] | None, typer.Argument(metavar="QUERY", show_default=False)] = None,
    json_out: JsonFlag = False,
) -> None:
    """Search the reference documents this storyteller may read, best match first.

    Every word must appear in some field; with no words, list them all.
    """
    async with open_store(ctx) as store:
        st = await store.storytellers.get(ref)
        found = await store.references.search(" ".join(query or ()), visible_to=st.id)
    listing(
        found,
        as_json=json_out,
        data=document_json,
        title=f"Documents visible to {st.name}",
        columns=DOCUMENT_COLUMNS,
        row=document_row,
    )


inputs.register_commands(ais_set.app)
ais_set.app.add_typer(tool.app, name="tool")
alias(ais_set.app, "tool", "tools")
ais_set.app.add_typer(rule.app, name="rule")
alias(ais_set.app, "rule", "rules")
ais_set.app.add_typer(mcp.app, name="mcp")
ais_set.app.add_typer(direction.direction, name="direction")
register(ais_set.app, "pacing")(direction.set_pacing)
register(ais_set.app, "budget", "dailybudget", lenient=True)(budget.set_budget)
ais_set.app.add_typer(provider.providers, name="provider")
alias(ais_set.app, "provider", "providers")
app.add_typer(ais_set.app, name="set")
app.add_typer(situation.situations, name="situation")
app.add_typer(memory.memories, name="memory")
alias(app, "situation", "situations")
alias(app, "memory", "memories")
app.add_typer(digest.digests, name="digest")
app.add_typer(plan.plans, name="plan")
app.add_typer(claim.claims, name="claim")
alias(app, "plan", "plans")
alias(app, "claim", "claims")
app.add_typer(character.app, name="character")
alias(app, "character", "characters")
xml.register_commands(app)
