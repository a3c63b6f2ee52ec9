"""What starts a storyteller turn, and the outcome of one."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum

from storyteller_daemon.domain.storytellers import Heartbeat, Scope, Storyteller
from storyteller_daemon.domain.tool_names import ToolProfile
from world_adapter.events import (
    Crime,
    EventKind,
    RoomEcho,
    Speech,
    StateChange,
    WorldEvent,
)


class TriggerKind(StrEnum):
    """The six ways a turn starts."""

    ROOM_ECHO = "room_echo"
    SPEECH = "speech"
    CRIME = "crime"
    STATE = "state"
    HEARTBEAT = "heartbeat"
    DIRECT = "direct"


@dataclass(frozen=True)
class Trigger:
    """Everything a turn needs to know about why it runs.

    The rules per kind (FutureMUD's): room echoes and speech pass the attention gate, use the
    event-focused profile and offer echo-only tools; crimes pass the gate, event-focused, no
    echo tools; state changes skip the gate, full profile; heartbeats and direct invocations
    skip the gate, full profile; heartbeats use the time scope (model, effort, system prompt).
    """

    kind: TriggerKind
    occurred_at: datetime
    event: WorldEvent | None = None
    heartbeat: Heartbeat | None = None
    text: str = ""
    """Direct-invocation text."""
    room: int | None = None
    """The room a direct invocation names (an event's room is its own)."""
    attention_reason: str | None = None
    involved: frozenset[int] = field(default=frozenset())
    coalesced: tuple[Trigger, ...] = ()
    """Further triggers of the same kind handled in the same turn (a burst), oldest first."""

    @property
    def all(self) -> tuple[Trigger, ...]:
        """This trigger and the ones coalesced into it, oldest first."""
        return (self, *self.coalesced)

    @property
    def label(self) -> str:
        """The trigger's name in prompts, logs and run records."""
        if self.kind is TriggerKind.HEARTBEAT and self.heartbeat is not None:
            return f"Heartbeat {self.heartbeat.value}"
        if self.kind is TriggerKind.STATE and isinstance(self.event, StateChange):
            return f"Character State {self.event.state.value}"
        return {
            TriggerKind.ROOM_ECHO: "Room Echo",
            TriggerKind.SPEECH: "Character Speaks",
            TriggerKind.CRIME: "Character Crime",
            TriggerKind.STATE: "Character State",
            TriggerKind.HEARTBEAT: "Heartbeat",
            TriggerKind.DIRECT: "Direct Invocation",
        }[self.kind]

    @property
    def scope(self) -> Scope:
        """Heartbeats use the time scope; everything else the event scope."""
        return Scope.TIME if self.kind is TriggerKind.HEARTBEAT else Scope.EVENT

    @property
    def profile(self) -> ToolProfile:
        """Which built-ins are offered."""
        if self.kind in (TriggerKind.ROOM_ECHO, TriggerKind.SPEECH, TriggerKind.CRIME):
            return ToolProfile.EVENT_FOCUSED
        return ToolProfile.FULL

    @property
    def include_echo_tools(self) -> bool:
        """Echo-only custom tools are offered on room echoes and speech only."""
        return self.kind in (TriggerKind.ROOM_ECHO, TriggerKind.SPEECH)

    @property
    def needs_attention(self) -> bool:
        """Room echoes, speech and crimes pass the attention gate first."""
        return self.kind in (TriggerKind.ROOM_ECHO, TriggerKind.SPEECH, TriggerKind.CRIME)

    @property
    def carries_player_text(self) -> bool:
        """Whether text players write reaches the turn: speech and room echoes (emotes, says,
        poses) carry it, here or in a coalesced trigger; crimes, state changes, heartbeats and
        direct invocations carry only the game's own fields and the admins' words."""
        return any(t.kind in (TriggerKind.ROOM_ECHO, TriggerKind.SPEECH) for t in self.all)

    @property
    def player_words(self) -> list[str]:
        """The texts players wrote that this trigger (and those coalesced into it) carries: what
        was said and who said it (a name is a player's words too), the echoes a character
        caused, a crime's words beyond its type."""
        found: list[str] = []
        for trigger in self.all:
            event = trigger.event
            if isinstance(event, Speech):
                found += [event.text, event.speaker_name, event.target_description or ""]
            elif isinstance(event, RoomEcho) and event.source_character_id is not None:
                found.append(event.text)
            elif isinstance(event, Crime):
                found.append(event.third_party or "")
        return [text for text in found if text.strip()]

    @property
    def room_id(self) -> int | None:
        """The room the trigger happened in, if any."""
        return self.event.cell_id if self.event is not None else self.room

    @property
    def character_ids(self) -> frozenset[int]:
        """Characters the trigger (and those coalesced into it) concerns (situation scope)."""
        base = self.event.involved_character_ids if self.event is not None else frozenset()
        for other in self.coalesced:
            base |= other.character_ids
        return base | self.involved

    @classmethod
    def from_event(cls, event: WorldEvent) -> Trigger:
        """The trigger for a world event."""
        kind = {
            EventKind.ROOM_ECHO: TriggerKind.ROOM_ECHO,
            EventKind.SPEECH: TriggerKind.SPEECH,
            EventKind.CRIME: TriggerKind.CRIME,
            EventKind.STATE_CHANGE: TriggerKind.STATE,
        }[event.kind]
        assert isinstance(event, RoomEcho | Speech | Crime | StateChange)
        return cls(kind=kind, occurred_at=event.occurred_at, event=event)


def turn_key(storyteller: Storyteller, trigger: Trigger) -> str:
    """A key that is the same every time the same trigger is handled for the same storyteller.

    Prog calls derive their idempotency keys from it, so re-running a turn after a crash or a
    redelivered event never acts twice.
    """
    if trigger.event is not None:
        return f"st{storyteller.id}:event:{trigger.event.cursor}"
    stamp = trigger.occurred_at.isoformat()
    if trigger.kind is TriggerKind.HEARTBEAT and trigger.heartbeat is not None:
        return f"st{storyteller.id}:heartbeat:{trigger.heartbeat.value}:{stamp}"
    digest = hashlib.sha256(trigger.text.encode()).hexdigest()[:16]
    return f"st{storyteller.id}:{trigger.kind.value}:{stamp}:{digest}"
