"""The composition root and the bridge: `kind = "bridge"` builds the bridge client from the
config and the environment, refuses bad settings clearly, and a refusing game stops the
runtime with one clear configuration error."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from test_bridge_doubles import TOKEN, served, sim_world

from storyteller_daemon.app import build_runtime, build_world, prog_catalogue
from storyteller_daemon.clock import SystemClock
from storyteller_daemon.config import Config, parse_config
from storyteller_daemon.errors import ConfigError
from storyteller_daemon.storage.store import Store
from world_adapter.bridge.client import BridgeWorldClient
from world_adapter.sim import SimWorld


def bridge_config(url: str = "ws://127.0.0.1:4010/storyteller", **world: Any) -> Config:
    settings = {"kind": "bridge", "url": url, "token_env": "GAME_TOKEN", **world}
    return parse_config(
        {"database": {"url": "sqlite+aiosqlite:///unused.db"}, "world": settings}, "t"
    )


async def test_a_bridge_world_is_built_from_the_config_and_the_environment() -> None:
    world = build_world(bridge_config(), {"GAME_TOKEN": TOKEN})
    assert isinstance(world, BridgeWorldClient)
    assert world.url == "ws://127.0.0.1:4010/storyteller"
    await world.close()
    assert isinstance(build_world(parse_config({"database": {"url": "x"}}, "t")), SimWorld)


@pytest.mark.parametrize(
    ("cfg", "environ", "key", "problem"),
    [
        (bridge_config(url=""), {"GAME_TOKEN": TOKEN}, "world.url", "ws:// or wss://"),
        (bridge_config(url="http://game/"), {"GAME_TOKEN": TOKEN}, "world.url", "ws:// or wss://"),
        (bridge_config(token_env=""), {}, "world.token_env", "needs token_env"),
        (bridge_config(), {}, "world.token_env", "GAME_TOKEN is not set"),
        (bridge_config(), {"GAME_TOKEN": "  "}, "world.token_env", "GAME_TOKEN is not set"),
    ],
)
def test_bad_bridge_settings_are_named(
    cfg: Config, environ: dict[str, str], key: str, problem: str
) -> None:
    with pytest.raises(ConfigError, match=problem) as caught:
        build_world(cfg, environ)
    assert caught.value.key == key


async def test_the_prog_catalogue_comes_over_the_bridge(monkeypatch: pytest.MonkeyPatch) -> None:
    world = sim_world()
    async with served(world) as server:
        monkeypatch.setenv("GAME_TOKEN", TOKEN)
        catalogue = await prog_catalogue(bridge_config(server.url))
    assert catalogue == await world.progs()
    monkeypatch.setenv("GAME_TOKEN", "wrong")
    async with served(world) as server:  # refused: the catalogue is unknown, not an error
        assert await prog_catalogue(bridge_config(server.url)) is None
    assert server.stats.refused == 1


async def test_a_game_refusing_the_token_stops_the_runtime_with_a_config_error(
    sqlite_store: Store, sqlite_url: str
) -> None:
    world = sim_world()
    async with served(world) as server:
        cfg = parse_config(
            {
                "database": {"url": sqlite_url},
                "world": {"kind": "bridge", "url": server.url, "token_env": "GAME_TOKEN"},
            },
            "storyteller.toml",
        )
        runtime = await build_runtime(
            cfg, environ={"GAME_TOKEN": "wrong"}, store=sqlite_store, clock=SystemClock()
        )
        try:
            with pytest.raises(ConfigError, match="the game refused the daemon") as caught:
                await asyncio.wait_for(runtime.run(asyncio.Event()), 10)
        finally:
            await runtime.close()
    assert caught.value.key == "world"
    assert server.stats.refused == 1
