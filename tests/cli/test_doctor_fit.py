"""``storyteller doctor`` and ``seed load --check-world`` check packs against the world: each
seeded mismatch (a missing zone, room or prog, a parameter whose type changed, a sim pack
against a game) is exactly one finding naming the storyteller, the field and the value."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from storyteller_daemon.cli import app
from storyteller_daemon.cli.doctor.checks import Doctor
from storyteller_daemon.cli.doctor.findings import Finding
from storyteller_daemon.config import parse_config
from storyteller_daemon.interchange.packs.files import read_pack
from storyteller_daemon.storage.seeding import load_pack
from storyteller_daemon.storage.store import Store
from storyteller_daemon.testing.served_sim import served_sim
from world_adapter.bridge.world_server import WorldServer
from world_adapter.sim import SimWorld

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "doctor-fit-token"
GAME = "Harbour Town (sim)"
NAME = "Quay Watcher"

FITTING = f'''
[pack]
description = "A storyteller that fits the served harbour town."
world = "{GAME}"

[[storyteller]]
name = "{NAME}"
description = "Watches the quay."
subscriptions = ["room"]

[storyteller.models]
event = "gpt-5-mini"

[storyteller.prompts]
system = "prompts/system.md"
attention = "prompts/attention.md"

[storyteller.surveillance]
zones = [1]
include = [201]
exclude = [108]

[[storyteller.tools]]
name = "SendTheWatch"
description = "Sends the watch."
prog = "DispatchWatchman"
returns = "Text"

[storyteller.tools.parameters]
Room = "Where to."
Reason = "Why."

[storyteller.tools.types]
Room = "Location"
Reason = "Text"
'''


def write_pack(root: Path, text: str) -> Path:
    pack = root / "quay"
    (pack / "prompts").mkdir(parents=True, exist_ok=True)
    (pack / "prompts" / "system.md").write_text("Act only through tools.\n", encoding="utf-8")
    (pack / "prompts" / "attention.md").write_text("Answer the JSON verdict.\n", encoding="utf-8")
    (pack / "pack.toml").write_text(text, encoding="utf-8")
    return pack


@pytest.fixture
async def game() -> AsyncIterator[WorldServer]:
    world = SimWorld.harbour_town(epoch="fit-1")
    server = WorldServer(
        world, TOKEN, cells=frozenset(r.id for r in world.town_map.rooms), game=GAME
    )
    await server.start("127.0.0.1", 0)
    try:
        yield server
    finally:
        await server.stop()


async def fit_findings(sqlite_url: str, game: WorldServer) -> list[Finding]:
    cfg = parse_config(
        {
            "database": {"url": sqlite_url},
            "world": {"kind": "bridge", "url": game.url, "token_env": "FIT_TOKEN"},
        },
        "test.toml",
    )
    findings = await Doctor({"FIT_TOKEN": TOKEN}, timeout_seconds=5).run(lambda: cfg)
    return [f for f in findings if f.check == "fit"]


async def test_a_pack_that_fits_the_world_passes(
    sqlite_url: str, sqlite_store: Store, game: WorldServer, tmp_path: Path
) -> None:
    await load_pack(
        sqlite_store.db, read_pack(write_pack(tmp_path, FITTING)), clock=sqlite_store.clock
    )
    [finding] = await fit_findings(sqlite_url, game)
    assert finding.ok, finding
    assert finding.detail == f"1 storyteller(s) name only zones, rooms and progs that {GAME} has"


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        (
            "zones = [1]",
            "zones = [1, 9]",
            "surveillance.zones = 9: Harbour Town (sim) has no zone 9 (zones: 1, 2)",
        ),
        (
            "include = [201]",
            "include = [201, 999]",
            "surveillance.include = 999: Harbour Town (sim) has no room 999",
        ),
        (
            'prog = "DispatchWatchman"',
            'prog = "SummonTheGuard"',
            "tools.SendTheWatch.prog = SummonTheGuard: Harbour Town (sim) has no prog of that name",
        ),
        (
            'Room = "Location"',
            'Room = "Number"',
            "tools.SendTheWatch.types.Room = Number: prog DispatchWatchman takes Room as Location",
        ),
        (
            'returns = "Text"',
            'returns = "Boolean"',
            "tools.SendTheWatch.returns = Boolean: prog DispatchWatchman returns Text",
        ),
        (
            f'world = "{GAME}"',
            'world = "sim"',
            "world = sim: its pack was written for 'sim', but the configured world is "
            "'Harbour Town (sim)'",
        ),
    ],
    ids=["missing-zone", "missing-room", "missing-prog", "type-changed", "return-type", "sim-pack"],
)
async def test_each_mismatch_is_exactly_one_finding(
    sqlite_url: str,
    sqlite_store: Store,
    game: WorldServer,
    tmp_path: Path,
    old: str,
    new: str,
    expected: str,
) -> None:
    assert FITTING.count(old) == 1
    await load_pack(
        sqlite_store.db,
        read_pack(write_pack(tmp_path, FITTING.replace(old, new))),
        clock=sqlite_store.clock,
    )
    findings = await fit_findings(sqlite_url, game)
    assert [(f.ok, f.detail) for f in findings] == [(False, f"{NAME}: {expected}")]
    assert findings[0].fix


async def test_the_shipped_sim_pack_against_a_game_is_one_finding(
    sqlite_url: str, sqlite_store: Store, game: WorldServer
) -> None:
    # The sim served over the bridge has every zone and prog harbour-ward names: what is left
    # is that the pack says it was written for the embedded sim, not for this game.
    await load_pack(
        sqlite_store.db, read_pack(ROOT / "seed" / "harbour-ward"), clock=sqlite_store.clock
    )
    findings = await fit_findings(sqlite_url, game)
    assert [(f.ok, f.detail) for f in findings] == [
        (
            False,
            "Harbour Ward Watch: world = sim: its pack was written for 'sim', but the "
            "configured world is 'Harbour Town (sim)'",
        )
    ]


async def test_the_shipped_sim_packs_fit_the_embedded_sim(
    sqlite_url: str, sqlite_store: Store
) -> None:
    for pack in ("harbour-ward", "harbour-director", "narrative-steward"):
        await load_pack(sqlite_store.db, read_pack(ROOT / "seed" / pack), clock=sqlite_store.clock)
    cfg = parse_config({"database": {"url": sqlite_url}, "world": {"kind": "sim"}}, "test.toml")
    findings = [f for f in await Doctor({}).run(lambda: cfg) if f.check == "fit"]
    assert [f.ok for f in findings] == [True], findings


def test_seed_load_check_world_refuses_a_misfit_and_loads_a_fit(tmp_path: Path) -> None:
    with served_sim(TOKEN, game=GAME) as served:
        config = tmp_path / "storyteller.toml"
        config.write_text(
            f'[database]\nurl = "sqlite+aiosqlite:///{tmp_path}/st.db"\n\n'
            f'[world]\nkind = "bridge"\nurl = "{served.url}"\ntoken_env = "FIT_TOKEN"\n',
            encoding="utf-8",
        )
        runner = CliRunner()
        env = {"FIT_TOKEN": TOKEN}

        def stctl(*args: str) -> tuple[int, str, str]:
            result = runner.invoke(app, ["--config", str(config), *args], env=env)
            return result.exit_code, result.stdout, result.stderr

        assert stctl("db", "upgrade")[0] == 0
        pack = write_pack(tmp_path / "packs", FITTING.replace("zones = [1]", "zones = [7]"))
        code, out, err = stctl("seed", "load", str(pack), "--check-world")
        assert code == 65, (out, err)
        assert f"misfit: {NAME}: surveillance.zones = 7: {GAME} has no zone 7 (zones: 1, 2)" in err
        assert "pack quay does not fit Harbour Town (sim): 1 misfit(s) above; nothing loaded" in err
        assert "No storytellers" in stctl("ais", "list")[1]

        write_pack(tmp_path / "packs", FITTING)
        code, out, err = stctl("seed", "load", str(pack), "--check-world")
        assert code == 0, (out, err)
        assert "pack quay: created 1" in out
