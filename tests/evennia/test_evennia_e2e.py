"""The storyteller against a real Evennia game, end to end.

Evennia (pinned) runs from its own cached venv with the bridge installed, on loopback ports of its
own. A player logs in over telnet and speaks; the daemon (SQLite, the harbour-ward storyteller
set to watch the player's room, the scripted Responses server through the real openai SDK) hears
it over the bridge, creates a situation and runs the game's EchoToRoom prog, whose words the
player sees. The conformance suite passes against the same game, and the room tap reports moves
and poses. An admin's `ais invoke` is answered at once and reports its turn's outcome. A new
admin goes from an empty directory to a turn with the CLI alone (`init`, `db upgrade`, `seed
load --check-world`, `doctor`, `ais unpause`, `run`). Everything started here is stopped here.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import sys
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import replace
from typing import Any

import aiohttp
import pytest
from evennia_game import ADMIN, TOKEN_ENV, EvenniaGame, evennia_venv
from evennia_telnet import TelnetClient
from sqlalchemy import select

from storyteller_daemon.agent.models.openai_responses import OpenAIResponsesModel
from storyteller_daemon.alerts.service import Alerts
from storyteller_daemon.app import ModelChoice, Runtime, build_runtime
from storyteller_daemon.clock import SystemClock
from storyteller_daemon.config import parse_config
from storyteller_daemon.domain.storytellers import CustomTool, EventKind
from storyteller_daemon.domain.surveillance import Surveillance
from storyteller_daemon.interchange.packs.files import read_pack
from storyteller_daemon.storage.models.world import InboxRow
from storyteller_daemon.storage.seeding import load_pack
from storyteller_daemon.storage.store import Store
from storyteller_daemon.testing.alerts import RecordedAlerts
from storyteller_daemon.testing.clock import settle
from storyteller_daemon.testing.model import ScriptedModel, calls
from storyteller_daemon.testing.model_responder import ModelResponder
from storyteller_daemon.testing.responses_server import ScriptedResponsesServer
from storyteller_daemon.testing.steps import attend_all, by_kind

pytestmark = pytest.mark.evennia

LIMBO = 2
"""The room Evennia's first start creates; the superuser's character starts there."""
WATCH = "Harbour Ward Watch"
ECHO = "The walls of Limbo answer with a low hum."
STEP_SECONDS = 30


@pytest.fixture(scope="module")
def game(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EvenniaGame]:
    """One running game for this module's tests; stopped (or killed) afterwards."""
    started = time.monotonic()
    venv, install_seconds = evennia_venv()
    game = EvenniaGame.create(venv, tmp_path_factory.mktemp("evennia"))
    try:
        game.start()
        print(
            f"\nevennia: install {install_seconds:.1f} s, "
            f"create + start {time.monotonic() - started - install_seconds:.1f} s"
        )
        yield game
    finally:
        stopping = time.monotonic()
        game.stop()
        print(f"\nevennia: stop {time.monotonic() - stopping:.1f} s")


@pytest.fixture
async def player(game: EvenniaGame) -> AsyncIterator[TelnetClient]:
    """The superuser, logged in over telnet and standing in Limbo."""
    async with TelnetClient(game.telnet_port) as client:
        await client.read_until("look will re-show")
        await client.send_line(f"connect {ADMIN[0]} {ADMIN[1]}")
        await client.read_until(f"You become {ADMIN[0]}")
        yield client


# ---------------------------------------------------------------- the daemon, end to end


def wants_verdict(body: dict[str, Any]) -> bool:
    return "text" in body and body["text"].get("format", {}).get("type") == "json_schema"


def storyteller_model() -> ModelResponder:
    """Interested; then a situation and the echo prog; then Noop."""
    situation = {
        "Title": "A voice in Limbo",
        "Description": "The admin spoke into the void.",
        "CharacterId": None,
        "RoomId": LIMBO,
    }
    model = ScriptedModel(
        then=by_kind(
            attention=attend_all(why="someone speaks"),
            turn=calls(
                ("CreateSituation", situation), ("EchoToRoom", {"Room": LIMBO, "Text": ECHO})
            ),
            follow_up=calls(("Noop", {})),
        )
    )
    return ModelResponder(model)


