"""Attention rules: a storyteller's own deterministic decisions, applied before any model call.

An admin knows things the attention model has to guess: that the bell in the temple square is
never news, or that anything said in the harbourmaster's office matters. A rule matches events
by kind, room and a text pattern and either ignores them or always attends to them, without a
model call. A rule with a cooldown fires at most once per cooldown (per room); matches inside
the cooldown are left to the attention model as usual. Every event a rule settles is recorded
with the rule's name, so no rule hides an event without a trace.

Rules are checked in order; the first that matches decides.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import timedelta
from enum import StrEnum

from storyteller_daemon.errors import ValidationError

RULE_KINDS = frozenset({"room_echo", "speech", "crime"})
"""The event kinds a rule can match (those that pass the attention gate)."""
MAX_PATTERN_CHARS = 200
NAME_PATTERN = re.compile(r"^[a-z0-9][a-z0-9_-]{0,39}$")


class RuleAction(StrEnum):
    """What a matching rule does."""

    IGNORE = "ignore"
    ATTEND = "attend"

    @classmethod
    def parse(cls, value: str) -> RuleAction:
        """Parse ``ignore|attend`` (any case); raise `ValidationError` otherwise."""
        try:
            return cls(value.strip().lower())
        except ValueError:
            raise ValidationError(
                f"'{value}' is not a rule action; use ignore or attend."
            ) from None


@dataclass(frozen=True)
class AttentionRule:
    """One rule.

    Attributes:
        name: short, unique per storyteller (lower case, digits, ``-`` and ``_``); it names the
            rule in work items, metrics and logs.
        action: ignore, or always attend.
        kinds: event kinds it matches (empty: every kind a rule can match).
        rooms: room ids it matches (empty: every room).
        pattern: a case-insensitive regular expression searched in the event's text ("" matches
            any text; a crime's text is its crime type).
        cooldown: after it fires in a room, matches in that room are judged by the model until
            this much time has passed (zero: no cooldown).
    """

    name: str
    action: RuleAction
    kinds: frozenset[str] = frozenset()
    rooms: frozenset[int] = frozenset()
    pattern: str = ""
    cooldown: timedelta = timedelta(0)

    def __post_init__(self) -> None:
        if not NAME_PATTERN.match(self.name):
            raise ValueError(
                f"rule name {self.name!r} must be 1-40 lower-case letters, digits, '-' or '_'"
            )
        unknown = self.kinds - RULE_KINDS
        if unknown:
            raise ValueError(
                f"rule {self.name}: unknown kind {sorted(unknown)[0]!r} "
                f"(expected {', '.join(sorted(RULE_KINDS))})"
            )
        if len(self.pattern) > MAX_PATTERN_CHARS:
            raise ValueError(
                f"rule {self.name}: pattern longer than {MAX_PATTERN_CHARS} characters"
            )
        try:
            re.compile(self.pattern, re.IGNORECASE)
        except re.error as exc:
            raise ValueError(
                f"rule {self.name}: pattern is not a regular expression: {exc}"
            ) from None
        if self.cooldown < timedelta(0):
            raise ValueError(f"rule {self.name}: cooldown must not be negative")

    def matches(self, kind: str, room_id: int | None, text: str) -> bool:
        """Whether the rule covers an event (cooldown aside)."""
        if self.kinds and kind not in self.kinds:
            return False
        if self.rooms and room_id not in self.rooms:
            return False
        return not self.pattern or re.search(self.pattern, text, re.IGNORECASE) is not None


class RuleBook:
    """A storyteller's rules with their cooldowns (seconds on a monotonic clock)."""

    def __init__(self) -> None:
        self._fired: dict[tuple[str, int | None], float] = {}

    def decide(
        self,
        rules: tuple[AttentionRule, ...],
        kind: str,
        room_id: int | None,
        text: str,
        now: float,
    ) -> AttentionRule | None:
        """The first rule that matches and is not cooling down, or None (the model judges)."""
        for rule in rules:
            if not rule.matches(kind, room_id, text):
                continue
            key = (rule.name, room_id)
            last = self._fired.get(key)
            seconds = rule.cooldown.total_seconds()
            if seconds > 0 and last is not None and now - last < seconds:
                return None
            self._fired[key] = now
            return rule
        return None
