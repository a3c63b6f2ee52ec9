"""`BridgeWorldClient`: the `WorldClient` of a game reached over the bridge protocol.

The event stream and the requests use separate connections, so a long replay never delays a
tool call. Each subscription supervises its own connection (`BridgeSubscription`); requests
share one connection, opened on first use and replaced when it breaks. A request whose
connection breaks is sent again on the next one — for `execute_prog` with the same idempotency
key, so the game runs the prog once — until the request's time budget is spent. Every failure
a request can meet reaches the caller as `WorldCommandError` with a message fit for a model,
except a refusal of the token or protocol version: that is `FatalStreamError`, for the operator.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Collection, Mapping
from datetime import timedelta
from typing import Any

import aiohttp

from progs.types import ProgSignature
from world_adapter.bridge.backoff import Backoff
from world_adapter.bridge.connection import BridgeConnection, BridgeStats
from world_adapter.bridge.errors import RemoteError
from world_adapter.bridge.game_calls import AdminHandler
from world_adapter.bridge.messages import ErrorCode
from world_adapter.bridge.methods import world_methods
from world_adapter.bridge.stream import BridgeSubscription, Sleep
from world_adapter.bridge.timing import BridgeClock, BridgeTimings, SystemBridgeClock
from world_adapter.bridge.wire import FrameTooLarge
from world_adapter.codec import CodecError
from world_adapter.errors import TransientStreamError, UnsupportedRequest, WorldCommandError
from world_adapter.events import Cursor
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
from world_adapter.invocations import InvocationHandler, InvocationOutcome
from world_adapter.protocol import WorldClient

log = logging.getLogger(__name__)


def check_bridge_url(url: str) -> str:
    """`url` if it is a ``ws://`` or ``wss://`` URL.

    Raises:
        ValueError: Otherwise.
    """
    if not url.startswith(("ws://", "wss://")) or len(url) <= len("wss://"):
        raise ValueError(f"the bridge URL must start with ws:// or wss://, not '{url}'")
    return url


class BridgeWorldClient(WorldClient):
    """A game reached over the bridge protocol (docs/bridge-protocol.md).

    Call `close()` when done. Nothing connects before the first request or subscription.

    Args:
        url: The game's bridge endpoint, ``ws://`` or ``wss://``.
        token: The shared secret.
        timings: Timeouts and ping interval.
        clock: Drives pings, silence detection and request deadlines.
        rng: Random generator of the backoff jitter.
        sleep: Waits out backoff delays (default: the clock's sleep).
        client_name: Sent in hello, for the game's logs.

    Raises:
        ValueError: If the URL is not a WebSocket URL or the token is blank.
    """

    def __init__(
        self,
        url: str,
        token: str,
        *,
        timings: BridgeTimings | None = None,
        clock: BridgeClock | None = None,
        rng: random.Random | None = None,
        sleep: Sleep | None = None,
        client_name: str = "storyteller",
    ) -> None:
        self.url = check_bridge_url(url)
        if not token.strip():
            raise ValueError("the bridge token must not be blank")
        self._token = token
        self._timings = timings or BridgeTimings()
        self._clock = clock or SystemBridgeClock()
        self._rng = rng or random.Random()
        self._sleep = sleep or self._clock.sleep
        self._client_name = client_name
        self.stats = BridgeStats()
        self._session: aiohttp.ClientSession | None = None
        self._requests: BridgeConnection | None = None
        self._requests_lock = asyncio.Lock()
        self._request_backoff = self._backoff()
        self._subscriptions: set[BridgeSubscription] = set()
        self._invocations: InvocationHandler | None = None
        self.admin: AdminHandler | None = None
        """Runs admin commands the game sends (in-game ``ais``/``aisr``); None refuses them."""

    def __repr__(self) -> str:
        return f"BridgeWorldClient({self.url!r})"  # never the token

    # ------------------------------------------------------------------ lifecycle

    async def connect(self) -> BridgeConnection:
        """A new authenticated connection (subscriptions and tools like the checker use it).

        Raises:
            FatalStreamError: If the game refuses the token or the protocol version.
            TransientStreamError: If the game cannot be reached or the handshake fails.
        """
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(
                headers={"User-Agent": self._client_name}, timeout=aiohttp.ClientTimeout()
            )
        return await BridgeConnection.open(
            self._session,
            self.url,
            self._token,
            clock=self._clock,
            timings=self._timings,
            stats=self.stats,
            client_name=self._client_name,
            invocations=lambda: self._invocations,
            admin=self.admin,
        )

    async def close(self) -> None:
        """Close every subscription and connection."""
        for subscription in list(self._subscriptions):
            await subscription.aclose()
        async with self._requests_lock:
            if self._requests is not None:
                await self._requests.close()
                self._requests = None
        if self._session is not None:
            await self._session.close()
            self._session = None

    def _backoff(self) -> Backoff:
        return Backoff(rng=self._rng, clock=self._clock)

    # ------------------------------------------------------------------ stream

    def subscribe(self, cells: frozenset[int], after: Cursor | None) -> BridgeSubscription:
        """Events in `cells` after `after`, resumed across reconnects (see `BridgeSubscription`).

        Raises (from iteration):
            FatalStreamError: If the game refuses the token or the protocol version.
            StreamGap: If the game cannot replay after the cursor; its `resume_after` says where
                to subscribe from next.
        """
        subscription = BridgeSubscription(
            self.connect,
            cells,
            after,
            backoff=self._backoff(),
            sleep=self._sleep,
            stats=self.stats,
            on_close=self._subscriptions.discard,
        )
        self._subscriptions.add(subscription)
        return subscription

    # ------------------------------------------------------------------ invocations

    def serve_invocations(self, handler: InvocationHandler) -> None:
        """Answer the game's ``invoke`` frames, on any connection, with `handler`."""
        self._invocations = handler

    async def send_outcome(self, outcome: InvocationOutcome) -> None:
        """Send an ``invoke_outcome`` frame on the request connection, reconnecting within the
        request time budget if it is broken.

        Raises:
            WorldCommandError: If the game cannot be reached in time.
            FatalStreamError: If the game refuses the token or the protocol version.
        """
        budget = self._timings.request_seconds
        deadline = self._clock.monotonic() + budget
        while (remaining := deadline - self._clock.monotonic()) > 0:
            try:
                connection = await self._request_connection()
                await connection.send(outcome)
                return
            except FrameTooLarge:
                raise WorldCommandError(
                    f"The outcome of {outcome.id} is too large to send."
                ) from None
            except TransientStreamError as exc:
                await self._drop_request_connection()
                delay = min(self._request_backoff.delay(), max(remaining, 0))
                log.info("bridge outcome %s: %s; retrying in %.1f s", outcome.id, exc, delay)
                await self._sleep(delay)
        raise WorldCommandError(f"The game could not be told the outcome of {outcome.id}.")

    # ------------------------------------------------------------------ requests

    async def call(self, method: str, **arguments: Any) -> Any:
        """Call a request method by name and return its typed result.

        Raises:
            WorldCommandError: If the game refuses, answers badly or not in time, or cannot be
                reached within the request's time budget.
            FatalStreamError: If the game refuses the token or the protocol version.
        """
        spec = world_methods().get(method)
        if spec is None:
            raise WorldCommandError(f"'{method}' is not a bridge request method.")
        try:
            params = spec.encode_params(arguments)
        except TypeError as exc:
            raise WorldCommandError(f"Cannot send {method}: {exc}.") from None
        raw, connection = await self._send_until_answered(method, params)
        try:
            return spec.decode_result(raw)
        except CodecError as exc:
            await connection.report_bad_frame(f"The result of {method} is malformed: {exc}")
            raise WorldCommandError(f"The game's answer to {method} was malformed.") from None

    async def _send_until_answered(
        self, method: str, params: dict[str, Any]
    ) -> tuple[Any, BridgeConnection]:
        budget = self._timings.request_seconds
        deadline = self._clock.monotonic() + budget
        while (remaining := deadline - self._clock.monotonic()) > 0:
            try:
                connection = await self._request_connection()
                return await connection.request(method, params, remaining), connection
            except RemoteError as exc:
                if exc.code == ErrorCode.UNKNOWN_METHOD:
                    raise UnsupportedRequest(exc.message) from None
                raise WorldCommandError(exc.message) from None
            except FrameTooLarge:
                raise WorldCommandError(f"The {method} request is too large to send.") from None
            except TransientStreamError as exc:  # before TimeoutError: StreamTimeout is both
                await self._drop_request_connection()
                delay = min(self._request_backoff.delay(), max(remaining, 0))
                log.info("bridge request %s: %s; retrying in %.1f s", method, exc, delay)
                await self._sleep(delay)
            except TimeoutError:
                break
        raise WorldCommandError(f"The game did not answer {method} within {budget:g} seconds.")

    async def _request_connection(self) -> BridgeConnection:
        async with self._requests_lock:
            if self._requests is not None and self._requests.failure is not None:
                await self._requests.close()
                self._requests = None
            if self._requests is None:
                self._requests = await self.connect()
                self._request_backoff.reset()
            return self._requests

    async def _drop_request_connection(self) -> None:
        async with self._requests_lock:
            if self._requests is not None and self._requests.failure is not None:
                await self._requests.close()
                self._requests = None

    async def game(self) -> str:
        """The game's name from its welcome (``""`` when it gives none), connecting if need be.

        Raises:
            FatalStreamError: If the game refuses the token or the protocol version.
            TransientStreamError: If the game cannot be reached or the handshake fails.
        """
        return (await self._request_connection()).welcome.game

    # ------------------------------------------------------------------ WorldClient queries

    async def zones(self) -> dict[int, frozenset[int]]:
        """Zone id → the cells currently in it."""
        result: dict[int, frozenset[int]] = await self.call("zones")
        return result

    async def online_players(self) -> list[CharacterSummary]:
        """Player characters currently in the game."""
        result: list[CharacterSummary] = await self.call("online_players")
        return result

    async def character(self, character_id: int) -> CharacterInfo | None:
        """One character, or None."""
        result: CharacterInfo | None = await self.call("character", character_id=character_id)
        return result

    async def room(self, room_id: int) -> RoomInfo | None:
        """One room, or None."""
        result: RoomInfo | None = await self.call("room", room_id=room_id)
        return result

    async def entity(self, kind: EntityKind, entity_id: int) -> EntityInfo | None:
        """The thing of this kind with this id, or None."""
        result: EntityInfo | None = await self.call("entity", kind=kind, entity_id=entity_id)
        return result

    async def progs(self) -> list[ProgSignature]:
        """The prog catalogue."""
        result: list[ProgSignature] = await self.call("progs")
        return result

    async def execute_prog(
        self, prog: str, arguments: Mapping[str, Any], idempotency_key: str
    ) -> ProgOutcome:
        """Run a prog; retries after a broken connection reuse the key, so it runs once."""
        if not idempotency_key.strip():
            raise WorldCommandError("The idempotency key must not be blank.")
        result: ProgOutcome = await self.call(
            "execute_prog", prog=prog, arguments=dict(arguments), idempotency_key=idempotency_key
        )
        return result

    async def landmarks(self) -> list[LandmarkSummary]:
        """Every landmark."""
        result: list[LandmarkSummary] = await self.call("landmarks")
        return result

    async def landmark(self, name: str) -> LandmarkInfo | None:
        """One landmark by name, or None."""
        result: LandmarkInfo | None = await self.call("landmark", name=name)
        return result

    async def path(
        self,
        origin_room_id: int,
        destination_room_id: int,
        rule: PathRule,
        *,
        max_exits: int = MAX_PATH_EXITS,
    ) -> RoomPath:
        """The shortest path between two rooms that `rule` allows."""
        result: RoomPath = await self.call(
            "path",
            origin_room_id=origin_room_id,
            destination_room_id=destination_room_id,
            rule=rule,
            max_exits=max_exits,
        )
        return result

    async def character_plan(self, character_id: int) -> CharacterPlan | None:
        """A character's plans, or None."""
        result: CharacterPlan | None = await self.call("character_plan", character_id=character_id)
        return result

    async def recent_plans(self, within: timedelta) -> list[CharacterPlan]:
        """Plans of online players that changed within `within`."""
        result: list[CharacterPlan] = await self.call("recent_plans", within=within)
        return result

    async def room_times(
        self, room_ids: Collection[int] | None = None
    ) -> dict[int, tuple[DateTimeReading, ...]]:
        """Room id → the current date and time there, per calendar."""
        ids = None if room_ids is None else sorted(room_ids)
        result: dict[int, tuple[DateTimeReading, ...]] = await self.call("room_times", room_ids=ids)
        return result

    async def calendar(self, ref: str, year: int | None = None) -> CalendarInfo | None:
        """A calendar by id, alias or name, or None."""
        result: CalendarInfo | None = await self.call("calendar", ref=ref, year=year)
        return result
