"""``storyteller ais set REF direction|pacing …``: how a storyteller directs.

* ``direction plans on|off``: offer the plan and scene tools and show its plans in its prompts;
  ``direction cooperate on|off``: let its prog calls through other storytellers' scene claims;
* ``pacing KEY VALUE``: one pacing setting (`domain.direction.Pacing`; 0 or ``off`` turns a
  limit off);

FutureMUD has no such settings; they travel in the exported ``<ToolCalls>`` blob.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Annotated, Any

import typer

from storyteller_daemon.cli.ais.set.selection import apply_change
from storyteller_daemon.cli.support import command_group, register, run_async
from storyteller_daemon.domain.direction import PACING_KEYS, pacing_value
from storyteller_daemon.domain.storytellers import Storyteller
from storyteller_daemon.errors import ValidationError

direction = command_group("Plans and co-operation: plans on|off, cooperate on|off.")

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
