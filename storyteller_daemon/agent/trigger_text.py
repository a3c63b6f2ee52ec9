"""Trigger rendering: the lines that tell the model what happened, with FutureMUD's fields.

`TriggerRenderer` writes the event part of a turn prompt for each trigger kind (room echo,
speech, crime, state change, heartbeat, direct invocation; a coalesced turn lists each of its
events), and the one-line form of an event that an attention batch judges. It looks names and
descriptions up in the world; world text is quoted or fenced (`fencing`). A speech prompt ends
with the room's recent speech when the storyteller asks for it (``speech_context_count``), in
FutureMUD's "Recent Speech Context" line format. Failed look-ups are logged under the prompt
builder's logger.
"""

from __future__ import annotations

import logging

from storyteller_daemon.agent.fencing import Fence, quoted
from storyteller_daemon.agent.ports import SpeechHistory
from storyteller_daemon.agent.trigger import Trigger, TriggerKind
from storyteller_daemon.domain.storytellers import Storyteller
from storyteller_daemon.domain.text import SpeechLine, as_utc, one_line, split_camel, strip_markup
from world_adapter.errors import WorldCommandError
from world_adapter.events import Crime, RoomEcho, Speech, StateChange
from world_adapter.protocol import WorldClient

log = logging.getLogger("storyteller_daemon.agent.prompts")

SPEECH_CONTEXT_HEADER = "Recent Speech Context (oldest to newest):"
NO_DIRECT_TARGET = "No direct target"


def speech_context_line(line: SpeechLine) -> str:
    """One line of the recent-speech context, in FutureMUD's format.

    ``- [{time}] {speaker} -> {target or "No direct target"}{ ({type} #{id})}: "{message}"
    ({volume}, {language}, {accent})``; ids are printed without thousands separators.
    """
    target = one_line(line.target_description or "") or NO_DIRECT_TARGET
    if line.target_id is not None:
        target += f" ({one_line(line.target_kind or '') or 'unknown'} #{line.target_id})"
    return (
        f"- [{as_utc(line.occurred_at).isoformat()}] {one_line(line.speaker_name)} -> {target}: "
        f"{quoted(line.message)} ({split_camel(one_line(line.volume))}, "
        f"{one_line(line.language)}, {one_line(line.accent)})"
    )


def heard_before(lines: list[SpeechLine], current: SpeechLine) -> list[SpeechLine]:
    """`lines` (oldest first) without `current` and anything recorded after it.

    History is written in the background, so when a prompt is built the current speech may or
    may not be stored yet, and later speech with the same timestamp may already be.
    """
    for index in range(len(lines) - 1, -1, -1):
        if lines[index] == current:
            return lines[:index]
    return lines


def _event_id(trigger: Trigger) -> str:
    """How a turn prompt names one of its events: the world's cursor."""
    if trigger.event is not None:
        return f"event {trigger.event.cursor}"
    return trigger.label


