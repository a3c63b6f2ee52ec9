"""Doors and paths in the sim world.

Doors start as the map describes them and can then be opened, closed, locked and unlocked.
Paths are the shortest by number of exits (breadth-first, exits tried in the room's order, so the
same map gives the same path), through the doors a `DoorRule` allows.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from world_adapter.errors import WorldCommandError
from world_adapter.facts import DoorRule
from world_adapter.sim.map import Door, Exit, TownMap


@dataclass(frozen=True)
class DoorState:
    """Whether a door is closed and whether it is locked (only a closed door can be)."""

    closed: bool
    locked: bool


class DoorStates:
    """The current state of every door on a map."""

    def __init__(self, town_map: TownMap) -> None:
        self._doors: dict[int, Door] = {}
        self._states: dict[int, DoorState] = {}
        for room in town_map.rooms:
            for exit_ in room.exits:
                if exit_.door is not None:
                    self._doors[exit_.door.id] = exit_.door
                    self._states[exit_.door.id] = DoorState(exit_.door.closed, exit_.door.locked)

    def state(self, door_id: int) -> DoorState:
        """A door's current state.

        Raises:
            WorldCommandError: If there is no door with that id.
        """
        state = self._states.get(door_id)
        if state is None:
            raise WorldCommandError(f"No door with id {door_id} exists.")
        return state

    def set(self, door_id: int, *, closed: bool, locked: bool) -> None:
        """Open, close, lock or unlock a door.

        Raises:
            WorldCommandError: If the door does not exist, or would be locked while open.
        """
        self.state(door_id)
        if locked and not closed:
            raise WorldCommandError(f"Door {door_id} cannot be locked while it is open.")
        self._states[door_id] = DoorState(closed, locked)

    def allows(self, exit_: Exit, rule: DoorRule, keys: frozenset[int]) -> bool:
        """Whether `rule` lets a path through `exit_`, for someone carrying keys to `keys`."""
        door = exit_.door
        if door is None or rule is DoorRule.IGNORE:
            return True
        state = self._states[door.id]
        if not state.closed:
            return True
        if rule is DoorRule.INCLUDE_FIREABLE:
            return door.fireable
        if rule is DoorRule.INCLUDE_UNLOCKED:
            return not state.locked
        if rule is DoorRule.INCLUDE_UNLOCKABLE:
            return not state.locked or door.id in keys
        return False


def find_path(
    town_map: TownMap,
    origin_id: int,
    destination_id: int,
    usable: Callable[[Exit], bool],
    max_exits: int,
) -> tuple[str, ...] | None:
    """The movement tokens of a shortest path, ``()`` for the same room, None if there is none.

    Args:
        town_map: The geography.
        origin_id: The room to start from.
        destination_id: The room to reach.
        usable: Whether the path may take an exit.
        max_exits: Paths longer than this are not found.
    """
    if origin_id == destination_id:
        return ()
    rooms = {room.id: room for room in town_map.rooms}
    came_from: dict[int, tuple[int, Exit]] = {}
    frontier: deque[tuple[int, int]] = deque([(origin_id, 0)])
    seen = {origin_id}
    while frontier:
        room_id, depth = frontier.popleft()
        if depth >= max_exits:
            continue
        for exit_ in rooms[room_id].exits:
            if exit_.destination_id in seen or not usable(exit_):
                continue
            seen.add(exit_.destination_id)
            came_from[exit_.destination_id] = (room_id, exit_)
            if exit_.destination_id == destination_id:
                return _walk_back(came_from, origin_id, destination_id)
            frontier.append((exit_.destination_id, depth + 1))
    return None


def _walk_back(
    came_from: dict[int, tuple[int, Exit]], origin_id: int, room_id: int
) -> tuple[str, ...]:
    steps: list[str] = []
    while room_id != origin_id:
        room_id, exit_ = came_from[room_id]
        steps.append(exit_.brief)
    return tuple(reversed(steps))
