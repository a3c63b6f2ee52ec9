"""``storyteller ais set REF …``: change one setting of a storyteller.

Subcommands and aliases follow FutureMUD's ``ais set``. Each one reads the storyteller, builds a
changed copy, and saves it in one transaction, so a rejected value changes nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Annotated

import typer

from storyteller_daemon.cli.ais.set.selection import REF_KEY, apply_change
from storyteller_daemon.cli.support import (
    FileOption,
    check_new_name,
    command_group,
    read_text,
    register,
    run_async,
)
from storyteller_daemon.cli.views.storytellers import EFFORT_FALLBACK
from storyteller_daemon.domain.storytellers import (
    EventKind,
    Heartbeat,
    ReasoningEffort,
    Scope,
    Storyteller,
)
from storyteller_daemon.errors import ValidationError

app = command_group("Change one setting of a storyteller; each prints one confirmation line.")

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
    ctx.meta[REF_KEY] = ref


@register(app, "name")
@run_async
async def set_name(
    ctx: typer.Context, name: Annotated[list[str], typer.Argument(metavar="NEW_NAME")]
) -> None:
    """Rename the storyteller (names are unique, ignoring case)."""
    new = check_new_name(" ".join(name), "storyteller")
    await apply_change(
        ctx, lambda st: (replace(st, name=new), f"Storyteller #{st.id} is now named {new}.")
    )


@register(app, "description", "desc")
@run_async
async def set_description(
    ctx: typer.Context, text: TextWords = None, file: FileOption = None
) -> None:
    """Set the description (TEXT, '-' for stdin, or --file)."""
    value = read_text(text, file, "description")
    await apply_change(
        ctx,
        lambda st: (
            replace(st, description=value),
            f"Storyteller {st.name} has a new description.",
        ),
    )


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
    value = None if clear else (model or "").strip()

    def change(st: Storyteller) -> tuple[Storyteller, str]:
        if which is Scope.TIME:
            new = replace(st, time_model=value)
        elif which is Scope.ATTENTION:
            new = replace(st, attention_model=value)
        else:
            new = replace(st, model=value or st.model)
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
    """Set the reasoning effort of a scope: none, minimal, low, medium, high or 0-3."""
    which = Scope.parse(scope)
    if clear == bool(effort and effort.strip()):
        raise ValidationError("Give either a reasoning effort or --clear.")
    value = None if clear else ReasoningEffort.parse(effort or "")

    def change(st: Storyteller) -> tuple[Storyteller, str]:
        if which is Scope.TIME:
            new = replace(st, time_reasoning_effort=value)
        elif which is Scope.ATTENTION:
            new = replace(st, attention_reasoning_effort=value)
        else:
            new = replace(st, reasoning_effort=value)
        tail = f" (falls back to {EFFORT_FALLBACK[which]})" if clear else ""
        effective = new.effort_for(which).value
        return new, f"Storyteller {st.name} uses {effective} reasoning for {which} calls{tail}."

    await apply_change(ctx, change)


async def _set_prompt(
    ctx: typer.Context, label: str, value: str | None, put: Callable[[Storyteller], Storyteller]
) -> None:
    def change(st: Storyteller) -> tuple[Storyteller, str]:
        if value is None:
            return put(st), f"Storyteller {st.name}'s {label} now falls back to the system prompt."
        return put(st), f"Storyteller {st.name} has a new {label} ({len(value)} characters)."

    await apply_change(ctx, change)


@register(app, "attention-prompt", "attention", "attentionprompt")
@run_async
async def set_attention_prompt(
    ctx: typer.Context, text: TextWords = None, file: FileOption = None
) -> None:
    """Set the attention classifier's instructions (TEXT, '-' for stdin, or --file)."""
    value = read_text(text, file, "attention prompt")
    await _set_prompt(
        ctx, "attention prompt", value, lambda st: replace(st, attention_prompt=value)
    )


@register(app, "system-prompt", "system", "systemprompt", "eventsystem", "eventprompt")
@run_async
async def set_system_prompt(
    ctx: typer.Context, text: TextWords = None, file: FileOption = None
) -> None:
    """Set the system prompt of event turns (TEXT, '-' for stdin, or --file)."""
    value = read_text(text, file, "system prompt")
    await _set_prompt(ctx, "system prompt", value, lambda st: replace(st, system_prompt=value))


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
    await _set_prompt(
        ctx, "time system prompt", value, lambda st: replace(st, time_system_prompt=value)
    )


def _toggle_subscription(
    st: Storyteller, word: str, wanted: bool | None = None
) -> tuple[Storyteller, str]:
    """Subscribe or unsubscribe (`wanted`), or flip the subscription when `wanted` is None."""
    try:
        kind = EventKind.parse(word)
    except ValidationError:
        kind = None
    if kind is not None:
        on = kind not in st.subscriptions if wanted is None else wanted
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
    on = beat not in st.heartbeats if wanted is None else wanted
    beats = st.heartbeats | {beat} if on else st.heartbeats - {beat}
    verb = "now subscribes to" if on else "no longer subscribes to"
    return replace(st, heartbeats=beats), f"Storyteller {st.name} {verb} the {beat} heartbeat."


_SWITCH = {"on": True, "yes": True, "true": True, "off": False, "no": False, "false": False}


@register(app, "subscribe", "subscriptions")
@run_async
async def subscribe(
    ctx: typer.Context,
    event: Annotated[
        str, typer.Argument(metavar="EVENT", help="room, speech, crime, state, 5m, 10m, 30m or 1h.")
    ],
    switch: Annotated[
        str | None,
        typer.Argument(metavar="on|off", help="Subscribe or unsubscribe; without it, flip."),
    ] = None,
) -> None:
    """Subscribe to an event type or heartbeat (on), unsubscribe (off), or flip it."""
    wanted = None
    if switch is not None:
        if switch.strip().lower() not in _SWITCH:
            raise ValidationError(f"'{switch}' is not on or off.")
        wanted = _SWITCH[switch.strip().lower()]
    await apply_change(ctx, lambda st: _toggle_subscription(st, event, wanted))