class TriggerRenderer:
    """Writes triggers as prompt lines, looking names up in the world.

    Args:
        world: the game, for room and character names and descriptions.
        speech: the rooms' speech history, for the recent-speech context of speech prompts
            (None: speech prompts carry no context).
    """

    def __init__(self, world: WorldClient, speech: SpeechHistory | None = None) -> None:
        self._world = world
        self._speech = speech

    async def _burst_lines(
        self, storyteller: Storyteller, trigger: Trigger, fence: Fence
    ) -> list[str]:
        """Every event of a coalesced turn, oldest first, each with its id and reason."""
        events = trigger.all
        lines = [
            f"{len(events)} related events happened in rooms you watch, judged together; "
            "handle them as one situation where they belong together.",
        ]
        for index, each in enumerate(events, start=1):
            event_lines, _ = await self._event_lines(storyteller, each, "", fence)
            lines += ["", f"Event E{index} ({_event_id(each)}):", *event_lines[1:]]
            if each.attention_reason and each.attention_reason.strip():
                lines.append(f"Attention reason: {quoted(each.attention_reason)}")
        return lines

    async def attention_line(self, trigger: Trigger) -> str:
        """One event of an attention batch, on one line, world text quoted.

        The room is named by id (`attention_context` lists the names); a room echo names its
        source only when it is known and the text does not start with its name already. Times and
        character ids are left out: the lines are in order, and names are what the remit is about.
        """
        event = trigger.event
        if event is None:  # other kinds skip the gate; should one be judged, it gets a line
            text = f": {quoted(trigger.text)}" if trigger.text else ""
            return f"{trigger.label}{text}"
        head = f"#{event.cell_id}"  # oldest first; times and character ids only cost tokens here
        if isinstance(event, RoomEcho):
            source = ""
            if event.source_character_id is not None:
                # An unknown source adds nothing the line does not say already.
                name = await self._name(event.source_character_id)
                if name and not one_line(event.text).startswith(name):
                    source = f" by {quoted(name)}"
            return f"{head} echo{source}: {quoted(event.text)}"
        if isinstance(event, Speech):
            volume = one_line(event.volume)
            how = "says" if volume.casefold() == "normal" else split_camel(volume).lower()
            target = ""
            if event.target_id is not None or event.target_description:
                target = f" to {quoted(event.target_description or 'someone')}"
            return f"{head} {quoted(event.speaker_name)} {how}{target}: {quoted(event.text)}"
        if isinstance(event, Crime):
            victim = ""
            if event.victim_id is not None:
                victim = f" against {await self._named(event.victim_id)}"
            return (
                f"{head} crime: {split_camel(one_line(event.crime_type))} by "
                f"{await self._named(event.criminal_id)}{victim}, authority "
                f"{quoted(event.legal_authority)}, {event.witness_count} witnesses"
            )
        return f"{head} {trigger.label}"

    async def _room_name(self, room_id: int) -> str:
        try:
            room = await self._world.room(room_id)
        except WorldCommandError:
            room = None
        return quoted(room.name) if room is not None else "(unknown room)"

    async def _name(self, character_id: int) -> str | None:
        try:
            info = await self._world.character(character_id)
        except WorldCommandError:
            info = None
        return one_line(info.name) if info is not None else None

    async def _named(self, character_id: int) -> str:
        name = await self._name(character_id)
        return quoted(name) if name is not None else f"character #{character_id}"

    async def _event_lines(
        self,
        storyteller: Storyteller,
        trigger: Trigger,
        status_text: str,
        fence: Fence,
        *,
        speech_context: bool = True,
    ) -> tuple[list[str], str | None]:
        """The lines describing the trigger, and the attention input if it is not the prompt.

        A speech's recent-speech context ends its lines unless `speech_context` is false (the
        prompt builder then gives it a block of its own, see `recent_speech`).
        """
        event = trigger.event
        kind = trigger.kind
        if kind is TriggerKind.ROOM_ECHO and isinstance(event, RoomEcho):
            lines = [
                "A room echo happened in a room you watch.",
                await self._location(event.cell_id),
            ]
            if event.source_character_id is not None:
                lines += await self._character(
                    "Source Character", event.source_character_id, "Source Description"
                )
            lines += ["Event Text:", fence.block(event.text, "room echo")]
            return lines, strip_markup(event.text).strip()
        if kind is TriggerKind.SPEECH and isinstance(event, Speech):
            context = await self._speech_context(storyteller, event) if speech_context else []
            return [*await self._speech_lines(event, fence), *context], None
        if kind is TriggerKind.CRIME and isinstance(event, Crime):
            return await self._crime(event), None
        if kind is TriggerKind.STATE and isinstance(event, StateChange):
            return [
                "A character changed state in a room you watch.",
                await self._location(event.cell_id),
                f"State Change: {event.state.value}",
                *await self._character("Character", event.character_id),
            ], None
        if kind is TriggerKind.HEARTBEAT and trigger.heartbeat is not None:
            lines = [
                "A configured heartbeat event has triggered.",
                f"Heartbeat type: {trigger.heartbeat.spoken}.",
            ]
            if status_text.strip():
                lines += ["Status report:", fence.block(status_text, "status prog")]
            return lines, None
        if kind is TriggerKind.DIRECT:
            lines = ["A direct storyteller attention event was invoked by the game."]
            if trigger.room is not None:
                lines.append(await self._location(trigger.room))
            for character_id in sorted(trigger.involved):
                lines += await self._character("Character", character_id)
            return [
                *lines,
                "Event Text:",
                fence.block(trigger.text.strip(), "game invocation"),
            ], None
        raise ValueError(f"a {kind.value} trigger is missing the event or heartbeat it needs")

    async def _speech_lines(self, event: Speech, fence: Fence) -> list[str]:
        lines = [
            "A character has spoken in a room you watch.",
            await self._location(event.cell_id),
            f"Speaker: {quoted(event.speaker_name)} [#{event.speaker_id}]",
            f"Language: {quoted(event.language or 'Unknown')}",
            f"Accent: {quoted(event.accent or 'Unknown')}",
            f"Volume: {split_camel(one_line(event.volume))}",
        ]
        if event.target_id is not None or event.target_description:
            target = quoted(event.target_description or "an unnamed target")
            if event.target_id is not None:
                target += f" ({one_line(event.target_kind or 'unknown')} #{event.target_id})"
            lines.append(f"Target: {target}")
        return [*lines, "Spoken Text:", fence.block(event.text, "speech")]

    async def _speech_context(self, storyteller: Storyteller, event: Speech) -> list[str]:
        """The recent-speech context block of `event`'s lines (header and lines, or nothing)."""
        lines = await self.recent_speech(storyteller, event)
        return ["", SPEECH_CONTEXT_HEADER, *lines] if lines else []

    async def recent_speech(self, storyteller: Storyteller, event: Speech) -> list[str]:
        """The room's recent speech before `event`, oldest first, when the storyteller asks for
        it (``speech_context_count``), as context lines."""
        count = storyteller.speech_context_count
        if count <= 0 or self._speech is None:
            return []
        current = SpeechLine.from_event(event)
        lines = await self._speech.recent(
            event.cell_id,
            limit=count + 1,
            since=current.occurred_at - storyteller.speech_context_window,
            until=current.occurred_at,
        )
        earlier = heard_before(lines, current)[-count:]
        return [speech_context_line(line) for line in earlier]

    async def _crime(self, event: Crime) -> list[str]:
        lines = [
            "A character has committed a crime in a room you watch.",
            await self._location(event.cell_id),
            f"Crime Id: {event.crime_id}",
            f"Crime Type: {split_camel(one_line(event.crime_type))}",
            f"Legal Authority: {quoted(event.legal_authority)}",
            *await self._character("Criminal", event.criminal_id),
        ]
        if event.victim_id is not None:
            lines += await self._character("Victim", event.victim_id)
        if event.third_party:
            # The engine writes it as "{type} #{id}": a "#" there is no colour code.
            lines.append(f"Third Party: {quoted(event.third_party, colour_codes=False)}")
        lines += [
            f"Witness Count: {event.witness_count}",
            f"Real-Time Stamp (UTC): {as_utc(event.occurred_at).isoformat()}",
        ]
        return lines

    async def _location(self, room_id: int) -> str:
        try:
            room = await self._world.room(room_id)
        except WorldCommandError as exc:
            log.warning("room %s could not be looked up for a prompt: %s", room_id, exc)
            room = None
        name = one_line(room.name) if room is not None else "Unknown room"
        return f"Location: {name} [#{room_id}]"

    async def _character(
        self, label: str, character_id: int, description_label: str | None = None
    ) -> list[str]:
        """``{label}: "Name" [#id]`` and ``{label} Description: "..."`` (or the given label)."""
        try:
            info = await self._world.character(character_id)
        except WorldCommandError as exc:
            log.warning("character %s could not be looked up for a prompt: %s", character_id, exc)
            info = None
        if info is None:
            return [f"{label}: an unknown character [#{character_id}]"]
        return [
            f"{label}: {quoted(info.name)} [#{character_id}]",
            f"{description_label or label + ' Description'}: {quoted(info.short_description)}",
        ]
