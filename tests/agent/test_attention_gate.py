"""The attention gate: one request per batch, the verdict contract id by id, one re-ask."""

from __future__ import annotations

import json
import logging
import re
from dataclasses import replace

import pytest
from agent_doubles import ScriptedModel, text

from storyteller_daemon.agent.attention import (
    CONTRACT,
    DEBUG_CONTRACT,
    OUTPUT_TOKENS_PER_EVENT,
    REFERENCE_CONTRACT,
    REMIT_HEAD,
    SINGLE_CONTRACT,
    AttentionGate,
    AttentionOptions,
    BatchEntry,
    attention_instructions,
)
from storyteller_daemon.agent.attention_examples import EXAMPLES, EXAMPLES_HEAD
from storyteller_daemon.agent.models.tokens import characters_holding
from storyteller_daemon.agent.prompts import TRUNCATION_MARKER
from storyteller_daemon.agent.verdicts import (
    NO_REASON,
    AttentionVerdict,
    decision_format,
    format_ids,
    parse_batch,
    parse_decision,
    verdict_format,
)
from storyteller_daemon.config import LimitsConfig
from storyteller_daemon.domain.storytellers import ReasoningEffort, Storyteller
from storyteller_daemon.errors import BudgetExceeded, ModelTransientError

TELLER = Storyteller(
    name="Harbour Watch",
    id=7,
    model="gpt-event",
    attention_model="gpt-nano",
    attention_reasoning_effort=ReasoningEffort.MINIMAL,
    attention_prompt="Only thefts and fights matter.",
)
ENTRIES = [
    BatchEntry("1", '20:00:01 #101 echo: "Wren lifts a purse."'),
    BatchEntry("2", '20:00:02 #102 echo: "Gulls cry."'),
    BatchEntry("3", '20:00:03 #101 echo: "Per coils a rope."'),
]


def reply(attend: list[object], ignore: list[object]) -> str:
    return json.dumps({"attend": attend, "ignore": ignore})


# ---------------------------------------------------------------------- parsing


def test_a_full_reply_settles_every_id() -> None:
    result = parse_batch(reply([{"id": "1", "why": "a theft"}], ["2", "3"]), ["1", "2", "3"])
    assert result.verdicts == {
        "1": AttentionVerdict(True, "a theft"),
        "2": AttentionVerdict(False, ""),
        "3": AttentionVerdict(False, ""),
    }
    assert result.unresolved == [] and result.problems == []


def test_reasons_on_ignores_are_kept_and_a_blank_attend_reason_is_named() -> None:
    text_ = reply([{"id": "1", "why": "  "}], [{"id": "2", "why": "weather"}])
    result = parse_batch(text_, ["1", "2"])
    assert result.verdicts == {
        "1": AttentionVerdict(True, NO_REASON),
        "2": AttentionVerdict(False, "weather"),
    }


def test_a_fenced_reply_is_read() -> None:
    result = parse_batch("```json\n" + reply([], ["1"]) + "\n```", ["1"])
    assert result.verdicts == {"1": AttentionVerdict(False, "")}


@pytest.mark.parametrize(
    ("answer", "problem"),
    [
        ("", "the reply was empty"),
        ("interested because this matters", "the reply was not valid JSON"),
        ('["1"]', "must be a JSON object"),
    ],
)
def test_an_unreadable_reply_leaves_every_id_unresolved(answer: str, problem: str) -> None:
    result = parse_batch(answer, ["1", "2"])
    assert result.verdicts == {} and result.unresolved == ["1", "2"]
    assert problem in result.problems[0]


def test_missing_duplicate_and_unknown_ids_are_each_named() -> None:
    answer = reply([{"id": 1, "why": "x"}, {"id": "9", "why": "y"}], ["1", None])
    result = parse_batch(answer, ["1", "2"])
    assert result.verdicts == {}
    assert result.unresolved == ["1", "2"]  # 1 twice, 2 never
    assert "unknown id '9' in attend" in result.problems
    assert "an entry of ignore has no id" in result.problems
    assert "id '1' was judged 2 times" in result.problems


