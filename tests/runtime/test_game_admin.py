"""In-game admin commands in the daemon (`GameAdmin`): the daemon's own permission check, the
CLI run as the caller with its audit entries, a change live before the answer, one-line errors,
and the verbs without a CLI command of their own (invoke, costs, turns)."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime

import pytest

from storyteller_daemon.app import ModelChoice, Runtime, build_runtime
from storyteller_daemon.config import parse_config
from storyteller_daemon.runtime.game_admin import (
    GameAdmin,
    check_words,
    first_error_line,
    required_level,
)
from storyteller_daemon.storage.store import Store
from storyteller_daemon.testing.clock import FakeClock
from storyteller_daemon.testing.model import ScriptedModel, calls
from world_adapter.bridge.game_calls import AdminRefused
from world_adapter.bridge.messages import Admin, AdminLevel
from world_adapter.sim import SimWorld

NOW = datetime(2026, 11, 28, 9, 30, tzinfo=UTC)
WATCH = "Harbour Watch"


@dataclass
class Rig:
    admin: GameAdmin
    runtime: Runtime
    store: Store
    watch_id: int


@pytest.fixture
async def rig(sqlite_url: str, sqlite_store: Store) -> AsyncIterator[Rig]:
    """A running daemon over the sim world with one unpaused storyteller, and its GameAdmin."""
    watch = await sqlite_store.storytellers.create(WATCH)
    watch = await sqlite_store.storytellers.save(replace(watch, paused=False))
    assert watch.id is not None
    cfg = parse_config({"database": {"url": sqlite_url}}, "test")
    clock = FakeClock(NOW)
    runtime = await build_runtime(
        cfg, environ={}, world=SimWorld.harbour_town(), store=sqlite_store, clock=clock,
        choice=ModelChoice(ScriptedModel(then=calls(("Noop", {}))), "noop"),
    )  # fmt: skip
    cli = [sys.executable, "-m", "storyteller_daemon", "--db", sqlite_url]
    admin = GameAdmin(cli, runtime.daemon, sqlite_store.audit, clock)
    stop = asyncio.Event()
    task = asyncio.create_task(runtime.run(stop))
    await asyncio.wait_for(runtime.daemon.ready.wait(), 5)
    try:
        yield Rig(admin, runtime, sqlite_store, watch.id)
    finally:
        stop.set()
        await asyncio.wait_for(task, 5)


def command(
    verb: str, *args: str, level: AdminLevel = AdminLevel.ADMIN, name: str = "ais"
) -> Admin:
    return Admin("a-1", name, verb, "maren", level, args)


def test_reads_changes_and_deletes_need_builder_admin_and_developer() -> None:
    b, a, d = AdminLevel.BUILDER, AdminLevel.ADMIN, AdminLevel.DEVELOPER
    cases = {
        ("ais", "list", ()): b, ("ais", "show", ("3",)): b, ("aisr", "search", ("tide",)): b,
        ("ais", "costs", ()): b, ("ais", "memories", ("list", "3")): b,
        ("ais", "set", ("3", "model", "x")): a, ("ais", "pause", ("3",)): a,
        ("ais", "invoke", ("3", "hi")): a, ("ais", "situation", ("scope", "3")): a,
        ("aisr", "create", ("Tides",)): a,
        ("ais", "delete", ("3",)): d, ("aisr", "delete", ("1",)): d,
        ("ais", "memory", ("forget", "3", "7")): d,
    }  # fmt: skip
    assert {key: required_level(*key) for key in cases} == cases
    for refused in [("ais", "import", ()), ("ais", "character", ("erase",)), ("ais", "memory", ()),
                    ("bogus", "list", ())]:  # fmt: skip
        with pytest.raises(AdminRefused):
            required_level(*refused)


def test_words_that_would_touch_the_daemons_files_are_refused() -> None:
    check_words(["3", "description", "A watchful eye."])
    for word in ["--file", "-f", "--file=/etc/passwd", "-", "--config", "--db=sqlite://"]:
        with pytest.raises(AdminRefused, match="cannot be used in the game"):
            check_words(["3", "description", word])


def test_a_failed_command_is_one_line() -> None:
    assert first_error_line("error: No storyteller with id or name 'x' exists.\n") == (
        "No storyteller with id or name 'x' exists."
    )
    boxed = "Usage: storyteller ais set [OPTIONS]\n╭─ Error ─╮\n│ No such command 'bogus'. │\n╰──╯"
    assert first_error_line(boxed) == "No such command 'bogus'."


async def test_an_admin_pause_runs_the_cli_as_the_caller_and_holds_at_once(rig: Rig) -> None:
    answer = await rig.admin(command("pause", str(rig.watch_id)))
    assert answer == {"text": f"Storyteller {WATCH} is now paused."}
    paused = rig.runtime.daemon.find_storyteller(rig.watch_id)
    assert paused is not None and paused.paused  # reloaded before the answer
    entries = [(e.actor, e.action) for e in await rig.store.audit.list()]
    assert entries[:2] == [("maren (game, Admin)", "game_admin"), ("maren (game, Admin)", "pause")]


async def test_a_builder_reads_but_the_daemon_refuses_its_changes(rig: Rig) -> None:
    listed = await rig.admin(command("list", level=AdminLevel.BUILDER))
    assert WATCH in listed["text"]
    for verb, args in [("set", (str(rig.watch_id), "model", "gpt-5-mini")), ("delete", ("1",))]:
        with pytest.raises(AdminRefused, match=f"ais {verb} needs the .* permission; maren has"):
            await rig.admin(command(verb, *args, level=AdminLevel.BUILDER))
    unchanged = await rig.store.storytellers.get(rig.watch_id)
    assert unchanged.model != "gpt-5-mini"
    refusals = await rig.store.audit.list(action="game_admin_refused")
    assert [(e.actor, e.subject) for e in refusals] == [
        ("maren (game, Builder)", "ais delete 1"),
        ("maren (game, Builder)", f"ais set {rig.watch_id}"),
    ]


async def test_cli_errors_come_back_as_one_line(rig: Rig) -> None:
    with pytest.raises(AdminRefused) as refused:
        await rig.admin(command("show", "nobody", level=AdminLevel.BUILDER))
    assert str(refused.value) == "No storyteller with id or name 'nobody' exists."


async def test_invoke_queues_a_turn_through_the_daemon(rig: Rig) -> None:
    answer = await rig.admin(command("invoke", WATCH, "The", "bells", "ring."))
    assert answer == {"text": f"Invoked storyteller #{rig.watch_id}: its turn is queued."}
    with pytest.raises(AdminRefused, match="Not invoked: no storyteller 'Nobody'"):
        await rig.admin(command("invoke", "Nobody", "hello"))
    with pytest.raises(AdminRefused, match="Use ais invoke"):
        await rig.admin(command("invoke", WATCH))


async def test_costs_and_turns_are_todays_costs_and_the_newest_turns(rig: Rig) -> None:
    costs = await rig.admin(command("costs", level=AdminLevel.BUILDER))
    turns = await rig.admin(command("turns", WATCH, level=AdminLevel.BUILDER))
    assert costs["text"] and turns["text"]
