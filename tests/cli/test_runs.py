"""``storyteller runs``: list with filters, show a transcript, replay (recorded and live), prune.

Runs are recorded into each test's database by the real turn runner on the sim world, with a
scripted model: an attention call about a theft (interested), the turn it leads to (a situation
and a prog), and a direct invocation (Noop).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from test_ais_harness import Cli, cli_fixture

from storyteller_daemon.agent.models.interface import Usage
from storyteller_daemon.agent.trigger import Trigger, TriggerKind
from storyteller_daemon.config import ModelPrice
from storyteller_daemon.domain.storytellers import CustomTool
from storyteller_daemon.runtime.spending.metering import metered_model
from storyteller_daemon.runtime.stats import RuntimeStats
from storyteller_daemon.storage.runs import RunRepository
from storyteller_daemon.storage.store import Store
from storyteller_daemon.testing.clock import FakeClock
from storyteller_daemon.testing.model import ScriptedModel, calls, text
from storyteller_daemon.testing.responses_answers import Reply
from storyteller_daemon.testing.responses_server import ScriptedResponsesServer
from storyteller_daemon.testing.steps import attend_all
from storyteller_daemon.testing.turns import turn_runner
from world_adapter.sim import SimWorld

T0 = (datetime.now(UTC) - timedelta(days=60)).replace(hour=12, minute=0, second=0, microsecond=0)
"""Past the default run retention (30 days), within the ledger's (400 days)."""
PRICES = {"gpt-5": ModelPrice(input=1.25, cached_input=0.125, output=10.0)}
WHISTLE = "A watch whistle shrills along the quay."
ECHO = CustomTool(
    "EchoToRoom", "Shows a line to a room.", "EchoToRoom", False,
    (("Room", "Room to echo into."), ("Text", "What everyone sees.")),
)  # fmt: skip

cli = cli_fixture("Harbour Watch")


GATE_USAGE = Usage(300, 0, 20, 0)
TURN_USAGE = Usage(2000, 500, 150, 40)


def script() -> ScriptedModel:
    """Interested in the theft; its turn opens a situation and echoes, then Noop; the direct
    invocation's turn calls Noop."""
    situation = {
        "Title": "Cutpurse on the quay",
        "Description": "Wren robbed Maren.",
        "CharacterId": None,
        "RoomId": 101,
    }
    return ScriptedModel(
        attend_all(why="a theft on the quay", usage=GATE_USAGE),
        calls(
            ("CreateSituation", situation),
            ("EchoToRoom", {"Room": 101, "Text": WHISTLE}),
            usage=TURN_USAGE,
        ),
        calls(("Noop", {}), usage=TURN_USAGE),
        calls(("Noop", {}), usage=TURN_USAGE),
    )


def record_runs(cli: Cli) -> None:
    """Runs #1 (attention), #2 (the theft's turn) and #3 (a direct invocation)."""

    async def work(store: Store) -> None:
        st = await store.storytellers.get(1)
        st = await store.storytellers.save(replace(st, paused=False, custom_tools=(ECHO,)))
        clock = FakeClock(T0)
        world = SimWorld.harbour_town()
        metered = metered_model(script(), RuntimeStats(), PRICES, clock=clock)
        runner = turn_runner(store, world, metered, clock=clock)
        echo = Trigger.from_event(world.emote(2004, "slips a hand into Maren's purse!"))
        [verdict] = await runner.judge(st, [echo])
        await runner.run_turn(st, replace(echo, attention_reason=verdict.reason))
        await clock.advance(3600)
        await runner.run_turn(
            st, Trigger(TriggerKind.DIRECT, occurred_at=clock.now(), text="bells")
        )

    cli.with_store(work)


def ids(cli: Cli, *filters: str) -> list[int]:
    return [run["id"] for run in cli.json("runs", "list", *filters)]


def test_list_is_newest_first_and_filters(cli: Cli) -> None:
    record_runs(cli)
    assert ids(cli) == [3, 2, 1]
    assert ids(cli, "--trigger", "direct") == [3]
    assert ids(cli, "--kind", "attention") == [1]
    assert ids(cli, "--outcome", "completed") == [2]
    assert ids(cli, "--outcome", "noop") == [3]
    assert ids(cli, "--storyteller", "HARBOUR watch") == ids(cli, "--storyteller", "1") == [3, 2, 1]
    assert ids(cli, "--storyteller", "2") == []
    half_past = T0 + timedelta(minutes=30)
    assert ids(cli, "--since", half_past.strftime("%Y-%m-%dT%H:%M")) == [3]
    assert ids(cli, "--until", half_past.isoformat()) == [2, 1]
    assert ids(cli, "--since", "3650d") == [3, 2, 1]
    assert ids(cli, "--limit", "1") == [3]
    [turn] = [r for r in cli.json("runs", "list") if r["id"] == 2]
    assert turn["trigger"] == {"kind": "room_echo", "label": "Room Echo", "room_id": 106}
    assert (turn["verdict"], turn["rounds"], turn["tool_calls"], turn["situation_id"]) == (
        "interested",
        2,
        3,
        1,
    )
    assert turn["usage"]["reasoning_tokens"] == 80