def test_a_list_that_is_not_a_list_is_a_problem_not_a_crash() -> None:
    result = parse_batch('{"attend": "1", "ignore": ["1"]}', ["1"])
    assert result.verdicts == {"1": AttentionVerdict(False, "")}
    assert result.problems == ["attend must be a list"]


def test_ignored_ids_may_come_as_one_string_of_ids_and_ranges() -> None:
    answer = json.dumps({"attend": [{"id": 4, "why": "a fight"}], "ignore": "1-3, 5,7-8"})
    result = parse_batch(answer, [str(n) for n in range(1, 9)])
    assert result.verdicts["4"] == AttentionVerdict(True, "a fight")
    assert {k for k, v in result.verdicts.items() if not v.interested} == {
        "1",
        "2",
        "3",
        "5",
        "7",
        "8",
    }
    assert result.unresolved == ["6"] and result.problems == []


def test_a_range_outside_the_batch_or_overlapping_an_attend_is_caught() -> None:
    answer = json.dumps({"attend": [{"id": 2, "why": "x"}], "ignore": "1-3,2-1,1-999999999"})
    result = parse_batch(answer, ["1", "2", "3"])
    assert "id '2' was judged 2 times" in result.problems
    assert "the range '2-1' in ignore does not fit the batch" in result.problems
    assert "the range '1-999999999' in ignore does not fit the batch" in result.problems
    assert result.unresolved == ["2"]  # asked again; 1 and 3 are settled
    assert set(result.verdicts) == {"1", "3"}


def test_unknown_ids_in_a_range_are_named() -> None:
    result = parse_batch(json.dumps({"attend": [], "ignore": "3-4"}), ["1", "2", "3"])
    assert "unknown id '4' in ignore" in result.problems and result.unresolved == ["1", "2"]


@pytest.mark.parametrize(
    ("answer", "kept", "unresolved"),
    [
        # cut in ignore: every attended id is kept, the unfinished string is not read
        (
            '{"attend": [{"id": 3, "why": "a theft"}], "ignore": "1-2,4-',
            {"3": True},
            ["1", "2", "4"],
        ),
        # cut inside an attend object: the object without its reason is not read
        ('{"attend": [{"id": 3, "why": "a theft"}, {"id": 1', {"3": True}, ["1", "2", "4"]),
        # a complete ignore string before the cut is read
        ('{"attend": [], "ignore": "1-2,4"', {"1": False, "2": False, "4": False}, ["3"]),
        # bare ids: the last one may have been cut ("1" of "12") and is not read
        (
            '{"attend": [{"id": 3, "why": "x"}], "ignore": [2, 1',
            {"3": True, "2": False},
            ["1", "4"],
        ),
    ],
)
def test_a_reply_cut_off_keeps_the_verdicts_it_completed(
    answer: str, kept: dict[str, bool], unresolved: list[str]
) -> None:
    result = parse_batch(answer, ["1", "2", "3", "4"])
    assert {k: v.interested for k, v in result.verdicts.items()} == kept
    assert result.unresolved == unresolved
    assert "the reply was cut off; the verdicts it completed are kept" in result.problems


@pytest.mark.parametrize("written", ["[2]", "#2", " 2 ", 2.0, "id 2"])
def test_ids_are_read_as_the_request_shows_them(written: object) -> None:
    result = parse_batch(json.dumps({"attend": [], "ignore": [written, 1]}), ["1", "2"])
    assert set(result.verdicts) == {"1", "2"} and result.problems == []


def test_a_reply_numbered_from_another_start_is_not_taken() -> None:
    """Ids 4-6 for a batch of three: the ids 1-3 it shares name other events, so none count."""
    shifted = json.dumps({"attend": [{"id": 4, "why": "theft"}], "ignore": "5-6"})
    result = parse_batch(shifted, ["1", "2", "3"])
    assert result.verdicts == {} and result.unresolved == ["1", "2", "3"]
    assert "the reply numbered the events from 4, not from 1; none of it is taken" in (
        result.problems
    )
    # One stray id among the right ones is no shift: the rest is kept.
    stray = json.dumps({"attend": [{"id": 7, "why": "theft"}], "ignore": "2-3"})
    assert set(parse_batch(stray, ["1", "2", "3"]).verdicts) == {"2", "3"}


