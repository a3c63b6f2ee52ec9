"""The Discord sink against a fake webhook on 127.0.0.1: delivery, limits, retries, failures."""

from __future__ import annotations

import asyncio
import logging
import random
import socket
from typing import Any

import pytest
from discord_doubles import FLUSH_TICK, Answer, FakeDiscord, WatchedClock

from storyteller_daemon.alerts.discord import DiscordWebhookSink
from storyteller_daemon.testing.clock import settle


def make_sink(url: str, clock: WatchedClock, **kwargs: Any) -> DiscordWebhookSink:
    return DiscordWebhookSink(
        url, clock=clock, source="storyteller@test", rng=random.Random(7), **kwargs
    )


async def test_an_alert_is_posted_as_one_embed_that_cannot_ping(
    discord: FakeDiscord, clock: WatchedClock
) -> None:
    sink = make_sink(discord.url, clock)
    async with sink.running(grace_seconds=0):
        sink.alert(
            "log_error",
            "attention stage failed for storyteller 3",
            "@everyone look ```rm -rf``` <@123>",
            severity="error",
        )
        await discord.wait_for_posts(1)
        await asyncio.wait_for(sink.idle(), 5)  # the answer is counted
    (post,) = discord.posts
    assert post["allowed_mentions"] == {"parse": []}
    assert post["username"] == "storyteller"
    (embed,) = post["embeds"]
    assert embed["title"] == "attention stage failed for storyteller 3"
    assert embed["description"] == "@\u200beveryone look '''rm -rf''' <@\u200b123>"
    assert embed["footer"]["text"] == "storyteller@test · log_error · error"
    assert embed["color"] == 0xE74C3C
    assert embed["timestamp"] == "2026-01-01T00:00:00+00:00"
    assert sink.counts["sent"] == 1


async def test_a_429_waits_the_retry_after_it_names_then_resends(
    discord: FakeDiscord, clock: WatchedClock
) -> None:
    # Discord's 429 body; no Via header (the case the discord-webhook package raises on).
    discord.answer(
        Answer(429, {"message": "You are being rate limited.", "retry_after": 2.5, "global": False})
    )
    sink = make_sink(discord.url, clock)
    async with sink.running(grace_seconds=0):
        sink.alert("queue_overflow", "Watch: 3 trigger(s) dropped")
        await discord.wait_for_posts(1)
        assert await clock.retry_naps(1) == [2.5]
        await clock.advance(2.4)
        assert len(discord.posts) == 1  # still waiting out the rate limit
        await clock.advance(0.1)
        await discord.wait_for_posts(2)
        await asyncio.wait_for(sink.idle(), 5)  # the answer is counted
    assert discord.posts[0] == discord.posts[1]
    assert sink.counts == {"sent": 1}


async def test_an_empty_rate_limit_bucket_delays_the_next_post(
    discord: FakeDiscord, clock: WatchedClock
) -> None:
    discord.answer(
        Answer(204, headers={"X-RateLimit-Remaining": "0", "X-RateLimit-Reset-After": "1.25"})
    )
    sink = make_sink(discord.url, clock)
    async with sink.running(grace_seconds=0):
        sink.alert("a", "first")
        await discord.wait_for_posts(1)
        sink.alert("b", "second")
        assert await clock.retry_naps(1) == [1.25]
        assert len(discord.posts) == 1
        await clock.advance(1.25)
        await discord.wait_for_posts(2)
        await asyncio.wait_for(sink.idle(), 5)  # the answer is counted
    assert discord.titles() == ["first", "second"]


async def test_server_errors_are_retried_with_growing_jittered_backoff(
    discord: FakeDiscord, clock: WatchedClock
) -> None:
    discord.answer(Answer(500), Answer(502), Answer(503))
    sink = make_sink(discord.url, clock)
    async with sink.running(grace_seconds=0):
        sink.alert("model_fatal", "refused")
        for posts in (1, 2, 3):
            await discord.wait_for_posts(posts)
            nap = (await clock.retry_naps(posts))[-1]
            low = 2 ** (posts - 1) * 0.5
            assert low <= nap <= 2 * low
            await clock.advance(nap)
        await discord.wait_for_posts(4)
        await asyncio.wait_for(sink.idle(), 5)  # the answer is counted
    assert sink.counts == {"sent": 1}


