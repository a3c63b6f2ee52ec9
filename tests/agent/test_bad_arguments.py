"""The bad-arguments case set (tests/data/bad_arguments.json) through whole heartbeat turns:
every case is a tool error or a valid result, never a crash, and no invalid id reaches the game.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from progs.types import ProgType, ValueType, supports_tool_parameter
from storyteller_daemon.agent.tools import custom
from storyteller_daemon.agent.tools.registry import BUILTIN_TOOLS
from storyteller_daemon.bench.arguments import (
    ArgumentsRig,
    Case,
    arguments_rig,
    load_cases,
    run_arguments_bench,
)

pytestmark = pytest.mark.asyncio(loop_scope="module")

CASES = load_cases()
KINDS = {
    "malformed JSON",
    "empty string",
    "deep nesting",
    "huge strings",
    "wrong types",
    "nulls",
    "negative ids",
    "zero ids",
    "huge ids",
    "wrong-kind ids",
    "unknown ids",
    "extra keys",
}


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def rig() -> AsyncIterator[ArgumentsRig]:
    """One storyteller with every tool, its store and the sim world, for the whole set."""
    async with arguments_rig() as made:
        yield made


async def test_the_set_covers_every_tool_every_prog_parameter_type_and_every_kind(
    rig: ArgumentsRig,
) -> None:
    assert len(CASES) >= 80
    called = {c.tool for c in CASES}
    assert set(BUILTIN_TOOLS) <= called
    assert {t.name for t in rig.storyteller.custom_tools} <= called
    progs = {p.name: p for p in await rig.sim.progs()}
    typed = {q.type.element for t in rig.storyteller.custom_tools for q in progs[t.prog].parameters}
    assert typed == {t for t in ProgType if supports_tool_parameter(ValueType(t))}
    assert {c.kind for c in CASES} >= KINDS


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
async def test_a_bad_call_ends_as_a_tool_error_or_a_result_never_a_crash(
    case: Case, rig: ArgumentsRig
) -> None:
    outcome = await rig.run(case)
    assert outcome.crash is None
    assert outcome.invalid_ids == []
    assert outcome.envelope is not None
    assert outcome.as_expected, outcome.envelope
    if not outcome.envelope["ok"]:
        error = outcome.envelope["error"]
        assert "\n" not in error and len(error) < 300, error[:300]


async def test_the_rig_counts_an_invalid_id_that_reaches_the_game(
    rig: ArgumentsRig, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def unchecked(*_: Any) -> None:
        return None

    monkeypatch.setattr(custom, "check_world_ids", unchecked)
    [case] = [c for c in CASES if c.id == "things-item-is-a-character"]
    outcome = await rig.run(case)
    assert outcome.invalid_ids == ["InspectThings.Item: Item 1001"]
    assert outcome.prog_calls == 1
    assert outcome.envelope == {"ok": False, "error": "No item with id 1001 exists."}


@pytest.mark.postgres
async def test_the_whole_set_holds_on_postgresql_too(pg_url: str) -> None:
    report, outcomes = await run_arguments_bench(database_url=pg_url)
    assert [o.case.id for o in outcomes if o.crash] == []
    assert report["crashes"] == report["invalid ids sent to the game"] == 0
    assert report["not as the case set expects"] == []
