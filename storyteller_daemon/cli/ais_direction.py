"""``storyteller ais set REF direction|pacing|provider …``: how a storyteller directs.

* ``direction plans on|off``: offer the plan and scene tools and show its plans in its prompts;
  ``direction cooperate on|off``: let its prog calls through other storytellers' scene claims;
* ``pacing KEY VALUE``: one pacing setting (`domain.direction.Pacing`; 0 or ``off`` turns a
  limit off);
* ``provider add NAME KIND BUDGET [SOURCE…]`` and ``provider remove NAME``: the context
  providers, in the order they are added.

FutureMUD has no such settings; they travel in the exported ``<ToolCalls>`` blob.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Annotated, Any

import typer

from storyteller_daemon.cli.ais_io import command_group, register
from storyteller_daemon.cli.ais_set import apply_change
from storyteller_daemon.cli.common import run_async
from storyteller_daemon.domain.direction import (
    PACING_KEYS,
    ContextProvider,
    ProviderKind,
    pacing_value,
)
from storyteller_daemon.domain.settings import Storyteller
from storyteller_daemon.errors import ConflictError, NotFoundError, ValidationError

direction = command_group("Plans and co-operation: plans on|off, cooperate on|off.")
providers = command_group("Context providers: add or remove.")

Switch = Annotated[str, typer.Argument(metavar="on|off")]


def _switch(value: str) -> bool:
    word = value.strip().lower()
    if word not in ("on", "off", "true", "false", "yes", "no"):
        raise ValidationError(f"'{value}' is not on or off.")
    return word in ("on", "true", "yes")


@register(direction, "plans")
@run_async
async def set_plans(ctx: typer.Context, value: Switch) -> None:
    """Whether the storyteller keeps story plans and may claim scenes."""
    on = _switch(value)

    def change(st: Storyteller) -> tuple[Storyteller, str]:
        return replace(st, direction=replace(st.direction, plans=on)), (
            f"Storyteller {st.name} "
            + ("plans: it is offered the plan and scene tools." if on else "no longer plans.")
        )

    await apply_change(ctx, change)


@register(direction, "cooperate")
@run_async
async def set_cooperate(ctx: typer.Context, value: Switch) -> None:
    """Whether its remit co-operates, so other storytellers' scene claims do not stop it."""
    on = _switch(value)

    def change(st: Storyteller) -> tuple[Storyteller, str]:
        return replace(st, direction=replace(st.direction, cooperates=on)), (
            f"Storyteller {st.name} "
            + ("co-operates: scene claims do not stop it." if on else "respects scene claims.")
        )

    await apply_change(ctx, change)


@run_async
async def set_pacing(
    ctx: typer.Context,
    key: Annotated[str, typer.Argument(metavar="KEY", help=", ".join(PACING_KEYS) + ".")],
    value: Annotated[str, typer.Argument(metavar="VALUE", help="0 or off turns a limit off.")],
) -> None:
    """Set one pacing setting: how often the storyteller may act on the game."""
    field = key.strip().lower().replace("-", "_")
    parsed = pacing_value(field, value)

    def change(st: Storyteller) -> tuple[Storyteller, str]:
        changed: dict[str, Any] = {field: parsed}
        pacing = replace(st.direction.pacing, **changed)
        return replace(st, direction=replace(st.direction, pacing=pacing)), (
            f"Storyteller {st.name} pacing {field} is now {parsed if parsed != '' else 'off'}."
        )

    await apply_change(ctx, change)


@register(providers, "add")
@run_async
async def add_provider(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(metavar="NAME", help="Lower-case letters, digits, -, _.")],
    kind: Annotated[str, typer.Argument(metavar="KIND", help="text, prog, query or digest.")],
    budget: Annotated[int, typer.Argument(metavar="BUDGET", help="Tokens it may take.")],
    source: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="[SOURCE]...", help="The text, the prog, or one SELECT (none for digest)."
        ),
    ] = None,
) -> None:
    """Add a context provider; it is read after the ones already there."""
    provider = ContextProvider(name, ProviderKind.parse(kind), budget, " ".join(source or ()))

    def change(st: Storyteller) -> tuple[Storyteller, str]:
        if st.direction.provider(provider.name) is not None:
            raise ConflictError(f"Storyteller {st.name} already has a provider named '{name}'.")
        listed = (*st.direction.providers, provider)
        return replace(st, direction=replace(st.direction, providers=listed)), (
            f"Storyteller {st.name} has context provider {name} ({provider.kind.value}, "
            f"{budget} tokens; {len(listed)} of {len(listed)})."
        )

    await apply_change(ctx, change)


@register(providers, "remove", "delete")
@run_async
async def remove_provider(
    ctx: typer.Context, name: Annotated[str, typer.Argument(metavar="NAME")]
) -> None:
    """Remove a context provider."""

    def change(st: Storyteller) -> tuple[Storyteller, str]:
        kept = tuple(p for p in st.direction.providers if p.name != name)
        if len(kept) == len(st.direction.providers):
            raise NotFoundError(f"Storyteller {st.name} has no provider named '{name}'.")
        return replace(st, direction=replace(st.direction, providers=kept)), (
            f"Removed context provider {name} from {st.name}."
        )

    await apply_change(ctx, change)
