"""Scenarios run through the whole daemon (bridge, attention, turns, policy, records) with a
scripted model: every expectation kind held and broken, repeats and pass rates, skips, the
snapshot seam and the choice of model."""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from storyteller_daemon.agent.models.interface import Usage
from storyteller_daemon.app.adapters import close_if_closable
from storyteller_daemon.app.evals import EvalModel, EvalReport, evaluate, find_scenarios
from storyteller_daemon.app.evals.models import eval_model
from storyteller_daemon.app.evals.runner import START
from storyteller_daemon.app.evals.suite import find_pack_of
from storyteller_daemon.bundled import example_config
from storyteller_daemon.clock import SystemClock
from storyteller_daemon.config import Config, load_config, parse_config
from storyteller_daemon.errors import ConfigError
from storyteller_daemon.interchange.packs.contents import Pack
from storyteller_daemon.interchange.packs.files import SEED_DIR, read_pack
from storyteller_daemon.testing.model import ScriptedModel, calls
from storyteller_daemon.testing.model_responder import ModelResponder
from storyteller_daemon.testing.responses_server import ScriptedResponsesServer
from storyteller_daemon.testing.steps import attend_all, by_kind, cycle
from world_adapter.sim import SimWorld

DATA = Path(__file__).parents[1] / "data" / "evals" / "scenarios"
USAGE = Usage(input_tokens=1000, output_tokens=100)
BRIBE = {
    "Title": "Bribe on the quay",
    "Description": "A purse offered to look away.",
    "CharacterId": None,
    "RoomId": 101,
}
MEMORY = {
    "Id": 1001,
    "Title": "Offers bribes",
    "Details": "Maren offered a purse.",
    "Importance": 3,
}
ACTING = calls(
    ("CreateSituation", BRIBE),
    ("EchoToRoom", {"Room": 101, "Text": "Gulls wheel low over the quay."}),
    ("EchoToRoom", {"Room": 205, "Text": "Far off, a bell."}),  # not the event's room: refused
    ("CreateMemory", MEMORY),
    usage=USAGE,
)
QUIET = calls(("Noop", {}), usage=USAGE)


def _pack(tmp_path: Path, *names: str) -> Pack:
    """The harbour-ward pack with only the named test scenarios."""
    pack_dir = tmp_path / "harbour-ward"
    shutil.copytree(SEED_DIR / "harbour-ward", pack_dir)
    shutil.rmtree(pack_dir / "scenarios", ignore_errors=True)
    (pack_dir / "scenarios").mkdir()
    for name in names:
        shutil.copy(DATA / f"{name}.toml", pack_dir / "scenarios")
    return read_pack(pack_dir)


def _scripted(turn: object = ACTING) -> ScriptedModel:
    """Attends to purses only; a turn's first round is `turn`, later ones Noop."""
    gate = attend_all(only=lambda line: "purse" in line, usage=USAGE)
    return ScriptedModel(then=by_kind(attention=gate, turn=turn, follow_up=QUIET))  # type: ignore[arg-type]


def _priced() -> Config:
    """The example configuration: its price table makes the scripted requests cost USD."""
    return load_config(example_config())


async def _run(pack: Pack, model: EvalModel, **options: object) -> EvalReport:
    return await evaluate(
        pack,
        find_scenarios(pack),
        base=_priced(),
        model=model,
        real=SystemClock(),
        **options,  # type: ignore[arg-type]
    )


def _held(report: EvalReport, scenario: int = 0) -> dict[str, bool]:
    return {rate.label: rate.passed == rate.runs for rate in report.scenarios[scenario].rates}


async def test_every_expectation_kind_is_held_or_broken_through_the_whole_daemon(
    tmp_path: Path,
) -> None:
    pack = _pack(tmp_path, "every-kind", "tight-budget")
    report = await _run(pack, EvalModel(_scripted(), "scripted"))
    assert _held(report, 0) == {
        "the run completed": True,
        "event 1 (say) is attended": True,
        "event 2 (emote) is ignored": True,
        "event 3 (emote) is attended": False,
        "CreateSituation(Title~/(?i)bribe/) called 1+ times": True,
        "CreateSituation(Title~/(?i)fire/) called 1+ times": False,
        "EchoToRoom called 2..3 times": False,
        "EchoToRoom(Room~/^104$/) not called": True,
        "CreateMemory not called": False,
        "a situation matches /(?i)bribe/": True,
        "a situation matches /(?i)fire/": False,
        "a memory matches /(?i)purse/": True,
        "a memory matches /(?i)dragon/": False,
        "the scope rule refused a call": True,
        "the dictated rule refused a call": False,
        "at most 100000 tokens": True,
        "at most $1e-06": False,
        "at most 2 rounds": True,
    }
    assert _held(report, 1) == {
        "the run completed": True,
        "at most 10 tokens": False,
        "at most $1": True,
        "at most 1 rounds": False,
    }
    every_kind = report.scenarios[0]
    (failure,) = every_kind.failures
    got = {r.label: r.detail for r in failure.failed}
    assert got["event 3 (emote) is attended"] == "ignored"
    assert got["EchoToRoom called 2..3 times"] == "called 1 times"
    # the failing run's transcripts: its turn (with the attention pass that led to it)
    turns = [t for t in failure.transcripts if t.summary.kind == "turn"]
    assert len(turns) == 1 and turns[0].related
    assert every_kind.tokens > 0 and every_kind.usd > 0
    assert not report.passed and report.counts() == (0, 2, 0)


