"""Telling systemd how the daemon is doing: ready, status, watchdog pings, stopping.

The sd_notify protocol is one ``AF_UNIX`` datagram of ``KEY=value`` lines sent to the socket
named by ``$NOTIFY_SOCKET`` (a leading ``@`` is Linux's abstract namespace). Without that
variable, as when the daemon runs outside systemd, every call here does nothing.

* ``READY=1`` goes out once `Daemon.ready` is set: the database is migrated, the world
  subscription and the heartbeat scheduler are running. ``Type=notify`` units count as started
  only then.
* ``WATCHDOG=1`` goes out every half of ``$WATCHDOG_USEC`` from a task on the event loop, never
  from a thread: if the loop is blocked, the pings stop and systemd restarts the service after
  ``WatchdogSec``.
* ``STOPPING=1`` goes out as soon as SIGTERM (or SIGINT) asks the daemon to stop; the pings go
  on while queued turns drain.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
from collections.abc import Awaitable, Callable, Mapping

from storyteller_daemon.clock import Clock
from storyteller_daemon.runtime.daemon import Daemon

log = logging.getLogger(__name__)


class SystemdNotifier:
    """Sends sd_notify messages; a no-op when `address` is None.

    Args:
        address: the notify socket path, or ``@name`` for an abstract socket.
        watchdog_usec: systemd's watchdog timeout in microseconds, if the watchdog is on.
    """

    def __init__(self, address: str | None, *, watchdog_usec: int | None = None) -> None:
        if address and address[0] == "@":
            address = "\0" + address[1:]
        elif address and address[0] != "/":
            log.warning("NOTIFY_SOCKET=%r is neither a path nor @abstract; ignoring it", address)
            address = None
        self._address = address or None
        self._watchdog_usec = watchdog_usec if watchdog_usec and watchdog_usec > 0 else None
        self._warned = False
        self.sent: int = 0
        """Messages delivered so far."""

    @classmethod
    def from_environ(cls, environ: Mapping[str, str], pid: int | None = None) -> SystemdNotifier:
        """A notifier configured by the variables systemd sets for the service's main process.

        ``$WATCHDOG_PID``, when set, must name this process; otherwise the watchdog belongs to
        another process and stays off here.
        """
        usec: int | None = None
        try:
            usec = int(environ.get("WATCHDOG_USEC", "") or 0) or None
            watchdog_pid = environ.get("WATCHDOG_PID", "")
            if usec and watchdog_pid and int(watchdog_pid) != (pid or os.getpid()):
                usec = None
        except ValueError:
            log.warning("WATCHDOG_USEC or WATCHDOG_PID is not a number; the watchdog stays off")
            usec = None
        return cls(environ.get("NOTIFY_SOCKET") or None, watchdog_usec=usec)

    @property
    def enabled(self) -> bool:
        """Whether the daemon runs under a service manager that listens."""
        return self._address is not None

    @property
    def watchdog_interval(self) -> float | None:
        """Seconds between pings (half the watchdog timeout), or None without a watchdog."""
        if self._address is None or self._watchdog_usec is None:
            return None
        return self._watchdog_usec / 2_000_000

    def notify(self, *lines: str) -> bool:
        """Send one message; False when not under systemd or the send failed (never raises)."""
        if self._address is None:
            return False
        message = "\n".join(lines).encode()
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as sock:
                sock.connect(self._address)
                sock.sendall(message)
        except OSError as exc:
            if not self._warned:  # once: a missing socket would otherwise flood the log
                log.warning("cannot notify systemd (%s); carrying on without it", exc)
                self._warned = True
            return False
        self.sent += 1
        return True


def status_line(daemon: Daemon) -> str:
    """A one-line summary for ``systemctl status``."""
    stats = daemon.pipeline.stats
    storytellers = len(daemon.pipeline.router.storytellers)
    return (
        f"{storytellers} storytellers; {stats.events_in} events, "
        f"{stats.turns.total()} turns, ${stats.cost_usd:.4f} since start"
    )


async def watchdog(
    notifier: SystemdNotifier, clock: Clock, status: Callable[[], str] | None = None
) -> None:
    """Ping the watchdog every half timeout until cancelled; return at once without one.

    A ping that is late by more than an interval means the event loop was blocked; that is
    logged, because systemd kills the service when it happens for a whole ``WatchdogSec``.
    """
    interval = notifier.watchdog_interval
    if interval is None:
        return
    due = clock.monotonic()
    while True:
        late = clock.monotonic() - due
        if late > interval:
            log.warning(
                "a watchdog ping was %.1f s late: the event loop was blocked; systemd restarts "
                "the daemon when pings stop for WatchdogSec (%.0f s)",
                late,
                interval * 2,
            )
        lines = ["WATCHDOG=1"]
        if status is not None:
            lines.append(f"STATUS={status()}")
        notifier.notify(*lines)
        due = clock.monotonic() + interval
        await clock.sleep(interval)


async def _follow_lifecycle(
    notifier: SystemdNotifier,
    *,
    ready: asyncio.Event,
    stop: asyncio.Event,
    clock: Clock,
    status: Callable[[], str],
) -> None:
    await ready.wait()
    notifier.notify("READY=1", f"STATUS=ready: {status()}")
    pinger = asyncio.create_task(watchdog(notifier, clock, status), name="systemd-watchdog")
    try:
        await stop.wait()
        notifier.notify("STOPPING=1", "STATUS=stopping: finishing queued turns")
        await pinger  # pings continue through the drain, until the daemon returns
    finally:
        pinger.cancel()
        await asyncio.gather(pinger, return_exceptions=True)


async def run_under_systemd(
    main: Awaitable[None],
    *,
    notifier: SystemdNotifier,
    ready: asyncio.Event,
    stop: asyncio.Event,
    clock: Clock,
    status: Callable[[], str],
) -> None:
    """Await `main` (the daemon) while keeping systemd informed; `main`'s errors propagate."""
    helper = asyncio.create_task(
        _follow_lifecycle(notifier, ready=ready, stop=stop, clock=clock, status=status),
        name="systemd-notify",
    )
    try:
        await main
    finally:
        helper.cancel()
        await asyncio.gather(helper, return_exceptions=True)
