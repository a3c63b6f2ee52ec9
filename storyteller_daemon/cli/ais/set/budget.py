"""A storyteller's own daily budget: ``storyteller ais set REF budget USD|default``.

The setting wins over ``[budgets]`` in the configuration; ``default`` removes it so the
configuration's cap (its ``storyteller_overrides`` entry, else ``storyteller_daily_usd``)
applies again. 0 means no cap, as in the configuration. A running daemon notices the saved
revision at its next settings poll and applies the new cap without a restart. Each change is
written to the audit log (action ``set_budget``, by the operating-system user).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Annotated

import typer

from storyteller_daemon.cli.ais.set.selection import selected
from storyteller_daemon.cli.support import acting_user, open_store, run_async, say, state
from storyteller_daemon.cli.views.budget import budget_line
from storyteller_daemon.domain.storytellers import validate_daily_budget
from storyteller_daemon.errors import ValidationError

if TYPE_CHECKING:  # `storyteller --help` imports no heavy library: the config's come lazily
    pass

DEFAULT_WORDS = frozenset({"default", "config", "configuration"})


def parse_budget(text: str) -> float | None:
    """USD (``2.5``, ``$2.50``; 0 for no cap), or None for ``default``."""
    word = text.strip().lower()
    if word in DEFAULT_WORDS:
        return None
    try:
        value = float(word.removeprefix("$"))
    except ValueError:
        raise ValidationError(
            f"'{text}' is not a budget; give USD a day (0: no cap) or 'default'."
        ) from None
    return validate_daily_budget(value)


# lenient: a negative amount must reach the range check rather than be read as an option.
@run_async
async def set_budget(
    ctx: typer.Context,
    usd: Annotated[
        str,
        typer.Argument(
            metavar="USD|default", help="USD a day (0: no cap), or 'default' for the config's."
        ),
    ],
) -> None:
    """Set the storyteller's own daily budget in USD, which wins over [budgets]; 'default'
    returns it to the configuration's cap."""
    value = parse_budget(usd)
    cfg = state(ctx).config().budgets
    async with open_store(ctx) as store:
        st = await store.storytellers.get(selected(ctx))
        saved = await store.storytellers.save(replace(st, daily_budget_usd=value))
        detail = {"daily_usd": value}
        await store.audit.add(acting_user(ctx), "set_budget", f"storyteller {saved.id}", detail)
    say(f"Storyteller {saved.name}'s daily budget: {budget_line(saved, cfg)}.")
