"""Progs: game-side Python callables the storyteller may run, with typed signatures.

Pure Python. Game code declares a prog with the decorator::

    from storyteller_bridge.registry import storyteller_prog

    @storyteller_prog(
        name="EchoToRoom",
        params=[("Room", "Location"), ("Text", "Text")],
        returns="Boolean",
        description="Narrates something in a room.",
    )
    def echo_to_room(room, text):
        room.msg_contents(text)
        return True

Parameters are ``(name, type)`` pairs in call order; types are the prog type names the daemon
understands (``Text``, ``Number``, ``Boolean``, ``Character``, ``Location``, ``Item``,
``Collection<Character>``...). The callable receives its arguments positionally, with
``Character``, ``Location``, ``Item`` and ``Exit`` values already resolved to game objects, and may
return a value or a Twisted Deferred. Results are converted back to JSON by the declared return
type (game objects become their dbref numbers).

A prog's id is derived from its name, so it is the same on every server start.
"""

from __future__ import annotations

import logging
import time
import zlib
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .journal import KeyJournal

log = logging.getLogger(__name__)

# The element types of the prog type system (a copy of the daemon's list, which this module must
# not import: it runs inside the game).
PROG_TYPES: tuple[str, ...] = (
    "Void", "Text", "Number", "Boolean", "Character", "Location", "Item", "Gender", "DateTime",
    "TimeSpan", "MudDateTime", "Zone", "Shard", "Race", "Culture", "Ethnicity", "Trait", "Clan",
    "ClanRank", "ClanAppointment", "ClanPaygrade", "Currency", "Language", "Accent", "Merit",
    "Calendar", "Clock", "Knowledge", "Role", "Drug", "Shop", "Exit", "Effect", "Outfit",
    "OutfitItem", "Dictionary", "Anything",
)  # fmt: skip
OBJECT_TYPES = frozenset({"Character", "Location", "Item", "Exit"})
"""Types whose values travel as dbref numbers and reach the callable as game objects."""


class ProgError(Exception):
    """A prog cannot be declared, found or called; the message is safe to show to a model."""


def normalise_type(text: str) -> str:
    """The canonical spelling of a type (``collection<character>`` → ``Collection<Character>``).

    Raises:
        ProgError: not a known type.
    """
    raw = text.strip()
    collection = raw.lower().startswith("collection<") and raw.endswith(">")
    inner = raw[len("collection<") : -1].strip() if collection else raw
    for name in PROG_TYPES:
        if name.lower() == inner.lower():
            return f"Collection<{name}>" if collection else name
    raise ProgError(f"unknown prog type '{text}'")


def element_type(type_name: str) -> tuple[str, bool]:
    """``(element, is_collection)`` of a canonical type name."""
    if type_name.startswith("Collection<"):
        return type_name[len("Collection<") : -1], True
    return type_name, False


def prog_id(name: str) -> int:
    """A positive id that depends only on the (case-insensitive) name."""
    return zlib.crc32(name.strip().lower().encode()) & 0x7FFFFFFF or 1


@dataclass(frozen=True)
class Prog:
    """One registered prog."""

    name: str
    params: tuple[tuple[str, str], ...]
    returns: str
    func: Callable[..., Any]
    description: str = ""

    @property
    def id(self) -> int:
        """The stable id."""
        return prog_id(self.name)

    def signature(self) -> dict[str, Any]:
        """The catalogue entry: id, name, typed parameters, return type, description."""
        return {
            "id": self.id,
            "name": self.name,
            "parameters": [{"name": n, "type": t} for n, t in self.params],
            "return_type": self.returns,
            "description": self.description,
            "compile_error": "",
        }

    def bind(self, arguments: dict[str, Any]) -> list[tuple[str, str, Any]]:
        """Match arguments to parameters by case-insensitive name.

        Returns:
            ``(name, type, value)`` in declaration order.

        Raises:
            ProgError: an argument is unknown, repeated or missing.
        """
        given: dict[str, Any] = {}
        for key, value in arguments.items():
            folded = str(key).strip().lower()
            if folded in given:
                raise ProgError(f"Argument '{key}' is given twice.")
            given[folded] = value
        declared = {n.lower() for n, _ in self.params}
        unknown = [k for k in arguments if str(k).strip().lower() not in declared]
        if unknown:
            names = ", ".join(n for n, _ in self.params) or "none"
            raise ProgError(
                f"Prog {self.name} has no parameter named '{unknown[0]}' (its parameters: {names})."
            )
        bound = []
        for name, type_name in self.params:
            if name.lower() not in given:
                raise ProgError(f"Prog {self.name} needs the argument '{name}' ({type_name}).")
            bound.append((name, type_name, given[name.lower()]))
        return bound


