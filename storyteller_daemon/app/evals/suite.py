"""``storyteller eval``'s work: a pack's scenarios, each run N times, judged and summed up.

`find_scenarios` picks the scenarios of a pack (or of the pack holding a storyteller) matching a
glob; `evaluate` seeds the pack into a template database once, runs every scenario `repeat`
times on copies of it (`runner.run_scenario`), holds each run to the scenario's expectations
and folds the runs into a pass rate per expectation (`report.ScenarioReport`). A scenario that
needs a language model is skipped against the offline stand-in, and says so.
"""

from __future__ import annotations

import fnmatch
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

from storyteller_daemon.app.evals.observe import Transcript
from storyteller_daemon.app.evals.report import EvalReport, FailedRun, ScenarioReport
from storyteller_daemon.app.evals.runner import EvalModel, run_scenario
from storyteller_daemon.app.evals.worlds import SIM, SnapshotLoader
from storyteller_daemon.clock import Clock
from storyteller_daemon.config import Config
from storyteller_daemon.domain.names import name_key
from storyteller_daemon.domain.scenarios import Needs, Result, judge, summarise
from storyteller_daemon.errors import ConfigError
from storyteller_daemon.interchange.packs.contents import Pack
from storyteller_daemon.interchange.packs.files import SEED_DIR, find_pack, list_packs, read_pack
from storyteller_daemon.interchange.packs.scenarios import PackScenario, read_scenarios
from storyteller_daemon.interchange.packs.tables import display_path
from storyteller_daemon.storage.seeding import load_pack
from storyteller_daemon.storage.store import Store
from world_adapter.sim.snapshot import load_snapshot as read_snapshot

Progress = Callable[[str, int, int], None]
"""Told (scenario name, runs done, runs wanted) as each run ends."""
COMPLETED = "the run completed"
"""The label of the result every run has: it ran to its end (the world took every event and
the daemon came to rest)."""


def find_pack_of(ref: str, seed_dir: Path = SEED_DIR) -> tuple[Pack, str | None]:
    """The pack `ref` names, or the seed pack holding a storyteller of that name (then also
    the storyteller's name, to keep only its scenarios).

    Raises:
        ConfigError: neither a pack nor a storyteller of a seed pack.
    """
    try:
        return read_pack(find_pack(ref, seed_dir), seed_dir), None
    except ConfigError as not_a_pack:
        for path in list_packs(seed_dir):
            pack = read_pack(path, seed_dir)
            for st in pack.storytellers:
                if name_key(st.name) == name_key(ref):
                    return pack, st.name
        raise not_a_pack from None


def find_scenarios(
    pack: Pack, *, storyteller: str | None = None, pattern: str | None = None
) -> list[PackScenario]:
    """The pack's scenarios for `storyteller` (None: all) whose name or file name (without
    ``.toml``) matches the glob `pattern` (None: all), in file order."""
    found = []
    for item in read_scenarios(pack):
        if storyteller is not None and item.scenario.storyteller != storyteller:
            continue
        names = (item.scenario.name, item.source.stem)
        if pattern is not None and not any(fnmatch.fnmatchcase(n, pattern) for n in names):
            continue
        found.append(item)
    return found


async def evaluate(
    pack: Pack,
    scenarios: Sequence[PackScenario],
    *,
    base: Config,
    model: EvalModel,
    real: Clock,
    repeat: int = 1,
    threshold: float = 0.8,
    progress: Progress | None = None,
    load_snapshot: SnapshotLoader = read_snapshot,
    settle_seconds: float = 300.0,
) -> EvalReport:
    """Run every scenario `repeat` times against `model` and report the pass rates.

    Raises:
        ValueError: `repeat` is below one or `threshold` outside 0-1.
    """
    if repeat < 1:
        raise ValueError(f"--repeat must be at least 1, not {repeat}")
    if not 0.0 <= threshold <= 1.0:
        raise ValueError(f"the pass-rate threshold must be between 0 and 1, not {threshold}")
    checked: set[str] = set()
    for item in scenarios:  # a snapshot that holds no world is refused before anything runs
        spec = item.scenario.world
        if spec != SIM and spec not in checked:
            try:
                load_snapshot(spec, real.now, "eval-check")
            except (OSError, ValueError) as exc:
                raise ConfigError(display_path(item.source), str(exc), "world") from None
            checked.add(spec)
    reports = []
    with tempfile.TemporaryDirectory(prefix="storyteller-eval-") as tmp:
        workdir = Path(tmp)
        template = workdir / "seeded.db"
        store = Store.open(f"sqlite+aiosqlite:///{template}", clock=real)
        try:
            await store.db.upgrade()
            await load_pack(store.db, pack, clock=real)
        finally:
            await store.close()
        for item in scenarios:
            scenario = item.scenario
            if model.stand_in and scenario.needs is Needs.LANGUAGE_MODEL:
                reports.append(
                    ScenarioReport.skipped_one(item, "needs a language model (run with --model)")
                )
                continue
            storyteller = scenario.storyteller or pack.storytellers[0].name
            runs: list[list[Result]] = []
            tokens, usd, seconds = [], [], []
            failed: list[FailedRun] = []
            for number in range(1, repeat + 1):
                outcome = await run_scenario(
                    scenario,
                    storyteller=storyteller,
                    template=template,
                    workdir=workdir,
                    base=base,
                    model=model,
                    real=real,
                    load_snapshot=load_snapshot,
                    settle_seconds=settle_seconds,
                )
                results = [
                    Result(COMPLETED, outcome.error is None, outcome.error or "ran to its end"),
                    *judge(scenario, outcome.observation),
                ]
                runs.append(results)
                tokens.append(outcome.observation.tokens)
                usd.append(outcome.observation.usd)
                seconds.append(outcome.seconds)
                if not all(r.passed for r in results):
                    failed.append(_failed(number, results, outcome.transcripts))
                if progress is not None:
                    progress(scenario.name, number, repeat)
            reports.append(
                ScenarioReport(
                    name=scenario.name,
                    source=item.source,
                    storyteller=storyteller,
                    rates=tuple(summarise(runs)),
                    runs=repeat,
                    tokens=sum(tokens) / repeat,
                    usd=sum(usd) / repeat,
                    seconds=sum(seconds) / repeat,
                    failures=tuple(failed),
                )
            )
    return EvalReport(
        pack=pack.name,
        model=model.description,
        repeat=repeat,
        threshold=threshold,
        scenarios=tuple(reports),
    )


def _failed(number: int, results: Sequence[Result], transcripts: Sequence[Transcript]) -> FailedRun:
    return FailedRun(
        run=number,
        failed=tuple(r for r in results if not r.passed),
        transcripts=tuple(transcripts),
    )
