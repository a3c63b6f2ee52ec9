"""The daemon's alerting as one object: the log always, Discord when a webhook is configured.

`Alerts` is itself an `AlertSink`; the composition root hands it (or its ``alert`` method) to
whatever needs to raise alerts. While `running()`, it also

* forwards errors logged anywhere in the daemon to Discord (they are already in the log), and
* polls counters registered with `watch_counter` (queue overflow) and alerts on increases.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import Counter
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from storyteller_daemon.alerts.log_forward import forwarding_errors
from storyteller_daemon.alerts.sink import AlertSink, FanOutSink, LogAlertSink, Severity
from storyteller_daemon.clock import Clock

if TYPE_CHECKING:  # the Discord sink (and aiohttp) is imported only with a webhook
    from storyteller_daemon.alerts.discord import DiscordWebhookSink

log = logging.getLogger(__name__)

_SEVERITIES: Mapping[str, Severity] = {
    "info": "info",
    "warning": "warning",
    "error": "error",
    "critical": "critical",
}

Describe = Callable[[str, int], tuple[str, str]]
"""(label, increase) → (title, detail) of a counter alert."""


@dataclass
class _Watch:
    kind: str
    read: Callable[[], Mapping[str, int]]
    describe: Describe
    severity: Severity
    seen: Counter[str]


def describe_queue_overflow(storyteller: str, dropped: int) -> tuple[str, str]:
    """Title and detail of a queue-overflow alert."""
    return (
        f"{storyteller}: {dropped} trigger(s) dropped because its work queue was full",
        "Its turns take longer than new events arrive. Check the model latency on /metrics, "
        "narrow the storyteller's surveillance or subscriptions, use a faster model, or raise "
        "[limits] queue_size.",
    )


def describe_policy_refusals(rule: str, refused: int) -> tuple[str, str]:
    """Title and detail of an alert about prog calls the policy refused."""
    return (
        f"the policy refused {refused} tool call(s) (rule {rule})",
        "A storyteller's model asked for calls its policy forbids: often a player's text "
        "steering it, sometimes a pack asking for more than the limits allow. "
        "`storyteller runs list` and `runs show` name each refused call and its rule; "
        "docs/security.md says what each rule allows and how to tune it.",
    )


class Alerts:
    """Every alert goes to the log sink and, with a webhook, to Discord.

    Args:
        clock: paces the counter watch.
        discord: the Discord sink, or None when no webhook is configured.
        log_sink: where every alert is logged.
        watch_seconds: how often registered counters are read.
    """

    def __init__(
        self,
        *,
        clock: Clock,
        discord: DiscordWebhookSink | None = None,
        log_sink: AlertSink | None = None,
        watch_seconds: float = 30.0,
    ) -> None:
        self.discord = discord
        sinks: list[AlertSink] = [log_sink or LogAlertSink()]
        if discord is not None:
            sinks.append(discord)
        self._fan_out = FanOutSink(sinks)
        self._clock = clock
        self._watch_seconds = watch_seconds
        self._watches: list[_Watch] = []
        self.raised: Counter[str] = Counter()
        """Alerts raised, by kind (before de-duplication)."""

    def alert(
        self,
        kind: str,
        title: str,
        detail: str = "",
        *,
        severity: Severity = "error",
        key: str | None = None,
    ) -> None:
        """Log the alert and, if configured, queue it for Discord; never blocks or raises."""
        self.raised[kind] += 1
        self._fan_out.alert(kind, title, detail, severity=severity, key=key)

    def reporter(self, kind: str) -> Callable[[str, str], None]:
        """A plain ``(severity, message)`` callable raising `kind` alerts.

        For code that only has a message to report (the budget checks). Each distinct message
        is its own alert key, so only exact repeats are folded together; an unknown severity
        counts as ``error``.
        """

        def report(severity: str, message: str) -> None:
            level = _SEVERITIES.get(severity, "error")
            self.alert(kind, message, severity=level, key=f"{kind}:{message}")

        return report

    def watch_counter(
        self,
        kind: str,
        read: Callable[[], Mapping[str, int]],
        describe: Describe,
        *,
        severity: Severity = "warning",
    ) -> None:
        """Alert (key ``kind:label``) whenever a labelled counter read by `read` grows."""
        self._watches.append(_Watch(kind, read, describe, severity, Counter(read())))

    def check_counters(self) -> None:
        """Read every watched counter once and alert on increases."""
        for watch in self._watches:
            try:
                current = Counter(watch.read())
            except Exception:  # a broken reader must not stop the others
                log.warning("could not read the %s counter", watch.kind, exc_info=True)
                continue
            for label, value in current.items():
                grown = value - watch.seen.get(label, 0)
                if grown > 0:
                    title, detail = watch.describe(label, grown)
                    self.alert(
                        watch.kind,
                        title,
                        detail,
                        severity=watch.severity,
                        key=f"{watch.kind}:{label}",
                    )
            watch.seen = current

    async def _watch_counters(self) -> None:
        while True:
            await self._clock.sleep(self._watch_seconds)
            self.check_counters()

    @contextlib.asynccontextmanager
    async def running(self, grace_seconds: float = 5.0) -> AsyncIterator[Alerts]:
        """Deliver, forward logged errors and watch counters inside the block."""
        async with contextlib.AsyncExitStack() as stack:
            if self.discord is not None:
                await stack.enter_async_context(self.discord.running(grace_seconds))
                # Logged errors are in the log already: forward them to Discord only.
                stack.enter_context(forwarding_errors(self.discord))
            watcher = asyncio.create_task(self._watch_counters(), name="alert-counters")
            try:
                yield self
            finally:
                watcher.cancel()
                await asyncio.gather(watcher, return_exceptions=True)
                self.check_counters()  # what grew since the last look still gets reported