async def watch_limbo(store: Store) -> int:
    """The harbour-ward storyteller, set to watch Limbo with one tool bound to EchoToRoom."""
    await store.db.upgrade()
    await load_pack(store.db, read_pack("harbour-ward"), clock=store.clock)
    watch = await store.storytellers.get(WATCH)
    echo = CustomTool(
        name="EchoToRoom",
        description="Narrates something that happens in a room.",
        prog="EchoToRoom",
        parameter_descriptions=(("Room", "Id of the room."), ("Text", "The narration.")),
    )
    saved = await store.storytellers.save(
        replace(
            watch,
            paused=False,
            subscriptions=frozenset({EventKind.ROOM, EventKind.SPEECH}),
            heartbeats=frozenset(),
            status_progs=(),
            player_info_prog=None,
            custom_tools=(echo,),
            surveillance=Surveillance(included=frozenset({LIMBO})),
        )
    )
    assert saved.id is not None
    return saved.id


async def until(predicate: Any, what: str, seconds: float = STEP_SECONDS) -> None:
    """Poll the Evennia process (its log) with a deadline: there is nothing to await on."""
    deadline = time.monotonic() + seconds
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(f"waited {seconds} s for {what}")
        await asyncio.sleep(0.05)


async def test_speech_to_situation_and_prog_echo_seen_by_the_player(
    game: EvenniaGame, player: TelnetClient, sqlite_url: str
) -> None:
    started = time.monotonic()
    store = Store.open(sqlite_url, clock=SystemClock())
    watch_id = await watch_limbo(store)
    cfg = parse_config(
        {
            "database": {"url": sqlite_url},
            "world": {"kind": "bridge", "url": game.bridge_url, "token_env": TOKEN_ENV},
            "attention": {"quiet_seconds": 0.2, "max_wait_seconds": 1.0},
        },
        "test",
    )
    async with ScriptedResponsesServer(responder=storyteller_model()) as server:
        model = OpenAIResponsesModel(api_key="test-key", base_url=server.base_url, max_retries=0)
        runtime = await build_runtime(
            cfg,
            environ={TOKEN_ENV: game.token},
            choice=ModelChoice(model, model.name),
            store=store,
            clock=SystemClock(),
        )
        stop = asyncio.Event()
        task = asyncio.create_task(runtime.run(stop))
        try:
            subscribed = game.server_log().count("subscribed to 1 rooms")
            await until(
                lambda: game.server_log().count("subscribed to 1 rooms") > subscribed,
                "the daemon to subscribe to Limbo",
            )
            await player.send_line("say Is anyone listening?")
            await player.read_until(ECHO, within=STEP_SECONDS)
            # attention, the round with the prog call, the closing Noop round
            async with asyncio.timeout(STEP_SECONDS):
                await server.wait_for_requests(3)
        finally:
            stop.set()  # a stopping daemon drains: the running turn finishes first
            await asyncio.wait_for(task, STEP_SECONDS)
            await runtime.close()
    assert runtime.stats.turns.total() == 1
    await settle()
    assert [t for t in asyncio.all_tasks() if t is not asyncio.current_task()] == []
    store = Store.open(sqlite_url, clock=SystemClock())
    try:
        situations = await store.situations.list(watch_id)
    finally:
        await store.close()
    assert [(s.title, s.room_id) for s in situations] == [("A voice in Limbo", LIMBO)]
    attention = server.requests[0]
    assert wants_verdict(attention)
    assert "Is anyone listening?" in json.dumps(attention["input"])
    print(f"\ndaemon e2e: {time.monotonic() - started:.1f} s")


# ---------------------------------------------------------------- conformance


async def test_the_bridge_passes_the_conformance_suite(
    game: EvenniaGame, player: TelnetClient
) -> None:
    # A zone to subscribe to and a few events to resume over, so that no check is skipped.
    await player.send_line("@tag here = limbo:zone")
    await player.read_until("limbo")
    for n in range(3):
        await player.send_line(f"say Testing, {n}.")
        await player.read_until(f"Testing, {n}.")
    check = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "storyteller_daemon", "bridge", "check", game.bridge_url,
        "--token-env", TOKEN_ENV,
        "--prog", "EchoToRoom", "--prog-args", json.dumps({"Room": LIMBO, "Text": "A draught."}),
        env={**os.environ, TOKEN_ENV: game.token},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    try:
        output, _ = await asyncio.wait_for(check.communicate(), 120)
    finally:
        if check.returncode is None:
            check.kill()
            await check.wait()
    report = output.decode()
    print(report)
    assert check.returncode == 0, report
    verdicts = [line.split()[0] for line in report.splitlines() if line.strip()]
    assert verdicts.count("PASS") == 14, report


