"""Every seed pack's scenarios on the sim town pass against the offline stand-in (those that need
a language model are skipped and say so), so ``make test`` holds the packs to their own
behaviour, over the sim town and over the snapshots the packs ship."""

from __future__ import annotations

import pytest

from storyteller_daemon.app.evals import EvalModel, evaluate, find_scenarios
from storyteller_daemon.app.evals.models import eval_model
from storyteller_daemon.bundled import example_config
from storyteller_daemon.clock import SystemClock
from storyteller_daemon.config import load_config
from storyteller_daemon.domain.scenarios import Needs
from storyteller_daemon.interchange.packs.files import SEED_DIR, list_packs, read_pack

WITH_SCENARIOS = [p.name for p in list_packs(SEED_DIR) if list((p / "scenarios").glob("*.toml"))]


def test_the_seed_packs_ship_scenarios() -> None:
    assert "harbour-ward" in WITH_SCENARIOS


@pytest.mark.parametrize("name", WITH_SCENARIOS)
async def test_a_seed_pack_passes_its_scenarios_against_the_stand_in(name: str) -> None:
    pack = read_pack(name)
    chosen = find_scenarios(pack)
    assert chosen
    cfg = load_config(example_config())
    stand_in: EvalModel = eval_model("stand-in", cfg)
    report = await evaluate(pack, chosen, base=cfg, model=stand_in, real=SystemClock())
    broken = [
        f"{s.source.name}: {r.label} (got {'; '.join(r.details)})"
        for s in report.scenarios
        for r in s.rates
        if r.rate < 1.0
    ]
    assert broken == [], "\n".join(broken)
    skipped = {s.name for s in report.scenarios if s.skipped is not None}
    assert skipped == {
        item.scenario.name for item in chosen if item.scenario.needs is Needs.LANGUAGE_MODEL
    }
