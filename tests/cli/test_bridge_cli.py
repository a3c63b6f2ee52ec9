"""``storyteller bridge check`` and ``storyteller sim serve``: the conformance suite passes
against the sim world's server, fails against a broken one, and both commands refuse bad input
with one line and exit code 2."""

from __future__ import annotations

import asyncio
import functools
import json
import os
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from typer.testing import CliRunner

from storyteller_daemon.cli import app
from world_adapter.bridge.world_server import WorldServer
from world_adapter.sim import SimWorld
from world_adapter.sim.hooks import cause_event

TOKEN = "bridge-cli-token"
CHECKS = [
    "handshake",
    "bad-token",
    "bad-version",
    "ping",
    "methods",
    "errors",
    "semantics",
    "subscribe",
    "from-now",
    "resume",
    "foreign-epoch",
    "idempotency",
    "oversize",
    "malformed",
]


@dataclass
class ThreadedServer:
    url: str
    server: WorldServer


def _serve_in_thread(accept_any_token: bool, hook: bool = False) -> Iterator[ThreadedServer]:
    """A sim world's bridge server on its own event loop, because the CLI runs its own."""
    started = threading.Event()
    holder: dict[str, object] = {}

    async def main() -> None:
        world = SimWorld.harbour_town(epoch="cli-1")
        for _ in range(60):  # some history for the resume check
            world.step()
        server = WorldServer(
            world,
            TOKEN,
            cells=frozenset(r.id for r in world.town_map.rooms),
            cause_event=functools.partial(cause_event, world) if hook else None,
        )
        if accept_any_token:
            server.check_token = lambda token: True  # type: ignore[method-assign]
        stop = asyncio.Event()
        holder.update(loop=asyncio.get_running_loop(), stop=stop, server=server)
        holder["url"] = await server.start("127.0.0.1", 0)
        started.set()
        try:
            await stop.wait()
        finally:
            await server.stop()

    thread = threading.Thread(target=lambda: asyncio.run(main()), daemon=True)
    thread.start()
    assert started.wait(10), "the sim server did not start"
    try:
        yield ThreadedServer(str(holder["url"]), holder["server"])  # type: ignore[arg-type]
    finally:
        loop: asyncio.AbstractEventLoop = holder["loop"]  # type: ignore[assignment]
        loop.call_soon_threadsafe(holder["stop"].set)  # type: ignore[attr-defined]
        thread.join(10)
        assert not thread.is_alive()


@pytest.fixture
def sim_server() -> Iterator[ThreadedServer]:
    yield from _serve_in_thread(accept_any_token=False)


@pytest.fixture
def hooked_server() -> Iterator[ThreadedServer]:
    yield from _serve_in_thread(accept_any_token=False, hook=True)


@pytest.fixture
def lax_server() -> Iterator[ThreadedServer]:
    yield from _serve_in_thread(accept_any_token=True)


def check(url: str, *extra: str, token: str | None = TOKEN) -> tuple[int, str]:
    env = {"GAME_TOKEN": token} if token is not None else {}
    result = CliRunner().invoke(
        app, ["bridge", "check", url, "--token-env", "GAME_TOKEN", *extra], env=env
    )
    return result.exit_code, result.output


def statuses(output: str) -> dict[str, str]:
    found = re.findall(r"^(PASS|FAIL|SKIP)\s+(\S+)", output, re.M)
    return {name: status for status, name in found}


def test_every_check_passes_against_the_sim_server(sim_server: ThreadedServer) -> None:
    code, output = check(
        sim_server.url, "--prog", "EchoToRoom", "--prog-args", '{"Room": 101, "Text": "Hi."}'
    )
    assert code == 0, output
    assert statuses(output) == dict.fromkeys(CHECKS, "PASS")
    assert f"{len(CHECKS)} passed, 0 failed, 0 skipped" in output