async def test_repeats_give_pass_rates_and_the_threshold_decides(tmp_path: Path) -> None:
    pack = _pack(tmp_path, "tight-budget")
    # Every other run's turn acts: half the runs call CreateSituation.
    scenario = find_scenarios(pack)[0]
    wants = replace(
        scenario.scenario.expect,
        budget=replace(scenario.scenario.expect.budget, tokens=None, usd=None, rounds=None),
    )
    from storyteller_daemon.domain.scenarios import CallBounds, CallPattern

    wants = replace(wants, calls=(CallBounds(CallPattern("CreateSituation")),))
    chosen = [replace(scenario, scenario=replace(scenario.scenario, expect=wants))]
    told: list[tuple[str, int, int]] = []
    report = await evaluate(
        pack,
        chosen,
        base=_priced(),
        model=EvalModel(_scripted(turn=cycle(ACTING, QUIET)), "scripted"),
        real=SystemClock(),
        repeat=4,
        threshold=0.5,
        progress=lambda *a: told.append(a),
    )
    (result,) = report.scenarios
    rates = {rate.label: (rate.passed, rate.runs) for rate in result.rates}
    assert rates == {"the run completed": (4, 4), "CreateSituation called 1+ times": (2, 4)}
    assert [r.rate for r in result.rates] == [1.0, 0.5]
    assert report.passed  # 2 of 4 is the threshold of 0.5
    assert not replace(report, threshold=0.8).passed
    assert [f.run for f in result.failures] == [2, 4]
    assert told == [(scenario.scenario.name, n, 4) for n in (1, 2, 3, 4)]
    assert result.runs == 4


async def test_the_stand_in_skips_scenarios_that_need_a_language_model(tmp_path: Path) -> None:
    pack = _pack(tmp_path, "needs-a-model", "tight-budget")
    stand_in = eval_model("stand-in", parse_config({}, "test"))
    assert stand_in.stand_in and "not a language model" in stand_in.description
    report = await _run(pack, stand_in)
    skipped = {s.name: s.skipped for s in report.scenarios}
    assert skipped["judgement the stand-in does not have"] == (
        "needs a language model (run with --model)"
    )
    # ... and a scripted model is held to it (it never tries to dictate: the rule never refuses)
    scripted = await _run(pack, EvalModel(_scripted(), "scripted"))
    assert scripted.scenarios[0].skipped is None
    assert _held(scripted)["the dictated rule refused a call"] is False


async def test_a_snapshot_world_runs_through_the_loader_it_is_given(tmp_path: Path) -> None:
    pack = _pack(tmp_path, "tight-budget")
    snapshot = pack.path / "scenarios" / "docks.json"
    snapshot.write_text("{}", encoding="utf-8")
    (pack.path / "scenarios" / "snap.toml").write_text(
        'name = "over a snapshot"\nworld = "docks.json"\n'
        '[[events]]\nat = "0s"\naction = "say"\ncharacter = 1001\n'
        'text = "A purse for your trouble."\nexpect = "attend"\n',
        encoding="utf-8",
    )
    chosen = find_scenarios(pack, pattern="snap")
    loaded: list[str] = []

    def load(path: str, now: Callable[[], datetime], epoch: str) -> SimWorld:
        loaded.append(path)
        world = SimWorld.harbour_town(clock=now, epoch=epoch)
        world.place(1001, 102)  # the snapshot has her at the fish market
        return world

    model = EvalModel(_scripted(), "scripted")
    # The shipped loader refuses a file that holds no world, naming the scenario, before
    # anything runs.
    with pytest.raises(ConfigError, match=r"snap\.toml: world: .*docks\.json"):
        await evaluate(pack, chosen, base=_priced(), model=model, real=SystemClock())
    report = await evaluate(
        pack, chosen, base=_priced(), model=model, real=SystemClock(), load_snapshot=load
    )
    assert loaded == [str(snapshot.resolve())] * 2  # checked before the runs, then run
    assert _held(report) == {"the run completed": True, "event 1 (say) is attended": True}
    turns = [t for f in report.scenarios[0].failures for t in f.transcripts]
    assert turns == []  # nothing failed


async def test_a_world_that_refuses_an_event_fails_the_run_with_its_reason(
    tmp_path: Path,
) -> None:
    pack = _pack(tmp_path)
    (pack.path / "scenarios" / "ghost.toml").write_text(
        'name = "a ghost speaks"\n[[events]]\nat = "0s"\naction = "say"\ncharacter = 9999\n'
        'text = "Boo."\nexpect = "attend"\n',
        encoding="utf-8",
    )
    report = await _run(read_pack(pack.path), EvalModel(_scripted(), "scripted"))
    (failure,) = report.scenarios[0].failures
    got = {r.label: r.detail for r in failure.failed}
    assert got["the run completed"] == (
        "the world refused a say: No character with id 9999 exists."
    )
    assert got["event 1 (say) is attended"] == "never judged"