def test_ids_are_written_as_ranges() -> None:
    assert format_ids([9, 1, 2, 3, 5, 8, 2]) == "1-3,5,8-9"
    assert format_ids([]) == ""
    assert parse_batch(
        json.dumps({"attend": [], "ignore": format_ids([1, 2, 4])}), ["1", "2", "4"]
    ).verdicts.keys() == {"1", "2", "4"}


@pytest.mark.parametrize(
    ("answer", "verdict"),
    [
        ('{"decision": "attend", "why": "a theft"}', AttentionVerdict(True, "a theft")),
        ('{"decision": "ignore", "why": ""}', AttentionVerdict(False, "")),
        ('{"Decision": "interested", "Reason": "a theft"}', AttentionVerdict(True, "a theft")),
        ('{"Decision": " Interested "}', AttentionVerdict(True, NO_REASON)),
        ('{"Decision": "ignore"}', AttentionVerdict(False, "")),
    ],
)
def test_a_reference_decision_is_read(answer: str, verdict: AttentionVerdict) -> None:
    assert parse_decision(answer, "1").verdicts == {"1": verdict}


@pytest.mark.parametrize("answer", ["", "ignore", '{"Decision": "maybe"}', '{"Decision": 1}'])
def test_a_bad_reference_decision_is_unresolved(answer: str) -> None:
    result = parse_decision(answer, "1")
    assert result.verdicts == {} and result.unresolved == ["1"] and result.problems


# ---------------------------------------------------------------------- the request


async def test_the_reference_design_sends_one_event_alone() -> None:
    model = ScriptedModel(text('{"Decision": "interested", "Reason": "a theft"}'))
    gate = AttentionGate(model, LimitsConfig(), options=AttentionOptions(reference=True))
    judgement = await gate.judge(TELLER, "ignored context", ENTRIES[:1])
    assert judgement.verdicts["1"] == AttentionVerdict(True, "a theft")
    [request] = model.requests
    assert request.instructions == f"Only thefts and fights matter.\n\n{REFERENCE_CONTRACT}"
    assert request.input[0]["content"] == ENTRIES[0].line  # no remit, context or fence
    assert request.text_format == {"type": "json_object"}
    with pytest.raises(ValueError, match="one event per request"):
        await gate.judge(TELLER, "", ENTRIES)


def test_a_long_remit_is_cut_and_a_zero_limit_leaves_it_out() -> None:
    long = replace(TELLER, system_prompt="You watch the harbour. " * 1000)
    cut = attention_instructions(long, remit_max_chars=500)
    without = attention_instructions(long, remit_max_chars=0)
    assert TRUNCATION_MARKER.strip() in cut
    assert len(cut) < 500 + len(without) + 300
    assert without == f"Only thefts and fights matter.\n\n{CONTRACT}"


def test_without_a_system_prompt_the_instructions_have_no_remit() -> None:
    blank = replace(TELLER, system_prompt="  ")
    assert attention_instructions(blank) == f"Only thefts and fights matter.\n\n{CONTRACT}"
    assert attention_instructions(TELLER, remit_max_chars=0) == attention_instructions(blank)


async def test_one_request_judges_the_whole_batch() -> None:
    model = ScriptedModel(text(reply([{"id": "1", "why": "a theft"}], ["2", "3"])))
    gate = AttentionGate(model, LimitsConfig(attention_max_output_tokens=100))
    judgement = await gate.judge(TELLER, "Open situations: none.", ENTRIES)
    assert judgement.requests == 1 and judgement.problems == []
    assert [judgement.verdicts[e.id].interested for e in ENTRIES] == [True, False, False]
    [request] = model.requests
    assert request.model == "gpt-nano" and request.reasoning_effort == "minimal"
    # The remit (the system prompt), the attention prompt, the contract: stable, cached.
    assert request.instructions == attention_instructions(TELLER)
    assert request.instructions.startswith(REMIT_HEAD.format(name='"Harbour Watch"'))
    assert f"\n\n{TELLER.system_prompt}\n\n" in request.instructions
    assert request.instructions.endswith(f"Only thefts and fights matter.\n\n{CONTRACT}")
    content = request.input[0]["content"]
    assert content.startswith("Open situations: none.\n\n<<world-text ")
    lines = content.split("\n")
    assert lines[-2] == '[3] 20:00:03 #101 echo: "Per coils a rope."'  # events last, fenced
    assert re.fullmatch(r"<<end world-text [0-9a-f]{12}>>", lines[-1])
    assert lines[2] == lines[-1].replace("<<end world-text", "<<world-text")[:-2] + (
        " from game events>>"
    )
    assert request.max_output_tokens == 100 + 3 * OUTPUT_TOKENS_PER_EVENT
    assert request.prompt_cache_key == "storyteller-7-attention"
    assert request.truncation == "auto" and request.tools == ()


