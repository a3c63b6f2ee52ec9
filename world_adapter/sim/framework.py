"""Framework objects of the sim world: the races, clans, currencies... that progs take.

A prog argument names such an object by id or by name. Names resolve as FutureMUD resolves
them: an exact name or alias (case-insensitively) first, otherwise a unique prefix; a name that
fits several objects is refused as ambiguous. Clan ranks, appointments and paygrades can be
looked up within one clan, and a paygrade also answers to its abbreviation.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar

from progs.types import CLAN_SCOPED_TYPES, NAMED_TYPES, ProgType
from world_adapter.errors import WorldCommandError

FRAMEWORK_KINDS: frozenset[ProgType] = (
    NAMED_TYPES
    - CLAN_SCOPED_TYPES
    - {
        ProgType.CLAN,
        ProgType.ZONE,
        ProgType.CALENDAR,
        ProgType.CLOCK,
    }
)
"""The named kinds kept as plain `FrameworkItem`s (zones, calendars and clans have their own)."""


class Nameable(Protocol):
    """Anything a prog argument can name: it has an id and one or more names."""

    @property
    def id(self) -> int:
        """The object's id."""
        ...

    @property
    def names(self) -> tuple[str, ...]:
        """Its name and aliases."""
        ...


Found = TypeVar("Found", bound=Nameable)


def resolve_named(kind: str, candidates: Sequence[Found], ref: int | str) -> Found:
    """The candidate `ref` names: by id, by exact name or alias, or by a unique prefix.

    Args:
        kind: The type's name for messages, e.g. ``Race``.
        candidates: The objects of that type to choose from.
        ref: An id or a name.

    Raises:
        WorldCommandError: If nothing fits, or a name fits several candidates.
    """
    if isinstance(ref, int):
        found = next((c for c in candidates if c.id == ref), None)
        if found is None:
            raise WorldCommandError(f"No {kind} with id {ref} exists.")
        return found
    wanted = ref.strip().casefold()
    exact = [c for c in candidates if wanted in (n.casefold() for n in c.names)]
    matches = exact or [
        c for c in candidates if any(n.casefold().startswith(wanted) for n in c.names)
    ]
    if not matches:
        raise WorldCommandError(f"No {kind} named '{ref}' exists.")
    if len(matches) > 1:
        raise WorldCommandError(f"'{ref}' is ambiguous for {kind}; provide an id.")
    return matches[0]


@dataclass(frozen=True)
class FrameworkItem:
    """A race, culture, currency, shop... : one object of a named framework kind."""

    kind: ProgType
    id: int
    name: str
    aliases: tuple[str, ...] = ()
    description: str = ""

    @property
    def names(self) -> tuple[str, ...]:
        """The name and the aliases."""
        return (self.name, *self.aliases)


@dataclass(frozen=True)
class ClanPosition:
    """A rank, appointment or paygrade of one clan.

    Attributes:
        abbreviation: A paygrade's short form, e.g. ``G3``; blank for ranks and appointments.
    """

    kind: ProgType
    id: int
    name: str
    abbreviation: str = ""

    @property
    def names(self) -> tuple[str, ...]:
        """The name, and the abbreviation if there is one."""
        return (self.name, self.abbreviation) if self.abbreviation else (self.name,)


@dataclass(frozen=True)
class Clan:
    """A clan with its ranks, appointments and paygrades.

    Raises:
        ValueError: If a position is filed under the wrong kind.
    """

    id: int
    name: str
    aliases: tuple[str, ...] = ()
    description: str = ""
    ranks: tuple[ClanPosition, ...] = ()
    appointments: tuple[ClanPosition, ...] = ()
    paygrades: tuple[ClanPosition, ...] = ()

    def __post_init__(self) -> None:
        for kind, positions in (
            (ProgType.CLAN_RANK, self.ranks),
            (ProgType.CLAN_APPOINTMENT, self.appointments),
            (ProgType.CLAN_PAYGRADE, self.paygrades),
        ):
            if any(p.kind is not kind for p in positions):
                raise ValueError(f"Clan {self.name} files a position under {kind.value}.")

    @property
    def names(self) -> tuple[str, ...]:
        """The name and the aliases."""
        return (self.name, *self.aliases)

    def positions(self, kind: ProgType) -> tuple[ClanPosition, ...]:
        """The clan's ranks, appointments or paygrades."""
        return {
            ProgType.CLAN_RANK: self.ranks,
            ProgType.CLAN_APPOINTMENT: self.appointments,
            ProgType.CLAN_PAYGRADE: self.paygrades,
        }[kind]


@dataclass(frozen=True)
class ClanMembership:
    """What a ClanRank, ClanAppointment or ClanPaygrade argument resolves to."""

    clan: Clan
    position: ClanPosition

    @property
    def id(self) -> int:
        """The position's id."""
        return self.position.id

    @property
    def names(self) -> tuple[str, ...]:
        """The position's names."""
        return self.position.names


class Framework:
    """Every framework object of a world, by kind.

    Raises:
        ValueError: If an item has a kind that is not a plain framework kind, or ids repeat
            within a kind (clan positions: across all clans).
    """

    def __init__(self, items: Iterable[FrameworkItem] = (), clans: Iterable[Clan] = ()) -> None:
        self._items = tuple(items)
        self.clans = tuple(clans)
        for item in self._items:
            if item.kind not in FRAMEWORK_KINDS:
                raise ValueError(f"{item.kind.value} '{item.name}' is not a framework item kind.")
        ids = Counter((i.kind, i.id) for i in self._items)
        ids.update((ProgType.CLAN, c.id) for c in self.clans)
        ids.update((p.kind, p.id) for c in self.clans for p in _all_positions(c))
        repeated = sorted(f"{kind.value} {number}" for (kind, number), n in ids.items() if n > 1)
        if repeated:
            raise ValueError(f"Repeated framework ids: {', '.join(repeated)}.")

    def entries(self, kind: ProgType) -> tuple[FrameworkItem, ...]:
        """The objects of one plain kind."""
        return tuple(i for i in self._items if i.kind is kind)

    def memberships(self, kind: ProgType, clan: Clan | None = None) -> list[ClanMembership]:
        """The ranks, appointments or paygrades of one clan, or of every clan."""
        clans = self.clans if clan is None else (clan,)
        return [ClanMembership(c, p) for c in clans for p in c.positions(kind)]


def _all_positions(clan: Clan) -> tuple[ClanPosition, ...]:
    return clan.ranks + clan.appointments + clan.paygrades
