"""How a storyteller directs: whether it plans, its pacing, its context providers, co-operation.

These settings are data on the storyteller (stored, exported in the XML, set with ``ais set``):

* `Direction.plans`: the storyteller is offered the plan and scene tools (``CreateStoryPlan``,
  ``UpdateStoryPlan``, ``ClaimScene``, ``ReleaseScene``); its plans are shown in its prompts.
* `Direction.cooperates`: its remit co-operates with other storytellers, so their scene claims
  do not stop its actions (`domain.scenes`).
* `Pacing`: how often it may act on the game, after RimWorld's event budgets and Left 4 Dead's
  director: a minimum gap between actions in one room, a daily allowance, quiet hours, and an
  intensity that rises with each action and event and decays with a half-life; past its peak
  the storyteller holds off until intensity has fallen to its relax level.
* `ContextProvider`: an ordered list of things that feed the prompt, each within its own token
  budget: static text, a prog's output, a read-only query over the daemon's database, the
  digest.

Every value is checked on construction; a `ValidationError` names the setting and the rule.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime, time
from enum import StrEnum

from storyteller_daemon.errors import ValidationError

MAX_PROVIDERS = 8
MAX_PROVIDER_TOKENS = 4000
MAX_PROVIDER_SOURCE_CHARS = 4000
PROVIDER_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,39}$")
_QUIET = re.compile(r"^([01]\d|2[0-3]):([0-5]\d)-([01]\d|2[0-3]):([0-5]\d)$")


class ProviderKind(StrEnum):
    """What a context provider reads."""

    TEXT = "text"
    PROG = "prog"
    QUERY = "query"
    DIGEST = "digest"

    @classmethod
    def parse(cls, value: str) -> ProviderKind:
        """A kind by name; `ValidationError` naming the choices otherwise."""
        try:
            return cls(value.strip().lower())
        except ValueError:
            raise ValidationError(
                f"'{value}' is not a provider kind; use text, prog, query or digest."
            ) from None


@dataclass(frozen=True)
class ContextProvider:
    """One source of the prompt's context.

    Attributes:
        name: its name in the prompt and the run record (lower case, digits, ``_``, ``-``).
        kind: what it reads.
        budget_tokens: the most of the prompt it may take.
        source: the text (``text``), the prog's id or name (``prog``), or one SELECT statement
            (``query``; named parameters ``:storyteller_id``, ``:room_id`` and ``:now``);
            blank for the digest.
    """

    name: str
    kind: ProviderKind
    budget_tokens: int = 300
    source: str = ""

    def __post_init__(self) -> None:
        if not PROVIDER_NAME.match(self.name):
            raise ValidationError(
                f"Provider name '{self.name}' is invalid: use 1-40 lower-case letters, digits, "
                "'_' or '-', starting with a letter or digit."
            )
        if not 1 <= self.budget_tokens <= MAX_PROVIDER_TOKENS:
            raise ValidationError(
                f"Provider '{self.name}': its budget must be 1-{MAX_PROVIDER_TOKENS} tokens, "
                f"not {self.budget_tokens}."
            )
        if len(self.source) > MAX_PROVIDER_SOURCE_CHARS:
            raise ValidationError(
                f"Provider '{self.name}': its source is over {MAX_PROVIDER_SOURCE_CHARS} "
                "characters."
            )
        if self.kind is ProviderKind.DIGEST and self.source.strip():
            raise ValidationError(f"Provider '{self.name}': a digest provider takes no source.")
        if self.kind is not ProviderKind.DIGEST and not self.source.strip():
            raise ValidationError(
                f"Provider '{self.name}': a {self.kind.value} provider needs a source "
                f"({_SOURCE_HINT[self.kind]})."
            )
        if self.kind is ProviderKind.QUERY:
            check_select(self.source, f"Provider '{self.name}'")


_SOURCE_HINT = {
    ProviderKind.TEXT: "the text",
    ProviderKind.PROG: "a prog's id or name",
    ProviderKind.QUERY: "one SELECT statement",
    ProviderKind.DIGEST: "",
}
_COMMENT = re.compile(r"--[^\n]*|/\*.*?\*/", re.DOTALL)
_FIRST_WORD = re.compile(r"^\s*([A-Za-z]+)")
QUERY_PARAMETERS = ("storyteller_id", "room_id", "now")
"""The named parameters a provider's query may use; the daemon binds them for each turn."""
_PARAMETER = re.compile(r"(?<![:\w]):([A-Za-z_]\w*)")


def check_select(query: str, where: str) -> str:
    """`query` if it is one SELECT statement with only known parameters.

    This is the first of two locks: the query also runs on a read-only connection with a time
    limit (`storage.provider_queries`), so a statement that passes here still cannot write.

    Raises:
        ValidationError: comments, more than one statement, anything but SELECT, or a parameter
            other than `QUERY_PARAMETERS`.
    """
    text = query.strip()
    if _COMMENT.search(text):
        raise ValidationError(f"{where}: a query may not hold comments.")
    body = text[:-1] if text.endswith(";") else text
    if ";" in body:
        raise ValidationError(f"{where}: a query must be a single statement.")
    first = _FIRST_WORD.match(body)
    if first is None or first.group(1).upper() != "SELECT":
        raise ValidationError(f"{where}: a query must be one SELECT statement.")
    unknown = sorted(set(_PARAMETER.findall(body)) - set(QUERY_PARAMETERS))
    if unknown:
        raise ValidationError(
            f"{where}: unknown query parameter :{unknown[0]}; use "
            + ", ".join(f":{p}" for p in QUERY_PARAMETERS)
            + "."
        )
    return body