# ---------------------------------------------------------------- what the tap reports


async def _call(ws: aiohttp.ClientWebSocketResponse, method: str, **params: Any) -> Any:
    await ws.send_json({"type": "request", "id": method, "method": method, "params": params})
    frame = await ws.receive_json(timeout=STEP_SECONDS)
    assert (frame["type"], frame["id"]) == ("result", method), frame
    return frame["result"]


async def test_the_tap_and_the_queries_follow_the_game(
    game: EvenniaGame, player: TelnetClient
) -> None:
    async with aiohttp.ClientSession() as http, http.ws_connect(game.bridge_url) as ws:
        await ws.send_json({"type": "hello", "protocol": 1, "token": game.token})
        welcome = await ws.receive_json(timeout=STEP_SECONDS)
        await player.send_line("@dig/teleport Hall = hall;h, back;b")
        hall = int((await player.read_until(r"Hall\(#\d+\)")).rsplit("#", 1)[1].split(")")[0])
        await player.send_line("@tag here = Old Hall:landmark")
        await player.read_until("Old Hall")
        await player.send_line("back")
        await player.read_until(r"Limbo\(#2\)")
        await player.send_line("pose stretches.")
        await player.read_until("stretches")
        await player.send_line(f"@tag #{hall} = keep:zone")
        await player.read_until("keep")

        await ws.send_json({"type": "subscribe", "cells": [LIMBO, hall], "after": welcome["head"]})
        assert (await ws.receive_json(timeout=STEP_SECONDS))["type"] == "subscribed"
        events = []
        while not events or events[-1]["text"] != "admin stretches.":
            frame = await ws.receive_json(timeout=STEP_SECONDS)
            assert frame["type"] == "event", frame
            events.append(frame)

        zones = await _call(ws, "zones")
        landmark = await _call(ws, "landmark", name="old hall")
        path = await _call(
            ws, "path", origin_room_id=LIMBO, destination_room_id=hall, rule={"doors": "ignore"}
        )
        players = await _call(ws, "online_players")

    assert [(e["cell_id"], e["kind"], e["text"]) for e in events] == [
        (LIMBO, "room_echo", "admin is leaving Limbo, heading for Hall."),
        (hall, "room_echo", "admin arrives to Hall from Limbo."),
        (hall, "room_echo", "admin is leaving Hall, heading for Limbo."),
        (LIMBO, "room_echo", "admin arrives to Limbo from Hall."),
        (LIMBO, "room_echo", "admin stretches."),
    ]
    assert all(e["source_character_id"] == 1 and e["origin"] == "world" for e in events)
    assert [hall] in zones.values()
    assert (landmark["name"], landmark["room_id"], landmark["occupants"]) == ("Old Hall", hall, [])
    assert path == {
        "origin_room_id": LIMBO,
        "destination_room_id": hall,
        "directions": ["hall"],
        "found": True,
    }
    assert [(p["id"], p["location_id"], p["is_player"]) for p in players] == [(1, LIMBO, True)]


async def test_progs_may_return_deferreds_and_fail_plainly(
    game: EvenniaGame, player: TelnetClient
) -> None:
    async with aiohttp.ClientSession() as http, http.ws_connect(game.bridge_url) as ws:
        await ws.send_json({"type": "hello", "protocol": 1, "token": game.token})
        await ws.receive_json(timeout=STEP_SECONDS)
        await ws.send_json({"type": "subscribe", "cells": [LIMBO], "after": None})
        assert (await ws.receive_json(timeout=STEP_SECONDS))["type"] == "subscribed"
        for key, prog, arguments in [
            ("later", "LaterEcho", {"Room": LIMBO, "Text": "Somewhere, a bell."}),
            ("broken", "Broken", {}),
        ]:
            params = {"prog": prog, "arguments": arguments, "idempotency_key": key}
            await ws.send_json(
                {"type": "request", "id": key, "method": "execute_prog", "params": params}
            )
        frames = [await ws.receive_json(timeout=STEP_SECONDS) for _ in range(3)]
    await player.read_until("Somewhere, a bell.")
    by_type = {(f["type"], f.get("id")): f for f in frames}
    assert by_type[("result", "later")]["result"]["value"] == "Somewhere, a bell."
    assert (
        by_type[("error", "broken")]["message"]
        == "Prog Broken failed with an error inside the game."
    )
    echo = by_type[("event", None)]
    assert (echo["text"], echo["origin"]) == ("Somewhere, a bell.", "prog")
    assert "an internal detail the model must not see" in game.server_log()


