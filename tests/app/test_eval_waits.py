"""The eval runner's waits on the daemon: the work's end, the daemon's end, or the time limit."""

from __future__ import annotations

import asyncio

import pytest

from storyteller_daemon.app.evals.runner import ScenarioRunError, until_or_stopped


async def _forever() -> None:
    await asyncio.Event().wait()


async def _crashes() -> None:
    raise RuntimeError("the database went away")


async def test_work_that_ends_is_waited_for() -> None:
    daemon = asyncio.create_task(_forever())
    done = asyncio.Event()
    done.set()
    await until_or_stopped(daemon, done.wait(), 5.0, "rest")
    daemon.cancel()
    await asyncio.gather(daemon, return_exceptions=True)


async def test_a_daemon_that_stops_fails_the_run_at_once_and_cancels_the_work() -> None:
    daemon = asyncio.create_task(_crashes())
    waiting = asyncio.create_task(_forever())
    with pytest.raises(
        ScenarioRunError,
        match=r"the daemon stopped before it could start \(RuntimeError: the database went away\)",
    ):
        await until_or_stopped(daemon, waiting, 300.0, "start")
    assert waiting.cancelled()


async def test_work_that_never_ends_fails_the_run_at_the_limit() -> None:
    daemon = asyncio.create_task(_forever())
    with pytest.raises(ScenarioRunError, match=r"did not come to rest within 0 s \(real time\)"):
        await until_or_stopped(daemon, _forever(), 0.0, "come to rest")
    daemon.cancel()
    await asyncio.gather(daemon, return_exceptions=True)
