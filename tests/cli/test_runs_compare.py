"""``storyteller runs compare``: the cost question, its refusal, the report and its JSON shape.

The runs are `test_runs.record_runs`'s: an attention call about a theft, its turn (a situation,
an echo, then Noop) and a direct invocation (Noop), all by gpt-5. The endpoint asked is the
suite's scripted Responses server, reached by the real openai SDK as the configured
``[model] base_url``; it answers like the recording did, for the tools it is offered.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from test_ais_harness import Cli, cli_fixture
from test_runs import GATE_USAGE, TURN_USAGE, WHISTLE, record_runs, server_in_thread

from storyteller_daemon.agent.models.interface import Usage
from storyteller_daemon.agent.models.pricing import cost_usd
from storyteller_daemon.config import ModelPrice
from storyteller_daemon.testing.responses_answers import Reply

cli = cli_fixture("Harbour Watch")

PRICES = {
    "gpt-5": ModelPrice(input=1.25, cached_input=0.125, output=10.0),
    "gpt-5-mini": ModelPrice(input=0.25, cached_input=0.025, output=2.0),
}
SITUATION = {
    "Title": "Cutpurse on the quay",
    "Description": "Wren robbed Maren.",
    "CharacterId": None,
    "RoomId": 101,
}
RECORDED = [GATE_USAGE, TURN_USAGE, TURN_USAGE, TURN_USAGE]
"""Every request the recorded runs made: the attention call, the theft's two, the direct one."""


def respond(body: dict[str, Any]) -> Reply:
    """Like the recorded model: attend to the theft; on its turn, open the situation and echo
    (when offered, and the system prompt does not forbid it), then Noop; Noop on the direct
    invocation (about the bells)."""
    if "text" in body:
        return Reply.text(json.dumps({"attend": [{"id": "1", "why": "theft"}], "ignore": ""}),
                          usage=GATE_USAGE)  # fmt: skip
    answered = any(item.get("type") == "function_call_output" for item in body["input"])
    if answered or "bells" in json.dumps(body["input"]):
        return Reply.calls(("Noop", {}), usage=TURN_USAGE)
    offered = {tool["name"] for tool in body.get("tools", [])}
    if "Never use EchoToRoom" in body.get("instructions", ""):
        offered.discard("EchoToRoom")
    wanted = [("CreateSituation", SITUATION), ("EchoToRoom", {"Room": 101, "Text": WHISTLE})]
    return Reply.calls(*[c for c in wanted if c[0] in offered], usage=TURN_USAGE)


def config(tmp_path: Path, cli: Cli, base_url: str = "", offline: bool = False) -> str:
    """A config file on the test database, with prices and the endpoint at `base_url`."""
    path = tmp_path / "storyteller.toml"
    lines = [
        "[database]",
        f'url = "{cli.url}"',
        "[model]",
        f'base_url = "{base_url}"',
        f"offline_when_no_key = {'true' if offline else 'false'}",
    ]
    for name, price in PRICES.items():
        lines += [f"[model.prices.{name}]", *(f"{k} = {v}" for k, v in price.model_dump().items())]
    path.write_text("\n".join(lines) + "\n")
    return str(path)


@pytest.fixture
def keyed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")


def usd_at(model: str, usages: list[Usage]) -> float:
    return sum(cost_usd(PRICES, model, u) for u in usages)


@pytest.mark.usefixtures("keyed")
def test_a_real_endpoint_is_not_asked_without_a_terminal_or_yes(cli: Cli, tmp_path: Path) -> None:
    record_runs(cli)
    with server_in_thread(respond) as server:
        path = config(tmp_path, cli, server.base_url)
        error = cli.fails("--config", path, "runs", "compare", "--last", "2", "-m", "gpt-5-mini")
        assert server.requests == []
    estimate = f"${usd_at('gpt-5-mini', RECORDED):.4f}"
    assert error.startswith("Comparing 2 turn(s) asks gpt-5-mini on ")
    assert error.endswith(f": about {estimate}; pass --yes to ask without confirming.")


