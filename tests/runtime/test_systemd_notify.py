"""sd_notify through real AF_UNIX datagram sockets: ready, watchdog, stopping, a blocked loop."""

from __future__ import annotations

import asyncio
import logging
import socket
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from storyteller_daemon.app import build_runtime
from storyteller_daemon.config import parse_config
from storyteller_daemon.runtime.health.systemd import (
    SystemdNotifier,
    run_under_systemd,
    status_line,
    watchdog,
)
from storyteller_daemon.storage.store import Store
from storyteller_daemon.testing.clock import FakeClock, settle
from world_adapter.sim import SimWorld


class ServiceManager:
    """systemd's side of the protocol: a datagram socket that collects notifications."""

    def __init__(self, address: str) -> None:
        self.address = address
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(address.replace("@", "\0", 1) if address.startswith("@") else address)
        self.sock.setblocking(False)

    async def receive(self) -> str:
        """The next notification (waits for it, at most 5 s)."""
        data = await asyncio.wait_for(asyncio.get_running_loop().sock_recv(self.sock, 4096), 5)
        return data.decode()

    def received(self) -> list[str]:
        """Notifications already waiting, without waiting for more."""
        messages = []
        while True:
            try:
                messages.append(self.sock.recv(4096).decode())
            except BlockingIOError:
                return messages

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def manager() -> Iterator[ServiceManager]:
    listener = ServiceManager(f"@storyteller-test-{uuid.uuid4().hex}")
    try:
        yield listener
    finally:
        listener.close()


class StallingClock(FakeClock):
    """A fake clock whose time can jump while no task runs: what a blocked event loop looks like."""

    def __init__(self) -> None:
        super().__init__()
        self._stalled = 0.0

    def stall(self, seconds: float) -> None:
        """Time passes, synchronously: no sleeper wakes, no task runs."""
        self._stalled += seconds

    def monotonic(self) -> float:
        return super().monotonic() + self._stalled


def test_without_notify_socket_everything_is_a_no_op() -> None:
    notifier = SystemdNotifier.from_environ({"WATCHDOG_USEC": "60000000"})
    assert not notifier.enabled
    assert notifier.notify("READY=1") is False
    assert notifier.watchdog_interval is None
    asyncio.run(asyncio.wait_for(watchdog(notifier, FakeClock()), 1))  # returns at once


def test_a_path_socket_receives_the_datagram() -> None:
    with tempfile.TemporaryDirectory(prefix="st-") as directory:  # AF_UNIX paths are short
        manager = ServiceManager(str(Path(directory) / "notify"))
        try:
            notifier = SystemdNotifier.from_environ({"NOTIFY_SOCKET": manager.address})
            assert notifier.notify("STATUS=hello", "READY=1")
            assert manager.received() == ["STATUS=hello\nREADY=1"]
        finally:
            manager.close()


@pytest.mark.parametrize(
    ("environ", "interval"),
    [
        ({"WATCHDOG_USEC": "60000000"}, 30.0),
        ({"WATCHDOG_USEC": "2000000", "WATCHDOG_PID": "4242"}, 1.0),
        ({"WATCHDOG_USEC": "60000000", "WATCHDOG_PID": "1"}, None),  # another process's watchdog
        ({"WATCHDOG_USEC": "sixty"}, None),
        ({"WATCHDOG_USEC": "0"}, None),
        ({}, None),
    ],
)
def test_the_watchdog_pings_every_half_timeout_for_this_process_only(
    environ: dict[str, str], interval: float | None
) -> None:
    notifier = SystemdNotifier.from_environ({"NOTIFY_SOCKET": "@x", **environ}, pid=4242)
    assert notifier.watchdog_interval == interval