async def _hello(ws: aiohttp.ClientWebSocketResponse, token: str) -> dict[str, Any]:
    await ws.send_json({"type": "hello", "protocol": 1, "token": token})
    welcome: dict[str, Any] = await ws.receive_json(timeout=STEP_SECONDS)
    assert welcome["type"] == "welcome", welcome
    return welcome


async def _run_prog(ws: aiohttp.ClientWebSocketResponse, key: str, text: str) -> dict[str, Any]:
    params = {"prog": "EchoToRoom", "arguments": {"Room": LIMBO, "Text": text},
              "idempotency_key": key}  # fmt: skip
    await ws.send_json({"type": "request", "id": key, "method": "execute_prog", "params": params})
    while True:  # events of an open subscription may come first
        frame: dict[str, Any] = await ws.receive_json(timeout=STEP_SECONDS)
        if frame.get("id") == key:
            assert frame["type"] == "result", frame
            result: dict[str, Any] = frame["result"]
            return result


async def test_a_reload_keeps_the_epoch_the_held_events_and_the_prog_outcomes(
    game: EvenniaGame, player: TelnetClient
) -> None:
    async with aiohttp.ClientSession() as http:
        async with http.ws_connect(game.bridge_url) as ws:
            old_head = (await _hello(ws, game.token))["head"]
            first = await _run_prog(ws, "reload-key-1", "A lamp gutters.")
            await player.read_until("A lamp gutters.")
            reloading = asyncio.create_task(asyncio.to_thread(game.reload))
            closed = await ws.receive(timeout=STEP_SECONDS)
            assert (closed.type, ws.close_code) == (aiohttp.WSMsgType.CLOSE, 1001)
            await reloading
        # The player's telnet session lives in the Portal and survives the reload.
        await player.send_line("say Still here.")
        await player.read_until("Still here.")
        async with http.ws_connect(game.bridge_url) as ws:
            new_head = (await _hello(ws, game.token))["head"]
            await ws.send_json({"type": "subscribe", "cells": [LIMBO], "after": old_head})
            frames = [await ws.receive_json(timeout=STEP_SECONDS) for _ in range(3)]
            again = await _run_prog(ws, "reload-key-1", "A lamp gutters.")
            await player.send_line("say Done.")
            after_replay = await ws.receive_json(timeout=STEP_SECONDS)
    assert new_head["epoch"] == old_head["epoch"] and new_head["seq"] == old_head["seq"] + 2
    assert [f["type"] for f in frames] == ["subscribed", "event", "event"], frames
    assert [(f["origin"], f["text"]) for f in frames[1:]] == [
        ("prog", "A lamp gutters."),
        ("world", "Still here."),
    ]
    assert [f["cursor"]["seq"] for f in frames[1:]] == [old_head["seq"] + 1, old_head["seq"] + 2]
    assert first == {"prog": "EchoToRoom", "return_type": "Boolean", "value": True,
                     "replayed": False}  # fmt: skip
    assert again == {**first, "replayed": True}
    # The replayed call ran nothing: the next event is the player's, not a second echo.
    assert (after_replay["type"], after_replay["text"]) == ("event", "Done.")


async def test_a_lost_journal_is_a_new_epoch_and_a_gap(
    game: EvenniaGame, player: TelnetClient
) -> None:
    async with aiohttp.ClientSession() as http:
        async with http.ws_connect(game.bridge_url) as ws:
            old_head = (await _hello(ws, game.token))["head"]
        (game.root / "server" / "storyteller" / "events.jsonl").unlink()
        await asyncio.to_thread(game.reload)
        async with http.ws_connect(game.bridge_url) as ws:
            new_head = (await _hello(ws, game.token))["head"]
            await ws.send_json({"type": "subscribe", "cells": [LIMBO], "after": old_head})
            frames = [await ws.receive_json(timeout=STEP_SECONDS) for _ in range(2)]
    assert new_head["epoch"] != old_head["epoch"]
    assert [f["type"] for f in frames] == ["subscribed", "gap"]
    assert frames[1]["reason"] == "epoch"
    assert frames[1]["resume_after"] == {"epoch": new_head["epoch"], "seq": 0}


