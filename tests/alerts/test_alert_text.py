"""Alert text is safe for Discord: no markup, no pings, no code fences, bounded length."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from storyteller_daemon.alerts.discord import (
    redact_webhook_url,
    webhook_payload,
    webhook_url_problem,
)
from storyteller_daemon.alerts.sanitise import (
    MAX_ALERT_CHARS,
    TRUNCATION_MARKER,
    exception_summary,
    sanitise,
)
from storyteller_daemon.alerts.sink import Alert, describe_period

ZWSP = "\u200b"


@pytest.mark.parametrize(
    ("raw", "clean"),
    [
        ("@everyone the model is down", f"@{ZWSP}everyone the model is down"),
        ("ping @here and @Everyone", f"ping @{ZWSP}here and @{ZWSP}Everyone"),
        (
            "<@123456> and <@!42> and role <@&7>",
            f"<@{ZWSP}123456> and <@{ZWSP}!42> and role <@{ZWSP}&7>",
        ),
        ("```py\nimport os\n```", "'''py\nimport os\n'''"),
        ("\x1b[1;31mred\x1b[0m alert", "red alert"),
        ("\x1b]0;title\x07window", "window"),
        ("a <send href='look'>look</send> b", "a look b"),
        ("\x03send href='x'\x04click\x03/send\x04", "click"),
        ("line\r\nnext\rlast", "line\nnext\nlast"),
        ("bell\x07 and nul\x00", "bell and nul"),
        ("keep <module> and a < b > c", "keep <module> and a < b > c"),
    ],
)
def test_sanitise_neutralises_markup_mentions_and_fences(raw: str, clean: str) -> None:
    assert sanitise(raw) == clean


def test_long_text_is_cut_to_the_cap_with_a_marker() -> None:
    text = sanitise("x" * 10_000)
    assert len(text) == MAX_ALERT_CHARS
    assert text.endswith(TRUNCATION_MARKER)
    assert sanitise("y" * MAX_ALERT_CHARS) == "y" * MAX_ALERT_CHARS


def test_a_long_title_is_cut_on_one_line() -> None:
    alert = Alert("log_error", "word " * 100 + "\nsecond line", "", "error", "k")
    payload = webhook_payload(alert, source="s", at=datetime(2026, 5, 1, tzinfo=UTC), username="st")
    title = payload["embeds"][0]["title"]
    assert len(title) <= 256 and title.endswith("word…") and "\n" not in title


def test_mentions_are_neutralised_before_the_cut_so_the_cap_holds() -> None:
    text = sanitise("@everyone " * 1000)
    assert len(text) <= MAX_ALERT_CHARS
    assert "@everyone" not in text


def test_exceptions_are_described_by_type_only() -> None:
    secret = RuntimeError("api key sk-live-123 rejected for prompt 'kill the king'")
    summary = exception_summary(secret)
    assert summary == "Failed with RuntimeError. Full details were written to the daemon log."
    assert exception_summary(KeyError).startswith("Failed with KeyError.")


def test_the_payload_shows_repeat_counts_and_never_parses_mentions() -> None:
    alert = Alert(
        "log_error", "@here world stream failed", "", "warning", "k", count=37, period_seconds=600
    )
    payload = webhook_payload(
        alert, source="storyteller@host", at=datetime(2026, 5, 1, tzinfo=UTC), username="st"
    )
    assert payload == {
        "username": "st",
        "allowed_mentions": {"parse": []},
        "embeds": [
            {
                "title": f"@{ZWSP}here world stream failed (×37 in the last 10 min)",
                "color": 0xF1C40F,
                "footer": {"text": "storyteller@host · log_error · warning"},
                "timestamp": "2026-05-01T00:00:00+00:00",
            }
        ],
    }


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(600, "10 min"), (3600, "1 h"), (125.3, "2 min"), (5400, "1.5 h"), (0.2, "1 s")],
)
def test_periods_read_naturally(seconds: float, text: str) -> None:
    assert describe_period(seconds) == text


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("https://discord.com/api/webhooks/123456789012345678/AbC-_x", None),
        ("https://discordapp.com/api/webhooks/1/t?thread_id=5", None),
        ("https://ptb.discord.com/api/v10/webhooks/1/t", None),
        ("http://127.0.0.1:8080/api/webhooks/1/t", None),
        ("http://discord.com/api/webhooks/1/t", "uses http; Discord webhooks need https"),
        ("https://example.com/api/webhooks/1/t", "host 'example.com' is not Discord"),
        ("https://discord.com/channels/1/2", "path is not /api/webhooks/ID/TOKEN"),
        ("https://discord.com/api/webhooks/1", "path is not /api/webhooks/ID/TOKEN"),
        ("discord.com/api/webhooks/1/t", "not an http(s) URL"),
        ("https://[::1/api", "not a URL"),
    ],
)
def test_webhook_urls_are_checked_without_the_network(url: str, problem: str | None) -> None:
    found = webhook_url_problem(url)
    if problem is None:
        assert found is None
    else:
        assert found is not None and found.startswith(problem)


def test_a_webhook_url_is_shown_without_its_token() -> None:
    url = "https://discord.com/api/webhooks/123/s3cr3t-token"
    assert redact_webhook_url(url) == "https://discord.com/api/webhooks/123/***"
