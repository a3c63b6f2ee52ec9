"""``storyteller ais set REF rule …``: attention rules, the storyteller's own decisions.

A rule ignores, or always attends to, the events it matches without asking the attention model
(`domain.attention_rules`). Rules are checked in order and the first that matches decides, so a
new rule goes last; to move one, remove it and add it again. FutureMUD has no such setting.
The same group lists and clears the verdict memory (`views.settled`).
"""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import timedelta
from typing import Annotated, Any

import typer

from storyteller_daemon.cli.ais.set.selection import apply_change, selected
from storyteller_daemon.cli.support import (
    JsonFlag,
    command_group,
    open_store,
    parse_id,
    print_json,
    register,
    run_async,
    say,
    state,
    table,
)
from storyteller_daemon.cli.views.settled import holding, summary, summary_line
from storyteller_daemon.cli.views.storytellers import describe_rule
from storyteller_daemon.domain.attention_rules import RULE_KINDS, AttentionRule, RuleAction
from storyteller_daemon.domain.durations import parse_duration
from storyteller_daemon.domain.storytellers import Storyteller
from storyteller_daemon.domain.verdict_memory import SettledVerdict
from storyteller_daemon.errors import ConflictError, NotFoundError, ValidationError

app = command_group(
    "Attention rules: add or remove; the verdict memory: list or forget. Alias: rules."
)

RuleName = Annotated[
    str, typer.Argument(metavar="RULENAME", help="Lower-case letters, digits, '-' or '_'.")
]
_SECONDS = re.compile(r"\d+(?:\.\d+)?")


def parse_cooldown(text: str) -> timedelta:
    """A cooldown: whole or decimal seconds (``300``) or a duration (``5m``, ``00:05:00``)."""
    value = text.strip()
    if value.startswith("-"):
        raise ValidationError(f"Cooldown '{text}' is negative; give 0 or more seconds.")
    try:
        if _SECONDS.fullmatch(value):
            return timedelta(seconds=float(value))
        return parse_duration(value)
    except ValidationError:
        raise ValidationError(
            f"'{text}' is not a cooldown; give seconds (e.g. 300) or a duration such as 5m."
        ) from None
    except OverflowError:
        raise ValidationError(f"Cooldown '{text}' is too long.") from None


def build_rule(
    name: str, action: str, kinds: list[str], rooms: list[str], pattern: str, cooldown: str
) -> AttentionRule:
    """A validated rule from command-line words, or one `ValidationError` naming the problem."""
    try:
        return AttentionRule(
            name=name,
            action=RuleAction.parse(action),
            kinds=frozenset(k.strip().lower() for k in kinds),
            rooms=frozenset(parse_id(r, "room") for r in rooms),
            pattern=pattern,
            cooldown=parse_cooldown(cooldown),
        )
    except ValueError as exc:
        # The domain's messages start "rule …" and have no full stop.
        raise ValidationError(f"Attention {exc}.") from None


@register(app, "add", "new")
@run_async
async def add_rule(
    ctx: typer.Context,
    name: RuleName,
    action: Annotated[str, typer.Argument(metavar="ACTION", help="ignore or attend.")],
    kind: Annotated[
        list[str] | None,
        typer.Option(
            "--kind",
            metavar="KIND",
            help=f"Match only this event kind ({', '.join(sorted(RULE_KINDS))}); repeatable.",
            show_default=False,
        ),
    ] = None,
    room: Annotated[
        list[str] | None,
        typer.Option(
            "--room", metavar="ID", help="Match only this room; repeatable.", show_default=False
        ),
    ] = None,
    pattern: Annotated[
        str,
        typer.Option(
            "--pattern",
            metavar="REGEX",
            help="Case-insensitive regular expression searched in the event's text "
            "(a crime's text is its type).",
        ),
    ] = "",
    cooldown: Annotated[
        str,
        typer.Option(
            "--cooldown",
            metavar="SECONDS",
            help="After firing in a room, leave matches there to the model for this long.",
        ),
    ] = "0",
) -> None:
    """Add a rule that ignores or always attends to matching events; it is checked last."""
    rule = build_rule(name, action, kind or [], room or [], pattern, cooldown)

    def change(st: Storyteller) -> tuple[Storyteller, str]:
        if any(r.name == rule.name for r in st.attention_rules):
            raise ConflictError(
                f"Storyteller {st.name} already has an attention rule named '{rule.name}'."
            )
        rules = (*st.attention_rules, rule)
        return replace(st, attention_rules=rules), (
            f"Storyteller {st.name} has attention rule {rule.name} ({len(rules)} of "
            f"{len(rules)}): {describe_rule(rule)}."
        )

    await apply_change(ctx, change)