async def test_the_daemon_follows_a_game_through_reloads_without_a_gap_or_a_lost_event(
    game: EvenniaGame, player: TelnetClient, sqlite_url: str
) -> None:
    """Events flow while the game reloads twice: once with the daemon connected, once while it
    is away and the game holds what happens; the daemon stores every event, raises no alert."""
    store = Store.open(sqlite_url, clock=SystemClock())
    await watch_limbo(store)
    await store.close()
    cfg = parse_config(
        {
            "database": {"url": sqlite_url},
            "world": {"kind": "bridge", "url": game.bridge_url, "token_env": TOKEN_ENV},
        },
        "test",
    )
    recorded = RecordedAlerts()
    alerts = Alerts(clock=SystemClock(), log_sink=recorded)
    said: list[str] = []

    async def say(text: str) -> None:
        said.append(text)
        await player.send_line(f"say {text}")
        await player.read_until(text)

    async def daemon_stores(text: str, runtime: Runtime) -> None:
        """Wait (bounded) until the daemon has stored the speech event with `text`."""
        async with asyncio.timeout(STEP_SECONDS):
            while text not in [t for _, _, t in await _stored_speech(runtime.store)]:
                await runtime.daemon.wait_polls(runtime.daemon.polls + 1)

    async def running(body: Any) -> int:
        runtime = await build_runtime(
            cfg, environ={TOKEN_ENV: game.token}, choice=ModelChoice(None, "none"),
            alerts=alerts, reload_seconds=0.2,
            clock=SystemClock(),
        )  # fmt: skip
        stop = asyncio.Event()
        task = asyncio.create_task(runtime.run(stop))
        try:
            await asyncio.wait_for(runtime.daemon.ready.wait(), STEP_SECONDS)
            await body(runtime)
        finally:
            stop.set()
            await asyncio.wait_for(task, STEP_SECONDS)
            gaps = runtime.daemon.stream_gaps
            await runtime.close()
        return gaps

    async def connected(runtime: Runtime) -> None:
        subscribed = game.server_log().count("subscribed to 1 rooms")
        await until(lambda: game.server_log().count("subscribed to 1 rooms") > subscribed,
                    "the daemon to subscribe to Limbo")  # fmt: skip
        await say("Before the reload.")
        await daemon_stores("Before the reload.", runtime)
        await asyncio.to_thread(game.reload)
        await say("After the reload.")
        await daemon_stores("After the reload.", runtime)

    async def comes_back(runtime: Runtime) -> None:
        await daemon_stores("Said after the second reload.", runtime)

    gaps = await running(connected)
    await say("Said while the daemon is away.")
    await say("Held in the buffer at the reload.")
    await asyncio.to_thread(game.reload)
    await say("Said after the second reload.")
    gaps += await running(comes_back)

    store = Store.open(sqlite_url, clock=SystemClock())
    try:
        stored = await _stored_speech(store)
    finally:
        await store.close()
    assert [text for _, _, text in stored] == said
    assert len({epoch for epoch, _, _ in stored}) == 1
    assert gaps == 0 and recorded.kinds == [], recorded.kinds


async def _stored_speech(store: Store) -> list[tuple[str, int, str]]:
    """(epoch, seq, text) of every speech event in the daemon's inbox, in stream order, and a
    check that the stored seqs of the epoch have no hole."""
    async with store.db.session() as session:
        rows = list(await session.scalars(select(InboxRow).order_by(InboxRow.epoch, InboxRow.seq)))
    seqs = [row.seq for row in rows]
    if seqs:
        assert seqs == list(range(seqs[0], seqs[0] + len(seqs))), seqs
    return [
        (row.epoch, row.seq, json.loads(row.payload)["text"])
        for row in rows
        if row.kind == "speech"
    ]


# ---------------------------------------------------------------- in-game admin commands


