"""What a tool call would touch in the game, as the policy point reads it.

An `Effect` lists the rooms and characters a call acts on and the texts it passes on. A custom
tool's effect comes from its prog's parameter types (`prog_effect`: ``Location``, ``Character``,
``Text`` and their collections); a built-in declares which of its arguments name rooms and
characters (`named`). An argument that should be an id but is not (or is not a positive signed
64-bit integer) counts as id -1, which no scope holds and which is never asked of the world.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from progs.scalars import ID_KEYS, integer_value, is_id
from progs.types import ProgParameter, ProgType


@dataclass(frozen=True)
class Effect:
    """What a prog call would touch in the game: its rooms, characters and text arguments."""

    rooms: frozenset[int] = frozenset()
    characters: frozenset[int] = frozenset()
    texts: tuple[str, ...] = ()


def _ids(value: Any) -> list[int | None]:
    """The ids an argument holds (a collection gives several); None for one that is no id."""
    values = value if isinstance(value, list) else [value]
    found: list[int | None] = []
    for each in values:
        if each is None:
            continue
        if isinstance(each, Mapping):
            key = next((k for k in ID_KEYS if k in each), None)
            each = each[key] if key is not None else None
        number = integer_value(each)
        found.append(number if number is not None and is_id(number) else None)
    return found


def named(
    *, characters: Sequence[str] = (), rooms: Sequence[str] = ()
) -> Callable[[Mapping[str, Any]], Effect]:
    """The effect of a built-in tool whose arguments `characters` and `rooms` name targets."""

    def effect(arguments: Mapping[str, Any]) -> Effect:
        def ids(keys: Sequence[str]) -> frozenset[int]:
            found = (i for key in keys for i in _ids(arguments.get(key)))
            return frozenset(-1 if i is None else i for i in found)

        return Effect(ids(rooms), ids(characters))

    return effect


def prog_effect(parameters: Sequence[ProgParameter], arguments: Mapping[str, Any]) -> Effect:
    """The effect of calling a prog with these parameters with `arguments` (by name).

    A location or character argument that is not an id is counted as id -1, which no scope
    holds, so it is refused rather than overlooked.
    """
    rooms: set[int] = set()
    characters: set[int] = set()
    texts: list[str] = []
    by_name = {k.lower(): v for k, v in arguments.items()}
    for parameter in parameters:
        value = by_name.get(parameter.name.lower())
        element = parameter.type.element
        if element is ProgType.LOCATION:
            rooms.update(-1 if i is None else i for i in _ids(value))
        elif element is ProgType.CHARACTER:
            characters.update(-1 if i is None else i for i in _ids(value))
        elif element is ProgType.TEXT:
            values = value if isinstance(value, list) else [value]
            texts += [v for v in values if isinstance(v, str)]
    return Effect(frozenset(rooms), frozenset(characters), tuple(texts))