def test_list_table_and_its_errors(cli: Cli) -> None:
    assert cli.ok("runs", "list") == "No runs to show.\n"
    record_runs(cli)
    header = cli.ok("runs", "list").splitlines()[1]
    assert header.split() == [
        "Id",
        "Started",
        "Kind",
        "Storyteller",
        "Trigger",
        "Room",
        "Outcome",
        "Rounds",
        "Calls",
        "Tokens",
        "in/out",
        "Cost",
    ]
    assert cli.fails("runs", "list", "--since", "yesterday") == (
        "'yesterday' is not a time; use e.g. 2026-03-01, 2026-03-01T12:00 or 3d (ago)."
    )
    assert cli.fails("runs", "list", "--kind", "turns") == (
        "--kind must be 'turn', 'attention' or 'digest'."
    )
    assert (
        cli.fails("runs", "list", "--since", "1d", "--until", "2d")
        == "--until must be later than --since."
    )


def test_show_prints_a_turn_as_a_transcript(cli: Cli) -> None:
    record_runs(cli)
    out = cli.ok("runs", "show", "2")
    lines = out.splitlines()
    assert lines[0] == "Run #2: turn of Harbour Watch (#1)"
    assert "Attention: interested: a theft on the quay (run #1)" in lines
    assert "Outcome:   completed after 2 round(s) and 3 tool call(s), 0.00 s" in lines
    assert "Situation: #1" in lines
    assert any("slips a hand into Maren's purse!" in line for line in lines)  # the prompt
    # What the prompt's token budget kept, block by block.
    assert any(
        line.startswith("Budget:    ") and "of 16,000 estimated tokens" in line for line in lines
    )
    assert any(line.startswith("  events ") and line.endswith("tokens, 1 kept") for line in lines)
    assert any(line.startswith("  tools ") for line in lines)
    assert any(
        line.startswith("Round 1: gpt-5, tool_choice required, 2000 in (500 cached)")
        for line in lines
    )
    assert any(line.startswith("  -> CreateSituation {") for line in lines)
    assert any(line.startswith('     <- ok {"Id": 1') for line in lines)
    assert "  -> Noop {}" in lines
    shown = cli.json("runs", "show", "2")
    assert set(shown) == {"run", "related", "record"}
    assert [r["id"] for r in shown["related"]] == [1]
    assert [c["name"] for c in shown["record"]["turn"]["calls"]] == [
        "CreateSituation",
        "EchoToRoom",
        "Noop",
    ]


def test_show_prints_an_attention_call_and_its_turn(cli: Cli) -> None:
    record_runs(cli)
    lines = cli.ok("runs", "show", "1").splitlines()
    assert lines[0] == "Run #1: attention call of Harbour Watch (#1)"
    assert "Verdict:   interested: a theft on the quay" in lines
    assert "Model:     gpt-5" in lines
    assert "Turn:      run #2 (completed)" in lines
    assert cli.fails("runs", "show", "99") == "No run with id 99 exists (it may have been pruned)."


def test_replay_against_the_recording_is_identical_until_the_prompt_changes(cli: Cli) -> None:
    record_runs(cli)
    assert (
        cli.ok("runs", "replay", "2")
        == "Replay of run #2 against the recorded answers: identical.\n"
    )
    assert cli.json("runs", "replay", "3")["identical"] is True
    cli.ok("ais", "set", "1", "system-prompt", "You", "are", "a", "gull.")
    out = cli.ok("runs", "replay", "2")
    # Each request's instructions differ, and so does its cache key (which names them).
    assert out.startswith("Replay of run #2 against the recorded answers: 4 difference(s).")
    assert "request 1 instructions" in out and "You are a gull." in out
    report = cli.json("runs", "replay", "2")
    assert sorted(d["where"] for d in report["differences"]) == [
        "request 1 instructions",
        "request 1 prompt_cache_key",
        "request 2 instructions",
        "request 2 prompt_cache_key",
    ]
    assert len(cli.json("ais", "show", "1")["situations"]) == 1  # replays created nothing
    assert cli.fails("runs", "replay", "1") == "Run #1 is not a turn; only turns can be replayed."