async def test_admins_run_ais_and_aisr_in_the_game_and_builders_only_read(
    game: EvenniaGame, player: TelnetClient, sqlite_url: str
) -> None:
    store = Store.open(sqlite_url, clock=SystemClock())
    watch_id = await watch_limbo(store)
    await store.close()
    cfg = parse_config(
        {
            "database": {"url": sqlite_url},
            "world": {"kind": "bridge", "url": game.bridge_url, "token_env": TOKEN_ENV},
        },
        "test",
    )
    runtime = await build_runtime(
        cfg, environ={TOKEN_ENV: game.token}, choice=ModelChoice(None, "none"),
        admin_cli=[sys.executable, "-m", "storyteller_daemon", "--db", sqlite_url],
        clock=SystemClock(),
    )  # fmt: skip
    stop = asyncio.Event()
    task = asyncio.create_task(runtime.run(stop))
    daemon = runtime.daemon
    try:
        await asyncio.wait_for(daemon.ready.wait(), STEP_SECONDS)
        await until(lambda: "connection from storyteller" in game.server_log(),
                    "the daemon to connect")  # fmt: skip
        watching = daemon.find_storyteller(watch_id)
        assert watching is not None and not watching.paused

        started = time.monotonic()
        await player.send_line(f'ais pause "{WATCH}"')
        await player.read_until(f"Storyteller {WATCH} is now paused.", within=5)
        paused_after = time.monotonic() - started
        paused = daemon.find_storyteller(watch_id)  # the daemon reloaded before it answered
        assert paused is not None and paused.paused

        await player.send_line(f"ais set {watch_id} model gpt-5-mini")
        await player.read_until("uses gpt-5-mini for event calls", within=STEP_SECONDS)
        changed = daemon.find_storyteller(watch_id)
        assert changed is not None and changed.model == "gpt-5-mini"

        await player.send_line("aisr create Tide Tables")
        await player.read_until("Tide Tables", within=STEP_SECONDS)
        await player.send_line("aisr search tide")
        found = await player.read_until("Tide Tables", within=STEP_SECONDS)
        await player.send_line("ais show nobody")
        unknown = await player.read_until("nobody", within=STEP_SECONDS)

        # A Builder reads, and every change is refused: by the game's lock, and by the daemon
        # when a game sends the change anyway.
        async with TelnetClient(game.telnet_port) as builder:
            await builder.read_until("look will re-show")
            await builder.send_line("create bob bobpass123")
            await builder.read_until(r"\[Y\]/N")
            await builder.send_line("y")
            await builder.read_until("connect")
            await player.send_line("perm *bob = Builder")
            await player.read_until("Builder")
            await builder.send_line("connect bob bobpass123")
            await builder.read_until("You become bob")
            await builder.send_line("ais list")
            listed = await builder.read_until(WATCH, within=STEP_SECONDS)
            await builder.send_line(f"ais unpause {watch_id}")
            await builder.read_until("needs the Admin permission", within=STEP_SECONDS)
            await builder.send_line("aisr delete 1 --yes")
            await builder.read_until("needs the Developer permission", within=STEP_SECONDS)
        await player.send_line(
            "py from storyteller_bridge.service import send_admin; "
            f'send_admin("ais", "unpause", ["{watch_id}"], "bob", "Builder", '
            'lambda text, error, me=me: me.msg(f"daemon says: {error or text}"))'
        )
        refused = await player.read_until(r"daemon says: [^{\r\n]+", within=STEP_SECONDS)
        still = daemon.find_storyteller(watch_id)
        assert still is not None and still.paused
    finally:
        stop.set()
        await asyncio.wait_for(task, STEP_SECONDS)
        await runtime.close()
    store = Store.open(sqlite_url, clock=SystemClock())
    try:
        entries = await store.audit.list(limit=20)
    finally:
        await store.close()
    print(f"\nais pause answered and held after {paused_after:.2f} s")
    assert paused_after < 5
    assert "Tide Tables" in found and "no storyteller" in unknown.lower()
    assert WATCH in listed
    assert "needs the Admin permission; bob has Builder" in refused
    actions = [(e.actor, e.action) for e in entries]
    assert ("admin (game, Developer)", "pause") in actions  # the CLI's own entry, as the caller
    assert ("admin (game, Developer)", "game_admin") in actions
    assert ("bob (game, Builder)", "game_admin_refused") in actions


# ---------------------------------------------------------------- the game invokes a storyteller


