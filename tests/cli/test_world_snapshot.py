"""``storyteller world snapshot``: the game over the bridge (the sim served as a stand-in game)
written to a file that builds a world answering as the game did; to standard output without
--out; an unknown zone or an unwritable file is one line."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from storyteller_daemon.cli import app
from storyteller_daemon.testing.served_sim import ServedSim, served_sim
from world_adapter.sim import SimWorld
from world_adapter.sim.snapshot import load_snapshot

TOKEN = "world-snapshot-token"
ENV = {"WORLD_TOKEN": TOKEN}


@pytest.fixture(scope="module")
def game() -> Iterator[ServedSim]:
    with served_sim(TOKEN) as served:
        yield served


def _config(tmp_path: Path, url: str) -> str:
    path = tmp_path / "storyteller.toml"
    path.write_text(
        f'[database]\nurl = "sqlite+aiosqlite:///{tmp_path}/st.db"\n\n'
        f'[world]\nkind = "bridge"\nurl = "{url}"\ntoken_env = "WORLD_TOKEN"\n',
        encoding="utf-8",
    )
    return str(path)


def world(config: str, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["--config", config, "world", *args], env=ENV)
    return result.exit_code, result.stdout, result.stderr


def test_a_snapshot_file_builds_the_game_again(game: ServedSim, tmp_path: Path) -> None:
    out = tmp_path / "town.json"
    code, said, _ = world(_config(tmp_path, game.url), "snapshot", "--out", str(out))
    assert code == 0
    assert said.strip() == (
        f"{out}: 13 rooms, 24 exits, 8 characters, 18 progs of Harbour Town (sim)"
    )
    copy = load_snapshot(out)
    town = SimWorld.harbour_town()

    async def compare() -> None:
        assert await copy.zones() == await town.zones()
        for room in [*range(101, 109), *range(201, 206)]:
            assert await copy.room(room) == await town.room(room)
        for person in (1001, 1002, 1003, 2001, 2002, 2003, 2004, 2005):
            assert await copy.character(person) == await town.character(person)
        assert await copy.progs() == await town.progs()

    asyncio.run(compare())
    assert copy.snapshot.game == "Harbour Town (sim)"


def test_without_out_the_json_goes_to_standard_output(game: ServedSim, tmp_path: Path) -> None:
    code, said, _ = world(_config(tmp_path, game.url), "snapshot", "--zone", "2", "--item", "351")
    assert code == 0
    data = json.loads(said)
    assert [r["id"] for r in data["rooms"]] == [201, 202, 203, 204, 205]
    assert data["items"] == [{"kind": "Item", "id": 351, "name": "a coil of tarred rope"}]


@pytest.mark.parametrize(
    ("args", "problem"),
    [
        (["--zone", "9"], "has no zone 9 (zones: 1, 2)"),
        (["--item", "9999"], "has no item 9999"),
        (["--out", "/nonexistent-dir/x.json"], "cannot write /nonexistent-dir/x.json"),
    ],
)
def test_bad_input_is_one_line(
    game: ServedSim, tmp_path: Path, args: list[str], problem: str
) -> None:
    code, _, err = world(_config(tmp_path, game.url), "snapshot", *args)
    assert code != 0
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and problem in lines[0]
