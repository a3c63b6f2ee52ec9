"""``bench stream``'s account of a tool-loop request: its parts, and each request priced at the
model it names."""

from __future__ import annotations

import json
from typing import Any

from storyteller_daemon.agent.fencing import Fence
from storyteller_daemon.agent.models.interface import Usage
from storyteller_daemon.bench.stand_ins import LIST_PRICES
from storyteller_daemon.bench.turn_tokens import PARTS, TurnTokens, turn_parts
from storyteller_daemon.config import ModelPrice

NOTES = "Your stored notes: the smuggler Ashby owes the watch a favour.\n\n"


def _round(events: str, *, later: bool = False) -> dict[str, Any]:
    prompt = NOTES + Fence("abc123").note + "\n\n" + events
    items: list[dict[str, Any]] = [{"role": "user", "content": prompt}]
    if later:
        items += [
            {"type": "function_call", "call_id": "c1", "name": "Noop", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c1", "output": '{"ok":true}'},
        ]
    return {
        "model": "gpt-5-mini",
        "instructions": "You watch the harbour.",
        "tools": [{"type": "function", "name": "Noop", "parameters": {}}],
        "input": items,
    }


def test_a_request_splits_into_instructions_tools_notes_events_and_calls() -> None:
    body = _round("A knife flashes in the lane.", later=True)
    parts = turn_parts(body)
    assert list(parts) == list(PARTS)
    assert parts["instructions"] == "You watch the harbour."
    assert json.loads(parts["tools"]) == body["tools"]
    assert parts["notes"] == NOTES
    assert parts["events"].startswith("World text below (")
    assert parts["events"].endswith("A knife flashes in the lane.")
    assert parts["calls and results"] == '{}\n{"ok":true}'
    # Without a note on world text the whole prompt is notes (a heartbeat's status, say).
    bare = {"input": [{"role": "user", "content": "Heartbeat."}]}
    assert turn_parts(bare)["notes"] == "Heartbeat." and turn_parts(bare)["events"] == ""


def test_shares_and_the_cost_at_each_requests_own_model() -> None:
    tokens = TurnTokens(chars_per_token=4)
    assert tokens.shares() == {}
    tokens.add_round(_round("x" * 400))
    shares = tokens.shares()
    assert abs(sum(shares.values()) - 1) < 0.01 and shares["events"] > shares["notes"]
    tokens.bill("gpt-5-nano", Usage(input_tokens=1_000_000))
    tokens.bill("gpt-5-mini", Usage(input_tokens=1_000_000, cached_tokens=1_000_000))
    prices = {name: ModelPrice(**price) for name, price in LIST_PRICES.items()}
    assert round(tokens.usd(prices), 6) == 0.075
