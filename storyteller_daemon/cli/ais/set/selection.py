"""The storyteller that ``storyteller ais set REF …`` works on, and the one way to change it."""

from __future__ import annotations

from collections.abc import Callable

import typer

from storyteller_daemon.cli.support import open_store, say
from storyteller_daemon.domain.storytellers import Storyteller

Change = Callable[[Storyteller], tuple[Storyteller, str]]
"""Builds the changed storyteller and the confirmation line, or raises to change nothing."""

REF_KEY = "storyteller_daemon.ais.set.ref"
"""Where the ``ais set`` group keeps its REF for the subcommand."""


def selected(ctx: typer.Context) -> str:
    """The storyteller reference given to ``ais set``."""
    return str(ctx.meta[REF_KEY])


async def apply_change(ctx: typer.Context, change: Change) -> None:
    """Load the selected storyteller, apply `change`, save, and print its confirmation."""
    async with open_store(ctx) as store:
        current = await store.storytellers.get(selected(ctx))
        changed, message = change(current)
        await store.storytellers.save(changed)
    say(message)