@contextlib.contextmanager
def server_in_thread(
    responder: Callable[[dict[str, Any]], Reply], *, reasoning: bool = True
) -> Iterator[ScriptedResponsesServer]:
    """The scripted server on its own loop, since a CLI command runs its own ``asyncio.run``."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    server = ScriptedResponsesServer(responder=responder, reasoning=reasoning)
    try:
        asyncio.run_coroutine_threadsafe(server.start(), loop).result(10)
        yield server
    finally:
        asyncio.run_coroutine_threadsafe(server.stop(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()


def test_replay_with_a_live_model_shows_its_calls_next_to_the_recorded_ones(
    cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    record_runs(cli)
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    usage = Usage(1000, 0, 100, 0)
    with server_in_thread(lambda body: Reply.calls(("Noop", {}), usage=usage)) as server:
        out = cli.ok("runs", "replay", "2", "--model", "gpt-5-mini", "--base-url", server.base_url)
        assert [b["model"] for b in server.requests] == ["gpt-5-mini"]
    assert "against the live model" in out and "as gpt-5-mini" in out
    row = next(line for line in out.splitlines() if line.lstrip().startswith("1 "))
    assert "CreateSituation" in row and "Noop {} -> ok" in row
    assert "Outcome: recorded completed, replayed noop; cost $0.0000" in out  # no price configured
    purposes = cli.json("costs", "--by", "purpose")["lines"]
    assert {line["key"]: line["requests"] for line in purposes} == {
        "turn": 3,
        "attention": 1,
        "replay": 1,
    }


def test_replay_with_a_live_model_needs_a_key(cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    record_runs(cli)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert cli.fails("runs", "replay", "2", "--model", "gpt-5") == (
        "No live model: set OPENAI_API_KEY to ask the configured endpoint."
    )
    assert (
        cli.fails("runs", "replay", "2", "--base-url", "http://127.0.0.1:9/v1")
        == "--base-url needs --model."
    )


def test_prune_deletes_runs_past_retention_and_keeps_their_costs(cli: Cli) -> None:
    record_runs(cli)
    assert cli.ok("runs", "prune", "--older-than", "36500d") == (
        "Deleted 0 run record(s) older than 36500d and 0 cost-ledger row(s) past their retention.\n"
    )
    assert cli.ok("runs", "prune").startswith("Deleted 3 run record(s) older than 30d and 0 ")
    assert ids(cli) == []
    assert cli.json("costs")["total"]["requests"] == 4


def test_show_lists_every_event_of_a_batch_and_each_answer(cli: Cli) -> None:
    usage = Usage(300, 0, 9)
    batch = ScriptedModel(
        text('{"attend": [{"id": "1", "why": "a theft"}], "ignore": []}', usage),  # e2 missing
        text('{"attend": [], "ignore": ["1"]}', usage),  # the re-ask numbers e2 from 1
    )

    async def work(store: Store) -> None:
        st = await store.storytellers.save(replace(await store.storytellers.get(1), paused=False))
        clock = FakeClock(T0)
        world = SimWorld.harbour_town()
        metered = metered_model(batch, RuntimeStats(), PRICES, clock=clock)
        runner = turn_runner(store, world, metered, clock=clock)
        theft = Trigger.from_event(world.emote(2004, "slips a hand into a purse!"))
        gulls = Trigger.from_event(world.emote(2003, "watches the gulls."))
        await runner.judge(st, [theft, gulls])

    cli.with_store(work)
    shown = cli.ok("runs", "show", "1")
    assert "Verdicts:  2 events, interested overall" in shown
    assert "  e1 Room Echo in room #106: interested: a theft" in shown
    assert "  e2 Room Echo in room #101: ignore" in shown
    assert "Answer 1:" in shown and "Answer 2:" in shown


def test_runs_retry_queues_a_failed_turn_again_and_refuses_what_is_not_failed(cli: Cli) -> None:
    from storyteller_daemon.domain.work import NewWork, WorkState
    from storyteller_daemon.runs.records import interrupted_run
    from storyteller_daemon.storage.backlog import BacklogRepository

    key = "st1:direct:abc"

    async def fail_a_turn(store: Store) -> tuple[int, int]:
        st = await store.storytellers.get(1)
        backlog = BacklogRepository(store.db, store.clock)
        await backlog.add(
            [NewWork(1, "direct:abc", "direct", "direct", None, "{}", WorkState.INTERESTED)]
        )
        claim = await backlog.claim_turn(1, lambda _items: key, 1)
        assert claim is not None
        await backlog.finish_turn(key, WorkState.FAILED, "crashed")
        trigger = Trigger(TriggerKind.DIRECT, occurred_at=T0, text="x")
        run_id = await RunRepository(store.db).add(
            interrupted_run(st, trigger, key, 5, T0, given_up=True), [], []
        )
        return run_id, st.revision

    run_id, revision = cli.with_store(fail_a_turn)
    assert "no failed events" in cli.fails("runs", "retry", "st1:direct:nothing")
    assert cli.json("runs", "retry", str(run_id), "--json") == {
        "turn_key": key,
        "storyteller_id": 1,
        "events": 1,
    }

    async def look(store: Store) -> tuple[str, int, str]:
        [item] = await BacklogRepository(store.db, store.clock).items(1)
        [entry] = await store.audit.list(limit=1)
        return item.state.value, (await store.storytellers.get(1)).revision, entry.action

    assert cli.with_store(look) == ("running", revision + 1, "retry_turn")
    assert "no failed events" in cli.fails("runs", "retry", key)  # queued already
