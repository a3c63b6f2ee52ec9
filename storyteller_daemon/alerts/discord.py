"""Alerts posted to a Discord channel through a webhook.

`alert()` only sanitises, de-duplicates (see `throttle`) and puts the alert in a bounded queue;
one background task posts the queue in order. Posting honours Discord's rate limits: a 429 waits
the ``retry_after`` it names, server errors and network failures are retried a few times with
jittered exponential backoff, and anything else is logged and given up. A full queue drops the
alert and counts it. Nothing here can block or fail the daemon.

The webhook JSON is posted with aiohttp rather than the ``discord-webhook`` package: that package
opens a new HTTP client per message, raises on a 429 that lacks a ``Via`` header, returns None
(and then crashes) when a retry gets another error, crashes on a 204, and leaks its own settings
into the request body. Guarding all of that would take more code than the post itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import re
from collections import Counter
from collections.abc import AsyncIterator, Mapping
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

import aiohttp

from storyteller_daemon.alerts.sanitise import sanitise
from storyteller_daemon.alerts.sink import Alert, Severity
from storyteller_daemon.alerts.throttle import DEFAULT_PERIOD_SECONDS, Throttle
from storyteller_daemon.clock import Clock

log = logging.getLogger(__name__)

DISCORD_HOSTS = frozenset(
    {"discord.com", "discordapp.com", "canary.discord.com", "ptb.discord.com"}
)
_LOOPBACK_HOSTS = frozenset({"127.0.0.1", "::1", "localhost"})
_WEBHOOK_PATH = re.compile(r"^/api(?:/v\d+)?/webhooks/(\d+)/([A-Za-z0-9_-]+)/?$")
COLOURS: Mapping[Severity, int] = {
    "info": 0x3498DB,
    "warning": 0xF1C40F,
    "error": 0xE74C3C,
    "critical": 0x8E44AD,
}
MAX_TITLE_CHARS = 256  # Discord's limit for an embed title
MAX_RETRY_AFTER_SECONDS = 300.0
"""A longer wait means a Cloudflare ban or a global limit: give the alert up instead."""


def webhook_url_problem(url: str) -> str | None:
    """What is wrong with a Discord webhook URL, or None; no network or DNS is used.

    A webhook URL looks like ``https://discord.com/api/webhooks/ID/TOKEN``. Plain ``http`` is
    accepted only for a loopback host (a local relay or a test server).
    """
    try:
        parts = urlsplit(url.strip())
        host = (parts.hostname or "").lower()
    except ValueError as exc:
        return f"not a URL ({exc})"
    if parts.scheme not in ("https", "http") or not host:
        return "not an http(s) URL"
    if host not in DISCORD_HOSTS and host not in _LOOPBACK_HOSTS:
        return f"host {host!r} is not Discord (discord.com)"
    if parts.scheme == "http" and host not in _LOOPBACK_HOSTS:
        return "uses http; Discord webhooks need https"
    if not _WEBHOOK_PATH.match(parts.path):
        return "path is not /api/webhooks/ID/TOKEN (copy the URL from the channel's Integrations)"
    return None


def redact_webhook_url(url: str) -> str:
    """The URL with its secret token replaced, for logs and messages."""
    parts = urlsplit(url.strip())
    match = _WEBHOOK_PATH.match(parts.path)
    path = f"/api/webhooks/{match.group(1)}/***" if match else "/***"
    return f"{parts.scheme}://{parts.netloc}{path}"


def webhook_payload(alert: Alert, *, source: str, at: datetime, username: str) -> dict[str, Any]:
    """The webhook body for an alert: one embed, no pings possible."""
    embed: dict[str, Any] = {
        "title": sanitise(" ".join(alert.headline.split()), MAX_TITLE_CHARS, "…"),
        "color": COLOURS.get(alert.severity, COLOURS["error"]),
        "footer": {"text": sanitise(f"{source} · {alert.kind} · {alert.severity}", 200)},
        "timestamp": at.isoformat(),
    }
    detail = sanitise(alert.detail)
    if detail:
        embed["description"] = detail
    return {"username": username, "embeds": [embed], "allowed_mentions": {"parse": []}}


class DiscordWebhookSink:
    """An `AlertSink` posting to one Discord webhook from a background task.

    Args:
        url: the webhook URL (a secret: it is never logged).
        clock: time for backoff, rate limits and quiet periods.
        source: who is speaking, shown in each alert's footer (e.g. ``storyteller@host``).
        period_seconds: the quiet period per alert key (see `Throttle`).
        queue_size: alerts waiting to be posted; beyond this they are dropped and counted.
        max_attempts: posts of one alert before it is given up.
        request_timeout_seconds: limit of one HTTP request.
        rng: jitter source (seeded in tests).
    """

    username = "storyteller"
    flush_seconds = 30.0
    backoff_base_seconds = 1.0
    backoff_cap_seconds = 30.0

    def __init__(
        self,
        url: str,
        *,
        clock: Clock,
        source: str = "storyteller",
        period_seconds: float = DEFAULT_PERIOD_SECONDS,
        queue_size: int = 100,
        max_attempts: int = 5,
        request_timeout_seconds: float = 10.0,
        rng: random.Random | None = None,
    ) -> None:
        if queue_size < 1 or max_attempts < 1:
            raise ValueError("queue_size and max_attempts must be at least 1")
        self._url = url.strip()
        self._clock = clock
        self._source = source
        self._throttle = Throttle(clock, period_seconds)
        self._queue: asyncio.Queue[tuple[Alert, datetime]] = asyncio.Queue(maxsize=queue_size)
        self._max_attempts = max_attempts
        self._timeout = aiohttp.ClientTimeout(total=request_timeout_seconds)
        self._rng = rng or random.Random()
        self._resume_at = 0.0
        self.counts: Counter[str] = Counter()
        """``sent``, ``failed`` (given up) and ``dropped`` (queue full) alerts."""

    @property
    def suppressed(self) -> int:
        """Repeats folded into summaries by the quiet periods."""
        return self._throttle.suppressed

    @property
    def pending(self) -> int:
        """Alerts waiting to be posted."""
        return self._queue.qsize()

    async def idle(self) -> None:
        """Return once every queued alert has been posted or given up."""
        await self._queue.join()

    def __repr__(self) -> str:
        return f"DiscordWebhookSink({redact_webhook_url(self._url)})"

    # ------------------------------------------------------------------ the AlertSink side

    def alert(
        self,
        kind: str,
        title: str,
        detail: str = "",
        *,
        severity: Severity = "error",
        key: str | None = None,
    ) -> None:
        """Queue the alert unless its key is in a quiet period; never blocks or raises."""
        try:
            admitted = self._throttle.admit(Alert(kind, title, detail, severity, key or kind))
            if admitted is not None:
                self._enqueue(admitted)
        except Exception:  # a bug here must not turn into an error in the caller
            log.warning("could not queue an alert for Discord", exc_info=True)

    def _enqueue(self, alert: Alert) -> None:
        try:
            self._queue.put_nowait((alert, self._clock.now()))
        except asyncio.QueueFull:
            self.counts["dropped"] += 1
            if self.counts["dropped"] % 100 == 1:  # the first, then every hundredth
                log.warning(
                    "Discord alert queue is full; %d alert(s) dropped so far",
                    self.counts["dropped"],
                )

    # ------------------------------------------------------------------ delivery

    @contextlib.asynccontextmanager
    async def running(self, grace_seconds: float = 5.0) -> AsyncIterator[DiscordWebhookSink]:
        """Post in the background inside the block; on exit, post what is left for a moment."""
        task = asyncio.create_task(self.run(), name="discord-alerts")
        try:
            yield self
        finally:
            for summary in self._throttle.flush(force=True):
                self._enqueue(summary)
            if grace_seconds > 0 and not task.done():
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(grace_seconds):
                        await self._queue.join()
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    async def run(self) -> None:
        """Post queued alerts and repeat summaries until cancelled."""
        async with aiohttp.ClientSession(timeout=self._timeout) as session:
            flusher = asyncio.create_task(self._flush_periodically())
            try:
                while True:
                    alert, at = await self._queue.get()
                    try:
                        payload = webhook_payload(
                            alert, source=self._source, at=at, username=self.username
                        )
                        sent = await self._post(session, payload)
                        self.counts["sent" if sent else "failed"] += 1
                    finally:
                        self._queue.task_done()
            finally:
                flusher.cancel()
                await asyncio.gather(flusher, return_exceptions=True)

    async def _flush_periodically(self) -> None:
        while True:
            await self._clock.sleep(self.flush_seconds)
            for summary in self._throttle.flush():
                self._enqueue(summary)

    async def _post(self, session: aiohttp.ClientSession, payload: dict[str, Any]) -> bool:
        """Post one alert with retries; True when Discord accepted it."""
        problem = "not attempted"
        for attempt in range(1, self._max_attempts + 1):
            wait = self._resume_at - self._clock.monotonic()
            if wait > 0:  # the previous answer said the bucket is empty
                await self._clock.sleep(wait)
            outcome = await self._attempt(session, payload)
            if isinstance(outcome, bool):
                return outcome
            problem, delay = outcome
            if delay is None:
                delay = self._backoff(attempt)
            if attempt == self._max_attempts or delay > MAX_RETRY_AFTER_SECONDS:
                break
            log.info("Discord alert post failed (%s); retrying in %.1f s", problem, delay)
            await self._clock.sleep(delay)
        log.warning("gave up posting an alert to Discord (last failure: %s)", problem)
        return False

    async def _attempt(
        self, session: aiohttp.ClientSession, payload: dict[str, Any]
    ) -> bool | tuple[str, float | None]:
        """One post: True (accepted), False (refused for good), or (problem, wait) to retry."""
        try:
            async with session.post(self._url, json=payload) as response:
                if 200 <= response.status < 300:
                    self._note_bucket(response.headers)
                    return True
                if response.status == 429:
                    return "HTTP 429 (rate limited)", await _retry_after(response)
                if response.status >= 500:
                    return f"HTTP {response.status}", None
                # 400: a payload Discord rejects; 401/403/404: the webhook is gone.
                log.warning(
                    "Discord refused an alert with HTTP %d; not retrying (webhook %s)",
                    response.status,
                    redact_webhook_url(self._url),
                )
                return False
        except (aiohttp.ClientError, TimeoutError) as exc:
            return type(exc).__name__, None

    def _backoff(self, attempt: int) -> float:
        """Exponential backoff with jitter: half to all of base·2^(attempt-1), capped."""
        ceiling = min(self.backoff_cap_seconds, self.backoff_base_seconds * 2.0 ** (attempt - 1))
        return ceiling * self._rng.uniform(0.5, 1.0)

    def _note_bucket(self, headers: Mapping[str, str]) -> None:
        """Remember when an exhausted rate-limit bucket refills."""
        if headers.get("X-RateLimit-Remaining") == "0":
            reset_after = _seconds(headers.get("X-RateLimit-Reset-After"))
            if reset_after is not None:
                self._resume_at = self._clock.monotonic() + reset_after


async def _retry_after(response: aiohttp.ClientResponse) -> float | None:
    """Seconds a 429 asks us to wait: the body's ``retry_after``, else the headers."""
    try:
        body = await response.json(content_type=None)
    except (ValueError, aiohttp.ClientError):
        body = None
    if isinstance(body, dict):
        seconds = _seconds(body.get("retry_after"))
        if seconds is not None:
            return seconds
    for header in ("Retry-After", "X-RateLimit-Reset-After"):
        seconds = _seconds(response.headers.get(header))
        if seconds is not None:
            return seconds
    return None


def _seconds(value: object) -> float | None:
    """A non-negative number of seconds from a header or JSON value, else None."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return None
    try:
        seconds = float(value)
    except ValueError:
        return None
    return seconds if seconds >= 0 else None
