"""What the offline stand-in reads in a request: the user messages, the lines of an attention
batch, an event prompt's text, and the short title it gives a situation about it."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping

from storyteller_daemon.agent.models.interface import ResponseItem

_EVENT_HEADERS = ("Event Text:", "Spoken Text:")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s")
_TITLE_LIMIT = 80
_BATCH_LINE = re.compile(r"^\[(\d+)\] (.*)$", re.MULTILINE)


def batch_lines(text: str) -> list[tuple[str, str]]:
    """The (id, line) of every event of an attention batch."""
    return [(m.group(1), m.group(2)) for m in _BATCH_LINE.finditer(text)]


def last_quoted(line: str) -> str:
    """The event's own text: the line's last JSON string (not the room or speaker names)."""
    start = line.rfind(': "')
    if start < 0:
        return line
    try:
        value = json.loads(line[start + 2 :])
    except json.JSONDecodeError:
        return line
    return value if isinstance(value, str) else line


def user_texts(items: Iterable[ResponseItem]) -> list[str]:
    """The text of each user message, in order."""
    texts: list[str] = []
    for item in items:
        if item.get("role") != "user" or item.get("type", "message") != "message":
            continue
        content = item.get("content")
        if isinstance(content, str):
            texts.append(content)
        elif isinstance(content, list):
            parts = [
                part["text"]
                for part in content
                if isinstance(part, Mapping) and isinstance(part.get("text"), str)
            ]
            texts.append("\n".join(parts))
    return texts


def event_text(prompt: str) -> str:
    """The text after an ``Event Text:``/``Spoken Text:`` header, up to the next blank line."""
    lines = prompt.splitlines()
    for index, line in enumerate(lines):
        stripped = line.strip()
        header = next((h for h in _EVENT_HEADERS if stripped.startswith(h)), None)
        if header is None:
            continue
        collected = [unquote(stripped[len(header) :])]
        for following in lines[index + 1 :]:
            if not following.strip() or following.startswith("<<end world-text "):
                break
            collected.append(unquote(following))
        return " ".join(part for part in collected if part)
    return ""


_FENCE_MARKER = re.compile(r"<<(end )?world-text [0-9a-f]+( from [^>]*)?>>")


def unquote(line: str) -> str:
    """A line of world text; the markers of the fence around it count as blank."""
    text = line.strip()
    return "" if _FENCE_MARKER.fullmatch(text) else text


_TITLE_WORDS = 4
"""Words of the event a title keeps: fewer than the policy's run of copied words (6), so the
stand-in's titles are its own words, as a storyteller's must be (`dictated`)."""


def title(event_text: str, room_id: int) -> str:
    if not event_text:
        return f"Something stirs in room #{room_id}"
    sentence = _SENTENCE_END.split(event_text, maxsplit=1)[0].split()
    if len(sentence) > _TITLE_WORDS:
        return truncate(f"In room #{room_id}: {' '.join(sentence[:_TITLE_WORDS])}…", _TITLE_LIMIT)
    return truncate(" ".join(sentence), _TITLE_LIMIT)


def truncate(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"
