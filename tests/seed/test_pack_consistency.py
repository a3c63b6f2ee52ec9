"""The shipped packs only mention tools that exist and bind progs with the right parameters."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from progs.types import ProgSignature
from storyteller_daemon.domain.storytellers import EventKind, Heartbeat
from storyteller_daemon.domain.surveillance import Surveillance
from storyteller_daemon.domain.tool_names import BUILTIN_TOOL_NAMES
from storyteller_daemon.interchange.packs.contents import Pack
from storyteller_daemon.interchange.packs.files import list_packs, read_pack
from world_adapter.sim import SimWorld

PACKS = [read_pack(p) for p in list_packs()]
PACK_IDS = [p.name for p in PACKS]

# The progs the packs bind, as the sim world declares them: (parameters, return type).
PROG_SIGNATURES: dict[str, tuple[tuple[tuple[str, str], ...], str]] = {
    "AIStorytellerStatusFiveMinute": ((), "Text"),
    "AIStorytellerStatusHourly": ((), "Text"),
    "AIStorytellerToolRecordCue": ((("Cue", "Text"),), "Text"),
    "HarbourWatchStatus": ((), "Text"),
    "EchoToRoom": ((("Room", "Location"), ("Text", "Text")), "Boolean"),
    "CrowdShout": ((("Room", "Location"), ("Text", "Text")), "Boolean"),
    "DispatchWatchman": ((("Room", "Location"), ("Reason", "Text")), "Text"),
    "WhisperToCharacter": ((("Character", "Character"), ("Text", "Text")), "Boolean"),
    "HarbourPlayerProfile": ((("Character", "Character"),), "Dictionary"),
}

# CamelCase words the packs may use that are not tools: tool parameters, result keys, path
# search rules and the name of a tool profile. Every entry must be used somewhere.
NOT_TOOLS = frozenset(
    {
        "CharacterId",
        "RoomId",
        "OriginRoomId",
        "DestinationRoomId",
        "OriginCharacterId",
        "DestinationCharacterId",
        "PathSearchFunction",
        "HasPath",
        "RespectClosedDoors",
        "IncludeUnlockedDoors",
        "IgnorePresenceOfDoors",
        "IncludeUnlockableDoors",
        "EventFocused",
    }
)
CAMEL_CASE = re.compile(r"\b[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+\b")
REMOVED_TOOLS = re.compile(r"(end\s*)?bypass\s*attention", re.IGNORECASE)


def _texts(pack: Pack) -> dict[str, str]:
    """Every prompt and document text of a pack, keyed by where it comes from."""
    texts: dict[str, str] = {}
    for st in pack.storytellers:
        texts[f"{st.name}: system prompt"] = st.system_prompt
        texts[f"{st.name}: time system prompt"] = st.time_system_prompt or ""
        texts[f"{st.name}: attention prompt"] = st.attention_prompt
        for tool in st.custom_tools:
            descriptions = " ".join(d for _, d in tool.parameter_descriptions)
            texts[f"{st.name}: tool {tool.name}"] = f"{tool.description} {descriptions}"
    for doc in pack.documents:
        d = doc.document
        texts[doc.source.name] = "\n".join((d.name, d.description, d.keywords, d.contents))
    return texts


def test_shipped_packs_are_the_three_examples() -> None:
    assert PACK_IDS == ["harbour-director", "harbour-ward", "narrative-steward"]


def _unknown_tool_words(pack: Pack) -> set[str]:
    """CamelCase words that are not a built-in, one of the pack's tools or a known non-tool."""
    own_tools = {t.name for st in pack.storytellers for t in st.custom_tools}
    known = BUILTIN_TOOL_NAMES | own_tools | NOT_TOOLS
    return {
        f"{where}: {word}"
        for where, text in _texts(pack).items()
        for word in CAMEL_CASE.findall(text)
        if word not in known
    }


def _files_naming_removed_tools(pack: Pack) -> list[str]:
    files = [f for f in sorted(pack.path.rglob("*")) if f.is_file()]
    assert len(files) >= 3
    return [f.name for f in files if REMOVED_TOOLS.search(f.read_text(encoding="utf-8"))]


@pytest.mark.parametrize("pack", PACKS, ids=PACK_IDS)
def test_prompts_and_documents_name_only_existing_tools(pack: Pack) -> None:
    assert _unknown_tool_words(pack) == set()
    assert _files_naming_removed_tools(pack) == []


def test_the_tool_scan_catches_removed_misspelt_and_foreign_tools(
    copy_pack: Callable[[str], Path], edit: Callable[[Path, str, str], None]
) -> None:
    pack_dir = copy_pack("narrative-steward")
    edit(
        pack_dir / "references" / "06-skill-event-triage.md",
        "If all three answers are no, call Noop.",
        "Otherwise call BypassAttention, SearchReferenceDocument or SendTheWatch.",
    )
    edit(pack_dir / "prompts" / "attention.md", "When in doubt", "Use end bypass attention. When")

    pack = read_pack(pack_dir)

    where = "06-skill-event-triage.md"
    assert _unknown_tool_words(pack) == {
        f"{where}: BypassAttention",
        f"{where}: SearchReferenceDocument",
        f"{where}: SendTheWatch",
    }
    assert _files_naming_removed_tools(pack) == ["attention.md", where]


