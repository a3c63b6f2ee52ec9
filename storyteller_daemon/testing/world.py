"""A world double: any `WorldClient` (the `SimWorld`, usually), instrumented.

`InstrumentedWorld` passes every call on to the world it wraps and records it; a test can make
a method fail, answer without asking the world, or wait until released::

    sim = SimWorld.harbour_town()
    world = InstrumentedWorld(sim).fail("subscribe", CursorExpired("too old"), times=1)
    ...  # hand `world` to the daemon; drive the game through `sim` (or `world.inner`)
    assert world.count("room") == 1
    assert [c.args[0] for c in world.calls_to("execute_prog")] == ["AIStorytellerStatusHour"]

An override applies to the next `times` calls of its method (every call when `times` is None);
overrides of one method are used in the order they were given, then calls reach the world again.
A held method's calls are recorded at once and go on (to an override or the world) on `release`.
A subscription fails, or waits, when it is first iterated, as a real stream does.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import AsyncIterator, Awaitable, Callable, Collection, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, Generic, ParamSpec, TypeVar, cast

from progs.types import ProgSignature
from world_adapter.events import Cursor, WorldEvent
from world_adapter.facts import (
    MAX_PATH_EXITS,
    CalendarInfo,
    CharacterInfo,
    CharacterPlan,
    CharacterSummary,
    DateTimeReading,
    EntityInfo,
    EntityKind,
    LandmarkInfo,
    LandmarkSummary,
    PathRule,
    ProgOutcome,
    RoomInfo,
    RoomPath,
)
from world_adapter.protocol import WorldClient

W = TypeVar("W", bound=WorldClient)
P = ParamSpec("P")
R = TypeVar("R")

WORLD_METHODS = frozenset(
    name
    for name, value in vars(WorldClient).items()
    if inspect.isfunction(value) and not name.startswith("_")
)
"""The methods of the `WorldClient` protocol, the ones an `InstrumentedWorld` instruments."""


@dataclass(frozen=True)
class WorldCall:
    """One call the world was asked: the method's name and the arguments as given."""

    method: str
    args: tuple[Any, ...] = ()
    kwargs: Mapping[str, Any] = field(default_factory=dict)


@dataclass
class _Override:
    """A fault to raise or a value to answer, for `remaining` more calls (None: every call)."""

    outcome: Any
    raises: bool
    remaining: int | None


