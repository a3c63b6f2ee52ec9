"""``storyteller ais set REF …``: change one setting of a storyteller.

Subcommands and aliases follow FutureMUD's ``ais set``. Each one reads the storyteller, builds a
changed copy, and saves it in one transaction, so a rejected value changes nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Annotated

import typer

from storyteller_daemon.cli.ais_catalogue import describe_prog, load_catalogue, require_prog
from storyteller_daemon.cli.ais_io import (
    FileOption,
    format_duration,
    parse_duration,
    parse_id,
    read_text,
    register,
    say,
)
from storyteller_daemon.cli.ais_io import check_new_name as check_name
from storyteller_daemon.cli.ais_view import speech_context_line
from storyteller_daemon.cli.common import open_store, run_async
from storyteller_daemon.domain.settings import (
    EventKind,
    Heartbeat,
    ReasoningEffort,
    Scope,
    Storyteller,
    validate_speech_context_count,
    validate_speech_context_window,
)
from storyteller_daemon.errors import ValidationError

Change = Callable[[Storyteller], tuple[Storyteller, str]]
"""Builds the changed storyteller and the confirmation line, or raises to change nothing."""

_REF_KEY = "storyteller_daemon.ais.set.ref"

app = typer.Typer(
    help="Change one setting of a storyteller; each prints one confirmation line.",
    no_args_is_help=True,
)

ScopeOption = Annotated[
    str, typer.Option("--scope", "-s", help="event, time (heartbeats) or attention.")
]
ClearFlag = Annotated[bool, typer.Option("--clear", help="Remove the setting so it falls back.")]
TextWords = Annotated[list[str] | None, typer.Argument(metavar="TEXT", show_default=False)]


@app.callback()
def select(
    ctx: typer.Context,
    ref: Annotated[str, typer.Argument(metavar="REF", help="Storyteller id or name.")],
) -> None:
    """Change one setting of a storyteller; each prints one confirmation line."""
    ctx.meta[_REF_KEY] = ref


def selected(ctx: typer.Context) -> str:
    """The storyteller reference given to ``ais set``."""
    return str(ctx.meta[_REF_KEY])


async def apply_change(ctx: typer.Context, change: Change) -> Storyteller:
    """Load the selected storyteller, apply `change`, save, and print its confirmation."""
    async with open_store(ctx) as store:
        current = await store.storytellers.get(selected(ctx))
        changed, message = change(current)
        saved = await store.storytellers.save(changed)
    say(message)
    return saved


@register(app, "name")
@run_async
async def set_name(
    ctx: typer.Context, name: Annotated[list[str], typer.Argument(metavar="NEW_NAME")]
) -> None:
    """Rename the storyteller (names are unique, ignoring case)."""
    new = check_name(" ".join(name), "storyteller")
    await apply_change(ctx, lambda st: (
        replace(st, name=new), f"Storyteller #{st.id} is now named {new}."
    ))  # fmt: skip


@register(app, "description", "desc")
@run_async
async def set_description(ctx: typer.Context, text: TextWords = None, file: FileOption = None) -> None:
    """Set the description (TEXT, '-' for stdin, or --file)."""
    value = read_text(text, file, "description")
    await apply_change(ctx, lambda st: (
        replace(st, description=value), f"Storyteller {st.name} has a new description."
    ))  # fmt: skip


@register(app, "model")
@run_async
async def set_model(
    ctx: typer.Context,
    model: Annotated[str | None, typer.Argument(metavar="MODEL")] = None,
    scope: ScopeOption = "event",
    clear: ClearFlag = False,
) -> None:
    """Set the model of a scope; --clear makes the time or attention model fall back."""
    which = Scope.parse(scope)
    if clear == bool(model and model.strip()):
        raise ValidationError("Give either a model name or --clear.")
    if clear and which is Scope.EVENT:
        raise ValidationError("The event model has no fallback; give a model name instead.")
    field = {Scope.EVENT: "model", Scope.TIME: "time_model", Scope.ATTENTION: "attention_model"}
    value = None if clear else (model or "").strip()

    def change(st: Storyteller) -> tuple[Storyteller, str]:
        new = replace(st, **{field[which]: value})
        tail = " (falls back to the event model)" if clear else ""
        return new, f"Storyteller {st.name} uses {new.model_for(which)} for {which} calls{tail}."

    await apply_change(ctx, change)


@register(app, "reasoning", "effort")
@run_async
async def set_reasoning(
    ctx: typer.Context,
    effort: Annotated[str | None, typer.Argument(metavar="EFFORT")] = None,
    scope: ScopeOption = "event",
    clear: ClearFlag = False,
) -> None:
    """Set the reasoning effort of a scope: minimal, low, medium, high or 0-3."""
    which = Scope.parse(scope)
    if clear == bool(effort and effort.strip()):
        raise ValidationError("Give either a reasoning effort or --clear.")
    value = None if clear else ReasoningEffort.parse(effort or "")
    field = {
        Scope.EVENT: "reasoning_effort",
        Scope.TIME: "time_reasoning_effort",
        Scope.ATTENTION: "attention_reasoning_effort",
    }

    def change(st: Storyteller) -> tuple[Storyteller, str]:
        new = replace(st, **{field[which]: value})
        tail = " (falls back)" if clear else ""
        effective = new.effort_for(which).value
        return new, f"Storyteller {st.name} uses {effective} reasoning for {which} calls{tail}."

    await apply_change(ctx, change)


async def _set_prompt(ctx: typer.Context, field: str, label: str, value: str | None) -> None:
    def change(st: Storyteller) -> tuple[Storyteller, str]:
        if value is None:
            return replace(st, **{field: None}), (
                f"Storyteller {st.name}'s {label} now falls back to the system prompt."
            )
        return replace(st, **{field: value}), (
            f"Storyteller {st.name} has a new {label} ({len(value)} characters)."
        )

    await apply_change(ctx, change)


@register(app, "attention-prompt", "attention", "attentionprompt")
@run_async
async def set_attention_prompt(
    ctx: typer.Context, text: TextWords = None, file: FileOption = None
) -> None:
    """Set the attention classifier's instructions (TEXT, '-' for stdin, or --file)."""
    value = read_text(text, file, "attention prompt")
    await _set_prompt(ctx, "attention_prompt", "attention prompt", value)