def test_an_unreachable_socket_is_reported_once_and_never_raises(
    caplog: pytest.LogCaptureFixture,
) -> None:
    notifier = SystemdNotifier.from_environ({"NOTIFY_SOCKET": f"@nobody-{uuid.uuid4().hex}"})
    assert notifier.notify("READY=1") is False
    assert notifier.notify("WATCHDOG=1") is False
    assert caplog.text.count("cannot notify systemd") == 1


async def test_the_daemon_reports_ready_then_pings_then_stopping(
    sqlite_store: Store, manager: ServiceManager
) -> None:
    watch = await sqlite_store.storytellers.create("Harbour Watch")
    await sqlite_store.storytellers.save(replace(watch, paused=False))
    cfg = parse_config({"database": {"url": "sqlite+aiosqlite:///unused.db"}}, "test")
    clock = FakeClock()
    runtime = await build_runtime(
        cfg, environ={}, world=SimWorld.harbour_town(), store=sqlite_store, clock=clock
    )
    notifier = SystemdNotifier.from_environ(
        {"NOTIFY_SOCKET": manager.address, "WATCHDOG_USEC": "2000000"}
    )
    stop = asyncio.Event()
    task = asyncio.create_task(
        run_under_systemd(
            runtime.run(stop),
            notifier=notifier,
            ready=runtime.daemon.ready,
            stop=stop,
            clock=clock,
            status=lambda: status_line(runtime.daemon),
        )
    )
    assert await manager.receive() == (
        "READY=1\nSTATUS=ready: 1 storytellers; 0 events, 0 turns, $0.0000 since start"
    )
    assert runtime.daemon.ready.is_set()
    assert (await manager.receive()).startswith("WATCHDOG=1\nSTATUS=1 storytellers;")
    for _ in range(3):
        await clock.advance(1.0)
        assert (await manager.receive()).startswith("WATCHDOG=1\n")
    stop.set()  # what the SIGTERM handler does
    assert await manager.receive() == "STOPPING=1\nSTATUS=stopping: finishing queued turns"
    await asyncio.wait_for(task, 5)
    await settle()
    assert manager.received() == []


async def test_watchdog_pings_stop_while_the_event_loop_is_blocked(
    manager: ServiceManager, caplog: pytest.LogCaptureFixture
) -> None:
    clock = StallingClock()
    notifier = SystemdNotifier.from_environ(
        {"NOTIFY_SOCKET": manager.address, "WATCHDOG_USEC": "2000000"}  # WatchdogSec=2
    )
    pings: list[float] = []

    async def record(count: int) -> None:
        for _ in range(count):
            assert await manager.receive() == "WATCHDOG=1"
            pings.append(clock.monotonic())

    task = asyncio.create_task(watchdog(notifier, clock))
    try:
        await record(1)
        await clock.advance(1.0)
        await record(1)

        def blocking_work() -> list[str]:
            clock.stall(10.0)  # ten seconds pass with the loop held by this function
            return manager.received()

        assert blocking_work() == []  # no ping went out while the loop was blocked
        await clock.advance(1.0)
        await record(1)
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    gaps = [later - earlier for earlier, later in zip(pings, pings[1:], strict=False)]
    assert gaps == [1.0, 11.0]  # 11 s without a ping: past WatchdogSec, systemd restarts
    assert "a watchdog ping was 10.0 s late: the event loop was blocked" in caplog.text
    assert [r.levelno for r in caplog.records] == [logging.WARNING]


async def test_a_failing_daemon_stops_the_notifications_and_its_error_propagates(
    manager: ServiceManager,
) -> None:
    notifier = SystemdNotifier.from_environ({"NOTIFY_SOCKET": manager.address})
    ready, stop = asyncio.Event(), asyncio.Event()

    async def broken() -> None:
        raise RuntimeError("database is gone")

    with pytest.raises(RuntimeError, match="database is gone"):
        await run_under_systemd(
            broken(), notifier=notifier, ready=ready, stop=stop, clock=FakeClock(), status=str
        )
    await settle()
    assert manager.received() == []  # never ready, so never READY=1
