"""``storyteller init``: the files it writes describe the probed game and load as written; bad
input and an unreachable game are one line each and write nothing."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from storyteller_daemon.cli import app
from storyteller_daemon.config import load_config
from storyteller_daemon.interchange.packs.files import read_pack
from storyteller_daemon.testing.served_sim import ServedSim, served_sim

TOKEN = "init-token"
ENV = {"INIT_TOKEN": TOKEN}


@pytest.fixture(scope="module")
def game() -> Iterator[ServedSim]:
    with served_sim(TOKEN, game="Saltmarsh Keep") as served:
        yield served


def init(*args: str, env: dict[str, str] = ENV) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["init", *args, "--token-env", "INIT_TOKEN"], env=env)
    return result.exit_code, result.stdout, result.stderr


def test_init_writes_a_bridge_config_and_a_pack_for_the_game(
    game: ServedSim, tmp_path: Path
) -> None:
    home = tmp_path / "keep"
    code, out, err = init(
        str(home), "--game-url", game.url, "--zone", "2", "--zone", "1", "--name", "The Keep"
    )
    assert code == 0, err
    assert out.startswith("Saltmarsh Keep: 2 zone(s), 18 prog(s)")
    assert "watches zones 1, 2 with 17 prog tool(s)" in out
    cfg = load_config(home / "storyteller.toml")
    assert (cfg.world.kind, cfg.world.url, cfg.world.token_env) == (
        "bridge",
        game.url,
        "INIT_TOKEN",
    )
    assert cfg.database.url == f"sqlite+aiosqlite:///{home / 'storyteller.db'}"
    assert set(cfg.model.prices) == {"gpt-5-mini", "gpt-5-nano"}
    pack = read_pack(home / "saltmarsh-keep")
    assert pack.world == "Saltmarsh Keep"
    [st] = pack.storytellers
    assert st.name == "The Keep" and st.paused and st.written_for == "Saltmarsh Keep"
    assert st.surveillance.zones == frozenset({1, 2})
    rooms = st.tool("EchoToRooms")
    assert rooms is not None and rooms.return_type == "Number"
    assert rooms.parameter_types == (("Rooms", "Collection<Location>"), ("Text", "Text"))
    assert st.tool("BrokenProg") is None
    readme = (home / "README.md").read_text(encoding="utf-8")
    assert "BrokenProg" in readme and "INIT_TOKEN" in readme and "EDIT ME" in readme

    # a second init into the same directory overwrites nothing
    code, _, err = init(str(home), "--game-url", game.url)
    assert code == 65 and "exists already" in err and err.count("\n") == 1


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        ((), 64, "--game-url is required off a terminal"),
        (("--game-url", "http://example.org"), 64, "must start with ws:// or wss://"),
        (("--zone", "7"), 65, "the game has no zone 7 (zones: 1, 2)"),
    ],
)
def test_bad_input_is_one_line_and_writes_nothing(
    game: ServedSim, tmp_path: Path, args: tuple[str, ...], code: int, message: str
) -> None:
    if args[:1] != ("--game-url",) and args:
        args = ("--game-url", game.url, *args)
    result = init(str(tmp_path / "x"), *args)
    assert result[0] == code and message in result[2] and result[2].count("\n") == 1
    assert not (tmp_path / "x" / "storyteller.toml").exists()


def test_a_refused_token_writes_nothing(game: ServedSim, tmp_path: Path) -> None:
    code, _, err = init(str(tmp_path / "x"), "--game-url", game.url, env={"INIT_TOKEN": "wrong"})
    assert code == 69 and "refused the bridge token" in err
    assert not (tmp_path / "x").exists()


def test_with_a_config_init_uses_its_game_and_writes_only_the_pack(
    game: ServedSim, tmp_path: Path
) -> None:
    config = tmp_path / "installed.toml"
    config.write_text(
        f'[database]\nurl = "sqlite+aiosqlite:///{tmp_path}/st.db"\n\n'
        f'[world]\nkind = "bridge"\nurl = "{game.url}"\ntoken_env = "INIT_TOKEN"\n',
        encoding="utf-8",
    )
    runner = CliRunner()
    args = ["--config", str(config), "init", str(tmp_path / "packs"), "--pack", "keep"]
    result = runner.invoke(app, args, env=ENV)
    assert result.exit_code == 0, result.stderr
    assert sorted(p.name for p in (tmp_path / "packs").iterdir()) == ["README.md", "keep"]
    assert f"storyteller --config {config} seed load" in (
        tmp_path / "packs" / "README.md"
    ).read_text(encoding="utf-8")
    result = runner.invoke(app, [*args[:3], "other", "--game-url", game.url], env=ENV)
    assert result.exit_code == 64 and "come from the configuration" in result.stderr


def test_a_pack_that_would_not_load_leaves_nothing_behind(game: ServedSim, tmp_path: Path) -> None:
    code, _, err = init(str(tmp_path / "x"), "--game-url", game.url, "--name", "  ")
    assert code == 78 and "name" in err and err.count("\n") == 1
    assert list((tmp_path / "x").iterdir()) == []
    code, _, err = init(str(tmp_path / "y"), "--game-url", game.url, "--pack", "../elsewhere")
    assert code == 64 and "must be a directory name" in err
