"""The record of one storyteller turn: every request, response, tool call and how it ended.

Everything converts to plain JSON values (`TurnRecord.to_dict`), so a turn can be stored,
shown to an admin and replayed: a request is kept as the Responses-API body it stands for, and
a response keeps its continuation items and function calls.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from storyteller_daemon.agent.models.interface import ModelResponse, Usage


class TurnOutcome(StrEnum):
    """How a turn ended."""

    COMPLETED = "completed"
    """The model acted, then stopped calling tools, called only Noop, or only repeated calls."""
    NOOP = "noop"
    """The model called only Noop: it decided nothing needed doing."""
    NO_TOOL_CALL = "no_tool_call"
    """The model never called a tool, despite the corrective retries."""
    MALFORMED_BUDGET = "malformed_budget"
    """Too many consecutive rounds with malformed tool-call JSON."""
    ROUND_BUDGET = "round_budget"
    """The round cap was reached."""
    TIME_BUDGET = "time_budget"
    """The turn's wall-clock budget ran out."""
    MODEL_TRANSIENT_ERROR = "model_transient_error"
    """The endpoint failed in a way worth retrying later (rate limit, 5xx, timeout)."""
    MODEL_FATAL_ERROR = "model_fatal_error"
    """The endpoint refused the request (authentication, unknown model, bad request)."""
    BUDGET_EXCEEDED = "budget_exceeded"
    """A budget outside the turn (tokens or money for a period) refused the next request."""


def usage_dict(usage: Usage) -> dict[str, int]:
    """Token counts as a JSON object."""
    return {
        "input_tokens": usage.input_tokens,
        "cached_tokens": usage.cached_tokens,
        "output_tokens": usage.output_tokens,
        "reasoning_tokens": usage.reasoning_tokens,
    }


def response_summary(response: ModelResponse) -> dict[str, Any]:
    """What came back, including the free text the loop discards."""
    return {
        "id": response.id,
        "model": response.model,
        "status": response.status,
        "incomplete_reason": response.incomplete_reason,
        "output_text": response.output_text,
        "function_calls": [
            {"call_id": c.call_id, "name": c.name, "arguments": c.arguments}
            for c in response.function_calls
        ],
        "continuation": list(response.continuation),
    }


@dataclass
class RequestRecord:
    """One model request of a turn.

    Attributes:
        round: 1-based round number.
        request: the API body.
        response: the response summary, or None when the request failed.
        usage: token counts of the response.
        duration_seconds: time from sending to answer or failure.
        error: ``ExceptionType: message`` when the request failed.
        replayed: the answer came from the turn journal (an earlier attempt of the turn got
            it), so no request was sent.
    """

    round: int
    request: dict[str, Any]
    response: dict[str, Any] | None = None
    usage: Usage = field(default_factory=Usage)
    duration_seconds: float = 0.0
    error: str | None = None
    replayed: bool = False

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "round": self.round,
            "request": self.request,
            "response": self.response,
            "usage": usage_dict(self.usage),
            "duration_seconds": self.duration_seconds,
            "error": self.error,
            "replayed": self.replayed,
        }


@dataclass
class CallRecord:
    """One tool call of a turn.

    Attributes:
        round: the round whose response asked for it.
        call_id: the id the output was sent back under.
        name: the function name as the model wrote it.
        arguments: the raw argument text.
        envelope: what was sent back (``ok`` plus ``result`` or ``error``).
        skipped: an identical call already ran in this turn, so this one did not.
        refused: the tool was not offered in this turn, or the policy refused the call.
        malformed: the arguments were not a JSON object.
        rule: the policy rule that refused the call (or ``shadow``: recorded, not run).
        shadowed: shadow mode: the call was answered with a simulated success, not run.
        parked: the call waits for an admin's approval (rule ``approval``); it did not run.
        replayed: an earlier attempt of the turn ran this call; its result came from the turn
            journal and nothing ran again.
    """

    round: int
    call_id: str
    name: str
    arguments: str
    envelope: dict[str, Any]
    skipped: bool = False
    refused: bool = False
    malformed: bool = False
    rule: str | None = None
    shadowed: bool = False
    parked: bool = False
    replayed: bool = False

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "round": self.round,
            "call_id": self.call_id,
            "name": self.name,
            "arguments": self.arguments,
            "envelope": self.envelope,
            "skipped": self.skipped,
            "refused": self.refused,
            "malformed": self.malformed,
            "rule": self.rule,
            "shadowed": self.shadowed,
            "parked": self.parked,
            "replayed": self.replayed,
        }


@dataclass
class TurnRecord:
    """Everything that happened in one turn.

    Attributes:
        turn_key: the turn's stable key.
        storyteller_id: whose turn it was.
        trigger_label: why it ran (``Room Echo``, ``Heartbeat 5m``...).
        outcome: how it ended.
        rounds: how many model requests were sent.
        requests: each request in order.
        calls: each tool call in order.
        usage: token counts summed over all responses.
        duration_seconds: wall-clock time of the turn (the loop's clock).
        error: ``ExceptionType: message`` when a model error or budget ended the turn.
    """

    turn_key: str
    storyteller_id: int
    trigger_label: str
    outcome: TurnOutcome = TurnOutcome.COMPLETED
    rounds: int = 0
    requests: list[RequestRecord] = field(default_factory=list)
    calls: list[CallRecord] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    duration_seconds: float = 0.0
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "turn_key": self.turn_key,
            "storyteller_id": self.storyteller_id,
            "trigger_label": self.trigger_label,
            "outcome": self.outcome.value,
            "rounds": self.rounds,
            "requests": [r.to_dict() for r in self.requests],
            "calls": [c.to_dict() for c in self.calls],
            "usage": usage_dict(self.usage),
            "duration_seconds": self.duration_seconds,
            "error": self.error,
        }