def test_events_caused_by_the_games_hook_are_checked(hooked_server: ThreadedServer) -> None:
    code, output = check(hooked_server.url, "--events", "--event-timeout", "10")
    assert code == 0, output
    found = statuses(output)
    kinds = ["room_echo", "speech", "crime", "state_change", "invoke"]
    assert {k: found[f"event-{k}"] for k in kinds} == dict.fromkeys(kinds, "PASS"), output
    assert "caused by the game's cause_event hook" in output
    assert "In the game" not in output  # nothing asked of an operator


def test_without_a_prog_the_idempotency_check_is_skipped(sim_server: ThreadedServer) -> None:
    code, output = check(sim_server.url)
    assert code == 0, output
    assert statuses(output)["idempotency"] == "SKIP"


def test_the_checks_as_json(sim_server: ThreadedServer) -> None:
    code, output = check(sim_server.url, "--json")
    report = json.loads(output)
    assert code == 0
    assert report["url"] == sim_server.url
    assert [c["name"] for c in report["checks"]] == list(CHECKS)
    assert all(set(c) == {"name", "status", "detail"} for c in report["checks"])
    assert (report["passed"], report["failed"], report["skipped"]) == (len(CHECKS) - 1, 0, 1)


def test_a_server_that_ignores_the_token_fails_the_check(lax_server: ThreadedServer) -> None:
    code, output = check(lax_server.url)
    assert code == 1
    assert statuses(output)["bad-token"] == "FAIL"
    assert "answered welcome instead of closing with 4001 (AUTH_FAILED)" in output


def test_nothing_listening_fails_every_check_with_the_reason() -> None:
    code, output = check("ws://127.0.0.1:9/nothing", "--timeout", "1")
    assert code == 1
    assert set(statuses(output).values()) <= {"FAIL", "SKIP"}
    assert "connection failed" in output


@pytest.mark.parametrize(
    ("args", "token", "code", "message"),
    [
        (["ws://127.0.0.1:9/x"], None, 78, "GAME_TOKEN is not set"),
        (["http://127.0.0.1:9/x"], TOKEN, 64, "must start with ws:// or wss://"),
        (["ws://127.0.0.1:9/x", "--prog-args", "[1]"], TOKEN, 64, "must be a JSON object"),
    ],
)
def test_bad_input_is_one_line_and_a_sysexits_code(
    args: list[str], token: str | None, code: int, message: str
) -> None:
    exit_code, output = check(*args, token=token)
    assert exit_code == code
    assert message in " ".join(output.split())


def test_sim_serve_without_its_token_refuses_to_start() -> None:
    result = CliRunner().invoke(
        app, ["sim", "serve", "--token-env", "NO_SUCH_VARIABLE_SET"], env={}
    )
    assert result.exit_code == 78
    assert "NO_SUCH_VARIABLE_SET is not set" in result.output


def test_sim_serve_serves_until_sigterm_and_passes_the_check() -> None:
    env = {**os.environ, "GAME_TOKEN": TOKEN, "PYTHONUNBUFFERED": "1"}
    command = [sys.executable, "-m", "storyteller_daemon", "sim", "serve", "--port", "0"]
    command += ["--token-env", "GAME_TOKEN", "--tick", "0.01"]
    process = subprocess.Popen(
        command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    watchdog = threading.Timer(60, process.kill)  # a hung server must not hang the suite
    watchdog.start()
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        match = re.search(r"(ws://127\.0\.0\.1:\d+/storyteller)", line)
        assert match, line
        code, output = check(match.group(1), "--prog", "HarbourWatchStatus")
        assert code == 0, output
        process.send_signal(signal.SIGTERM)
        rest, _ = process.communicate(timeout=30)
    finally:
        watchdog.cancel()
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 0
    assert "stopped" in rest


def test_help_lists_the_new_commands() -> None:
    runner = CliRunner()
    assert "serve" in runner.invoke(app, ["sim", "--help"]).output
    assert "check" in runner.invoke(app, ["bridge", "--help"]).output
