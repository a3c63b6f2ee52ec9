"""``storyteller world``: zones, rooms, progs, characters and who is online, read over the bridge
from the sim served as a stand-in game; an unreachable game, a refused token and an unknown id
are one line each."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from storyteller_daemon.cli import app
from storyteller_daemon.testing.served_sim import ServedSim, served_sim

TOKEN = "world-cli-token"
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


def world(config: str, *args: str, env: dict[str, str] = ENV) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["--config", config, "world", *args], env=env)
    return result.exit_code, result.stdout, result.stderr


def test_zones_and_rooms_list_what_the_game_answers(game: ServedSim, tmp_path: Path) -> None:
    config = _config(tmp_path, game.url)
    code, out, _ = world(config, "zones", "--json")
    assert code == 0
    assert json.loads(out) == [
        {"zone": 1, "rooms": list(range(101, 109))},
        {"zone": 2, "rooms": list(range(201, 206))},
    ]
    code, out, _ = world(config, "zones")
    assert code == 0 and "Harbour Town (sim)" in out and "101, 102" in out

    code, out, _ = world(config, "rooms", "--zone", "2", "--json")
    assert code == 0
    rooms = json.loads(out)
    assert [r["id"] for r in rooms] == [201, 202, 203, 204, 205]
    assert all(r["zone_id"] == 2 for r in rooms) and rooms[1]["name"] == "Temple Square"
    code, out, _ = world(config, "rooms")
    assert code == 0 and "Harbour Quay" in out and "Temple Square" in out


def test_one_room_one_character_and_who_is_online(game: ServedSim, tmp_path: Path) -> None:
    config = _config(tmp_path, game.url)
    code, out, _ = world(config, "room", "101", "--json")
    assert code == 0
    room = json.loads(out)
    assert room["name"] == "Harbour Quay" and room["zone_id"] == 1 and 1001 in room["occupant_ids"]
    code, out, _ = world(config, "room", "101")
    assert code == 0 and out.startswith("Room 101: Harbour Quay") and "zone: 1" in out

    code, out, _ = world(config, "character", "1002", "--json")
    assert code == 0 and json.loads(out)["name"] == "Osric Vell"
    code, out, _ = world(config, "character", "1002")
    assert code == 0 and "Osric Vell (player)" in out and "The Drowned Lantern" in out

    code, out, _ = world(config, "online", "--json")
    assert code == 0
    assert {c["id"]: c["location_id"] for c in json.loads(out)} == {1001: 101, 1002: 103, 1003: 202}


def test_progs_show_typed_parameters_and_return_types(game: ServedSim, tmp_path: Path) -> None:
    config = _config(tmp_path, game.url)
    code, out, _ = world(config, "progs", "--json")
    assert code == 0
    by_name = {p["name"]: p for p in json.loads(out)}
    assert by_name["DispatchWatchman"]["parameters"] == [
        {"name": "Room", "type": "Location"},
        {"name": "Reason", "type": "Text"},
    ]
    assert by_name["DispatchWatchman"]["return_type"] == "Text"
    assert by_name["EchoToRooms"]["parameters"][0]["type"] == "Collection<Location>"
    code, out, _ = world(config, "progs")
    assert code == 0 and "Room: Location, Reason: Text" in out and "does not compile" in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("room", "999"), "has no room 999"),
        (("character", "4242"), "has no character 4242"),
        (("rooms", "--zone", "9"), "has no zone 9 (zones: 1, 2)"),
    ],
)
def test_an_unknown_id_is_one_line(
    game: ServedSim, tmp_path: Path, args: tuple[str, ...], message: str
) -> None:
    code, out, err = world(_config(tmp_path, game.url), *args)
    assert code == 65 and out == ""
    assert err.count("\n") == 1 and message in err


def test_a_refused_token_is_one_line(game: ServedSim, tmp_path: Path) -> None:
    code, _, err = world(_config(tmp_path, game.url), "zones", env={"WORLD_TOKEN": "wrong"})
    assert code == 69 and err.count("\n") == 1
    assert "refused the bridge token" in err and "token_env" in err


def test_an_unreachable_game_is_one_line(tmp_path: Path) -> None:
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"ws://127.0.0.1:{port}/storyteller"
    code, _, err = world(_config(tmp_path, url), "progs", "--timeout", "2")
    assert code == 69 and err.count("\n") == 1
    assert f"cannot reach the game at {url}" in err


def test_an_unset_token_variable_is_a_config_error(game: ServedSim, tmp_path: Path) -> None:
    code, _, err = world(_config(tmp_path, game.url), "zones", env={"WORLD_TOKEN": ""})
    assert code == 78 and "WORLD_TOKEN is not set" in err and err.count("\n") == 1


def test_the_embedded_sim_world_answers_too(tmp_path: Path) -> None:
    config = tmp_path / "sim.toml"
    config.write_text(
        f'[database]\nurl = "sqlite+aiosqlite:///{tmp_path}/st.db"\n[world]\nkind = "sim"\n',
        encoding="utf-8",
    )
    code, out, _ = world(str(config), "zones")
    assert code == 0 and "Zones of sim" in out
    code, out, err = world(str(config), "room", "4242")
    assert code == 65 and "the embedded sim world has no room 4242" in err
