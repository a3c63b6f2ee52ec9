"""Time as a dependency: wall time, monotonic time and sleeping, so tests can fake all three."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any, Protocol, TypeVar

T = TypeVar("T")


class Clock(Protocol):
    """What the runtime needs to know about time."""

    def now(self) -> datetime:
        """Current UTC wall time."""
        ...

    def monotonic(self) -> float:
        """Seconds on a clock that never goes backwards."""
        ...

    async def sleep(self, seconds: float) -> None:
        """Wait `seconds`."""
        ...


class SystemClock:
    """The real clock."""

    def now(self) -> datetime:
        """Current UTC wall time."""
        return datetime.now(UTC)

    def monotonic(self) -> float:
        """`time.monotonic()`."""
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        """`asyncio.sleep`."""
        await asyncio.sleep(seconds)


async def sleep_or_wake(clock: Clock, wake: asyncio.Event, seconds: float | None) -> None:
    """Sleep `seconds` on `clock` (None: indefinitely), or until `wake` is set, whichever comes
    first; both waits are cancelled and collected before returning."""
    waits: list[asyncio.Future[object]] = [asyncio.ensure_future(wake.wait())]
    if seconds is not None:
        waits.append(asyncio.ensure_future(clock.sleep(seconds)))
    try:
        await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for wait in waits:
            wait.cancel()
        await asyncio.gather(*waits, return_exceptions=True)


class DeadlinePassed(TimeoutError):
    """`within`'s deadline came before the work finished (the work was cancelled)."""


async def within(
    sleep: Callable[[float], Awaitable[None]], seconds: float, work: Awaitable[T]
) -> T:
    """`work`'s result, unless `sleep(seconds)` returns first: then `work` is cancelled and
    `DeadlinePassed` raised. With a clock's sleep, the deadline is on that clock (a fake one in
    tests), unlike `asyncio.timeout`, which always uses the event loop's.

    Raises:
        DeadlinePassed: the deadline came first.
    """
    task = asyncio.ensure_future(work)
    alarm = asyncio.ensure_future(sleep(seconds))
    try:
        await asyncio.wait({task, alarm}, return_when=asyncio.FIRST_COMPLETED)
    except BaseException:  # the caller is being cancelled: take both down with it
        task.cancel()
        alarm.cancel()
        await _ended(task, alarm)
        raise
    if task.done():
        alarm.cancel()
        await _ended(alarm)
        return task.result()
    task.cancel()
    await _ended(task)
    raise DeadlinePassed(f"not done within {seconds:.3g} s")


async def _ended(*futures: asyncio.Future[Any]) -> None:
    """Wait until `futures` have ended, however often the caller is cancelled meanwhile (then
    re-raise it, their errors retrieved): work cut off mid-write must finish unwinding before
    its caller is gone, or it would outlive the caller (and the database closed under it)."""
    interrupted = False
    while not all(future.done() for future in futures):
        try:
            await asyncio.wait(futures)
        except asyncio.CancelledError:
            interrupted = True
    for future in futures:
        if not future.cancelled():
            future.exception()  # retrieved, so never "never retrieved"
    if interrupted:
        raise asyncio.CancelledError


async def uncancelled(work: Awaitable[object]) -> None:
    """Await `work` to its end even if the caller is cancelled meanwhile, once or more often
    (then re-raise the cancellation).

    For short writes that must not be cut in half by a stop: the stop waits for them, and no
    write outlives its caller (a task group that cancels twice cannot orphan it while the
    database closes under it).
    """
    task = asyncio.ensure_future(work)
    await _ended(task)
    task.result()