BELL = "A bell tolls somewhere beyond Limbo."


async def test_an_admins_ais_invoke_is_answered_runs_a_turn_and_reports_its_outcome(
    game: EvenniaGame, player: TelnetClient, sqlite_url: str
) -> None:
    """`ais invoke` sends an `invoke` frame: the admin sees the acceptance at once, the turn's
    prog in the room, then its outcome; the same request id again is a duplicate that runs
    nothing (asked through `invoke_storyteller`, as a quest script would)."""
    store = Store.open(sqlite_url, clock=SystemClock())
    watch_id = await watch_limbo(store)
    cfg = parse_config(
        {
            "database": {"url": sqlite_url},
            "world": {"kind": "bridge", "url": game.bridge_url, "token_env": TOKEN_ENV},
        },
        "test",
    )
    scripted = ScriptedModel(
        then=by_kind(
            attention=attend_all(why="never asked: an invocation skips the gate"),
            turn=calls(("EchoToRoom", {"Room": LIMBO, "Text": BELL})),
            follow_up=calls(("Noop", {})),
        )
    )
    async with ScriptedResponsesServer(responder=ModelResponder(scripted)) as server:
        model = OpenAIResponsesModel(api_key="test-key", base_url=server.base_url, max_retries=0)
        runtime = await build_runtime(
            cfg, environ={TOKEN_ENV: game.token}, choice=ModelChoice(model, model.name),
            store=store,
            clock=SystemClock(),
        )  # fmt: skip
        stop = asyncio.Event()
        task = asyncio.create_task(runtime.run(stop))
        try:
            subscribed = game.server_log().count("subscribed to 1 rooms")
            await until(
                lambda: game.server_log().count("subscribed to 1 rooms") > subscribed,
                "the daemon to subscribe to Limbo",
            )
            started = time.monotonic()
            await player.send_line(f'ais invoke "{WATCH}" Ring the bell for the lost.')
            answer = await player.read_until(r"accepted invocation inv-\w+-\d+[^\r\n]*", within=5)
            answered_after = time.monotonic() - started
            await player.read_until(BELL, within=STEP_SECONDS)
            ended = await player.read_until(r"ended: [^\r\n]+", within=STEP_SECONDS)
            await runtime.pipeline.wait_idle()
            turn_requests = len(scripted.requests)

            [request_id] = re.findall(r"inv-\w+-\d+", answer)
            await player.send_line(
                "py from storyteller_bridge.service import invoke_storyteller; "
                "from storyteller_bridge.invocations import describe; "
                f'invoke_storyteller({watch_id}, "Ring the bell for the lost.", '
                f'request_id="{request_id}", '
                # py's imports are not a lambda's globals: pass them in; and the echoed line
                # must not read as an answer, so "again: " is put together in the game.
                "callback=lambda report, me=me, describe=describe: "
                'me.msg("again" + ": " + describe(report)))'
            )
            duplicate = await player.read_until(r"again: [^\r\n]+", within=STEP_SECONDS)
            outcome_again = await player.read_until(r"again: [^\r\n]+", within=STEP_SECONDS)
            await runtime.pipeline.wait_idle()
            requests_before_reload = len(scripted.requests)

            # A reload restarts the counter under a new boot id: the next id is a new one.
            subscribed = game.server_log().count("subscribed to 1 rooms")
            await asyncio.to_thread(game.reload)
            await until(
                lambda: game.server_log().count("subscribed to 1 rooms") > subscribed,
                "the daemon to subscribe again after the reload",
            )
            await player.send_line(f"ais invoke {watch_id} Ring it once more.")
            after_reload = await player.read_until(r"invocation inv-\w+-\d+[^\r\n]*", within=5)
            ended_after_reload = await player.read_until(r"ended: [^\r\n]+", within=STEP_SECONDS)
        finally:
            stop.set()
            await asyncio.wait_for(task, STEP_SECONDS)
            await runtime.close()
    print(f"\nais invoke answered after {answered_after:.2f} s")
    assert f"Storyteller #{watch_id} accepted invocation {request_id}" in answer
    assert (
        f"Invocation {request_id} ended: completed (run " in ended
        and "tools: EchoToRoom ok, Noop ok)." in ended
    ), ended
    prompt = str(scripted.requests[0].input)
    assert "Ring the bell for the lost." in prompt
    assert f"already took invocation {request_id}; nothing new was queued." in duplicate
    assert outcome_again.split("again: ")[1] == ended.split("\n")[-1].strip()
    assert turn_requests == requests_before_reload  # the duplicate asked the model nothing
    assert len([r for r in scripted.requests[:turn_requests] if r.tools]) == 2  # the turn's rounds

    [new_id] = re.findall(r"inv-\w+-\d+", after_reload)
    print(f"request ids: {request_id} before the reload, {new_id} after")
    assert new_id.endswith("-1") and new_id != request_id  # the same count, a new boot id
    assert f"Storyteller #{watch_id} accepted invocation {new_id}: its turn is queued." in (
        after_reload
    )
    # The pack's policy lets EchoToRoom act on a room once per 600 s: the outcome says the call
    # was refused, and the turn ended without acting.
    assert ended_after_reload.strip().endswith(
        f"Invocation {new_id} ended: noop (run 2; tools: EchoToRoom failed, Noop ok)."
    ), ended_after_reload
    assert runtime.stats.turns.total() == 2


