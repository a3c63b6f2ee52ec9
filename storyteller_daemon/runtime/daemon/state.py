"""The world link's status, which every part of the daemon may change, and its logger.

`WorldStatus` is what ``/healthz`` shows of the world (``starting``, ``subscribed``,
``reconnecting``, ``stalled``, ``refused``) and the reaction to a world that refuses the
daemon, which the settings poll, the stream and the start may each be the first to hear: it
says why, alerts, and sets the daemon's stop.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

from storyteller_daemon.alerts.sink import AlertSink
from world_adapter.errors import FatalStreamError, WorldAdapterError

log = logging.getLogger(__package__)
"""The daemon's one logger, named after the package: every part logs under that name."""


@dataclass(frozen=True)
class OpenInvocation:
    """A game's accepted invocation whose outcome the game has not been sent yet."""

    request_id: str
    storyteller_id: int
    source: str


class WorldStatus:
    """How the daemon stands with the world, and why it stopped if the world refused it.

    Args:
        alerts: where a refusal is alerted (None: only logged).
    """

    def __init__(self, alerts: AlertSink | None) -> None:
        self._alerts = alerts
        self.state = "starting"
        """``starting``, ``subscribed``, ``reconnecting``, ``stalled`` (the game sends but
        nothing is stored; see `IntakeWatch`) or ``refused`` (shown by /healthz)."""
        self.failure: WorldAdapterError | None = None
        """Why the world refused the daemon, if it did (`Daemon.run` raises it after draining)."""
        self._stop: asyncio.Event | None = None

    def stops(self, stop: asyncio.Event) -> None:
        """Set `stop` when the world refuses the daemon (the running daemon's stop)."""
        self._stop = stop

    def set(self, state: str) -> None:
        """The link is now in `state`."""
        self.state = state

    def refused(self, error: FatalStreamError) -> None:
        """The world refused the daemon (token, protocol version): stop, and say why."""
        if self.failure is None:
            self.state = "refused"
            self.failure = error
            # Alerted directly below with the fix; the log line is not forwarded a second time.
            log.error(
                "the world refused the daemon, which stops: %s", error, extra={"alert": False}
            )
            if self._alerts is not None:
                self._alerts.alert(
                    "world_refused",
                    "The game refused the storyteller daemon, which has stopped",
                    f"{error}. Check that the bridge token (world.token_env) matches the game's "
                    "and that both sides speak the same protocol version; the daemon does not "
                    "retry a refusal.",
                    severity="error",
                    key="world_refused",
                )
        if self._stop is not None:
            self._stop.set()
