"""The room tap: turns what reaches a room into bridge events.

Use `StorytellerRoomMixin` in the game's room typeclass (before ``DefaultRoom``) and
`StorytellerCharacterMixin` in its character typeclass. Every ``msg_contents`` call on a room —
``say``, ``pose``/``emote``, arrivals and departures, ``get``/``drop``, builder echoes, prog echoes
— becomes one event, rendered once for a neutral observer (the room itself as the looker). The
character mixin adds "X has entered the game" / "X has left the game", which Evennia sends object
by object (``for_contents``) rather than through the room.

Messages sent straight to one object (``obj.msg()``: whispers, a speaker's own "You say",
command feedback) are not room events and are not tapped.

A failure in the tap is logged and swallowed: the game must never break because the bridge did.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from evennia.objects.objects import _MSG_CONTENTS_PARSER
from evennia.utils import logger
from evennia.utils.ansi import strip_ansi

from . import state
from .worldview import PLAYER_TAG, is_character, zone_id_of

MAX_TEXT_CHARS = 2000
"""Longer room messages are cut (with an ellipsis) before they enter the stream."""

_prog_depth = 0


@contextlib.contextmanager
def prog_origin() -> Iterator[None]:
    """Mark room messages sent inside this block as effects of a storyteller prog.

    The bridge wraps every prog call in it, so the daemon can tell its own actions from the
    world's. A prog that sends messages later (from a Deferred or a delay) can use it too.
    """
    global _prog_depth
    _prog_depth += 1
    try:
        yield
    finally:
        _prog_depth -= 1


def _clip(text: str) -> str:
    text = strip_ansi(text).strip()
    return text if len(text) <= MAX_TEXT_CHARS else text[: MAX_TEXT_CHARS - 1] + "…"


def render_for_room(room: Any, text: Any, from_obj: Any, mapping: dict[str, Any] | None) -> str:
    """`text` (a string or an ``(string, kwargs)`` out-command) as a neutral onlooker sees it."""
    message = text[0] if isinstance(text, tuple | list) and text else text
    if message is None:
        return ""
    mapping = dict(mapping or {})
    you = from_obj or room
    mapping.setdefault("you", you)
    rendered = _MSG_CONTENTS_PARSER.parse(
        str(message), raise_errors=False, return_string=True, caller=you, receiver=room,
        mapping=mapping,
    )  # fmt: skip
    with contextlib.suppress(KeyError, ValueError, IndexError):
        rendered = rendered.format_map(
            {
                key: obj.get_display_name(looker=room)
                if hasattr(obj, "get_display_name")
                else str(obj)
                for key, obj in mapping.items()
            }
        )
    return _clip(rendered)


def message_type(text: Any) -> str:
    """The ``type`` of an out-command (``say``, ``pose``, ``traverse``...), or ``""``."""
    if isinstance(text, tuple | list) and len(text) > 1 and isinstance(text[1], dict):
        return str(text[1].get("type") or "")
    return ""


def room_event(
    room: Any, text: Any, from_obj: Any, mapping: dict[str, Any] | None
) -> dict[str, Any] | None:
    """The event fields for one ``msg_contents`` call, or None when there is nothing to say.

    A ``say`` by a character is a ``speech`` event with the raw words; everything else is a
    ``room_echo`` with the text a neutral onlooker sees.
    """
    rendered = render_for_room(room, text, from_obj, mapping)
    if not rendered:
        return None
    source = from_obj if is_character(from_obj) else None
    event: dict[str, Any] = {
        "cell_id": room.id,
        "zone_id": zone_id_of(room),
        "origin": "prog" if _prog_depth else "world",
    }
    speech = (mapping or {}).get("speech")
    if message_type(text) == "say" and source is not None and isinstance(speech, str):
        return {
            **event,
            "kind": "speech",
            "speaker_id": source.id,
            "speaker_name": _clip(source.key),
            "text": _clip(speech),
        }
    return {
        **event,
        "kind": "room_echo",
        "text": rendered,
        "source_character_id": source.id if source is not None else None,
    }


def record(event: dict[str, Any] | None) -> None:
    """Append an event to the Server process's event log."""
    if event is not None:
        state.event_log().append(event)


class StorytellerRoomMixin:
    """Room typeclass mixin: every ``msg_contents`` is also a bridge event."""

    def msg_contents(
        self,
        text: Any = None,
        exclude: Any = None,
        from_obj: Any = None,
        mapping: dict[str, Any] | None = None,
        raise_funcparse_errors: bool = False,
        **kwargs: Any,
    ) -> None:
        # Evennia adds "you" to the mapping it is given: keep the caller's dict untouched.
        seen_mapping = dict(mapping) if mapping else None
        super().msg_contents(
            text=text,
            exclude=exclude,
            from_obj=from_obj,
            mapping=dict(mapping) if mapping else None,
            raise_funcparse_errors=raise_funcparse_errors,
            **kwargs,
        )
        try:
            record(room_event(self, text, from_obj, seen_mapping))
        except Exception:
            logger.log_trace("storyteller bridge: the room tap failed")


class StorytellerCharacterMixin:
    """Character typeclass mixin: logging in and out are room events too, and a character once
    puppeted by an account is marked as a player character."""

    def at_post_puppet(self, **kwargs: Any) -> None:
        super().at_post_puppet(**kwargs)
        # Evennia forgets the account once a character is unpuppeted: remember it is a player's.
        self.tags.add(PLAYER_TAG[0], category=PLAYER_TAG[1])
        self._storyteller_presence("{name} has entered the game.")

    def at_post_unpuppet(self, account: Any = None, session: Any = None, **kwargs: Any) -> None:
        # Evennia stows the character away (location None) once its last session is gone, so
        # read the room first.
        room = getattr(self, "location", None)
        super().at_post_unpuppet(account=account, session=session, **kwargs)
        if room is not None and getattr(self, "location", None) is None:
            self._storyteller_presence("{name} has left the game.", room)

    def _storyteller_presence(self, template: str, room: Any = None) -> None:
        try:
            room = room or getattr(self, "location", None)
            if not isinstance(room, StorytellerRoomMixin):
                return
            text = template.format(name=self.get_display_name(looker=room))
            record(
                {
                    "kind": "room_echo",
                    "cell_id": room.id,
                    "zone_id": zone_id_of(room),
                    "origin": "world",
                    "text": _clip(text),
                    "source_character_id": self.id,
                }
            )
        except Exception:
            logger.log_trace("storyteller bridge: the presence tap failed")
