"""Alerts for the daemon's admins: the `AlertSink` protocol, a log sink and a Discord sink.

This package imports nothing from storage, agent or runtime; the composition root wires it.
The Discord sink's module (and with it aiohttp's client) is imported on first use of its names:
a daemon without a webhook does not load it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from storyteller_daemon.alerts.service import Alerts
from storyteller_daemon.alerts.sink import Alert, AlertSink, LogAlertSink, Severity

if TYPE_CHECKING:
    from storyteller_daemon.alerts.discord import DiscordWebhookSink, webhook_url_problem

__all__ = [
    "Alert",
    "AlertSink",
    "Alerts",
    "DiscordWebhookSink",
    "LogAlertSink",
    "Severity",
    "webhook_url_problem",
]


def __getattr__(name: str) -> Any:
    """`DiscordWebhookSink` and `webhook_url_problem`, from `discord` (imported on first use)."""
    if name not in ("DiscordWebhookSink", "webhook_url_problem"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.discord"), name)