@pytest.mark.usefixtures("keyed")
def test_the_cost_question_is_asked_and_a_no_asks_nothing(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    record_runs(cli)
    monkeypatch.setattr("storyteller_daemon.cli.runs_compare.interactive", lambda: True)
    with server_in_thread(respond) as server:
        path = config(tmp_path, cli, server.base_url)
        refused = cli.run("--config", path, "runs", "compare", "-n", "2", input="n\n")
        assert server.requests == []
        asked = cli.run("--config", path, "runs", "compare", "-n", "2", input="y\n")
        assert len(server.requests) == 4  # the attention batch again, two turn rounds, one
    assert refused.exit_code == 1 and "Compared" not in refused.stdout  # (the runner echoes "n")
    assert f"about ${usd_at('gpt-5', RECORDED):.4f} (the recorded token" in refused.stderr
    assert "Go ahead? [y/N]" in refused.stderr and "error: Nothing was asked." in refused.stderr
    assert asked.exit_code == 0, asked.output
    out = asked.stdout.removeprefix(" y\n")  # the runner echoes the answer
    assert out.startswith("Compared 2 turn(s) with today's settings, asking ")
    row = next(line for line in out.splitlines() if line.lstrip().startswith("#2 "))
    assert "completed → completed" in row and "0 → 0" in row


@pytest.mark.usefixtures("keyed")
def test_the_json_report_of_a_cheaper_model_and_a_removed_tool(cli: Cli, tmp_path: Path) -> None:
    record_runs(cli)

    async def drop_echo(store: Any) -> None:
        from dataclasses import replace

        st = await store.storytellers.get(1)
        await store.storytellers.save(replace(st, custom_tools=()))

    cli.with_store(drop_echo)
    with server_in_thread(respond) as server:
        path = config(tmp_path, cli, server.base_url)
        report = cli.json("--config", path, "runs", "compare", "--model", "gpt-5-mini", "--yes")
    assert set(report) == {"change", "model", "likely_cost_usd", "turns", "total", "unpriced"}
    assert report["unpriced"] == []
    assert report["change"] == {"model": "gpt-5-mini", "effort": None, "prompt_file": None}
    assert report["model"].endswith("as gpt-5-mini")
    assert [t["run_id"] for t in report["turns"]] == [2, 3]  # oldest first
    theft = report["turns"][0]
    assert set(theft) == {
        "run_id", "kind", "storyteller", "trigger", "before", "after", "added", "removed", "flips",
        "note",
    }  # fmt: skip
    assert set(theft["before"]) == {"outcome", "calls", "refused", "usage", "tokens", "usd"}
    assert theft["before"]["calls"] == ["CreateSituation", "EchoToRoom", "Noop"]
    assert theft["after"]["calls"] == ["CreateSituation", "Noop"]
    assert (theft["removed"], theft["added"], theft["flips"]) == ({"EchoToRoom": 1}, {}, [])
    total = report["total"]
    assert total["turns"] == 2 and total["removed"] == {"EchoToRoom": 1} and total["flips"] == 0
    assert total["usd"]["before"] == pytest.approx(usd_at("gpt-5", RECORDED))
    assert total["usd"]["after"] == pytest.approx(usd_at("gpt-5-mini", RECORDED))
    assert total["tokens"]["before"] == total["tokens"]["after"]
    purposes = cli.json("costs", "--by", "purpose")["lines"]
    assert {line["key"]: line["requests"] for line in purposes}["replay"] == 4


@pytest.mark.usefixtures("keyed")
def test_a_prompt_that_forbids_a_tool_loses_its_calls(cli: Cli, tmp_path: Path) -> None:
    record_runs(cli)
    prompt = tmp_path / "watch.txt"
    prompt.write_text("You keep the harbour's peace. Never use EchoToRoom.\n")
    with server_in_thread(respond) as server:
        path = config(tmp_path, cli, server.base_url)
        report = cli.json("--config", path, "runs", "compare", "--prompt", str(prompt), "--yes")
        out = cli.ok("--config", path, "runs", "compare", "--prompt", str(prompt), "--yes")
        turns = [b for b in server.requests if "text" not in b]
        assert all(b["instructions"].startswith("You keep the harbour's peace.") for b in turns)
    assert report["change"]["prompt_file"] == str(prompt)
    assert report["total"]["removed"] == {"EchoToRoom": 1} and report["total"]["added"] == {}
    assert f"with the system prompt of {prompt}" in out
    total = next(line for line in out.splitlines() if line.startswith("Total"))
    assert "EchoToRoom" in total


def test_the_offline_stand_in_is_asked_without_a_question(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    record_runs(cli)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    path = config(tmp_path, cli, offline=True)
    out = cli.ok("--config", path, "runs", "compare", "--last", "1", "--model", "gpt-9")
    assert out.startswith("Compared 1 turn(s) with model gpt-9, asking offline stand-in")
    assert "Total" in out
    assert out.endswith("No price in [model.prices] for gpt-9: their requests count as $0.\n")


def test_compare_needs_a_model_and_a_prompt_with_text(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert cli.ok("runs", "compare") == "No recorded turns to compare.\n"
    record_runs(cli)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert cli.fails("runs", "compare") == (
        "No model to ask: set OPENAI_API_KEY, or [model] offline_when_no_key = true for the "
        "offline stand-in."
    )
    assert cli.ok("runs", "compare", "--storyteller", "2") == "No recorded turns to compare.\n"
    empty = tmp_path / "empty.txt"
    empty.write_text("  \n")
    assert cli.fails("runs", "compare", "--prompt", str(empty)) == f"--prompt {empty} is empty."


SHOUT = "the harbour master takes bribes from every smuggler on the quay"
LANE = 106  # where Wren stands
SHOUTED = [
    ("EchoToRoom", {"Room": LANE, "Text": f"A voice rings out: {SHOUT}."}),  # dictated
    ("EchoToRoom", {"Room": LANE, "Text": "Gulls wheel over the lane."}),
]


def record_a_policed_turn(cli: Cli) -> None:
    """Run #1: Wren's shout, under the daemon's default policy, which refuses the echo that
    repeats it."""
    from dataclasses import replace

    from test_runs import ECHO

    from storyteller_daemon.agent.policy import Policy
    from storyteller_daemon.agent.trigger import Trigger
    from storyteller_daemon.config import PolicyConfig
    from storyteller_daemon.testing.clock import FakeClock
    from storyteller_daemon.testing.model import ScriptedModel, calls
    from storyteller_daemon.testing.turns import turn_runner
    from world_adapter.sim import SimWorld

    async def work(store: Any) -> None:
        st = await store.storytellers.get(1)
        st = await store.storytellers.save(replace(st, paused=False, custom_tools=(ECHO,)))
        clock = FakeClock()
        world = SimWorld.harbour_town()
        model = ScriptedModel(calls(*SHOUTED, usage=TURN_USAGE), calls(("Noop", {})))
        runner = turn_runner(store, world, model, clock=clock, policy=Policy(PolicyConfig(), clock))
        await runner.run_turn(st, Trigger.from_event(world.emote(2004, f'shouts, "{SHOUT}!"')))

    cli.with_store(work)


@pytest.mark.usefixtures("keyed")
def test_replay_and_compare_refuse_what_the_recorded_turn_refused(cli: Cli, tmp_path: Path) -> None:
    record_a_policed_turn(cli)
    assert cli.ok("runs", "replay", "1") == (
        "Replay of run #1 against the recorded answers: identical.\n"
    )

    def same(body: dict[str, Any]) -> Reply:
        if any(item.get("type") == "function_call_output" for item in body["input"]):
            return Reply.calls(("Noop", {}))
        return Reply.calls(*SHOUTED, usage=TURN_USAGE)

    with server_in_thread(same) as server:
        path = config(tmp_path, cli, server.base_url)
        [turn] = cli.json("--config", path, "runs", "compare", "--yes")["turns"]
    assert (turn["before"]["refused"], turn["after"]["refused"]) == (1, 1)
    assert turn["added"] == turn["removed"] == {}


@pytest.mark.usefixtures("keyed")
def test_batches_that_ignored_everything_in_the_period_are_asked_again(
    cli: Cli, tmp_path: Path
) -> None:
    from datetime import timedelta

    from test_runs import T0

    from storyteller_daemon.agent.trigger import Trigger
    from storyteller_daemon.runtime.spending.metering import metered_model
    from storyteller_daemon.runtime.stats import RuntimeStats
    from storyteller_daemon.testing.clock import FakeClock
    from storyteller_daemon.testing.model import ScriptedModel, text
    from storyteller_daemon.testing.turns import turn_runner
    from world_adapter.sim import SimWorld

    record_runs(cli)

    async def ignore_a_yawn(store: Any) -> None:
        clock = FakeClock(T0 + timedelta(minutes=30))
        ignoring = ScriptedModel(text('{"attend": [], "ignore": "1"}', usage=GATE_USAGE))
        metered = metered_model(ignoring, RuntimeStats(), PRICES, clock=clock)
        world = SimWorld.harbour_town()
        runner = turn_runner(store, world, metered, clock=clock)
        world.emote(
            1001, "stretches."
        )  # a fresh world numbers events from 1 again: not the theft's
        await runner.judge(
            await store.storytellers.get(1), [Trigger.from_event(world.emote(1001, "yawns."))]
        )

    cli.with_store(ignore_a_yawn)  # run #4, between the two turns
    with server_in_thread(respond) as server:
        path = config(tmp_path, cli, server.base_url)
        report = cli.json("--config", path, "runs", "compare", "--yes")
        out = cli.ok("--config", path, "runs", "compare", "--yes")
        assert (
            cli.json("--config", path, "runs", "compare", "--last", "1", "--yes")["turns"][0][
                "run_id"
            ]
            == 3
        )  # the batch is older than the last turn
    assert [(t["run_id"], t["kind"]) for t in report["turns"]] == [
        (2, "turn"),
        (4, "attention"),
        (3, "turn"),
    ]
    yawn = report["turns"][1]
    assert (yawn["before"]["outcome"], yawn["after"]["outcome"]) == ("not run", "would run")
    assert [(f["before"], f["after"]) for f in yawn["flips"]] == [("ignore", "interested")]
    assert report["total"]["flips"] == 1
    assert out.startswith("Compared 2 turn(s) and 1 ignored batch(es) with today's settings")
    row = next(line for line in out.splitlines() if line.startswith("#4 "))
    assert "not run → would run" in row
    assert "Run #4: the change attends: a turn would run, which no tape can replay" in out