@register(app, "system-prompt", "system", "systemprompt", "eventsystem", "eventprompt")
@run_async
async def set_system_prompt(
    ctx: typer.Context, text: TextWords = None, file: FileOption = None
) -> None:
    """Set the system prompt of event turns (TEXT, '-' for stdin, or --file)."""
    value = read_text(text, file, "system prompt")
    await _set_prompt(ctx, "system_prompt", "system prompt", value)


@register(
    app, "time-system-prompt", "timesystem", "timesystemprompt", "statussystem", "statusprompt"
)
@run_async
async def set_time_system_prompt(
    ctx: typer.Context, text: TextWords = None, file: FileOption = None, clear: ClearFlag = False
) -> None:
    """Set the system prompt of heartbeat turns; --clear falls back to the system prompt."""
    if clear and (text or file):
        raise ValidationError("Give either the time system prompt or --clear, not both.")
    value = None if clear else read_text(text, file, "time system prompt")
    await _set_prompt(ctx, "time_system_prompt", "time system prompt", value)


def _toggle_subscription(st: Storyteller, word: str) -> tuple[Storyteller, str]:
    try:
        kind = EventKind.parse(word)
    except ValidationError:
        kind = None
    if kind is not None:
        on = kind not in st.subscriptions
        subs = st.subscriptions | {kind} if on else st.subscriptions - {kind}
        verb = "now subscribes to" if on else "no longer subscribes to"
        return replace(st, subscriptions=subs), f"Storyteller {st.name} {verb} {kind} events."
    try:
        beat = Heartbeat.parse(word)
    except ValidationError:
        raise ValidationError(
            f"'{word}' is not an event or heartbeat; use room, speech, crime, state, "
            "5m, 10m, 30m or 1h."
        ) from None
    on = beat not in st.heartbeats
    beats = st.heartbeats | {beat} if on else st.heartbeats - {beat}
    verb = "now subscribes to" if on else "no longer subscribes to"
    return replace(st, heartbeats=beats), f"Storyteller {st.name} {verb} the {beat} heartbeat."


@register(app, "subscribe", "subscriptions")
@run_async
async def subscribe(
    ctx: typer.Context,
    event: Annotated[str, typer.Argument(metavar="EVENT",
                                         help="room, speech, crime, state, 5m, 10m, 30m or 1h.")],
) -> None:
    """Toggle a subscription to an event type or a heartbeat."""
    await apply_change(ctx, lambda st: _toggle_subscription(st, event))


@register(app, "status-prog", "statusprog", "heartbeatprog")
@run_async
async def set_status_prog(
    ctx: typer.Context,
    heartbeat: Annotated[str, typer.Argument(metavar="HEARTBEAT", help="5m, 10m, 30m or 1h.")],
    prog: Annotated[str, typer.Argument(metavar="PROG", help="Prog id or name, or 'none'.")],
) -> None:
    """Set the prog whose text output is added to a heartbeat's prompt ('none' clears it)."""
    beat = Heartbeat.parse(heartbeat)
    catalogue = None
    if prog.strip().lower() != "none":
        catalogue = await load_catalogue(ctx)
        require_prog(catalogue, prog)

    def change(st: Storyteller) -> tuple[Storyteller, str]:
        others = tuple((h, p) for h, p in st.status_progs if h is not beat)
        if prog.strip().lower() == "none":
            return replace(st, status_progs=others), (
                f"Storyteller {st.name} has no {beat} status prog now."
            )
        new = replace(st, status_progs=(*others, (beat, prog.strip())))
        shown = describe_prog(catalogue, prog.strip())
        return new, f"Storyteller {st.name}'s {beat} status prog is now {shown}."

    await apply_change(ctx, change)


