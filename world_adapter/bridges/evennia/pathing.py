"""Shortest paths between rooms over exits: breadth-first, at most ``max_steps`` moves.

Pure Python: the caller supplies the neighbours of a room (exit name → destination room id), so
the search can be tested without a game.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Hashable, Iterable
from typing import TypeVar

Node = TypeVar("Node", bound=Hashable)

MAX_STEPS = 50
"""The longest path searched for, in moves."""


def shortest_path(
    origin: Node,
    destination: Node,
    neighbours: Callable[[Node], Iterable[tuple[str, Node]]],
    *,
    max_steps: int = MAX_STEPS,
) -> list[str] | None:
    """Exit names to follow from `origin` to `destination`, or None if there is no such path.

    The same room gives ``[]``. Exits are tried in the order `neighbours` yields them, so the
    result is deterministic. Paths longer than `max_steps` are not found.
    """
    if origin == destination:
        return []
    came_from: dict[Node, tuple[Node, str]] = {}
    frontier: deque[tuple[Node, int]] = deque([(origin, 0)])
    seen = {origin}
    while frontier:
        room, depth = frontier.popleft()
        if depth >= max_steps:
            continue
        for direction, nxt in neighbours(room):
            if nxt in seen:
                continue
            seen.add(nxt)
            came_from[nxt] = (room, direction)
            if nxt == destination:
                return _walk_back(came_from, origin, destination)
            frontier.append((nxt, depth + 1))
    return None


def _walk_back(came_from: dict[Node, tuple[Node, str]], origin: Node, node: Node) -> list[str]:
    steps: list[str] = []
    while node != origin:
        node, direction = came_from[node]
        steps.append(direction)
    steps.reverse()
    return steps


_BRIEF = {
    "north": "n", "northeast": "ne", "east": "e", "southeast": "se", "south": "s",
    "southwest": "sw", "west": "w", "northwest": "nw", "up": "u", "down": "d",
}  # fmt: skip


def direction_token(exit_name: str) -> str:
    """How a player takes an exit: ``n`` for north and the like, else the exit's name."""
    name = " ".join(exit_name.lower().split())
    return _BRIEF.get(name.replace(" ", "").replace("-", ""), name)
