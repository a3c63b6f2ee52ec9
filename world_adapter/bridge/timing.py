"""Time for the bridge: a clock it can be given, the protocol's timeouts, and waiting with both.

Every wait in the bridge goes through a `BridgeClock`, so tests drive pings, silence, request
deadlines and backoff with a manual clock instead of sleeping.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

T = TypeVar("T")


class BridgeClock(Protocol):
    """Monotonic time and sleeping (the daemon's runtime clock and its fake both fit)."""

    def monotonic(self) -> float:
        """Seconds on a clock that never goes backwards."""
        ...

    async def sleep(self, seconds: float) -> None:
        """Wait `seconds`."""
        ...


class SystemBridgeClock:
    """The real clock."""

    def monotonic(self) -> float:
        """`time.monotonic()`."""
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        """`asyncio.sleep`."""
        await asyncio.sleep(seconds)


@dataclass(frozen=True)
class BridgeTimings:
    """The protocol's timeouts, in seconds (docs/bridge-protocol.md).

    Raises:
        ValueError: If a value is not positive, or silence is not longer than the ping interval.
    """

    connect_seconds: float = 10.0
    """Opening the WebSocket."""
    handshake_seconds: float = 10.0
    """From sending hello to receiving welcome (the game waits as long for hello)."""
    ping_seconds: float = 15.0
    """How often the daemon pings."""
    silence_seconds: float = 45.0
    """A connection on which nothing arrived for this long is dead."""
    request_seconds: float = 10.0
    """The whole budget of one request, retries on new connections included."""
    close_seconds: float = 2.0
    """How long a closing handshake may take before the socket is dropped."""

    def __post_init__(self) -> None:
        for name in (
            "connect_seconds",
            "handshake_seconds",
            "ping_seconds",
            "silence_seconds",
            "request_seconds",
            "close_seconds",
        ):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive, not {getattr(self, name)}")
        if self.silence_seconds <= self.ping_seconds:
            raise ValueError("silence_seconds must be longer than ping_seconds")


async def wait_or_timeout(future: asyncio.Future[T], clock: BridgeClock, seconds: float) -> T:
    """The result of `future`, or TimeoutError once `seconds` have passed on `clock`.

    The future itself is left alone on timeout (its owner decides whether to cancel it).

    Raises:
        TimeoutError: If the time runs out first.
    """
    if future.done():
        return future.result()
    timer: asyncio.Future[None] = asyncio.ensure_future(clock.sleep(seconds))
    waiting: set[asyncio.Future[Any]] = {future, timer}
    try:
        await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
    finally:
        timer.cancel()
        await asyncio.gather(timer, return_exceptions=True)
    if future.done():
        return future.result()
    raise TimeoutError(f"nothing within {seconds:g}s")
