"""`place`: a character put in a room unseen, as a scenario or a snapshot starts it."""

from __future__ import annotations

import pytest

from world_adapter.errors import WorldCommandError
from world_adapter.sim import SimWorld


def test_place_moves_a_character_unseen_and_brings_it_online() -> None:
    world = SimWorld.harbour_town()
    cursor = world.cursor
    world.set_online(1001, False)
    world.place(1001, 103)
    status = world.status(1001)
    assert (status.location_id, status.online) == (103, True)
    assert world.cursor == cursor  # no event
    assert 1001 in world.occupants(103) and 1001 not in world.occupants(101)
    with pytest.raises(WorldCommandError, match="No room with id 999"):
        world.place(1001, 999)
    with pytest.raises(WorldCommandError, match="No character with id 9"):
        world.place(9, 101)