async def test_a_heartbeat_the_storyteller_does_not_have_fails_the_run_naming_its_own(
    tmp_path: Path,
) -> None:
    pack = _pack(tmp_path)
    (pack.path / "scenarios" / "hourly.toml").write_text(
        'name = "an hourly beat"\n[[events]]\nat = "0s"\naction = "heartbeat"\n'
        'values = { heartbeat = "1h" }\n',
        encoding="utf-8",
    )
    report = await _run(read_pack(pack.path), EvalModel(_scripted(), "scripted"))
    (failure,) = report.scenarios[0].failures
    got = {r.label: r.detail for r in failure.failed}
    assert got["the run completed"] == ("Harbour Ward Watch has no 1h heartbeat (it has: 10m, 30m)")


def test_the_model_is_named_by_stand_in_configured_or_endpoint_and_model() -> None:
    bare = parse_config({"model": {"api_key_env": "EVAL_TEST_KEY"}}, "test")
    with pytest.raises(ConfigError, match="the configuration has no model: none: EVAL_TEST_KEY"):
        eval_model("configured", bare, {})
    offline = parse_config({"model": {"offline_when_no_key": True}}, "test")
    assert eval_model("configured", offline, {}).stand_in
    with pytest.raises(ConfigError, match="EVAL_TEST_KEY is not set"):
        eval_model("default/gpt-5-nano", bare, {})
    named = eval_model("default/gpt-5-nano", bare, {"EVAL_TEST_KEY": "k"})
    assert (named.model_name, named.stand_in) == ("gpt-5-nano", False)
    assert named.description == "gpt-5-nano on [model]"
    with pytest.raises(ConfigError, match="no endpoint named 'local'"):
        eval_model("local/llama", bare, {"EVAL_TEST_KEY": "k"})
    with pytest.raises(ConfigError, match="is not stand-in, configured or ENDPOINT/MODEL"):
        eval_model("gpt-5", bare, {})


def test_a_storyteller_name_finds_its_pack() -> None:
    pack, storyteller = find_pack_of("harbour ward watch")
    assert (pack.name, storyteller) == ("harbour-ward", "Harbour Ward Watch")
    assert find_pack_of("harbour-ward")[1] is None
    with pytest.raises(ConfigError, match="no pack of that name"):
        find_pack_of("Nobody At All")


async def test_a_slow_endpoint_over_http_keeps_virtual_time_still_while_it_answers(
    tmp_path: Path,
) -> None:
    """ENDPOINT/MODEL through the openai SDK to a Responses server answering in 0.3 s (real):
    while a request is in flight the clock stays where it is, so the turn of the event at 0s
    runs at once, not at the next event ten minutes later."""
    pack = _pack(tmp_path)
    (pack.path / "scenarios" / "slow.toml").write_text(
        'name = "slow"\n'
        '[[events]]\nat = "0s"\naction = "say"\ncharacter = 1001\nroom = 101\n'
        'text = "A purse for your silence."\nexpect = "attend"\n'
        '[[events]]\nat = "10m"\naction = "emote"\ncharacter = 1001\nroom = 101\n'
        'text = "hums."\nexpect = "ignore"\n'
        '[[expect.calls]]\ntool = "CreateSituation"\nmost = 1\n',
        encoding="utf-8",
    )
    pack = read_pack(pack.path)
    scripted = _scripted()
    scripted.latency = 0.3
    async with ScriptedResponsesServer(responder=ModelResponder(scripted)) as server:
        cfg = load_config(example_config())
        model_section = cfg.model.model_copy(
            update={"base_url": server.base_url, "api_key_env": "EVAL_TEST_KEY"}
        )
        cfg = cfg.model_copy(update={"model": model_section})
        model = eval_model("default/gpt-5-nano", cfg, {"EVAL_TEST_KEY": "test-key"})
        # The same scenario with an expectation that fails, so the report keeps its run.
        failing_items = [
            replace(
                item,
                scenario=replace(
                    item.scenario,
                    expect=replace(item.scenario.expect, situations=(re.compile("never"),)),
                ),
            )
            for item in find_scenarios(pack)
        ]
        try:
            report = await evaluate(
                pack, find_scenarios(pack), base=cfg, model=model, real=SystemClock()
            )
            failing = await evaluate(pack, failing_items, base=cfg, model=model, real=SystemClock())
        finally:
            await close_if_closable(model.model)
    assert _held(report) == {
        "the run completed": True,
        "event 1 (say) is attended": True,
        "event 2 (emote) is ignored": True,
        "CreateSituation called 1..1 times": True,
    }
    assert {r["model"] for r in server.requests} == {"gpt-5-nano"}  # every scope on it
    # The turn ran at the event's time although each answer took 0.3 s: read back from the
    # slow run the report keeps because it failed.
    (failure,) = failing.scenarios[0].failures
    turn = next(t for t in failure.transcripts if t.summary.kind == "turn")
    assert turn.summary.started_at - START < timedelta(minutes=1)
