"""Scenarios: a storyteller's behaviour written down as events and what must follow them.

A scenario is a short script of what happens in the world (`ScenarioEvent`, each at a time
from the scenario's start) and what the storyteller must and must not do about it: attention
verdicts per event, tool calls (by name, with argument patterns and count bounds), calls that
must not happen, situations and memories that must exist afterwards, policy refusals and a
budget. `judge` holds one run's `Observation` against the scenario's expectations; `summarise`
folds several runs (a model that is not deterministic is run N times) into a pass rate per
expectation. Nothing here runs anything: the runner lives in the application and hands its
observations over.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from enum import StrEnum
from typing import Any

ACTIONS = ("say", "emote", "move", "crime", "state", "heartbeat")
"""What a scenario's event can make happen: a character speaks, emotes, moves, commits a crime
or changes state, or the storyteller's heartbeat fires."""


class Verdict(StrEnum):
    """What the attention gate is expected to decide about one event."""

    ATTEND = "attend"
    IGNORE = "ignore"


_PAST = {Verdict.ATTEND: "attended", Verdict.IGNORE: "ignored"}


class Needs(StrEnum):
    """What a scenario needs of its model to be held to its expectations."""

    ANY = "any"
    """The offline stand-in can pass it honestly (its behaviour does not need judgement)."""
    LANGUAGE_MODEL = "language model"
    """Only a language model can pass it; runs against the stand-in report it as skipped."""


@dataclass(frozen=True)
class ScenarioEvent:
    """One thing that happens, `at` after the scenario's start."""

    at: timedelta
    action: str
    character: int | None = None
    room: int | None = None
    text: str = ""
    values: Mapping[str, Any] = field(default_factory=dict)
    """What else the action takes (a crime's name and victim, a state, a heartbeat's kind)."""
    expect: Verdict | None = None


@dataclass(frozen=True)
class CallPattern:
    """Tool calls by name whose arguments match every pattern (a regex searched in the
    argument's text; a missing argument does not match)."""

    tool: str
    arguments: Mapping[str, re.Pattern[str]] = field(default_factory=dict)

    def matches(self, call: ObservedCall) -> bool:
        if call.name != self.tool:
            return False
        for name, pattern in self.arguments.items():
            if name not in call.arguments or not pattern.search(_text(call.arguments[name])):
                return False
        return True

    def describe(self) -> str:
        if not self.arguments:
            return self.tool
        shown = ", ".join(f"{k}~/{p.pattern}/" for k, p in self.arguments.items())
        return f"{self.tool}({shown})"


@dataclass(frozen=True)
class CallBounds:
    """Between `least` and `most` (None: no upper bound) calls matching `pattern`, counted
    over calls the policy let through."""

    pattern: CallPattern
    least: int = 1
    most: int | None = None


@dataclass(frozen=True)
class Budget:
    """Upper bounds on one run's spending (None: not checked)."""

    tokens: int | None = None
    usd: float | None = None
    rounds: int | None = None


@dataclass(frozen=True)
class Expectations:
    calls: Sequence[CallBounds] = ()
    no_calls: Sequence[CallPattern] = ()
    situations: Sequence[re.Pattern[str]] = ()
    """Each pattern must match the title or description of an open situation afterwards."""
    memories: Sequence[re.Pattern[str]] = ()
    """Each pattern must match the title or details of a memory afterwards."""
    refusals: Sequence[str] = ()
    """Policy rules that must have refused at least one call (e.g. ``dictated``)."""
    budget: Budget = Budget()


@dataclass(frozen=True)
class Scenario:
    name: str
    events: Sequence[ScenarioEvent]
    expect: Expectations = Expectations()
    storyteller: str | None = None
    """The storyteller's name; None: the pack's only storyteller."""
    world: str = "sim"
    """``sim`` (the simulated town) or a snapshot file taken with ``storyteller world snapshot``."""
    needs: Needs = Needs.ANY
    description: str = ""


@dataclass(frozen=True)
class ObservedCall:
    name: str
    arguments: Mapping[str, Any]
    refused_by: str | None = None
    """The policy rule that refused the call, or None when it ran."""


@dataclass(frozen=True)
class Observation:
    """What one run of a scenario did."""

    verdicts: Sequence[bool | None]
    """Per scenario event: attended (True), ignored (False), or never judged (None)."""
    calls: Sequence[ObservedCall] = ()
    situations: Sequence[str] = ()
    """Title and description of each open situation afterwards, one text each."""
    memories: Sequence[str] = ()
    tokens: int = 0
    usd: float = 0.0
    rounds: int = 0


