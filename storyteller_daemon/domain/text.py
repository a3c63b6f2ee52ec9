"""World text as the daemon keeps and shows it: markup stripping, field caps, speech lines.

Games write text for telnet clients, full of ANSI escapes, MXP tags and engine colour codes.
None of that means anything to a model or belongs in storage, so every piece of world text is
passed through `strip_markup` before it is stored or put into a prompt (FutureMUD forgot the
location and description lines, §9.20 of the reference; here there is one function for all).

`SpeechLine` is one remembered line of a room's speech history, cleaned the way FutureMUD's
``RecentSpeechContextEffect`` cleans it: markup stripped, trimmed, blank required fields shown
as ``(none)``, and long fields cut with ``...``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime

from world_adapter.events import Speech

# Markup that games put into text meant for telnet clients.
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-_]")
_MXP_ENCODED = re.compile(r"\x03/?[a-z]+[^\x04]*?\x04", re.IGNORECASE)  # FutureMUD's internal form
_MXP_TAG = re.compile(
    r"</?(?:send|a|b|i|u|s|em|strong|bold|italic|underline|strikeout|small|tt|c|color|colour|"
    r"font|h|high|h[1-6]|v|var|expire|version|support|image|sound|music|gauge|stat|frame|"
    r"dest|relocate|user|password|nobr|p|br|sbr|hr|!element|!el|!entity|!en|!attlist|!at)"
    r"(?:\s[^<>]*)?/?>",
    re.IGNORECASE,
)
_COLOUR = re.compile(r"##|#`\d{1,3};\d{1,3};\d{1,3};|#[0-9a-i]", re.IGNORECASE)
_CONTROL = re.compile(
    r"[\x00-\x08\x0b-\x1f\x7f"
    # Invisible and direction-changing characters, which can hide words from a reader or
    # reorder them: zero-width spaces and joiners, bidirectional embeddings, overrides and
    # isolates, word joiner and invisible operators, the byte-order mark, and tag characters.
    r"\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff\U000e0000-\U000e007f]"
)
_CAMEL_BREAK = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")

SPEECH_TEXT_LIMIT = 400
"""Longest stored speech field (FutureMUD's ``MaximumStoredTextLength``)."""
SPEECH_NAME_LIMIT = 100
"""Longest stored volume or target type: they are short engine names, kept in narrow columns."""
ELLIPSIS = "..."
BLANK_FIELD = "(none)"


def strip_markup(text: str, *, colour_codes: bool = True) -> str:
    """`text` without ANSI escapes, MXP tags, engine colour codes, control characters or
    invisible and bidirectional formatting characters.

    Engine colour codes follow FutureMUD: ``#`` and one of ``0-9``/``a-i`` sets a colour,
    ``#`r;g;b;`` an RGB colour, and ``##`` stands for a literal ``#``. Pass
    ``colour_codes=False`` for text the engine composed around ids (``item #88123``), where
    ``#`` and a digit is not a colour.
    """
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = _MXP_ENCODED.sub("", text)
    text = _ANSI.sub("", text)
    text = _CONTROL.sub("", text)
    text = _MXP_TAG.sub("", text)
    if not colour_codes:
        return text
    return _COLOUR.sub(lambda m: "#" if m.group(0) == "##" else "", text)


def one_line(text: str, *, colour_codes: bool = True) -> str:
    """Stripped text with all whitespace runs collapsed to single spaces."""
    return " ".join(strip_markup(text, colour_codes=colour_codes).split())


def split_camel(text: str) -> str:
    """``AssaultWithWeapon`` → ``Assault With Weapon``."""
    return _CAMEL_BREAK.sub(" ", text)


def cap(text: str, limit: int) -> str:
    """`text` cut to at most `limit` characters, ending in ``...`` when something was cut.

    FutureMUD appends the ellipsis after 400 characters; here it counts towards the limit so a
    capped field still fits a column of that width.
    """
    if len(text) <= limit:
        return text
    if limit <= len(ELLIPSIS):
        return text[: max(limit, 0)]
    return text[: limit - len(ELLIPSIS)] + ELLIPSIS


def clean_field(text: str | None, limit: int = SPEECH_TEXT_LIMIT) -> str:
    """One line of stripped, capped text; blank becomes ``(none)``."""
    cleaned = one_line(text or "")
    return cap(cleaned, limit) if cleaned else BLANK_FIELD


def clean_optional_field(text: str | None, limit: int = SPEECH_TEXT_LIMIT) -> str | None:
    """Like `clean_field`, but blank becomes None."""
    cleaned = one_line(text or "")
    return cap(cleaned, limit) if cleaned else None


def as_utc(moment: datetime) -> datetime:
    """`moment` in UTC; a naive time is taken to be UTC already."""
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


@dataclass(frozen=True)
class SpeechLine:
    """One line of a room's speech history. Build it with `heard` so its fields are clean.

    Attributes:
        occurred_at: when the game heard it (UTC).
        volume: the engine's volume name, e.g. ``Normal`` or ``VeryLoud``.
        target_kind: what the target is (``character``, ``item``...), when there is a target.
    """

    cell_id: int
    occurred_at: datetime
    speaker_id: int
    speaker_name: str
    message: str
    volume: str
    language: str
    accent: str
    target_id: int | None = None
    target_kind: str | None = None
    target_description: str | None = None

    @classmethod
    def heard(
        cls,
        *,
        cell_id: int,
        occurred_at: datetime,
        speaker_id: int,
        speaker_name: str,
        message: str,
        volume: str = "Normal",
        language: str = "",
        accent: str = "",
        target_id: int | None = None,
        target_kind: str | None = None,
        target_description: str | None = None,
    ) -> SpeechLine:
        """A line with every text field stripped of markup, put on one line and capped."""
        return cls(
            cell_id=cell_id,
            occurred_at=as_utc(occurred_at),
            speaker_id=speaker_id,
            speaker_name=clean_field(speaker_name),
            message=clean_field(message),
            volume=clean_field(volume, SPEECH_NAME_LIMIT),
            language=clean_field(language),
            accent=clean_field(accent),
            target_id=target_id,
            target_kind=clean_optional_field(target_kind, SPEECH_NAME_LIMIT),
            target_description=clean_optional_field(target_description),
        )

    @classmethod
    def from_event(cls, event: Speech) -> SpeechLine:
        """The history line of a speech event."""
        return cls.heard(
            cell_id=event.cell_id,
            occurred_at=event.occurred_at,
            speaker_id=event.speaker_id,
            speaker_name=event.speaker_name,
            message=event.text,
            volume=event.volume,
            language=event.language,
            accent=event.accent,
            target_id=event.target_id,
            target_kind=event.target_kind,
            target_description=event.target_description,
        )


_MASS_MENTION = re.compile(r"@(everyone|here)", re.IGNORECASE)
"""@everyone and @here ping a whole chat channel; ``<@id>``, ``<@!id>``, ``<@&role>`` ping
people and roles."""


def defuse_mentions(text: str, at: str) -> str:
    """`text` whose chat mentions ping nobody: the ``@`` of each becomes `at`."""
    text = _MASS_MENTION.sub(lambda m: at + m.group(1), text)
    return text.replace("<@", "<" + at)


def outbound_text(text: str) -> str:
    """Text a prog shows players: markup stripped, and no mass or direct chat mentions.

    Many games relay their channels to chat services, where ``@everyone``, ``@here`` and
    ``<@id>`` ping people; the words stay, the pings go.
    """
    return defuse_mentions(strip_markup(text), "")
