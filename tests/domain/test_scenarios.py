"""Scenario expectations held against observed runs, and pass rates over repeated runs."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest

from storyteller_daemon.domain.scenarios import (
    Budget,
    CallBounds,
    CallPattern,
    Expectations,
    Observation,
    ObservedCall,
    Result,
    Scenario,
    ScenarioEvent,
    Verdict,
    judge,
    passes,
    summarise,
)

SAY = ScenarioEvent(timedelta(0), "say", character=3, text="ten crowns", expect=Verdict.ATTEND)
YAWN = ScenarioEvent(
    timedelta(seconds=30), "emote", character=5, text="yawns", expect=Verdict.IGNORE
)
QUIET = ScenarioEvent(timedelta(seconds=40), "emote", character=5, text="sits")  # no verdict asked

OPEN_BRIBE = CallPattern("CreateSituation", {"Title": re.compile("(?i)bribe")})
ECHO_TEMPLE = CallPattern("SendRoomEcho", {"RoomId": re.compile("^12$")})


def _scenario(**expect: object) -> Scenario:
    return Scenario("bribe", (SAY, YAWN, QUIET), Expectations(**expect))  # type: ignore[arg-type]


def _by_label(results: list[Result]) -> dict[str, Result]:
    return {r.label: r for r in results}


def test_verdicts_are_held_per_event_and_unjudged_events_fail() -> None:
    results = judge(_scenario(), Observation(verdicts=(True, True, None)))
    assert [(r.label, r.passed, r.detail) for r in results] == [
        ("event 1 (say) is attended", True, "attended"),
        ("event 2 (emote) is ignored", False, "attended"),
    ]
    unjudged = judge(_scenario(), Observation(verdicts=(None,)))
    assert [(r.passed, r.detail) for r in unjudged] == [(False, "never judged")] * 2


def test_call_bounds_count_only_calls_the_policy_let_through() -> None:
    scenario = _scenario(calls=(CallBounds(OPEN_BRIBE, 1, 1),))
    made = ObservedCall("CreateSituation", {"Title": "A Bribe at the gate", "Description": "x"})
    refused = ObservedCall("CreateSituation", {"Title": "bribe"}, refused_by="dictated")
    other = ObservedCall("CreateSituation", {"Title": "A fight"})
    once = judge(scenario, Observation((True, False, None), calls=(made, refused, other)))[-1]
    assert once.passed and once.detail == "called 1 times"
    twice = judge(scenario, Observation((True, False, None), calls=(made, made)))[-1]
    assert not twice.passed and twice.detail == "called 2 times"
    never = judge(scenario, Observation((True, False, None), calls=(refused, other)))[-1]
    assert not never.passed


def test_a_missing_argument_never_matches_a_pattern() -> None:
    assert not OPEN_BRIBE.matches(ObservedCall("CreateSituation", {"Description": "bribe"}))
    assert CallPattern("Flag").matches(ObservedCall("Flag", {}))
    assert CallPattern("Flag", {"On": re.compile("^true$")}).matches(
        ObservedCall("Flag", {"On": True})
    )


def test_forbidden_calls_fail_when_made_and_pass_when_refused() -> None:
    scenario = _scenario(no_calls=(ECHO_TEMPLE,))
    echo = ObservedCall("SendRoomEcho", {"RoomId": 12, "Text": "hear ye"})
    assert not judge(scenario, Observation((True, False), calls=(echo,)))[-1].passed
    refused = ObservedCall("SendRoomEcho", {"RoomId": 12}, refused_by="remit")
    elsewhere = ObservedCall("SendRoomEcho", {"RoomId": 120})
    assert judge(scenario, Observation((True, False), calls=(refused, elsewhere)))[-1].passed


def test_situations_memories_refusals_and_budget() -> None:
    scenario = _scenario(
        situations=(re.compile("(?i)bribe"),),
        memories=(re.compile("Marta"),),
        refusals=("dictated",),
        budget=Budget(tokens=1000, usd=0.01, rounds=3),
    )
    good = Observation(
        (True, False),
        calls=(ObservedCall("SendRoomEcho", {}, refused_by="dictated"),),
        situations=("Bribe at the gate: a guard took coin",),
        memories=("Marta bribed the guard",),
        tokens=1000,
        usd=0.01,
        rounds=3,
    )
    assert all(r.passed for r in judge(scenario, good))
    bad = Observation((True, False), situations=("A fight",), tokens=1001, usd=0.02, rounds=4)
    failed = {r.label: r.detail for r in judge(scenario, bad) if not r.passed}
    assert failed == {
        "a situation matches /(?i)bribe/": "1 open situations",
        "a memory matches /Marta/": "0 memories",
        "the dictated rule refused a call": "refused: none",
        "at most 1000 tokens": "1001 tokens",
        "at most $0.01": "$0.020000",
        "at most 3 rounds": "4 rounds",
    }


def test_pass_rates_over_repeated_runs() -> None:
    a, b = "event 1 (say) is attended", "CreateSituation called 1+ times"
    runs = [
        [Result(a, True), Result(b, False, "called 0 times")],
        [Result(a, True), Result(b, True)],
        [Result(a, False, "ignored"), Result(b, True)],
        [Result(a, True)],  # a run that stopped early counts as failed for what it lacks
    ]
    rates = summarise(runs)
    assert [(r.label, r.passed, r.runs, r.details) for r in rates] == [
        (a, 3, 4, ("ignored",)),
        (b, 2, 4, ("called 0 times", "not checked")),
    ]
    assert [r.rate for r in rates] == [0.75, 0.5]
    assert passes(rates, 0.5) and not passes(rates, 0.75)
    assert passes([], 1.0)
    with pytest.raises(ValueError, match="between 0 and 1"):
        passes(rates, 1.5)
