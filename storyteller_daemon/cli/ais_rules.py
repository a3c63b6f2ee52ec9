"""``storyteller ais set REF rule …``: attention rules, the storyteller's own decisions.

A rule ignores, or always attends to, the events it matches without asking the attention model
(`domain.attention_rules`). Rules are checked in order and the first that matches decides, so a
new rule goes last; to move one, remove it and add it again. FutureMUD has no such setting.
The same group lists and clears the verdict memory (`ais_settled`).
"""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import timedelta
from typing import Annotated

import typer

from storyteller_daemon.cli.ais_io import command_group, parse_duration, parse_id, register
from storyteller_daemon.cli.ais_set import apply_change
from storyteller_daemon.cli.ais_view import describe_rule
from storyteller_daemon.cli.common import run_async
from storyteller_daemon.domain.attention_rules import RULE_KINDS, AttentionRule, RuleAction
from storyteller_daemon.domain.settings import Storyteller
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