@register(app, "player-prog", "playerprog", "customplayerprog")
@run_async
async def set_player_prog(
    ctx: typer.Context,
    prog: Annotated[str, typer.Argument(metavar="PROG", help="Prog id or name, or 'none'.")],
) -> None:
    """Set the prog that adds custom fields to PlayerInformation ('none' clears it)."""
    ref = prog.strip()
    if ref.lower() == "none":
        await apply_change(ctx, lambda st: (
            replace(st, player_info_prog=None),
            f"Storyteller {st.name} no longer uses a custom player information prog.",
        ))  # fmt: skip
        return
    catalogue = await load_catalogue(ctx)
    require_prog(catalogue, ref)
    await apply_change(ctx, lambda st: (
        replace(st, player_info_prog=ref),
        f"Storyteller {st.name} uses {describe_prog(catalogue, ref)} for player information.",
    ))  # fmt: skip


_SURVEILLANCE_KINDS = {
    "zone": "zone", "zones": "zone",
    "include": "include", "included": "include", "room": "include",
    "exclude": "exclude", "excluded": "exclude",
}  # fmt: skip
_SURVEILLANCE_VERBS = {
    "zone": ("now watches zone", "no longer watches zone"),
    "include": ("now watches room", "no longer watches room"),
    "exclude": ("now excludes room", "no longer excludes room"),
}


@register(app, "surveillance", "watch")
@run_async
async def set_surveillance(
    ctx: typer.Context,
    kind: Annotated[str, typer.Argument(metavar="KIND", help="zone, include or exclude.")],
    target: Annotated[str, typer.Argument(metavar="ID", help="Zone or room id.")],
) -> None:
    """Toggle a zone, an included room or an excluded room in the watched set."""
    which = _SURVEILLANCE_KINDS.get(kind.strip().lower())
    if which is None:
        raise ValidationError(f"'{kind}' is not a surveillance list; use zone, include or exclude.")
    ident = parse_id(target, "zone" if which == "zone" else "room")

    def change(st: Storyteller) -> tuple[Storyteller, str]:
        added, removed = _SURVEILLANCE_VERBS[which]
        new = st.surveillance.toggled(which, ident)
        had = ident in {"zone": st.surveillance.zones, "include": st.surveillance.included,
                        "exclude": st.surveillance.excluded}[which]  # fmt: skip
        verb = removed if had else added
        return replace(st, surveillance=new), f"Storyteller {st.name} {verb} #{ident}."

    await apply_change(ctx, change)


speech = typer.Typer(
    help="Show or set how much recent speech a speech trigger's prompt includes.",
    invoke_without_command=True,
)


@speech.callback()
def speech_context(ctx: typer.Context) -> None:
    """Show the speech-context settings, or change them with count or window."""
    if ctx.invoked_subcommand is None:
        _show_speech_context(ctx)


@run_async
async def _show_speech_context(ctx: typer.Context) -> None:
    async with open_store(ctx) as store:
        st = await store.storytellers.get(selected(ctx))
    say(f"Storyteller {st.name} speech context: {speech_context_line(st)}.")


# Negative counts must reach the range check rather than be read as options.
@register(speech, "count", "number", "events", "lines", lenient=True)
@run_async
async def set_speech_count(
    ctx: typer.Context, count: Annotated[str, typer.Argument(metavar="N", help="0 to 50.")]
) -> None:
    """How many recent speech events to include (0 turns speech context off)."""
    try:
        number = int(count.strip())
    except ValueError:
        raise ValidationError(f"'{count}' is not a whole number.") from None
    validate_speech_context_count(number)
    await apply_change(ctx, lambda st: (
        replace(st, speech_context_count=number),
        f"Storyteller {st.name} now includes up to {number} recent speech events.",
    ))  # fmt: skip


@register(speech, "window", "time", "separation", "maxseparation")
@run_async
async def set_speech_window(
    ctx: typer.Context,
    window: Annotated[str, typer.Argument(metavar="DURATION", help="e.g. 90s, 3m, 00:03:00.")],
) -> None:
    """The longest gap between included speech events; must be longer than zero."""
    value = validate_speech_context_window(parse_duration(window))
    await apply_change(ctx, lambda st: (
        replace(st, speech_context_window=value),
        f"Storyteller {st.name} now includes speech at most {format_duration(value)} apart.",
    ))  # fmt: skip


app.add_typer(speech, name="speech-context", help=(
    "Show or set how much recent speech a speech trigger's prompt includes. "
    "Aliases: speechcontext, speechhistory."
))  # fmt: skip
for _alias in ("speechcontext", "speechhistory"):
    app.add_typer(speech, name=_alias, hidden=True)
