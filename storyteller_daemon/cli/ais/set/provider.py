"""``storyteller ais set REF provider add|remove …``: a storyteller's context providers, in the
order they are added (``add NAME KIND BUDGET [SOURCE…]``, ``remove NAME``).

FutureMUD has no such settings; they travel in the exported ``<ToolCalls>`` blob.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Annotated

import typer

from storyteller_daemon.cli.ais.set.selection import apply_change
from storyteller_daemon.cli.support import command_group, register, run_async
from storyteller_daemon.domain.direction import ContextProvider, ProviderKind
from storyteller_daemon.domain.storytellers import Storyteller
from storyteller_daemon.errors import ConflictError, NotFoundError

providers = command_group("Context providers: add or remove.")


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
