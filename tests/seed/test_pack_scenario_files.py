"""The seed packs' scenario files: every one parses, each pack ships at least fifteen covering
its remit, one or more over the snapshot of the sim town it ships (they run, with the rest, in
test_seed_scenarios), and a scenario marked as needing a language model is one the stand-in
fails (so the mark is never a way round a pass it could make)."""

from __future__ import annotations

import dataclasses

import pytest

from storyteller_daemon.app.evals import EvalReport, evaluate, find_scenarios
from storyteller_daemon.app.evals.models import eval_model
from storyteller_daemon.bundled import example_config
from storyteller_daemon.clock import SystemClock
from storyteller_daemon.config import load_config
from storyteller_daemon.domain.scenarios import Needs
from storyteller_daemon.interchange.packs.contents import Pack
from storyteller_daemon.interchange.packs.files import SEED_DIR, read_pack
from storyteller_daemon.interchange.packs.scenarios import PackScenario, read_scenarios
from world_adapter.sim import SimWorld
from world_adapter.sim.snapshot import load_snapshot

PACKS = ["harbour-ward", "narrative-steward", "harbour-director"]


@pytest.mark.parametrize("name", PACKS)
def test_every_scenario_file_parses_and_the_remit_is_covered(name: str) -> None:
    pack = read_pack(name)
    files = sorted((SEED_DIR / name / "scenarios").glob("*.toml"))
    found = read_scenarios(pack)
    assert [item.source for item in found] == files
    assert len(found) >= 15
    actions = {e.action for item in found for e in item.scenario.events}
    assert {"heartbeat", "say", "crime"} <= actions
    assert any(item.scenario.world != "sim" for item in found)
    assert any(item.scenario.needs is Needs.ANY for item in found)


@pytest.mark.parametrize("name", PACKS)
async def test_the_shipped_snapshot_is_the_sim_town(name: str) -> None:
    copy = load_snapshot(SEED_DIR / name / "snapshots" / "harbour-town.json")
    town = SimWorld.harbour_town()
    assert await copy.zones() == await town.zones()
    for room in [*range(101, 109), *range(201, 206)]:
        assert await copy.room(room) == await town.room(room)
    for person in (1001, 1002, 1003, 2001, 2002, 2003, 2004, 2005):
        assert await copy.character(person) == await town.character(person)
    assert await copy.progs() == await town.progs()


async def _against_the_stand_in(pack: Pack, chosen: list[PackScenario]) -> EvalReport:
    cfg = load_config(example_config())
    return await evaluate(
        pack,
        chosen,
        base=cfg,
        model=eval_model("stand-in", cfg),
        real=SystemClock(),
    )


@pytest.mark.parametrize("name", PACKS)
async def test_what_needs_a_language_model_the_stand_in_fails(name: str) -> None:
    pack = read_pack(name)
    marked = [
        dataclasses.replace(item, scenario=dataclasses.replace(item.scenario, needs=Needs.ANY))
        for item in find_scenarios(pack)
        if item.scenario.needs is Needs.LANGUAGE_MODEL
    ]
    assert marked
    report = await _against_the_stand_in(pack, marked)
    passed = [s.name for s in report.scenarios if all(r.rate == 1.0 for r in s.rates)]
    assert passed == []


def test_the_seed_readme_counts_the_scenarios() -> None:
    text = (SEED_DIR / "README.md").read_text(encoding="utf-8")
    section = text.split("## The scenarios each pack ships", 1)[1].split("\n## ", 1)[0]
    for name in PACKS:
        found = read_scenarios(read_pack(name))
        needing = sum(1 for item in found if item.scenario.needs is Needs.LANGUAGE_MODEL)
        row = next(line for line in section.splitlines() if line.startswith(f"| `{name}` |"))
        cells = [cell.strip() for cell in row.strip("|").split("|")]
        assert cells[1] == str(len(found))
        assert cells[3].startswith(f"{needing}:")
