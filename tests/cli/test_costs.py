"""``storyteller costs``: the cost ledger summed by day, storyteller, trigger, situation..."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest
from test_ais_harness import Cli, cli_fixture
from test_runs import PRICES, T0, record_runs

from storyteller_daemon.agent.trigger import Trigger, TriggerKind
from storyteller_daemon.errors import ModelTransientError
from storyteller_daemon.runtime.spending.metering import metered_model
from storyteller_daemon.runtime.stats import RuntimeStats
from storyteller_daemon.storage.store import Store
from storyteller_daemon.testing.clock import FakeClock
from storyteller_daemon.testing.model import ScriptedModel
from storyteller_daemon.testing.turns import turn_runner
from world_adapter.sim import SimWorld

cli = cli_fixture("Harbour Watch")

ATTENTION = (300 * 1.25 + 20 * 10.0) / 1e6
TURN_REQUEST = (1500 * 1.25 + 500 * 0.125 + 150 * 10.0) / 1e6


def lines(cli: Cli, *args: str) -> dict[str | None, int]:
    """Group key → requests."""
    return {line["key"]: line["requests"] for line in cli.json("costs", *args)["lines"]}


def usd(cli: Cli, *args: str) -> dict[str | None, float]:
    """Group key → USD."""
    return {line["key"]: line["cost_usd"] for line in cli.json("costs", *args)["lines"]}


def test_costs_by_every_grouping(cli: Cli) -> None:
    record_runs(cli)
    day = T0.date().isoformat()
    theft = ATTENTION + 2 * TURN_REQUEST  # the attention call and both rounds of its turn
    assert lines(cli) == {day: 4}
    assert usd(cli) == {day: pytest.approx(theft + TURN_REQUEST)}
    assert lines(cli, "--by", "storyteller") == {"1": 4}
    assert lines(cli, "--by", "trigger") == {"room_echo": 3, "direct": 1}
    assert usd(cli, "--by", "trigger") == {
        "room_echo": pytest.approx(theft),
        "direct": pytest.approx(TURN_REQUEST),
    }
    # the theft's requests belong to the situation its turn opened
    assert lines(cli, "-b", "situation") == {"1": 3, None: 1}
    assert usd(cli, "-b", "situation") == {
        "1": pytest.approx(theft),
        None: pytest.approx(TURN_REQUEST),
    }
    assert lines(cli, "--by", "room") == {"106": 3, None: 1}
    assert lines(cli, "--by", "purpose") == {"attention": 1, "turn": 3}
    report = cli.json("costs", "--by", "model")
    assert report["by"] == "model"
    assert report["total"] == {
        "requests": 4,
        "failed": 0,
        "input_tokens": 6300,
        "cached_tokens": 1500,
        "output_tokens": 470,
        "reasoning_tokens": 120,
        "cost_usd": pytest.approx(theft + TURN_REQUEST),
    }


def test_costs_in_a_window_and_for_one_storyteller(cli: Cli) -> None:
    record_runs(cli)
    later = (T0 + timedelta(minutes=30)).isoformat()
    assert lines(cli, "--since", later) == {T0.date().isoformat(): 1}
    assert sum(lines(cli, "--until", later).values()) == 3
    assert lines(cli, "--storyteller", "harbour watch") == lines(cli)
    assert lines(cli, "--storyteller", "7") == {}


def test_costs_table(cli: Cli) -> None:
    assert cli.ok("costs") == "No costs by day to show.\n"
    record_runs(cli)
    out = cli.ok("costs", "--by", "situation").splitlines()
    assert out[0] == "Costs by situation"
    assert out[1].split() == [
        "Situation",
        "Requests",
        "Failed",
        "Input",
        "Cached",
        "Output",
        "Reasoning",
        "Cost",
    ]
    assert out[3].split()[:5] == ["#1", "Cutpurse", "on", "the", "quay"]
    assert out[-1] == (
        "Total: 4 request(s), 6300 input (1500 cached) and 470 output (120 reasoning) tokens, "
        f"${ATTENTION + 3 * TURN_REQUEST:.4f}"
    )
    result = cli.run("costs", "--by", "week")
    assert result.exit_code == 64


def record_a_timed_out_turn(cli: Cli) -> None:
    """Run #4: a direct invocation whose only request times out after its body was sent."""

    async def work(store: Store) -> None:
        st = await store.storytellers.get(1)
        st = await store.storytellers.save(replace(st, paused=False))
        clock = FakeClock(T0 + timedelta(hours=2))
        timeout = ModelTransientError(
            "no answer within 60 s", request_status="timeout", input_billed=True
        )
        metered = metered_model(ScriptedModel(timeout), RuntimeStats(), PRICES, clock=clock)
        runner = turn_runner(store, SimWorld.harbour_town(), metered, clock=clock)
        await runner.run_turn(
            st, Trigger(TriggerKind.DIRECT, occurred_at=clock.now(), text="bells")
        )

    cli.with_store(work)


def test_a_failed_request_is_a_row_with_its_status(cli: Cli) -> None:
    record_runs(cli)
    record_a_timed_out_turn(cli)
    assert lines(cli, "--by", "status") == {"ok": 4, "timeout": 1}
    [timed_out] = [
        line for line in cli.json("costs", "--by", "status")["lines"] if line["key"] == "timeout"
    ]
    assert timed_out["failed"] == 1
    assert timed_out["output_tokens"] == 0
    assert timed_out["input_tokens"] > 0  # the body reached the provider: it may bill it
    assert timed_out["cost_usd"] == pytest.approx(timed_out["input_tokens"] * 1.25 / 1e6)
    assert cli.json("costs")["total"]["failed"] == 1
    assert "5 request(s) (1 without an answer)" in cli.ok("costs").splitlines()[-1]
    transcript = cli.ok("runs", "show", "4")
    assert "Round 1: gpt-5, tool_choice required, timeout, $" in transcript