def test_the_word_list_is_tight() -> None:
    used = {w for pack in PACKS for text in _texts(pack).values() for w in CAMEL_CASE.findall(text)}
    assert not NOT_TOOLS & BUILTIN_TOOL_NAMES
    assert NOT_TOOLS <= used


@pytest.mark.parametrize("pack", PACKS, ids=PACK_IDS)
def test_custom_tools_match_their_prog_signatures(pack: Pack) -> None:
    for st in pack.storytellers:
        for tool in st.custom_tools:
            parameters, _ = PROG_SIGNATURES[tool.prog]
            assert [p for p, _ in tool.parameter_descriptions] == [p for p, _ in parameters], (
                tool.name
            )
        for _, prog in st.status_progs:
            assert PROG_SIGNATURES[prog] == ((), "Text")
        if st.player_info_prog is not None:
            assert PROG_SIGNATURES[st.player_info_prog] == (
                (("Character", "Character"),),
                "Dictionary",
            )


async def test_the_sim_world_declares_the_progs_the_packs_bind() -> None:
    catalogue: dict[str, ProgSignature] = {p.name: p for p in await SimWorld.harbour_town().progs()}

    for name, (parameters, returns) in PROG_SIGNATURES.items():
        declared = catalogue[name]
        assert tuple((p.name, p.type.describe()) for p in declared.parameters) == parameters
        assert declared.return_type.describe() == returns
        assert declared.compile_error == ""


@pytest.mark.parametrize("pack", PACKS, ids=PACK_IDS)
def test_prompts_follow_the_runtime_contract(pack: Pack) -> None:
    for st in pack.storytellers:
        attention = " ".join(st.attention_prompt.split())
        # The daemon appends the batch verdict contract; a prompt with its own answer format
        # would contradict it.
        assert '"decision"' not in attention and "JSON" not in attention, st.name
        assert "untrusted" in attention and "Never follow instructions" in attention, st.name
        for prompt in (st.system_prompt, st.time_system_prompt or st.system_prompt):
            flat = " ".join(prompt.split())
            assert "never instructions" in flat, st.name
            assert "tool call" in flat and "discarded" in flat, st.name


def test_packs_share_no_names() -> None:
    """Loading both packs into one database must not make them overwrite each other."""
    storytellers = [st.name.casefold() for pack in PACKS for st in pack.storytellers]
    documents = [d.document.name.casefold() for pack in PACKS for d in pack.documents]
    assert len(set(storytellers)) == len(storytellers)
    assert len(set(documents)) == len(documents)


def test_narrative_steward_ports_the_starter_pack() -> None:
    pack = read_pack("narrative-steward")
    (steward,) = pack.storytellers

    assert steward.name == "Example Narrative Steward"
    assert not steward.paused
    assert steward.subscriptions == frozenset()
    assert steward.surveillance == Surveillance()
    assert steward.heartbeats == {Heartbeat.FIVE_MINUTES, Heartbeat.HOUR}
    assert dict(steward.status_progs) == {
        Heartbeat.FIVE_MINUTES: "AIStorytellerStatusFiveMinute",
        Heartbeat.HOUR: "AIStorytellerStatusHourly",
    }
    (cue,) = steward.custom_tools
    assert (cue.name, cue.prog, cue.echo_only) == (
        "RecordNarrativeCue",
        "AIStorytellerToolRecordCue",
        False,
    )
    assert len(pack.documents) == 12
    restricted = {d.document.name: d.restricted_to for d in pack.documents if d.restricted_to}
    assert restricted == {"Harbour Ward Factions": (steward.name,)}
    skills = [d for d in pack.documents if d.document.name.startswith("Skill - ")]
    assert len(skills) == 10


def test_harbour_ward_watches_the_ward_on_events_and_heartbeats() -> None:
    pack = read_pack("harbour-ward")
    (watch,) = pack.storytellers

    assert watch.name == "Harbour Ward Watch"
    assert watch.paused
    assert watch.subscriptions == set(EventKind)
    assert watch.surveillance == Surveillance(
        zones=frozenset({1}), included=frozenset({201}), excluded=frozenset({108})
    )
    assert watch.heartbeats == {Heartbeat.TEN_MINUTES, Heartbeat.THIRTY_MINUTES}
    assert set(dict(watch.status_progs).values()) == {"HarbourWatchStatus"}
    assert (watch.speech_context_count, watch.speech_context_window.total_seconds()) == (5, 180)
    assert watch.player_info_prog == "HarbourPlayerProfile"
    assert (watch.model, watch.attention_model) == ("gpt-5-mini", "gpt-5-nano")
    assert watch.time_system_prompt and watch.time_system_prompt != watch.system_prompt
    tools = {t.name: (t.prog, t.echo_only) for t in watch.custom_tools}
    assert tools == {
        "EchoToRoom": ("EchoToRoom", False),
        "ShoutFromCrowd": ("CrowdShout", True),
        "SendTheWatch": ("DispatchWatchman", False),
        "WhisperToCharacter": ("WhisperToCharacter", False),
    }
    assert {d.document.name for d in pack.documents if d.restricted_to} >= {
        "Harbour Watch Rules of Engagement"
    }
