"""Alerts for the daemon's admins: the `AlertSink` protocol, a log sink and a Discord sink.

This package imports nothing from storage, agent or runtime; the composition root wires it.
"""

from storyteller_daemon.alerts.discord import DiscordWebhookSink, webhook_url_problem
from storyteller_daemon.alerts.service import Alerts
from storyteller_daemon.alerts.sink import Alert, AlertSink, LogAlertSink, Severity

__all__ = [
    "Alert",
    "AlertSink",
    "Alerts",
    "DiscordWebhookSink",
    "LogAlertSink",
    "Severity",
    "webhook_url_problem",
]