@dataclass(frozen=True)
class Pacing:
    """How often a storyteller may act on the game (its prog calls); 0 turns a limit off.

    Attributes:
        room_gap_seconds: the least time between two of its actions in the same room.
        daily_actions: its actions in any 24 hours.
        quiet_hours: ``HH:MM-HH:MM`` (UTC; may wrap past midnight) when it does not act.
        intensity_peak: intensity at which it stops acting until intensity falls to
            `intensity_relax` (0: intensity is tracked and shown, never enforced).
        intensity_relax: where acting resumes after a peak.
        intensity_per_action: what each of its actions adds.
        intensity_per_event: what each event of its turns adds (players' activity).
        intensity_half_life_minutes: how fast intensity decays.
    """

    room_gap_seconds: int = 0
    daily_actions: int = 0
    quiet_hours: str = ""
    intensity_peak: float = 0.0
    intensity_relax: float = 0.0
    intensity_per_action: float = 1.0
    intensity_per_event: float = 0.25
    intensity_half_life_minutes: float = 30.0

    def __post_init__(self) -> None:
        for name in ("room_gap_seconds", "daily_actions"):
            if getattr(self, name) < 0:
                raise ValidationError(f"Pacing {name} must not be negative.")
        for name in ("intensity_peak", "intensity_relax", "intensity_per_action"):
            if getattr(self, name) < 0:
                raise ValidationError(f"Pacing {name} must not be negative.")
        if self.intensity_per_event < 0:
            raise ValidationError("Pacing intensity_per_event must not be negative.")
        if self.intensity_half_life_minutes <= 0:
            raise ValidationError("Pacing intensity_half_life_minutes must be above 0.")
        if self.intensity_peak and self.intensity_relax >= self.intensity_peak:
            raise ValidationError(
                "Pacing intensity_relax must be below intensity_peak, so a peak can end."
            )
        if self.quiet_hours and not _QUIET.match(self.quiet_hours):
            raise ValidationError(
                f"Pacing quiet_hours '{self.quiet_hours}' is not HH:MM-HH:MM (UTC, 24-hour)."
            )

    def quiet_at(self, moment: datetime) -> bool:
        """Whether `moment` (UTC) falls in the quiet hours (start included, end excluded)."""
        match = _QUIET.match(self.quiet_hours) if self.quiet_hours else None
        if match is None:
            return False
        start = time(int(match.group(1)), int(match.group(2)))
        end = time(int(match.group(3)), int(match.group(4)))
        now = moment.time().replace(second=0, microsecond=0, tzinfo=None)
        if start <= end:
            return start <= now < end
        return now >= start or now < end

    @property
    def limited(self) -> bool:
        """Whether any limit is set."""
        return bool(
            self.room_gap_seconds or self.daily_actions or self.quiet_hours or self.intensity_peak
        )


PACING_KEYS: dict[str, type] = {
    "room_gap_seconds": int,
    "daily_actions": int,
    "quiet_hours": str,
    "intensity_peak": float,
    "intensity_relax": float,
    "intensity_per_action": float,
    "intensity_per_event": float,
    "intensity_half_life_minutes": float,
}
"""Every pacing setting and its type (for ``ais set REF pacing KEY VALUE`` and the XML)."""


def pacing_value(key: str, text: str) -> int | float | str:
    """The value of pacing setting `key` written as `text`.

    Raises:
        ValidationError: an unknown key, or a value of the wrong type.
    """
    wanted = PACING_KEYS.get(key.strip().lower().replace("-", "_"))
    if wanted is None:
        raise ValidationError(f"'{key}' is not a pacing setting; use {', '.join(PACING_KEYS)}.")
    if wanted is str:
        return "" if text.strip().lower() in ("", "off", "none") else text.strip()
    try:
        return wanted(text.strip())  # type: ignore[no-any-return]
    except ValueError:
        kind = "a whole number" if wanted is int else "a number"
        raise ValidationError(f"Pacing {key} must be {kind}, not '{text}'.") from None


@dataclass(frozen=True)
class Direction:
    """A storyteller's direction settings (see the module's docstring)."""

    plans: bool = False
    cooperates: bool = False
    pacing: Pacing = field(default_factory=Pacing)
    providers: tuple[ContextProvider, ...] = ()

    def __post_init__(self) -> None:
        if len(self.providers) > MAX_PROVIDERS:
            raise ValidationError(f"A storyteller may have at most {MAX_PROVIDERS} providers.")
        names = [p.name for p in self.providers]
        if len(set(names)) != len(names):
            raise ValidationError("Two context providers share a name; names must be unique.")
        if sum(p.kind is ProviderKind.DIGEST for p in self.providers) > 1:
            raise ValidationError("At most one context provider may be the digest.")

    def provider(self, name: str) -> ContextProvider | None:
        """A provider by name."""
        return next((p for p in self.providers if p.name == name), None)


@dataclass(frozen=True)
class QueryRows:
    """What a provider's query returned: column names and rows of text (None for NULL)."""

    columns: tuple[str, ...]
    rows: tuple[tuple[str | None, ...], ...]
    truncated: bool = False
    """Whether more rows matched than were kept."""
