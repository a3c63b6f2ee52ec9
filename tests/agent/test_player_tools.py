"""OnlinePlayers and PlayerInformation against the sim world and the real memory repository."""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import Any

import pytest
from agent_doubles import execute

from progs.types import ProgParameter, ProgSignature, ProgType, ValueType
from storyteller_daemon.agent.services import TurnServices
from storyteller_daemon.agent.tools.context import ToolContext
from storyteller_daemon.domain.storytellers import Storyteller
from storyteller_daemon.storage.store import Store
from world_adapter.sim import SimWorld
from world_adapter.sim.harbour_map import HARBOUR_TOWN_MAP
from world_adapter.sim.harbour_people import HARBOUR_TOWN_PEOPLE
from world_adapter.sim.progs import HARBOUR_TOWN_PROGS, SimProg

MAREN, OSRIC, ILSA, HOLT = 1001, 1002, 1003, 2001


def _with_player_prog(ctx: ToolContext, prog: str | None) -> ToolContext:
    return replace(ctx, storyteller=replace(ctx.current, player_info_prog=prog))


async def test_online_players_lists_players_with_memory_counts(ctx: ToolContext) -> None:
    for title in ("One", "Two"):
        await execute(ctx, "CreateMemory", {"Id": MAREN, "Title": title, "Details": "x"})
    await execute(ctx, "CreateMemory", {"Id": HOLT, "Title": "NPC note", "Details": "x"})
    envelope = await execute(ctx, "OnlinePlayers", {})
    assert envelope["ok"] is True
    players = {p["Id"]: p for p in envelope["result"]["Players"]}
    assert set(players) == {MAREN, OSRIC, ILSA}
    maren = players[MAREN]
    assert maren == {
        "Id": MAREN,
        "Name": "Maren Tidewell",
        "Gender": "Female",
        "ShortDescription": "a weather-tanned woman with salt-stiff braids",
        "LocationId": 101,
        "LocationName": "Harbour Quay",
        "NumberOfMemories": 2,
    }
    assert players[OSRIC]["NumberOfMemories"] == 0


async def test_online_player_ids_are_the_ids_memory_tools_take(ctx: ToolContext) -> None:
    players = (await execute(ctx, "OnlinePlayers", {}))["result"]["Players"]
    for player in players:
        created = await execute(
            ctx, "CreateMemory", {"Id": player["Id"], "Title": "t", "Details": "d"}
        )
        assert created["result"]["CharacterId"] == player["Id"]
        info = await execute(ctx, "PlayerInformation", {"Id": player["Id"]})
        assert info["result"]["Id"] == player["Id"]


async def test_player_information_has_futuremud_keys_and_memories(ctx: ToolContext) -> None:
    memory = await execute(ctx, "CreateMemory", {"Id": MAREN, "Title": "Owes", "Details": "x"})
    envelope = await execute(ctx, "PlayerInformation", {"Id": MAREN})
    assert envelope["ok"] is True
    result = envelope["result"]
    assert list(result) == [
        "Id", "Name", "Gender", "Race", "Ethnicity", "Culture", "Age", "AgeCategory",
        "Birthday", "ShortDescription", "FullDescription", "LocationId", "LocationName",
        "Memories",
    ]  # fmt: skip
    assert (result["Name"], result["Age"], result["LocationName"]) == (
        "Maren Tidewell",
        27,
        "Harbour Quay",
    )
    assert [m["Id"] for m in result["Memories"]] == [memory["result"]["Id"]]


async def test_player_information_refuses_non_players(ctx: ToolContext) -> None:
    for character_id in (HOLT, 424242):
        envelope = await execute(ctx, "PlayerInformation", {"Id": character_id})
        assert envelope == {
            "ok": False,
            "error": f"No player character with id {character_id} exists.",
        }


async def test_player_information_merges_the_custom_prog(ctx: ToolContext) -> None:
    envelope = await execute(
        _with_player_prog(ctx, "HarbourPlayerProfile"), "PlayerInformation", {"Id": MAREN}
    )
    result = envelope["result"]
    assert result["Reputation"] == "Well liked on the quay"
    assert result["Faction"] == "Fishers' Guild"
    assert list(result)[-1] == "Memories"


def _greedy_prog(town: Any, arguments: Any) -> dict[str, str]:
    return {"Name": "Impostor", "memories": "none", "Mood": "wary"}


async def test_the_custom_prog_never_overwrites_built_in_keys(
    sqlite_store: Store, storyteller: Storyteller
) -> None:
    greedy = SimProg(
        ProgSignature(
            90,
            "GreedyProfile",
            (ProgParameter("Who", ValueType(ProgType.CHARACTER)),),
            ValueType(ProgType.DICTIONARY),
        ),
        _greedy_prog,
    )
    world = SimWorld(HARBOUR_TOWN_MAP, HARBOUR_TOWN_PEOPLE, (*HARBOUR_TOWN_PROGS, greedy))
    ctx = ToolContext(
        TurnServices(
            world=world,
            situations=sqlite_store.situations,
            memories=sqlite_store.memories,
            references=sqlite_store.references,
        )
    ).for_turn(replace(storyteller, player_info_prog="GreedyProfile"), "turn-1")
    result = (await execute(ctx, "PlayerInformation", {"Id": MAREN}))["result"]
    assert result["Name"] == "Maren Tidewell"
    assert result["Memories"] == []
    assert result["Mood"] == "wary"


@pytest.mark.parametrize("prog", ["BrokenProg", "NoSuchProg", "HarbourWatchStatus"])
async def test_a_failing_custom_prog_is_logged_and_ignored(
    ctx: ToolContext, prog: str, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING):
        envelope = await execute(_with_player_prog(ctx, prog), "PlayerInformation", {"Id": MAREN})
    assert envelope["ok"] is True
    assert envelope["result"]["Name"] == "Maren Tidewell"
    assert "Reputation" not in envelope["result"]
    assert (
        f"Custom player information prog failed for storyteller {ctx.storyteller_id}" in caplog.text
    )
