"""``ais set`` subcommands for what a storyteller hears and what its prompts gather.

Status progs feed heartbeat prompts, the player prog feeds PlayerInformation, speech context
feeds speech prompts, and surveillance decides which rooms it hears at all. Progs are checked
against the world's catalogue when the world can be asked.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Annotated

import typer

from storyteller_daemon.cli.ais.set.selection import apply_change, selected
from storyteller_daemon.cli.support import (
    alias,
    command_group,
    open_store,
    parse_id,
    register,
    run_async,
    say,
)
from storyteller_daemon.cli.views.catalogue import describe_prog, load_catalogue, stored_reference
from storyteller_daemon.cli.views.storytellers import speech_context_line
from storyteller_daemon.domain.durations import format_duration, parse_duration
from storyteller_daemon.domain.storytellers import (
    Heartbeat,
    Storyteller,
    validate_speech_context_count,
    validate_speech_context_window,
)
from storyteller_daemon.domain.surveillance import Surveillance
from storyteller_daemon.errors import ValidationError

ProgRef = Annotated[str, typer.Argument(metavar="PROG", help="Prog id or name, or 'none'.")]

_SURVEILLANCE_LISTS = {
    "zone": "zone",
    "zones": "zone",
    "include": "include",
    "included": "include",
    "room": "include",
    "exclude": "exclude",
    "excluded": "exclude",
}
_SURVEILLANCE_VERBS = {
    "zone": ("now watches zone", "no longer watches zone"),
    "include": ("now watches room", "no longer watches room"),
    "exclude": ("now excludes room", "no longer excludes room"),
}


@run_async
async def set_status_prog(
    ctx: typer.Context,
    heartbeat: Annotated[str, typer.Argument(metavar="HEARTBEAT", help="5m, 10m, 30m or 1h.")],
    prog: ProgRef,
) -> None:
    """Set the prog whose text output is added to a heartbeat's prompt ('none' clears it)."""
    beat = Heartbeat.parse(heartbeat)
    clear = prog.strip().lower() == "none"
    catalogue = None if clear else await load_catalogue(ctx)
    ref = "" if clear else stored_reference(catalogue, prog)

    def change(st: Storyteller) -> tuple[Storyteller, str]:
        others = tuple((h, p) for h, p in st.status_progs if h is not beat)
        if clear:
            return replace(st, status_progs=others), (
                f"Storyteller {st.name} has no {beat} status prog now."
            )
        shown = describe_prog(catalogue, ref)
        return replace(st, status_progs=(*others, (beat, ref))), (
            f"Storyteller {st.name}'s {beat} status prog is now {shown}."
        )

    await apply_change(ctx, change)


@run_async
async def set_player_prog(ctx: typer.Context, prog: ProgRef) -> None:
    """Set the prog that adds custom fields to PlayerInformation ('none' clears it)."""
    clear = prog.strip().lower() == "none"
    catalogue = None if clear else await load_catalogue(ctx)
    ref = "" if clear else stored_reference(catalogue, prog)

    def change(st: Storyteller) -> tuple[Storyteller, str]:
        if clear:
            return replace(st, player_info_prog=None), (
                f"Storyteller {st.name} no longer uses a custom player information prog."
            )
        return replace(st, player_info_prog=ref), (
            f"Storyteller {st.name} uses {describe_prog(catalogue, ref)} for player information."
        )

    await apply_change(ctx, change)


def _size(surveillance: Surveillance) -> int:
    return len(surveillance.zones) + len(surveillance.included) + len(surveillance.excluded)


@run_async
async def set_surveillance(
    ctx: typer.Context,
    kind: Annotated[str, typer.Argument(metavar="KIND", help="zone, include or exclude.")],
    target: Annotated[str, typer.Argument(metavar="ID", help="Zone or room id.")],
) -> None:
    """Toggle a zone, an included room or an excluded room in the watched set."""
    which = _SURVEILLANCE_LISTS.get(kind.strip().lower())
    if which is None:
        raise ValidationError(f"'{kind}' is not a surveillance list; use zone, include or exclude.")
    ident = parse_id(target, "zone" if which == "zone" else "room")

    def change(st: Storyteller) -> tuple[Storyteller, str]:
        new = st.surveillance.toggled(which, ident)
        added, removed = _SURVEILLANCE_VERBS[which]
        verb = added if _size(new) > _size(st.surveillance) else removed
        return replace(st, surveillance=new), f"Storyteller {st.name} {verb} #{ident}."

    await apply_change(ctx, change)


speech = command_group(
    "Show or set how much recent speech a speech trigger's prompt includes. "
    "Aliases: speechcontext, speechhistory.",
    invoke_without_command=True,
    no_args_is_help=False,
)


@speech.callback()
def speech_context(ctx: typer.Context) -> None:
    """Show or set how much recent speech a speech trigger's prompt includes."""
    if ctx.invoked_subcommand is None:
        _show_speech_context(ctx)


@run_async
async def _show_speech_context(ctx: typer.Context) -> None:
    async with open_store(ctx) as store:
        st = await store.storytellers.get(selected(ctx))
    say(f"Storyteller {st.name} speech context: {speech_context_line(st)}.")


# lenient: a negative count must reach the range check rather than be read as an option.
@register(speech, "count", "number", "events", "lines", lenient=True)
@run_async
async def set_speech_count(
    ctx: typer.Context, count: Annotated[str, typer.Argument(metavar="N", help="0 to 50.")]
) -> None:
    """How many recent speech events to include (0 turns speech context off)."""
    try:
        number = validate_speech_context_count(int(count.strip()))
    except ValueError:
        raise ValidationError(f"'{count}' is not a whole number.") from None

    def change(st: Storyteller) -> tuple[Storyteller, str]:
        return replace(st, speech_context_count=number), (
            f"Storyteller {st.name} now includes up to {number} recent speech events."
        )

    await apply_change(ctx, change)


@register(speech, "window", "time", "separation", "maxseparation")
@run_async
async def set_speech_window(
    ctx: typer.Context,
    window: Annotated[str, typer.Argument(metavar="DURATION", help="e.g. 90s, 3m, 00:03:00.")],
) -> None:
    """The longest gap between included speech events; must be longer than zero."""
    value = validate_speech_context_window(parse_duration(window))

    def change(st: Storyteller) -> tuple[Storyteller, str]:
        return replace(st, speech_context_window=value), (
            f"Storyteller {st.name} now includes speech at most {format_duration(value)} apart."
        )

    await apply_change(ctx, change)


def register_commands(app: typer.Typer) -> None:
    """Add these subcommands, with FutureMUD's aliases, to the ``ais set`` group."""
    register(app, "status-prog", "statusprog", "heartbeatprog")(set_status_prog)
    register(app, "player-prog", "playerprog", "customplayerprog")(set_player_prog)
    register(app, "surveillance", "watch")(set_surveillance)
    app.add_typer(speech, name="speech-context")
    alias(app, "speech-context", "speechcontext", "speechhistory")
