"""Test doubles for the daemon (see docs/testing.md), importable from here or their modules.

Production code never imports this package (an import-linter contract keeps it so).
"""

from storyteller_daemon.testing.alerts import RecordedAlerts
from storyteller_daemon.testing.clock import FakeClock, eventually, settle
from storyteller_daemon.testing.model import (
    ScriptedModel,
    Step,
    StepFunction,
    calls,
    respond_with,
    text,
)
from storyteller_daemon.testing.model_responder import (
    ModelResponder,
    reply_from_response,
    request_from_body,
)
from storyteller_daemon.testing.obedient import Injection, ObedientResponder
from storyteller_daemon.testing.pipeline import WiredPipeline, wired_pipeline
from storyteller_daemon.testing.responses_answers import Fault, Reply
from storyteller_daemon.testing.responses_server import ScriptedResponsesServer
from storyteller_daemon.testing.scripted_turns import ScriptedOutcome, ScriptedTurnRunner
from storyteller_daemon.testing.steps import (
    attend_all,
    by_kind,
    cycle,
    event_lines,
    hang,
    verdict_json,
)
from storyteller_daemon.testing.world import InstrumentedWorld, WorldCall

__all__ = [
    "RecordedAlerts",
    "FakeClock",
    "Fault",
    "Injection",
    "InstrumentedWorld",
    "ModelResponder",
    "ObedientResponder",
    "Reply",
    "ScriptedModel",
    "ScriptedOutcome",
    "ScriptedResponsesServer",
    "ScriptedTurnRunner",
    "Step",
    "StepFunction",
    "WiredPipeline",
    "WorldCall",
    "attend_all",
    "by_kind",
    "calls",
    "cycle",
    "event_lines",
    "hang",
    "reply_from_response",
    "request_from_body",
    "respond_with",
    "eventually",
    "settle",
    "text",
    "verdict_json",
    "wired_pipeline",
]