@register(app, "remove", "delete")
@run_async
async def remove_rule(ctx: typer.Context, name: RuleName) -> None:
    """Remove an attention rule; the rules after it move up."""

    def change(st: Storyteller) -> tuple[Storyteller, str]:
        kept = tuple(r for r in st.attention_rules if r.name != name)
        if len(kept) == len(st.attention_rules):
            raise NotFoundError(f"Storyteller {st.name} has no attention rule named '{name}'.")
        return replace(st, attention_rules=kept), (f"Removed attention rule {name} from {st.name}.")

    await apply_change(ctx, change)


COLUMNS = ("Id", "Kind", "Room class", "Text", "Item", "Hits", "Ignored at")


def _json(entry: SettledVerdict) -> dict[str, Any]:
    return {
        "id": entry.id,
        "kind": entry.kind,
        "speaker_id": entry.speaker_id,
        "room_class": entry.room_class,
        "text": entry.text,
        "item_id": entry.item_id,
        "hits": entry.hits,
        "ignored_at": entry.ignored_at.isoformat(),
        "last_hit_at": entry.last_hit_at.isoformat() if entry.last_hit_at else None,
    }


@register(app, "memory", "settled")
@run_async
async def list_memory(ctx: typer.Context, json_out: JsonFlag = False) -> None:
    """List the ignored texts that settle repeats without a model call (the verdict memory)."""
    hours = state(ctx).config().attention.verdict_memory_hours
    async with open_store(ctx) as store:
        st = await store.storytellers.get(selected(ctx))
        entries = await holding(store, st, hours, store.clock.now())
    if json_out:
        print_json(
            {"storyteller": st.name, **summary(entries, hours)}
            | {"entries": [_json(e) for e in entries]}
        )
        return
    say(summary_line(summary(entries, hours), st.id))
    kind = {"room_echo": "echo", "speech": "speech"}
    rows = [
        (
            e.id,
            kind.get(e.kind, e.kind) + (f" by #{e.speaker_id}" if e.speaker_id else ""),
            e.room_class,
            e.text,
            e.item_id,
            e.hits,
            e.ignored_at.strftime("%Y-%m-%d %H:%M"),
        )
        for e in entries
    ]
    if rows:
        table(f"Verdict memory of {st.name}", COLUMNS, rows)


@register(app, "forget", "clear")
@run_async
async def forget(
    ctx: typer.Context,
    ids: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="ID", help="Entries to clear (ids from `rule memory`).", show_default=False
        ),
    ] = None,
    everything: Annotated[
        bool, typer.Option("--all", help="Clear every entry of the storyteller.")
    ] = False,
) -> None:
    """Clear verdict-memory entries, so those texts are judged by the model again."""
    if bool(ids) == everything:
        raise ValidationError("Give the ids of the entries to clear, or --all (not both).")
    wanted = None if everything else {parse_id(i, "verdict memory entry") for i in ids or []}
    async with open_store(ctx) as store:
        st = await store.storytellers.get(selected(ctx))
        assert st.id is not None
        if wanted is not None:
            held = {e.id for e in await store.verdicts.list(st.id, limit=1_000_000)}
            if missing := sorted(wanted - held):
                raise NotFoundError(
                    f"Storyteller {st.name} has no verdict-memory entry "
                    f"{', '.join(map(str, missing))}; `ais set {st.id} rule memory` lists them."
                )
        cleared = await store.verdicts.clear(st.id, wanted)
    say(f"Cleared {cleared} verdict-memory entries of {st.name}; those texts are judged again.")
