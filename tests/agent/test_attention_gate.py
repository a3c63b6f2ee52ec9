"""The attention gate: verdict parsing (FutureMUD 44-46), the request, violation counting."""

from __future__ import annotations

import logging
from dataclasses import replace

import pytest
from agent_doubles import ScriptedModel, text

from storyteller_daemon.agent.attention import (
    CONTRACT,
    NO_REASON,
    AttentionGate,
    AttentionVerdict,
    parse_verdict,
)
from storyteller_daemon.agent.model import ModelRequest
from storyteller_daemon.config import LimitsConfig
from storyteller_daemon.domain.settings import ReasoningEffort, Storyteller
from storyteller_daemon.errors import BudgetExceeded, ModelTransientError

TELLER = Storyteller(
    name="Harbour Watch",
    id=7,
    model="gpt-event",
    attention_model="gpt-nano",
    attention_reasoning_effort=ReasoningEffort.MINIMAL,
    attention_prompt="Only thefts and fights matter.",
)


def test_valid_interested_json_parses_with_its_reason() -> None:
    verdict = parse_verdict('{"Decision":"interested","Reason":"world-impacting event"}')
    assert verdict == AttentionVerdict(
        interested=True, reason="world-impacting event", violation=None
    )
    assert verdict.decision == "interested"


def test_plain_text_is_a_contract_violation() -> None:
    verdict = parse_verdict("interested because this matters")
    assert verdict.interested is False and verdict.reason == ""
    assert verdict.violation is not None and "not valid JSON" in verdict.violation
    assert verdict.decision == "ignore"


@pytest.mark.parametrize(
    ("reply", "interested", "reason"),
    [
        ('{"decision": "ignore", "reason": "idle chatter"}', False, "idle chatter"),
        ('{"DECISION": " Interested ", "REASON": " a theft "}', True, "a theft"),
        ('{"Result": "interested"}', True, NO_REASON),
        ('{"result": "interested", "reason": "   "}', True, NO_REASON),
        ('```json\n{"decision": "interested", "reason": "fight"}\n```', True, "fight"),
        ('```\n{"decision": "ignore"}\n```', False, NO_REASON),
        ('  {"decision": "interested", "reason": 5}  ', True, NO_REASON),
    ],
)
def test_tolerant_parsing(reply: str, interested: bool, reason: str) -> None:
    verdict = parse_verdict(reply)
    assert (verdict.interested, verdict.reason, verdict.violation) == (interested, reason, None)


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        ("", "Attention classifier returned empty output."),
        ("```json\n```", "Attention classifier returned empty output."),
        ('["interested"]', "Attention classifier output must be a JSON object."),
        (
            '{"reason": "x"}',
            "Attention classifier output is missing the required Decision property.",
        ),
        (
            '{"decision": "maybe"}',
            "Attention classifier Decision must be interested or ignore, but was 'maybe'.",
        ),
    ],
)
def test_contract_violations_never_raise(reply: str, message: str) -> None:
    assert parse_verdict(reply) == AttentionVerdict(interested=False, reason="", violation=message)


async def test_the_request_uses_the_attention_scope_and_a_strict_json_schema() -> None:
    model = ScriptedModel(text('{"decision": "ignore", "reason": "nothing"}'))
    gate = AttentionGate(model, LimitsConfig(attention_max_output_tokens=321))
    [verdict] = await gate.judge(TELLER, ["Maren waves."])
    assert verdict.interested is False and verdict.reason == "nothing"
    [request] = model.requests
    assert request.model == "gpt-nano"
    assert request.reasoning_effort == "minimal"
    assert request.instructions == f"Only thefts and fights matter.\n\n{CONTRACT}"
    assert request.input == [{"role": "user", "content": "Maren waves."}]
    assert request.max_output_tokens == 321
    assert request.truncation == "auto"
    assert request.tools == () and request.tool_choice is None
    assert request.text_format is not None
    assert request.text_format["type"] == "json_schema" and request.text_format["strict"] is True
    schema = request.text_format["schema"]
    assert schema["required"] == ["decision", "reason"]
    assert schema["properties"]["decision"]["enum"] == ["interested", "ignore"]
    assert schema["additionalProperties"] is False


async def test_fallbacks_apply_to_the_attention_scope() -> None:
    model = ScriptedModel(text('{"decision": "ignore", "reason": "x"}'))
    plain = Storyteller(name="Plain", id=8, model="gpt-event", attention_prompt=" ")
    await AttentionGate(model, LimitsConfig()).judge(plain, ["x"])
    [request] = model.requests
    assert (request.model, request.reasoning_effort) == ("gpt-event", "low")
    assert request.instructions is not None and request.instructions.endswith(CONTRACT)
    assert len(request.instructions) > len(CONTRACT) + 2


async def test_one_verdict_per_item_in_order() -> None:
    model = ScriptedModel(
        text('{"decision": "interested", "reason": "a theft"}'),
        text('{"decision": "ignore", "reason": "weather"}'),
    )
    verdicts = await AttentionGate(model, LimitsConfig()).judge(
        TELLER, ["Wren steals.", "It rains."]
    )
    assert [(v.interested, v.reason) for v in verdicts] == [(True, "a theft"), (False, "weather")]
    assert [r.input[0]["content"] for r in model.requests] == ["Wren steals.", "It rains."]


async def test_violations_are_logged_counted_and_reset(caplog: pytest.LogCaptureFixture) -> None:
    other = replace(TELLER, id=9)
    model = ScriptedModel(
        text("interested because this matters"),
        text(""),
        text("nope"),
        text('{"decision": "ignore", "reason": "fine"}'),
    )
    gate = AttentionGate(model, LimitsConfig())
    with caplog.at_level(logging.WARNING):
        await gate.judge(TELLER, ["a", "b"])
    assert gate.consecutive_violations(7) == 2
    assert "Attention classifier contract violation" in caplog.text
    await gate.judge(other, ["c"])
    assert (gate.consecutive_violations(7), gate.consecutive_violations(9)) == (2, 1)
    await gate.judge(TELLER, ["d"])
    assert gate.consecutive_violations(7) == 0


async def test_an_incomplete_empty_reply_says_why() -> None:
    model = ScriptedModel(text("", incomplete="max_output_tokens"))
    [verdict] = await AttentionGate(model, LimitsConfig()).judge(TELLER, ["x"])
    assert verdict.violation == (
        "Attention classifier returned empty output. (response incomplete: max_output_tokens)"
    )


async def test_model_errors_and_budget_refusals_reach_the_caller() -> None:
    gate = AttentionGate(ScriptedModel(ModelTransientError("HTTP 503")), LimitsConfig())
    with pytest.raises(ModelTransientError):
        await gate.judge(TELLER, ["x"])

    async def refuse(request: ModelRequest) -> None:
        raise BudgetExceeded("hourly budget reached")

    model = ScriptedModel()
    with pytest.raises(BudgetExceeded):
        await AttentionGate(model, LimitsConfig(), before_request=refuse).judge(TELLER, ["x"])
    assert model.requests == []
    with pytest.raises(ValueError, match="no id"):
        await gate.judge(Storyteller(name="Unsaved"), ["x"])