async def test_retries_are_bounded_and_giving_up_is_logged(
    discord: FakeDiscord, clock: WatchedClock, caplog: pytest.LogCaptureFixture
) -> None:
    discord.answer(*[Answer(500)] * 10)
    sink = make_sink(discord.url, clock, max_attempts=3)
    async with sink.running(grace_seconds=0):
        sink.alert("log_error", "boom")
        for posts in (1, 2):
            await discord.wait_for_posts(posts)
            await clock.advance((await clock.retry_naps(posts))[-1])
        await asyncio.wait_for(sink.idle(), 5)
    assert len(discord.posts) == 3
    assert sink.counts == {"failed": 1}
    assert "gave up posting an alert to Discord (last failure: HTTP 500)" in caplog.text


async def test_a_refused_webhook_is_not_retried(
    discord: FakeDiscord, clock: WatchedClock, caplog: pytest.LogCaptureFixture
) -> None:
    discord.answer(Answer(404, {"message": "Unknown Webhook", "code": 10015}))
    sink = make_sink(discord.url, clock)
    async with sink.running(grace_seconds=0):
        sink.alert("a", "first")
        sink.alert("b", "second")
        await discord.wait_for_posts(2)
        await asyncio.wait_for(sink.idle(), 5)  # the answer is counted
    assert sink.counts["failed"] == 1
    assert "Discord refused an alert with HTTP 404" in caplog.text
    assert "T0ken" not in caplog.text  # the webhook token is a secret


async def test_a_storm_on_one_key_becomes_one_alert_and_one_summary(
    discord: FakeDiscord, clock: WatchedClock
) -> None:
    sink = make_sink(discord.url, clock)
    async with sink.running(grace_seconds=0):
        for _ in range(38):
            sink.alert("log_error", "world stream failed", key="log:stream")
        sink.alert("log_error", "something else", key="log:other")
        await discord.wait_for_posts(2)
        await clock.advance(599)
        assert len(discord.posts) == 2
        await clock.advance(1 + FLUSH_TICK)
        await discord.wait_for_posts(3)
        assert sink.suppressed == 37
        # the quiet period after the summary ends without repeats: nothing more is sent
        await clock.advance(600 + FLUSH_TICK)
        await settle()
    assert discord.titles() == [
        "world stream failed",
        "something else",
        "world stream failed (×37 in the last 10 min)",
    ]


async def test_repeats_pending_at_shutdown_are_still_reported(
    discord: FakeDiscord, clock: WatchedClock
) -> None:
    sink = make_sink(discord.url, clock)
    async with sink.running(grace_seconds=5):
        for _ in range(4):
            sink.alert("log_error", "disk full", key="disk")
        await discord.wait_for_posts(1)
        await clock.advance(120)
    assert discord.titles() == ["disk full", "disk full (×3 in the last 2 min)"]


async def test_a_hanging_webhook_never_blocks_the_caller_and_overflow_is_counted(
    discord: FakeDiscord, clock: WatchedClock
) -> None:
    discord.hang = True
    sink = make_sink(discord.url, clock, queue_size=10)
    async with sink.running(grace_seconds=0):
        sink.alert("k", "first", key="k0")
        await discord.wait_for_posts(1)  # the poster is now stuck on this request
        for i in range(1, 200):
            sink.alert("k", f"alert {i}", key=f"k{i}")  # returns at once, raises nothing
        assert sink.pending == 10
        assert sink.counts["dropped"] == 189
    assert len(discord.posts) == 1


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_an_unreachable_webhook_fails_quietly(
    clock: WatchedClock, caplog: pytest.LogCaptureFixture
) -> None:
    url = f"http://127.0.0.1:{_closed_port()}/api/webhooks/1/token"
    sink = make_sink(url, clock, max_attempts=2)
    with caplog.at_level(logging.INFO):
        async with sink.running(grace_seconds=0):
            sink.alert("crash_loop", "restarting")
            nap = (await clock.retry_naps(1))[0]
            await clock.advance(nap)
            await asyncio.wait_for(sink.idle(), 5)
    assert sink.counts == {"failed": 1}
    assert "ClientConnectorError" in caplog.text
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