class InstrumentedWorld(Generic[W]):
    """A `WorldClient` that records every call to `inner` and can fail, answer or hold calls.

    Args:
        inner: the world the calls are passed on to.

    Attributes:
        inner: the wrapped world (a `SimWorld` is driven through it: ``world.inner.emote(...)``).
        calls: every call, in the order it was made (held and failed ones included).
    """

    def __init__(self, inner: W) -> None:
        self.inner = inner
        self.calls: list[WorldCall] = []
        self._overrides: dict[str, list[_Override]] = {}
        self._open: dict[str, asyncio.Event] = {}

    @property
    def cursor(self) -> Cursor:
        """The inner world's newest cursor, so a wrapped `SimWorld` can be served over the bridge.

        Raises:
            AttributeError: the inner world does not tell its cursor.
        """
        cursor: Cursor = getattr(self.inner, "cursor")  # noqa: B009 - not every world has one
        return cursor

    # ------------------------------------------------------------------ inspection

    def calls_to(self, method: str) -> list[WorldCall]:
        """The calls of one method, in order.

        Raises:
            ValueError: `method` is not a `WorldClient` method.
        """
        method = _checked(method)
        return [call for call in self.calls if call.method == method]

    def count(self, method: str) -> int:
        """How many times `method` was called.

        Raises:
            ValueError: `method` is not a `WorldClient` method.
        """
        return len(self.calls_to(method))

    # ------------------------------------------------------------------ faults and answers

    def fail(
        self, method: str, exception: Exception, *, times: int | None = None
    ) -> InstrumentedWorld[W]:
        """Make the next `times` calls of `method` (every call when None) raise `exception`.

        Returns:
            This world, so a test can build and break it in one expression.

        Raises:
            ValueError: `method` is not a `WorldClient` method, or `times` is below 1.
        """
        return self._override(method, _Override(exception, True, times))

    def answer(self, method: str, value: Any, *, times: int | None = None) -> InstrumentedWorld[W]:
        """Make the next `times` calls of `method` (every call when None) return `value` without
        asking the world (``answer("online_players", [])``: nobody is online).

        Returns:
            This world.

        Raises:
            ValueError: `method` is ``subscribe``, whose answer is a stream (make the inner world
                produce the events instead), or not a `WorldClient` method; `times` is below 1.
        """
        if method == "subscribe":
            raise ValueError("a subscription cannot be answered with a value; use fail() or hold()")
        return self._override(method, _Override(value, False, times))

    def hold(self, method: str) -> None:
        """Keep calls of `method` waiting (already recorded) until `release`.

        Raises:
            ValueError: `method` is not a `WorldClient` method.
        """
        self._open.setdefault(_checked(method), asyncio.Event()).clear()

    def release(self, method: str) -> None:
        """Let the held calls of `method`, and later ones, go on.

        Raises:
            ValueError: `method` is not a `WorldClient` method.
        """
        self._open.setdefault(_checked(method), asyncio.Event()).set()

    def _override(self, method: str, override: _Override) -> InstrumentedWorld[W]:
        if override.remaining is not None and override.remaining < 1:
            raise ValueError(f"times must be at least 1, got {override.remaining}")
        self._overrides.setdefault(_checked(method), []).append(override)
        return self

    async def _enter(
        self, method: str, args: tuple[Any, ...], kwargs: Mapping[str, Any]
    ) -> _Override | None:
        """Record a call, wait while its method is held, and raise its fault if it has one.

        Returns:
            The override the call takes, or None when it goes to the world.
        """
        self.calls.append(WorldCall(method, args, dict(kwargs)))
        gate = self._open.get(method)
        if gate is not None:
            await gate.wait()
        pending = self._overrides.get(method)
        if not pending:
            return None
        override = pending[0]
        if override.remaining is not None:
            override.remaining -= 1
            if override.remaining == 0:
                pending.pop(0)
        if override.raises:
            raise override.outcome
        return override

    async def _call(
        self, method: str, real: Callable[P, Awaitable[R]], *args: P.args, **kwargs: P.kwargs
    ) -> R:
        override = await self._enter(method, args, kwargs)
        if override is not None:
            return cast(R, override.outcome)
        return await real(*args, **kwargs)

    # ------------------------------------------------------------------ the WorldClient

    async def subscribe(
        self, cells: frozenset[int], after: Cursor | None
    ) -> AsyncIterator[WorldEvent]:
        """The inner world's events, once the subscription's hold and faults allow."""
        await self._enter("subscribe", (cells, after), {})
        async for event in self.inner.subscribe(cells, after):
            yield event

    async def zones(self) -> dict[int, frozenset[int]]:
        """See `WorldClient.zones`."""
        return await self._call("zones", self.inner.zones)

    async def online_players(self) -> list[CharacterSummary]:
        """See `WorldClient.online_players`."""
        return await self._call("online_players", self.inner.online_players)

    async def character(self, character_id: int) -> CharacterInfo | None:
        """See `WorldClient.character`."""
        return await self._call("character", self.inner.character, character_id)

    async def room(self, room_id: int) -> RoomInfo | None:
        """See `WorldClient.room`."""
        return await self._call("room", self.inner.room, room_id)

    async def entity(self, kind: EntityKind, entity_id: int) -> EntityInfo | None:
        """See `WorldClient.entity`."""
        return await self._call("entity", self.inner.entity, kind, entity_id)

    async def progs(self) -> list[ProgSignature]:
        """See `WorldClient.progs`."""
        return await self._call("progs", self.inner.progs)

    async def execute_prog(
        self, prog: str, arguments: Mapping[str, Any], idempotency_key: str
    ) -> ProgOutcome:
        """See `WorldClient.execute_prog`."""
        return await self._call(
            "execute_prog", self.inner.execute_prog, prog, arguments, idempotency_key
        )

    async def landmarks(self) -> list[LandmarkSummary]:
        """See `WorldClient.landmarks`."""
        return await self._call("landmarks", self.inner.landmarks)

    async def landmark(self, name: str) -> LandmarkInfo | None:
        """See `WorldClient.landmark`."""
        return await self._call("landmark", self.inner.landmark, name)

    async def path(
        self,
        origin_room_id: int,
        destination_room_id: int,
        rule: PathRule,
        *,
        max_exits: int = MAX_PATH_EXITS,
    ) -> RoomPath:
        """See `WorldClient.path`."""
        return await self._call(
            "path",
            self.inner.path,
            origin_room_id,
            destination_room_id,
            rule,
            max_exits=max_exits,
        )

    async def character_plan(self, character_id: int) -> CharacterPlan | None:
        """See `WorldClient.character_plan`."""
        return await self._call("character_plan", self.inner.character_plan, character_id)

    async def recent_plans(self, within: timedelta) -> list[CharacterPlan]:
        """See `WorldClient.recent_plans`."""
        return await self._call("recent_plans", self.inner.recent_plans, within)

    async def room_times(
        self, room_ids: Collection[int] | None = None
    ) -> dict[int, tuple[DateTimeReading, ...]]:
        """See `WorldClient.room_times`."""
        return await self._call("room_times", self.inner.room_times, room_ids)

    async def calendar(self, ref: str, year: int | None = None) -> CalendarInfo | None:
        """See `WorldClient.calendar`."""
        return await self._call("calendar", self.inner.calendar, ref, year)


def _checked(method: str) -> str:
    if method not in WORLD_METHODS:
        raise ValueError(f"{method!r} is not a WorldClient method: one of {sorted(WORLD_METHODS)}")
    return method
