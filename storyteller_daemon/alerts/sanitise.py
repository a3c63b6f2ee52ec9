"""Making text safe to post in an admins' Discord channel.

Alert text can quote world text and model output, so it is treated like player input: terminal
and MUD markup is removed, nothing can ping anyone, nothing can break out of Discord formatting,
and the length is capped. The rules follow FutureMUD's ``SanitiseDiscordAdminAlert``.
"""

from __future__ import annotations

from storyteller_daemon.domain import text as domain_text

MAX_ALERT_CHARS = 3_500
TRUNCATION_MARKER = "\n[Alert truncated.]"
ZERO_WIDTH_SPACE = "\u200b"


def strip_markup(text: str) -> str:
    """`text` without ANSI escapes, MXP markup or control characters, with ``\n`` newlines.

    Engine colour codes are kept: ``#`` and a digit in the daemon's own messages is an id
    ("room #101"), not a colour.
    """
    return domain_text.strip_markup(text, colour_codes=False)


def neutralise(text: str) -> str:
    """`text` that can neither mention anyone nor open or close a Discord code block."""
    text = text.replace("```", "'''")
    return domain_text.defuse_mentions(text, "@" + ZERO_WIDTH_SPACE)


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