# ---------------------------------------------------------------- a new admin, from nothing


async def _storyteller(*args: str, env: dict[str, str]) -> tuple[int, str]:
    """`storyteller ARGS` in its own process, as an admin types it; exit code and output."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "storyteller_daemon", *args, env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    out, _ = await asyncio.wait_for(proc.communicate(), 120)
    assert proc.returncode is not None
    return proc.returncode, out.decode()


async def test_a_new_admin_goes_from_an_empty_directory_to_a_turn(
    game: EvenniaGame, player: TelnetClient, tmp_path: Any
) -> None:
    """init → db upgrade → seed load --check-world → doctor → ais unpause → run, on Evennia."""
    from storyteller_daemon.agent.models.offline import DEFAULT_AMBIENT_LINE, OfflineStandInModel

    await player.send_line("@tag here = limbo:zone")
    await player.read_until("limbo")
    home = tmp_path / "my-game"
    key = "sk-evennia-admin"
    async with ScriptedResponsesServer(responder=ModelResponder(OfflineStandInModel())) as api:
        api.models, api.api_key = ["gpt-5-mini", "gpt-5-nano"], key
        env = {**os.environ, TOKEN_ENV: game.token, "OPENAI_API_KEY": key}
        env.pop("STORYTELLER_CONFIG", None)
        code, out = await _storyteller(
            "init", str(home), "--game-url", game.bridge_url, "--pack", "my-game",
            "--name", "Limbo Storyteller", "--model-url", api.base_url, env=env,
        )  # fmt: skip
        assert code == 0, out
        pack = read_pack(home / "my-game")
        [st] = pack.storytellers
        assert pack.world == "game" and st.paused  # Evennia's SERVERNAME of `evennia --init game`
        echo = st.tool("EchoToRoom")
        assert echo is not None and echo.parameter_types == (("Room", "Location"), ("Text", "Text"))
        base = ["--config", str(home / "storyteller.toml")]
        for step in (["db", "upgrade"], ["seed", "load", str(home / "my-game"), "--check-world"]):
            code, out = await _storyteller(*base, *step, env=env)
            assert code == 0, out
        code, out = await _storyteller(*base, "doctor", env=env)
        assert code == 0, out
        assert all(line.startswith("ok") for line in out.splitlines() if line.strip()), out
        code, out = await _storyteller(*base, "ais", "unpause", "Limbo Storyteller", env=env)
        assert code == 0, out

        subscribed = game.server_log().count("subscribed to")
        daemon = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "storyteller_daemon", *base, "run", "--seconds", "120",
            env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
        )  # fmt: skip
        try:
            await until(
                lambda: game.server_log().count("subscribed to") > subscribed,
                "the daemon to subscribe",
                seconds=60,
            )
            await player.send_line("say Stop, thief!")
            # the stand-in's turn runs a prog taking a room and a text: the player sees it
            await player.read_until(DEFAULT_AMBIENT_LINE, within=60)
            daemon.send_signal(signal.SIGTERM)
            out_bytes, _ = await asyncio.wait_for(daemon.communicate(), 60)
        finally:
            if daemon.returncode is None:
                daemon.kill()
                await daemon.wait()
        assert daemon.returncode == 0, out_bytes.decode()