async def test_the_verdict_schema_is_strict_and_slim() -> None:
    schema = verdict_format()["schema"]
    assert verdict_format()["strict"] is True
    assert schema["required"] == ["attend", "ignore"] and schema["additionalProperties"] is False
    assert schema["properties"]["ignore"] == {"type": "string"}  # ids and ranges, no reasons
    debug = verdict_format(debug_reasons=True)["schema"]
    assert debug["properties"]["ignore"]["items"]["required"] == ["id", "why"]


async def test_debug_reasons_ask_for_reasons_on_ignores() -> None:
    model = ScriptedModel(text(reply([], [{"id": "1", "why": "weather"}])))
    gate = AttentionGate(model, LimitsConfig(), options=AttentionOptions(debug_reasons=True))
    judgement = await gate.judge(TELLER, "", ENTRIES[:1])
    assert judgement.verdicts["1"] == AttentionVerdict(False, "weather")
    assert model.requests[0].instructions is not None
    assert model.requests[0].instructions.endswith(DEBUG_CONTRACT)


async def test_timeouts_and_retries_of_attention_requests_are_their_own() -> None:
    model = ScriptedModel(text(reply([], ["1"])))
    options = AttentionOptions(timeout_seconds=7.5, max_retries=1)
    await AttentionGate(model, LimitsConfig(), options=options).judge(TELLER, "", ENTRIES[:1])
    assert (model.requests[0].timeout_seconds, model.requests[0].max_retries) == (7.5, 1)


async def test_fallbacks_apply_to_the_attention_scope() -> None:
    model = ScriptedModel(text(reply([], ["1"])))
    plain = Storyteller(name="Plain", id=8, model="gpt-event", attention_prompt=" ")
    await AttentionGate(model, LimitsConfig()).judge(plain, "", ENTRIES[:1])
    [request] = model.requests
    assert (request.model, request.reasoning_effort) == ("gpt-event", "low")
    assert request.instructions is not None and request.instructions.endswith(CONTRACT)
    assert len(request.instructions) > len(CONTRACT) + 2


# ---------------------------------------------------------------------- re-asking


async def test_ids_a_reply_got_wrong_are_asked_about_again_once() -> None:
    model = ScriptedModel(
        text(reply([{"id": "1", "why": "theft"}], ["1"])),  # e1 twice, e2 and e3 missing
        text(reply([], ["1", "2", "3"])),
    )
    gate = AttentionGate(model, LimitsConfig())
    judgement = await gate.judge(TELLER, "", ENTRIES)
    assert judgement.requests == 2
    second = model.requests[1].input[0]["content"]
    assert "[1]" in second and "[2]" in second and "[3]" in second
    assert all(not v.interested and v.violation is None for v in judgement.verdicts.values())
    assert gate.consecutive_violations(7) == 0  # fixed by the re-ask: no violation


async def test_only_the_unresolved_ids_are_asked_again_numbered_from_one() -> None:
    model = ScriptedModel(
        text(reply([{"id": "1", "why": "theft"}], ["2"])),
        text(reply([], ["1"])),
    )
    judgement = await AttentionGate(model, LimitsConfig()).judge(TELLER, "", ENTRIES)
    second = model.requests[1].input[0]["content"]
    # The third event is the re-ask's first: every request numbers its events from 1.
    assert '[1] 20:00:03 #101 echo: "Per coils a rope."' in second
    assert "[2]" not in second and "[3]" not in second
    assert judgement.verdicts["1"] == AttentionVerdict(True, "theft")
    assert judgement.verdicts["3"] == AttentionVerdict(False, "")


