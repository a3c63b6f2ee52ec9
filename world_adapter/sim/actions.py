"""What characters can do in the town: emote, speak, move, commit crimes, fall and recover.

Each action writes lines to the characters who perceive it and appends one event (two for a
move: the departure and the arrival) to the event log.
"""

from __future__ import annotations

from world_adapter.errors import WorldCommandError
from world_adapter.events import CharacterState, Crime, RoomEcho, Speech, StateChange
from world_adapter.sim.state import Origin, TownState

_STATE_LINES = {
    CharacterState.UNCONSCIOUS: "{name} collapses, unconscious.",
    CharacterState.PASS_OUT: "{name} slumps over and passes out.",
    CharacterState.DEAD: "{name} dies.",
}
# lower-case volume -> (volume name, verb for the listeners, verb for the speaker)
_VOLUMES = {
    "whisper": ("Whisper", "whispers", "whisper"),
    "quiet": ("Quiet", "says quietly", "say quietly"),
    "normal": ("Normal", "says", "say"),
    "loud": ("Loud", "says loudly", "say loudly"),
    "shout": ("Shout", "shouts", "shout"),
}


class Town(TownState):
    """A town whose characters can act."""

    def emote(self, character_id: int, text: str) -> RoomEcho:
        """Echo ``"<Name> <text>"`` to the character's room (the character sees it too).

        Raises:
            WorldCommandError: If the character is unknown or offline, or the text is blank.
        """
        sheet, status = self._active(character_id)
        if not text.strip():
            raise WorldCommandError("Emote text must not be blank.")
        return self.echo(
            status.location_id, f"{sheet.name} {text.strip()}", source_character_id=sheet.id
        )

    def say(
        self,
        character_id: int,
        text: str,
        *,
        target_id: int | None = None,
        language: str = "Common",
        volume: str = "Normal",
    ) -> Speech:
        """Speak in the character's room, optionally to a character in the same room.

        Everyone in the room hears the words, except for a whisper: only the speaker and the
        target hear it, the others see that something was whispered.

        Args:
            character_id: The speaker.
            text: The words spoken.
            target_id: A character in the same room the words are addressed to.
            language: The language spoken; anything but ``Common`` is named in the output.
            volume: ``Whisper`` (needs a target), ``Quiet``, ``Normal``, ``Loud`` or ``Shout``.

        Raises:
            WorldCommandError: If the speaker or target is unknown, offline or elsewhere, the
                volume is unknown, a whisper has no target, or the text is blank.
        """
        sheet, status = self._active(character_id)
        words = text.strip()
        if not words:
            raise WorldCommandError("Speech text must not be blank.")
        volume_key = volume.strip().lower()
        if volume_key not in _VOLUMES:
            known = ", ".join(v[0] for v in _VOLUMES.values())
            raise WorldCommandError(f"Unknown speech volume '{volume}'. Known volumes: {known}.")
        volume_name, verb, own_verb = _VOLUMES[volume_key]
        room_id = status.location_id
        target = None
        if target_id is not None:
            target, target_status = self._active(target_id)
            if target_status.location_id != room_id:
                raise WorldCommandError(f"{target.name} is not in the same room as {sheet.name}.")
        elif volume_name == "Whisper":
            raise WorldCommandError("A whisper needs a target character.")
        to = f" to {target.name}" if target else ""
        in_language = f" in {language}" if language != "Common" else ""
        heard = f'{sheet.name} {verb}{to}{in_language}, "{words}"'
        stamp = self._stamp(room_id)
        self.tell(sheet.id, f'You {own_verb}{to}{in_language}, "{words}"')
        for occupant in self.occupants(room_id):
            if occupant == sheet.id:
                continue
            if volume_name == "Whisper" and target is not None and occupant != target.id:
                self.tell(occupant, f"{sheet.name} whispers something to {target.name}.")
            else:
                self.tell(occupant, heard)
        event = Speech(
            cursor=stamp.cursor,
            cell_id=stamp.cell_id,
            zone_id=stamp.zone_id,
            occurred_at=stamp.occurred_at,
            speaker_id=sheet.id,
            speaker_name=sheet.name,
            text=words,
            language=language,
            accent=sheet.accent,
            volume=volume_name,
            target_id=target.id if target else None,
            target_kind="character" if target else None,
            target_description=target.short_description if target else None,
        )
        self._record(event)
        return event

    def commit_crime(
        self,
        criminal_id: int,
        crime_type: str,
        *,
        victim_id: int | None = None,
        witnesses: int = 1,
    ) -> Crime:
        """Record a crime in the criminal's room under the zone's legal authority.

        The crime itself shows nothing to anyone; pair it with an emote to describe the act.

        Raises:
            WorldCommandError: If the criminal or victim is unknown, the crime type is blank
                or the witness count is negative.
        """
        sheet, status = self._active(criminal_id)
        if not crime_type.strip():
            raise WorldCommandError("Crime type must not be blank.")
        if witnesses < 0:
            raise WorldCommandError(f"Witness count must not be negative, not {witnesses}.")
        if victim_id is not None:
            self.sheet(victim_id)
        stamp = self._stamp(status.location_id)
        crime = Crime(
            cursor=stamp.cursor,
            cell_id=stamp.cell_id,
            zone_id=stamp.zone_id,
            occurred_at=stamp.occurred_at,
            crime_id=self.next_crime_id,
            crime_type=crime_type.strip(),
            legal_authority=self.zone(stamp.zone_id).legal_authority,
            criminal_id=sheet.id,
            victim_id=victim_id,
            witness_count=witnesses,
        )
        self._record(crime)
        return crime

    def change_state(self, character_id: int, state: CharacterState) -> StateChange:
        """Make a character fall unconscious, pass out or die; the room sees it happen.

        Raises:
            WorldCommandError: If the character is unknown, offline or already dead.
        """
        sheet, status = self._active(character_id)
        if status.state is CharacterState.DEAD:
            raise WorldCommandError(f"{sheet.name} is already dead.")
        stamp = self._stamp(status.location_id)
        status.state = CharacterState(state)
        for occupant in self.occupants(stamp.cell_id):
            self.tell(occupant, _STATE_LINES[status.state].format(name=sheet.name))
        event = StateChange(
            cursor=stamp.cursor,
            cell_id=stamp.cell_id,
            zone_id=stamp.zone_id,
            occurred_at=stamp.occurred_at,
            character_id=sheet.id,
            state=status.state,
        )
        self._record(event)
        return event

    def recover(self, character_id: int) -> RoomEcho:
        """Bring an unconscious or passed-out character round; the room sees them stir.

        Raises:
            WorldCommandError: If the character is unknown, offline, conscious or dead.
        """
        sheet, status = self._active(character_id)
        if status.state is None:
            raise WorldCommandError(f"{sheet.name} is already conscious.")
        if status.state is CharacterState.DEAD:
            raise WorldCommandError(f"{sheet.name} is dead and cannot recover.")
        status.state = None
        return self.echo(
            status.location_id, f"{sheet.name} stirs and comes round.", source_character_id=sheet.id
        )

    def move(
        self, character_id: int, room_id: int, *, origin: Origin = "world"
    ) -> tuple[RoomEcho, RoomEcho]:
        """Move a character to a room; both rooms see the departure and the arrival.

        Through an exit the lines name the direction; between rooms that are not adjacent
        the character simply leaves and arrives.

        Returns:
            The departure echo (old room) and the arrival echo (new room).

        Raises:
            WorldCommandError: If the character or room is unknown, the character is offline,
                or already there.
        """
        sheet, status = self._active(character_id)
        destination = self.room_of(room_id)
        source = self.room_of(status.location_id)
        if source.id == destination.id:
            raise WorldCommandError(f"{sheet.name} is already in {destination.name}.")
        way_out = source.exit_to(destination.id)
        way_back = destination.exit_to(source.id)
        leaves = f" {way_out.departure_phrase()}" if way_out else ""
        arrives = f" {way_back.arrival_phrase()}" if way_back else ""
        status.location_id = destination.id
        departure = self.echo(
            source.id, f"{sheet.name} leaves{leaves}.", origin=origin, source_character_id=sheet.id
        )
        arrival = self.echo(
            destination.id,
            f"{sheet.name} arrives{arrives}.",
            origin=origin,
            source_character_id=sheet.id,
            exclude=frozenset({sheet.id}),
        )
        self.tell(sheet.id, f"You arrive at {destination.name}.")
        return departure, arrival
