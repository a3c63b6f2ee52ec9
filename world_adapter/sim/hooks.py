"""The sim world's test hook for ``storyteller bridge check --events``: one event of a kind.

`cause_event` makes the harbour town produce one event of the kind the conformance checker asks
for through the optional ``cause_event`` request (docs/bridge-protocol.md, checking events):
Maren emotes and speaks, Per steals from Osric, Agna passes out (and comes round, so she can be
made to pass out again). The bridge's world server answers that request with it.
"""

from __future__ import annotations

from world_adapter.errors import WorldCommandError
from world_adapter.events import CharacterState, EventKind
from world_adapter.sim.harbour_people import AGNA_ID, MAREN_ID, OSRIC_ID, PER_ID
from world_adapter.sim.world import SimWorld


def cause_event(world: SimWorld, kind: str) -> None:
    """Make one event of `kind` happen in the harbour town.

    Raises:
        WorldCommandError: If the kind is not an event kind, or the town cannot (its people are
            not where the harbour town puts them).
    """
    if kind == EventKind.ROOM_ECHO:
        world.emote(MAREN_ID, "waves at the ferry.")
    elif kind == EventKind.SPEECH:
        world.say(MAREN_ID, "Fair winds, all.")
    elif kind == EventKind.CRIME:
        world.commit_crime(PER_ID, "Theft", victim_id=OSRIC_ID)
    elif kind == EventKind.STATE_CHANGE:
        world.change_state(AGNA_ID, CharacterState.PASS_OUT)
        world.recover(AGNA_ID)
    else:
        raise WorldCommandError(f"The sim world cannot cause a '{kind}' event.")