async def test_what_the_re_ask_leaves_unresolved_is_judged_alone() -> None:
    model = ScriptedModel(
        text("nonsense"),
        text(reply([], ["1"])),  # the re-ask settles the first event only
        text('{"decision": "attend", "why": "a gull steals a fish"}'),
    )
    gate = AttentionGate(model, LimitsConfig())
    judgement = await gate.judge(TELLER, "Open situations: none.", ENTRIES[:2])
    assert judgement.requests == 3 and judgement.alone == 1
    assert judgement.verdicts == {
        "1": AttentionVerdict(False, ""),
        "2": AttentionVerdict(True, "a gull steals a fish"),
    }
    alone = model.requests[2]
    assert alone.text_format == decision_format()
    assert alone.instructions == attention_instructions(TELLER, contract=SINGLE_CONTRACT)
    content = alone.input[0]["content"]
    assert content.startswith("Open situations: none.\n\n<<world-text ")
    assert '[1] 20:00:02 #102 echo: "Gulls cry."' in content and "Wren" not in content
    assert gate.consecutive_violations(7) == 0  # settled: no violation


async def test_each_unresolved_event_is_judged_in_a_request_of_its_own() -> None:
    model = ScriptedModel(
        text(""),
        text('{"attend": [], "ignore": "n/a"}'),
        then=text('{"decision": "ignore", "why": ""}'),
    )
    judgement = await AttentionGate(model, LimitsConfig()).judge(TELLER, "", ENTRIES)
    assert judgement.requests == 5 and judgement.alone == 3
    alone = [r.input[0]["content"] for r in model.requests[2:]]
    assert all(c.count("\n[") == 1 and "[1] " in c for c in alone)
    assert sorted(c.split("echo: ")[1].split("\n")[0] for c in alone) == [
        '"Gulls cry."',
        '"Per coils a rope."',
        '"Wren lifts a purse."',
    ]
    assert all(v == AttentionVerdict(False, "") for v in judgement.verdicts.values())


async def test_what_even_a_lone_request_leaves_unresolved_is_a_violation_never_a_guess(
    caplog: pytest.LogCaptureFixture,
) -> None:
    model = ScriptedModel(
        text("nonsense"), text(reply([], ["1"])), text('{"decision": "maybe", "why": ""}')
    )
    gate = AttentionGate(model, LimitsConfig())
    with caplog.at_level(logging.WARNING):
        judgement = await gate.judge(TELLER, "", ENTRIES[:2])
    assert judgement.verdicts["1"] == AttentionVerdict(False, "")
    violation = judgement.verdicts["2"]
    assert violation.interested is False and violation.violation is not None
    assert "no verdict from the batch, its re-ask or alone" in violation.violation
    assert gate.consecutive_violations(7) == 1
    assert "broke the verdict contract" in caplog.text


async def test_unknown_ids_count_as_a_violation_but_spoil_nothing_else() -> None:
    model = ScriptedModel(text(reply([{"id": "7", "why": "x"}], ["1"])))
    gate = AttentionGate(model, LimitsConfig())
    judgement = await gate.judge(TELLER, "", ENTRIES[:1])
    assert judgement.requests == 1 and judgement.verdicts["1"] == AttentionVerdict(False, "")
    assert gate.consecutive_violations(7) == 1


async def test_a_partial_reply_keeps_its_valid_verdicts() -> None:
    """Junk in ignore, an unknown id in attend and a cut-off reply spoil only themselves."""
    model = ScriptedModel(
        text(
            json.dumps(
                {"attend": [{"id": 1, "why": "theft"}, {"id": 8, "why": "?"}], "ignore": "n/a"}
            )
        ),
        text('{"attend": [{"id": 2, "why": "gulls'),  # cut off; the re-ask of 2 and 3
        text('{"decision": "ignore", "why": ""}'),
        text('{"decision": "ignore", "why": ""}'),
    )
    judgement = await AttentionGate(model, LimitsConfig()).judge(TELLER, "", ENTRIES)
    assert judgement.verdicts["1"] == AttentionVerdict(True, "theft")  # kept from the first
    assert judgement.requests == 4
    assert not judgement.verdicts["2"].interested and not judgement.verdicts["3"].interested
    assert any("unknown id '8' in attend" in p for p in judgement.problems)
    assert any("unknown id 'n/a' in ignore" in p for p in judgement.problems)