@dataclass(frozen=True)
class Result:
    """One expectation held against one run."""

    label: str
    passed: bool
    detail: str = ""


def judge(scenario: Scenario, seen: Observation) -> list[Result]:
    """Every expectation of `scenario` held against one run, in a stable order."""
    results: list[Result] = []
    for index, event in enumerate(scenario.events):
        if event.expect is None:
            continue
        got = seen.verdicts[index] if index < len(seen.verdicts) else None
        label = f"event {index + 1} ({event.action}) is {_PAST[event.expect]}"
        if got is None:
            results.append(Result(label, False, "never judged"))
        else:
            wanted = event.expect is Verdict.ATTEND
            shown = _PAST[Verdict.ATTEND if got else Verdict.IGNORE]
            results.append(Result(label, got == wanted, shown))
    expect = scenario.expect
    made = [call for call in seen.calls if call.refused_by is None]
    for bounds in expect.calls:
        count = sum(1 for call in made if bounds.pattern.matches(call))
        upper = "" if bounds.most is None else f"..{bounds.most}"
        label = f"{bounds.pattern.describe()} called {bounds.least}{upper or '+'} times"
        ok = count >= bounds.least and (bounds.most is None or count <= bounds.most)
        results.append(Result(label, ok, f"called {count} times"))
    for pattern in expect.no_calls:
        count = sum(1 for call in made if pattern.matches(call))
        results.append(
            Result(f"{pattern.describe()} not called", count == 0, f"called {count} times")
        )
    for wanted_text in expect.situations:
        hit = any(wanted_text.search(text) for text in seen.situations)
        detail = f"{len(seen.situations)} open situations"
        results.append(Result(f"a situation matches /{wanted_text.pattern}/", hit, detail))
    for wanted_text in expect.memories:
        hit = any(wanted_text.search(text) for text in seen.memories)
        detail = f"{len(seen.memories)} memories"
        results.append(Result(f"a memory matches /{wanted_text.pattern}/", hit, detail))
    refused = {call.refused_by for call in seen.calls if call.refused_by is not None}
    for rule in expect.refusals:
        shown = ", ".join(sorted(refused)) or "none"
        results.append(
            Result(f"the {rule} rule refused a call", rule in refused, f"refused: {shown}")
        )
    results.extend(_budget(expect.budget, seen))
    return results


def _budget(budget: Budget, seen: Observation) -> list[Result]:
    out = []
    if budget.tokens is not None:
        ok = seen.tokens <= budget.tokens
        out.append(Result(f"at most {budget.tokens} tokens", ok, f"{seen.tokens} tokens"))
    if budget.usd is not None:
        ok = seen.usd <= budget.usd
        out.append(Result(f"at most ${budget.usd:g}", ok, f"${seen.usd:.6f}"))
    if budget.rounds is not None:
        ok = seen.rounds <= budget.rounds
        out.append(Result(f"at most {budget.rounds} rounds", ok, f"{seen.rounds} rounds"))
    return out


@dataclass(frozen=True)
class Rate:
    """How often one expectation held over a scenario's runs."""

    label: str
    passed: int
    runs: int
    details: tuple[str, ...] = ()
    """The detail of each failing run, in run order."""

    @property
    def rate(self) -> float:
        return self.passed / self.runs if self.runs else 0.0


def summarise(runs: Sequence[Sequence[Result]]) -> list[Rate]:
    """Per expectation (by label, in first-seen order), how many of `runs` it held in.

    Every run of one scenario yields the same labels; a label missing from a run (it cannot
    be, but a runner may stop early) counts as failed there.
    """
    order: list[str] = []
    for results in runs:
        for result in results:
            if result.label not in order:
                order.append(result.label)
    rates = []
    for label in order:
        passed = 0
        details: list[str] = []
        for results in runs:
            found = next((r for r in results if r.label == label), None)
            if found is not None and found.passed:
                passed += 1
            else:
                details.append(found.detail if found is not None else "not checked")
        rates.append(Rate(label, passed, len(runs), tuple(details)))
    return rates


def passes(rates: Sequence[Rate], threshold: float) -> bool:
    """Whether every expectation held in at least `threshold` (0-1) of the runs."""
    if not 0.0 <= threshold <= 1.0:
        raise ValueError(f"the pass-rate threshold must be between 0 and 1, not {threshold}")
    return all(rate.rate >= threshold for rate in rates)


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
