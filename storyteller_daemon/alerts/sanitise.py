"""Making text safe to post in an admins' Discord channel.

Alert text can quote world text and model output, so it is treated like player input: terminal
and MUD markup is removed, nothing can ping anyone, nothing can break out of Discord formatting,
and the length is capped. The rules follow FutureMUD's ``SanitiseDiscordAdminAlert``.
"""

from __future__ import annotations

import re

MAX_ALERT_CHARS = 3_500
TRUNCATION_MARKER = "\n[Alert truncated.]"
ZERO_WIDTH_SPACE = "\u200b"

# Not `domain.text.strip_markup`: that one also removes engine colour codes (``#1``), which would
# eat the ids in the daemon's own messages ("room #101").
# ANSI escapes: CSI sequences (colours, cursor moves), OSC strings, and two-byte escapes.
_ANSI_ESCAPE = re.compile(
    r"\x1b(?:\[[\x30-\x3f]*[\x20-\x2f]*[\x40-\x7e]"  # CSI
    r"|\][^\x07\x1b]*(?:\x07|\x1b\\)?"  # OSC
    r"|[\x40-\x5f])"  # two-byte
)
# MXP as FutureMUD stores it internally (0x03 tag 0x04), then MXP elements as clients see them.
_MXP_INTERNAL = re.compile(r"\x03[^\x04]*\x04")
_MXP_ELEMENT = re.compile(
    r"</?(?:send|a|b|i|u|s|c|h|v|color|colour|font|high|var|expire|image|sound|music|gauge"
    r"|stat|frame|dest|nobr|p|br|sbr|hr|!el(?:ement)?|!en(?:tity)?)(?:\s[^<>]*)?>",
    re.IGNORECASE,
)
_CONTROL_CHARS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
# @everyone / @here ping a whole channel; <@id>, <@!id>, <@&role> ping people and roles.
_MASS_MENTION = re.compile(r"@(everyone|here)", re.IGNORECASE)


def strip_markup(text: str) -> str:
    """`text` without ANSI escapes, MXP markup or control characters, with ``\\n`` newlines."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = _MXP_INTERNAL.sub("", text)
    text = _ANSI_ESCAPE.sub("", text)
    text = _MXP_ELEMENT.sub("", text)
    return _CONTROL_CHARS.sub("", text)


def neutralise(text: str) -> str:
    """`text` that can neither mention anyone nor open or close a Discord code block."""
    text = text.replace("```", "'''")
    text = _MASS_MENTION.sub(lambda m: "@" + ZERO_WIDTH_SPACE + m.group(1), text)
    return text.replace("<@", "<@" + ZERO_WIDTH_SPACE)


def cap(text: str, limit: int = MAX_ALERT_CHARS, marker: str = TRUNCATION_MARKER) -> str:
    """`text` cut to at most `limit` characters, ending with `marker` when it was cut."""
    if len(text) <= limit:
        return text
    return text[: max(0, limit - len(marker))].rstrip() + marker


def sanitise(text: str, limit: int = MAX_ALERT_CHARS, marker: str = TRUNCATION_MARKER) -> str:
    """Markup stripped, mentions and code fences neutralised, length capped."""
    return cap(neutralise(strip_markup(text)).strip(), limit, marker)


def exception_summary(exc: BaseException | type[BaseException]) -> str:
    """The sentence an alert shows for an exception: its type only.

    Exception messages can carry prompts, player text or credentials, so the message and the
    traceback stay in the daemon's log.
    """
    kind = exc if isinstance(exc, type) else type(exc)
    return f"Failed with {kind.__name__}. Full details were written to the daemon log."
