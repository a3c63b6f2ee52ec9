"""A bridge in another language passes `storyteller bridge check`: the Node 20 bridge over a toy
world (world_adapter/bridges/node, written from docs/bridge-protocol.md) is started on a free
loopback port with a token, checked with every check (idempotency and --events included), and
stopped. Its one dependency, `ws`, is installed from its lockfile when missing."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shutil
import signal
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from storyteller_daemon.cli import app
from world_adapter.bridge.client import BridgeWorldClient
from world_adapter.bridge.messages import CAUSE_EVENT
from world_adapter.events import Speech
from world_adapter.invocations import GameInvocation, InvocationAnswer, InvocationOutcome

NODE_BRIDGE = Path(__file__).resolve().parents[2] / "world_adapter" / "bridges" / "node"
TOKEN = "node-bridge-token"
NODE = shutil.which("node")

pytestmark = pytest.mark.skipif(NODE is None, reason="node is not installed")


def install_dependencies() -> None:
    """`npm ci` from the lockfile, once: skipped when `ws` is already installed."""
    if (NODE_BRIDGE / "node_modules" / "ws" / "package.json").exists():
        return
    npm = shutil.which("npm")
    assert npm is not None, "node is installed but npm is not: install npm to run this test"
    subprocess.run([npm, "ci", "--no-audit", "--no-fund"], cwd=NODE_BRIDGE, check=True, timeout=300)


@contextlib.contextmanager
def running_node_bridge(*flags: str) -> Iterator[str]:
    """The Node bridge on a free port of 127.0.0.1 with `flags`; its URL. Stopped with SIGTERM
    afterwards, and it must stop cleanly."""
    assert NODE is not None
    install_dependencies()
    env = {**os.environ, "NODE_BRIDGE_TOKEN": TOKEN}
    command = [NODE, "server.js", "--port", "0", "--token-env", "NODE_BRIDGE_TOKEN", *flags]
    process = subprocess.Popen(
        command,
        cwd=NODE_BRIDGE,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    watchdog = threading.Timer(120, process.kill)  # a hung bridge must not hang the suite
    watchdog.start()
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        match = re.search(r"(ws://127\.0\.0\.1:\d+/storyteller)", line)
        assert match, line
        yield match.group(1)
        process.send_signal(signal.SIGTERM)
        rest, _ = process.communicate(timeout=30)
        assert process.returncode == 0, rest
        assert "stopped" in rest
    finally:
        watchdog.cancel()
        if process.poll() is None:
            process.kill()
            process.wait()


@pytest.fixture
def node_bridge() -> Iterator[str]:
    """The Node bridge with its test hook (cause_event) on."""
    with running_node_bridge("--test-hooks") as url:
        yield url


def check(url: str, *extra: str) -> tuple[int, str, dict[str, str]]:
    """`storyteller bridge check` of `url`: exit code, output and each check's status."""
    arguments = ["bridge", "check", url, "--token-env", "GAME_TOKEN", *extra]
    result = CliRunner().invoke(app, arguments, env={"GAME_TOKEN": TOKEN})
    found = re.findall(r"^(PASS|FAIL|SKIP)\s+(\S+)", result.output, re.M)
    return result.exit_code, result.output, {name: status for status, name in found}


def test_the_node_bridge_passes_every_check(node_bridge: str) -> None:
    code, output, statuses = check(
        node_bridge,
        "--events",
        "--event-timeout",
        "10",
        "--prog",
        "EchoToRoom",
        "--prog-args",
        '{"Room": 1, "Text": "A lantern flares."}',
    )
    assert code == 0, output
    assert len(statuses) == 19 and set(statuses.values()) == {"PASS"}, output
    assert "19 passed, 0 failed, 0 skipped" in output


def test_a_game_answering_the_minimal_profile_fails_no_check() -> None:
    """The protocol document's minimal profile holds: empty answers wherever it allows them
    (no zones, players, progs, landmarks or plans) fail nothing; checks that need the data skip."""
    with running_node_bridge("--minimal") as url:
        code, output, statuses = check(url)
    assert code == 0, output
    assert "FAIL" not in statuses.values()
    skipped = {name for name, status in statuses.items() if status == "SKIP"}
    assert {"subscribe", "resume", "idempotency"} <= skipped, output
    assert statuses["methods"] == statuses["errors"] == statuses["handshake"] == "PASS"


def test_the_node_bridge_refuses_to_start_without_its_token() -> None:
    assert NODE is not None
    install_dependencies()
    env = {k: v for k, v in os.environ.items() if k != "NODE_BRIDGE_TOKEN"}
    done = subprocess.run(
        [NODE, "server.js", "--token-env", "NODE_BRIDGE_TOKEN"],
        cwd=NODE_BRIDGE,
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 78
    assert "NODE_BRIDGE_TOKEN is not set" in done.stderr


async def test_the_daemons_client_follows_the_node_bridge(node_bridge: str) -> None:
    """The daemon's own client against the Node bridge: queries, an event caused in the toy
    world reaching a subscription, a prog run once under its key, and an invoke answered."""
    client = BridgeWorldClient(node_bridge, TOKEN)
    invocations: list[GameInvocation] = []

    async def answer(invocation: GameInvocation) -> InvocationAnswer:
        invocations.append(invocation)
        return InvocationAnswer(invocation.id, accepted=True, reason="queued", turn_key="st1:x")

    client.serve_invocations(answer)
    try:
        zones = await client.zones()
        assert zones == {1: frozenset({1, 2, 3}), 2: frozenset({4})}
        ada = await client.character(10)
        assert ada is not None and ada.name == "Ada Wick" and ada.location_id == 1
        assert await client.character(999) is None
        events = client.subscribe(frozenset({1, 2, 3, 4}), None)
        next_event = asyncio.ensure_future(anext(events))
        hook = await client.connect()  # a game's test hook, reached as `bridge check` does
        try:
            while not next_event.done():  # until the subscription is in place and hears it
                assert await hook.request(CAUSE_EVENT, {"kind": "speech"}, 5) is None
                await asyncio.wait({next_event}, timeout=0.2)
            event = next_event.result()
            assert isinstance(event, Speech) and event.speaker_id == 10
            assert await hook.request(CAUSE_EVENT, {"kind": "invoke"}, 5) is None
            while not invocations:
                await hook.request("zones", {}, 5)  # the invoke came first on this connection
        finally:
            await hook.close()
            await events.aclose()
        assert invocations[0].storyteller == "Lantern Watch" and invocations[0].room_id == 1
        await client.send_outcome(InvocationOutcome(invocations[0].id, "st1:x", "completed"))
        arguments = {"Room": 2, "Text": "A lantern flares."}
        first = await client.execute_prog("EchoToRoom", arguments, "key-1")
        again = await client.execute_prog("echotoroom", arguments, "key-1")
        assert (first.value, first.replayed, again.replayed) == (True, False, True)
    finally:
        await client.close()