async def test_violations_are_counted_per_storyteller_and_reset() -> None:
    other = replace(TELLER, id=9)
    model = ScriptedModel(*[text("") for _ in range(6)], text(reply([], ["1"])))
    gate = AttentionGate(model, LimitsConfig())
    await gate.judge(TELLER, "", ENTRIES[:1])
    await gate.judge(other, "", ENTRIES[:1])
    assert (gate.consecutive_violations(7), gate.consecutive_violations(9)) == (1, 1)
    await gate.judge(TELLER, "", ENTRIES[:1])
    assert gate.consecutive_violations(7) == 0


async def test_an_incomplete_reply_says_why() -> None:
    model = ScriptedModel(then=text("", incomplete="max_output_tokens"))
    judgement = await AttentionGate(model, LimitsConfig()).judge(TELLER, "", ENTRIES[:1])
    violation = judgement.verdicts["1"].violation
    assert violation is not None and "response incomplete: max_output_tokens" in violation


# ---------------------------------------------------------------------- errors


async def test_model_errors_and_budget_refusals_reach_the_caller() -> None:
    gate = AttentionGate(ScriptedModel(ModelTransientError("HTTP 503")), LimitsConfig())
    with pytest.raises(ModelTransientError):
        await gate.judge(TELLER, "", ENTRIES)

    refused = ScriptedModel(BudgetExceeded("hourly budget reached"))  # the model seam's door
    with pytest.raises(BudgetExceeded):
        await AttentionGate(refused, LimitsConfig()).judge(TELLER, "", ENTRIES)
    with pytest.raises(ValueError, match="no id"):
        await gate.judge(Storyteller(name="Unsaved"), "", ENTRIES)
    with pytest.raises(ValueError, match="distinct ids"):
        await gate.judge(TELLER, "", [ENTRIES[0], ENTRIES[0]])


# ---------------------------------------------------------------------- the cache floor


def test_short_instructions_get_contract_examples_up_to_the_cache_floor() -> None:
    medium = replace(TELLER, system_prompt="You watch the harbour for thieves. " * 40)
    plain = attention_instructions(medium)
    padded = attention_instructions(medium, cache_floor_tokens=1024)
    assert padded.startswith(plain + "\n\n" + EXAMPLES_HEAD)
    assert len(plain) < characters_holding(1024) <= len(padded)
    # Only as many examples as the floor needs, in order.
    shown = [e for e in EXAMPLES if e in padded]
    assert shown == list(EXAMPLES[: len(shown)]) and 0 < len(shown) < len(EXAMPLES)
    assert len(padded) - len(shown[-1]) - 2 < characters_holding(1024)
    # Long instructions, the debug contract and a floor of 0 are left as they are.
    long = replace(TELLER, system_prompt="You watch the harbour. " * 400)
    assert attention_instructions(long, cache_floor_tokens=1024) == attention_instructions(long)
    assert EXAMPLES_HEAD not in attention_instructions(
        TELLER, debug_reasons=True, cache_floor_tokens=1024
    )
    assert attention_instructions(medium, cache_floor_tokens=0) == plain
    # Instructions too short for every example to fill get them all, and no more.
    tiny = attention_instructions(TELLER, cache_floor_tokens=1024)
    assert all(e in tiny for e in EXAMPLES) and len(tiny) < characters_holding(1024)


def test_every_example_keeps_the_contract() -> None:
    for example in EXAMPLES:
        lines = [line for line in example.splitlines() if line.startswith("[")]
        answer = example.split("Answer", 1)[1].split("{", 1)[1].rsplit("}", 1)[0]
        ids = [line[1 : line.index("]")] for line in lines]
        reply = parse_batch("{" + answer + "}", ids)
        assert reply.problems == [] and reply.unresolved == [], example


async def test_the_gate_sends_the_examples_when_configured() -> None:
    model = ScriptedModel(text(reply([], "1-3")))
    gate = AttentionGate(model, LimitsConfig(), options=AttentionOptions(cache_floor_tokens=1024))
    await gate.judge(TELLER, "", ENTRIES)
    instructions = model.requests[0].instructions
    assert instructions == attention_instructions(TELLER, cache_floor_tokens=1024)