@dataclass
class ProgRegistry:
    """The progs of one game, by id and by name."""

    _progs: dict[int, Prog] = field(default_factory=dict)

    def register(
        self,
        func: Callable[..., Any],
        *,
        name: str,
        params: Iterable[tuple[str, str]] = (),
        returns: str = "Void",
        description: str = "",
    ) -> Prog:
        """Add a prog (replacing one of the same name, as a module reload does).

        Raises:
            ProgError: a bad name or type, a repeated parameter, or an id clash.
        """
        name = name.strip()
        if not name or any(c.isspace() for c in name):
            raise ProgError(f"a prog name must be one word, got '{name}'")
        checked = tuple((str(p).strip(), normalise_type(t)) for p, t in params)
        names = [p.lower() for p, _ in checked]
        if len(set(names)) != len(names) or "" in names:
            raise ProgError(f"prog {name}: parameter names must be non-empty and distinct")
        prog = Prog(name, checked, normalise_type(returns), func, description.strip())
        clash = self._progs.get(prog.id)
        if clash is not None and clash.name.lower() != name.lower():
            raise ProgError(f"prog {name}: its id clashes with prog {clash.name}; rename one")
        self._progs[prog.id] = prog
        return prog

    def find(self, ref: str | int) -> Prog:
        """The prog with this id or (case-insensitive) name.

        Raises:
            ProgError: there is none.
        """
        text = str(ref).strip()
        if text.isdigit() and int(text) in self._progs:
            return self._progs[int(text)]
        for prog in self._progs.values():
            if prog.name.lower() == text.lower():
                return prog
        raise ProgError(f"There is no prog '{text}'.")

    def catalogue(self) -> list[dict[str, Any]]:
        """Every prog's signature, by name."""
        return [p.signature() for p in sorted(self._progs.values(), key=lambda p: p.name.lower())]

    def __len__(self) -> int:
        return len(self._progs)


REGISTRY = ProgRegistry()
"""The registry the decorator fills; the bridge serves it."""


def storyteller_prog(
    *,
    name: str,
    params: Sequence[tuple[str, str]] = (),
    returns: str = "Void",
    description: str = "",
    registry: ProgRegistry | None = None,
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register the decorated callable as a prog (see the module docstring); returns it as is."""

    def decorate(func: Callable[..., Any]) -> Callable[..., Any]:
        (REGISTRY if registry is None else registry).register(
            func,
            name=name,
            params=params,
            returns=returns,
            description=description or (func.__doc__ or "").strip().split("\n")[0],
        )
        return func

    return decorate


class ResultStore:
    """Outcomes of successful prog runs by idempotency key.

    A key seen before returns the stored outcome, so a daemon retrying a call after a lost reply
    does not act twice. An outcome is kept while it is among the newest `capacity`, or younger
    than `keep_seconds`, and never beyond `max_entries`. With a `KeyJournal` the outcomes are on
    disk as well, so they survive ``evennia reload`` and restarts.

    Args:
        capacity: Outcomes kept whatever their age.
        keep_seconds: Outcomes younger than this are kept beyond `capacity`.
        max_entries: The hard bound.
        journal: Where the outcomes are kept on disk (None: memory only).
        clock: The POSIX time.
    """

    def __init__(
        self,
        capacity: int = 5000,
        *,
        keep_seconds: float = 0.0,
        max_entries: int = 100_000,
        journal: KeyJournal | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if capacity < 1:
            raise ValueError(f"capacity must be at least 1, got {capacity}")
        if max_entries < capacity:
            raise ValueError(f"max_entries ({max_entries}) must be at least capacity ({capacity})")
        self.capacity = capacity
        self.keep_seconds = keep_seconds
        self.max_entries = max_entries
        self._clock = clock
        self._results: OrderedDict[str, tuple[float, dict[str, Any]]] = OrderedDict()
        self._journal = journal
        if journal is not None:
            for key, at, outcome in journal.load():
                self._results[key] = (at, outcome)
                self._results.move_to_end(key)
            self._trim()
            self._rewrite()

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored outcome for `key`, or None."""
        found = self._results.get(key)
        return None if found is None else found[1]

    def put(self, key: str, outcome: dict[str, Any]) -> None:
        """Store `outcome` under `key`, dropping outcomes past their keeping."""
        at = self._clock()
        self._results[key] = (at, outcome)
        self._results.move_to_end(key)
        self._trim()
        if self._journal is None:
            return
        try:
            if self._journal.lines > 2 * len(self._results):
                self._rewrite()
            else:
                self._journal.append(key, at, outcome)
        except OSError:
            log.exception("cannot write %s; prog outcomes are kept in memory only",
                          self._journal.path)  # fmt: skip
            self._journal.close()
            self._journal = None

    def _trim(self) -> None:
        oldest_kept = self._clock() - self.keep_seconds
        while len(self._results) > self.max_entries or (
            len(self._results) > self.capacity
            and next(iter(self._results.values()))[0] < oldest_kept
        ):
            self._results.popitem(last=False)

    def _rewrite(self) -> None:
        if self._journal is not None:
            self._journal.rewrite((k, at, o) for k, (at, o) in self._results.items())

    def close(self) -> None:
        """Close the journal."""
        if self._journal is not None:
            self._journal.close()

    def __len__(self) -> int:
        return len(self._results)
