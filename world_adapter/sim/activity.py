"""Scripted background life for the harbour town, driven by a seeded random generator.

Each step picks one action among those currently possible (an NPC at work, a player chatting,
the cutpurse prowling or stealing, a drinker passing out or coming round), with fixed weights,
so a given seed and the same outside actions always replay the same story.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from world_adapter.events import CharacterState, WorldEvent
from world_adapter.sim.actions import Town
from world_adapter.sim.harbour_people import AGNA_ID, PER_ID, WREN_ID
from world_adapter.sim.map import HARBOUR_WARD_ID

TAVERN_ROOM_ID = 103

_HAWKING = (
    'cups her hands and bellows, "Fresh herring! Mackerel still kicking!"',
    "slaps a gleaming cod down on the trestle and glares at anyone who haggles.",
    'waves a gutting knife at the gulls, shrieking, "Off, you thieving devils!"',
    'hollers, "Eels! Fat eels, two for a copper!"',
)
_HAULING = (
    "hauls a dripping mooring rope hand over hand, grunting with each pull.",
    "heaves a crate of salt fish onto his shoulder and staggers along the quay.",
    "coils a length of rope into a neat pile, whistling tunelessly.",
    "leans on a bollard to catch his breath, rubbing his rope-burned palms.",
)
_CHATTER = (
    "Did you see the coaster come in? Riding low in the water, she was.",
    "The watch has been thin on the ground since the festival.",
    "Someone said there's a Guild meeting at the hall tonight.",
    "I'd not walk Warehouse Lane after dark, not with my purse on me.",
    "The tide's turning. Smell that?",
)
_THEFTS = (
    "brushes past {victim}, quick fingers dipping into a pocket before she melts away.",
    "bumps into {victim} with a mumbled apology, and a purse string parts.",
)
_SWAYING = "sways on the bench, eyes unfocused, and reaches for one more drink."

_Action = Callable[[], WorldEvent | None]


class ScriptedActivity:
    """Chooses and performs one piece of background activity per step.

    Args:
        town: The town to act on.
        rng: The seeded random generator every choice is drawn from.
    """

    def __init__(self, town: Town, rng: random.Random) -> None:
        self._town = town
        self._rng = rng

    def step(self) -> WorldEvent | None:
        """Perform one possible action and return its main event (None if nothing can happen)."""
        actions = self._possible_actions()
        if not actions:
            return None
        weights = [weight for weight, _ in actions]
        _, action = self._rng.choices(actions, weights=weights)[0]
        return action()

    def _possible_actions(self) -> list[tuple[int, _Action]]:
        actions: list[tuple[int, _Action]] = []
        if self._able(AGNA_ID):
            actions.append((30, lambda: self._emote(AGNA_ID, _HAWKING)))
        if self._able(PER_ID):
            actions.append((25, lambda: self._emote(PER_ID, _HAULING)))
        if self._chatty_players():
            actions.append((25, self._chatter))
        if self._able(WREN_ID):
            actions.append((10, self._prowl))
            if self._theft_victims():
                actions.append((3, self._steal))
        if self._tavern_drinkers():
            actions.append((1, self._pass_out))
        if self._knocked_out():
            actions.append((8, self._come_round))
        return actions

    def _able(self, character_id: int) -> bool:
        status = self._town.status(character_id)
        return status.online and status.state is None

    def _able_in(self, room_id: int, *, excluding: int | None = None) -> list[int]:
        return [i for i in self._town.occupants(room_id) if i != excluding and self._able(i)]

    def _chatty_players(self) -> list[int]:
        return [s.id for s in self._town.all_sheets() if s.is_player and self._able(s.id)]

    def _theft_victims(self) -> list[int]:
        room_id = self._town.status(WREN_ID).location_id
        return self._able_in(room_id, excluding=WREN_ID)

    def _tavern_drinkers(self) -> list[int]:
        return self._able_in(TAVERN_ROOM_ID)

    def _knocked_out(self) -> list[int]:
        return [
            s.id
            for s in self._town.all_sheets()
            if self._town.status(s.id).online
            and self._town.status(s.id).state
            in (CharacterState.UNCONSCIOUS, CharacterState.PASS_OUT)
        ]

    def _emote(self, character_id: int, lines: tuple[str, ...]) -> WorldEvent:
        return self._town.emote(character_id, self._rng.choice(lines))

    def _chatter(self) -> WorldEvent:
        speaker = self._rng.choice(self._chatty_players())
        listeners = self._able_in(self._town.status(speaker).location_id, excluding=speaker)
        target = self._rng.choice(listeners) if listeners and self._rng.random() < 0.5 else None
        return self._town.say(speaker, self._rng.choice(_CHATTER), target_id=target)

    def _prowl(self) -> WorldEvent:
        """Wren slips to a neighbouring room of the Harbour Ward."""
        here = self._town.room_of(self._town.status(WREN_ID).location_id)
        ward = self._town.zone_cells()[HARBOUR_WARD_ID]
        choices = sorted(e.destination_id for e in here.exits if e.destination_id in ward)
        if not choices:
            return self._town.emote(WREN_ID, "loiters in a doorway, watching the passers-by.")
        _, arrival = self._town.move(WREN_ID, self._rng.choice(choices))
        return arrival

    def _steal(self) -> WorldEvent:
        onlookers = self._theft_victims()
        victim = self._rng.choice(onlookers)
        name = self._town.sheet(victim).name
        self._town.emote(WREN_ID, self._rng.choice(_THEFTS).format(victim=name))
        witnesses = len(onlookers) - 1
        return self._town.commit_crime(WREN_ID, "Theft", victim_id=victim, witnesses=witnesses)

    def _pass_out(self) -> WorldEvent:
        drinker = self._rng.choice(self._tavern_drinkers())
        self._town.emote(drinker, _SWAYING)
        return self._town.change_state(drinker, CharacterState.PASS_OUT)

    def _come_round(self) -> WorldEvent:
        return self._town.recover(self._rng.choice(self._knocked_out()))
