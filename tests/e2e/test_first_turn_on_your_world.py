"""A new admin, from an empty directory to a turn on their own world, as separate commands.

The game is the sim world served over the bridge (a stand-in for the admin's game: the daemon
only sees the protocol) and the model endpoint is the shipped Responses server answering with
the offline stand-in's rules. Every step is the `storyteller` command in its own process:
``init`` → ``db upgrade`` → ``seed load --check-world`` → ``doctor`` (clean) → ``ais show`` →
``ais unpause`` → ``run``, and a theft on the quay gets a turn whose prog tool the player sees.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import tomllib
from pathlib import Path

from storyteller_daemon.agent.models.offline import DEFAULT_AMBIENT_LINE, OfflineStandInModel
from storyteller_daemon.testing.model_responder import ModelResponder
from storyteller_daemon.testing.responses_server import ScriptedResponsesServer
from world_adapter.bridge.world_server import WorldServer
from world_adapter.sim import SimWorld

TOKEN = "first-turn-bridge-token"
KEY = "sk-first-turn"
GAME = "Harbour Town (sim)"
STORYTELLER = f"{GAME} Storyteller"


async def until(predicate: object, seconds: float, what: str) -> None:
    """Wait for another process's work to show (bounded)."""
    async with asyncio.timeout(seconds):
        while not predicate():  # type: ignore[operator]  # noqa: ASYNC110 - no hook across processes
            await asyncio.sleep(0.05)


async def stctl(*args: str, env: dict[str, str]) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "storyteller_daemon",
        *args,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), 120)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


async def test_a_new_admin_gets_a_turn_on_their_own_world(tmp_path: Path) -> None:
    world = SimWorld.harbour_town(epoch="first-turn-1")
    game = WorldServer(world, TOKEN, cells=frozenset(r.id for r in world.town_map.rooms), game=GAME)
    await game.start("127.0.0.1", 0)
    home = tmp_path / "my-game"
    try:
        async with ScriptedResponsesServer(responder=ModelResponder(OfflineStandInModel())) as api:
            api.models, api.api_key = ["gpt-5-mini", "gpt-5-nano"], KEY
            env = {**os.environ, "STORYTELLER_BRIDGE_TOKEN": TOKEN, "OPENAI_API_KEY": KEY}
            env.pop("STORYTELLER_CONFIG", None)

            code, out, err = await stctl(
                "init", str(home), "--game-url", game.url, "--zone", "1",
                "--model-url", api.base_url, env=env,
            )  # fmt: skip
            assert code == 0, err
            assert f'storyteller "{STORYTELLER}" (paused) watches zone 1' in out
            pack = home / "harbour-town-sim"
            assert sorted(p.name for p in home.iterdir()) == [
                "README.md", "harbour-town-sim", "storyteller.toml"
            ]  # fmt: skip
            config = tomllib.loads((home / "storyteller.toml").read_text(encoding="utf-8"))
            assert config["world"] == {
                "kind": "bridge", "url": game.url, "token_env": "STORYTELLER_BRIDGE_TOKEN"
            }  # fmt: skip
            written = tomllib.loads((pack / "pack.toml").read_text(encoding="utf-8"))
            assert written["pack"]["world"] == GAME
            [st] = written["storyteller"]
            assert st["starts_paused"] is True and st["surveillance"] == {"zones": [1]}
            tools = {t["prog"]: t for t in st["tools"]}
            assert "BrokenProg" not in tools  # it does not compile: named in the README instead
            assert tools["DispatchWatchman"]["types"] == {"Room": "Location", "Reason": "Text"}
            assert tools["DispatchWatchman"]["returns"] == "Text"
            assert (
                tools["DispatchWatchman"]["description"] == "Sends Watch Sergeant Holt to a room."
            )
            assert "EDIT ME" in (pack / "prompts" / "system.md").read_text(encoding="utf-8")
            assert "BrokenProg" in (home / "README.md").read_text(encoding="utf-8")

            base = ["--config", str(home / "storyteller.toml")]
            code, _, err = await stctl(*base, "db", "upgrade", env=env)
            assert code == 0, err
            code, out, err = await stctl(*base, "seed", "load", str(pack), "--check-world", env=env)
            assert code == 0, err
            assert "created 1" in out

            code, out, err = await stctl(*base, "doctor", env=env)
            assert code == 0, out + err
            lines = [line for line in out.splitlines() if line.strip()]
            assert all(line.startswith("ok") for line in lines), out
            assert any(line.split()[:2] == ["ok", "fit"] for line in lines)

            code, out, err = await stctl(*base, "ais", "show", STORYTELLER, env=env)
            assert code == 0, err
            assert "DispatchWatchman" in out
            code, _, err = await stctl(*base, "ais", "unpause", STORYTELLER, env=env)
            assert code == 0, err

            daemon = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "storyteller_daemon", *base, "run", "--seconds", "90",
                env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            )  # fmt: skip
            try:
                await until(lambda: game.subscriptions > 0, 60, "the daemon subscribes")
                world.emote(1001, "shouts: Thief! Stop that thief!")  # Maren, on the quay (zone 1)
                # the stand-in's turn calls a prog tool taking a room and a text, on the quay
                await until(
                    lambda: any(DEFAULT_AMBIENT_LINE in line for line in world.output_of(1001)),
                    60,
                    "a turn's prog tool reaches the player",
                )
                daemon.send_signal(signal.SIGTERM)
                _, err_bytes = await asyncio.wait_for(daemon.communicate(), 60)
            finally:
                if daemon.returncode is None:
                    daemon.kill()
                    await daemon.wait()
            assert daemon.returncode == 0, err_bytes.decode()

            code, out, err = await stctl(*base, "runs", "list", "--json", env=env)
            assert code == 0, err
            turns = [r for r in json.loads(out) if r["kind"] == "turn"]
            assert turns and turns[0]["storyteller"]["name"] == STORYTELLER
    finally:
        await game.stop()
