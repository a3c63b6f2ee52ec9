"""Bad packs are refused before any write, with the file and key of the problem."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from storyteller_daemon.errors import ConfigError
from storyteller_daemon.interchange.packs.files import read_pack

ST = 'storyteller["Harbour Ward Watch"]'
PACK = "pack.toml"
RULES = "references/03-harbour-watch-rules.md"
PLACES = "references/02-harbour-ward-places.md"

# (file to edit, text to replace, replacement, file named in the error, key, words in the message)
CASES = [
    pytest.param(
        PACK, "starts_paused = true", "starts_paused = true\ncolour = 'blue'",
        PACK, f"{ST}.colour", "unknown key", id="unknown-storyteller-key",
    ),
    pytest.param(
        PACK, "echo_only = true", "echo_only = true\necho = true",
        PACK, f'{ST}.tools["ShoutFromCrowd"].echo', "unknown key", id="unknown-tool-key",
    ),
    pytest.param(
        PACK, "[pack]", "[pack]\nversion = 2",
        PACK, "pack.version", "unknown key", id="unknown-pack-key",
    ),
    pytest.param(
        PACK, 'time = "low"', 'time = "fast"',
        PACK, f"{ST}.effort.time", "'fast' is not a reasoning effort", id="bad-effort",
    ),
    pytest.param(
        RULES, 'restricted_to = ["Harbour Ward Watch"]', 'restricted_to = ["Harbour Watch"]',
        RULES, "restricted_to", "'Harbour Watch' is not a storyteller of this pack",
        id="unknown-restricted-storyteller",
    ),
    pytest.param(
        PACK, 'name = "EchoToRoom"', 'name = "noop"',
        PACK, f'{ST}.tools["noop"].name', "collides with the built-in tool",
        id="tool-collides-with-builtin",
    ),
    pytest.param(
        PACK, 'name = "WhisperToCharacter"', 'name = "Whisper To Character"',
        PACK, f'{ST}.tools["Whisper To Character"].name', "is invalid",
        id="tool-name-pattern",
    ),
    pytest.param(
        PACK, 'name = "WhisperToCharacter"', 'name = "echotoroom"',
        PACK, f'{ST}.tools["echotoroom"].name', "a second tool named", id="duplicate-tool",
    ),
    pytest.param(
        RULES, "folder = ", "tags = []\nfolder = ",
        RULES, "tags", "unknown key", id="unknown-document-key",
    ),
    pytest.param(
        PACK, 'system = "prompts/system.md"', 'system = "prompts/missing.md"',
        PACK, f"{ST}.prompts.system", "'prompts/missing.md' does not exist", id="missing-prompt",
    ),
    pytest.param(
        PACK, 'system = "prompts/system.md"', 'system = "../narrative-steward/pack.toml"',
        PACK, f"{ST}.prompts.system", "outside the pack directory", id="prompt-outside-pack",
    ),
    pytest.param(
        PACK, 'system = "prompts/system.md"\n', "",
        PACK, f"{ST}.prompts.system", "required key is missing", id="missing-system-prompt",
    ),
    pytest.param(
        PACK, '10m = "HarbourWatchStatus"', '1h = "HarbourWatchStatus"',
        PACK, f"{ST}.status_progs.1h", "the 1h heartbeat is not in heartbeats",
        id="status-prog-without-heartbeat",
    ),
    pytest.param(
        PACK, 'heartbeats = ["10m", "30m"]', 'heartbeats = ["10m", "10"]',
        PACK, f"{ST}.heartbeats", "the same value twice", id="duplicate-heartbeat",
    ),
    pytest.param(
        PACK, '"crime", "state"]', '"crimes", "gossip"]',
        PACK, f"{ST}.subscriptions", "'gossip' is not an event type", id="bad-subscription",
    ),
    pytest.param(
        PACK, 'subscriptions = ["room", "speech", "crime", "state"]', 'subscriptions = "room"',
        PACK, f"{ST}.subscriptions", "must be an array", id="wrong-type",
    ),
    pytest.param(
        PACK, "events = 5", "events = 51",
        PACK, f"{ST}.speech_context.events", "between 0 and 50", id="speech-count-range",
    ),
    pytest.param(
        PACK, "window_seconds = 180", "window_seconds = true",
        PACK, f"{ST}.speech_context.window_seconds", "must be an integer", id="bool-for-number",
    ),
    pytest.param(
        PACK, "include = [201]", "include = [201, -3]",
        PACK, f"{ST}.surveillance.include", "positive integer ids", id="bad-room-id",
    ),
    pytest.param(
        PACK, 'Reason = "Text"', 'Reason = "Scroll"',
        PACK, f'{ST}.tools["SendTheWatch"].types.Reason', "unknown prog type 'Scroll'",
        id="unknown-prog-type",
    ),
    pytest.param(
        PACK, 'Reason = "Text"', 'Reason = "Text"\nUrgency = "Number"',
        PACK, f'{ST}.tools["SendTheWatch"].types.Urgency', "is not a parameter in parameters",
        id="type-of-an-undescribed-parameter",
    ),
    pytest.param(
        PACK, 'returns = "Text"', 'returns = "Collection<Nothing>"',
        PACK, f'{ST}.tools["SendTheWatch"].returns', "unknown prog type", id="bad-return-type",
    ),
    pytest.param(
        PACK, 'returns = "Text"', 'returns = "Text"\ndictated = "loud"',
        PACK, f'{ST}.tools["SendTheWatch"].dictated', "must be one of refuse, quote, allow",
        id="bad-dictated-mode",
    ),
    pytest.param(
        PACK, 'Reason = "Why', 'reason = "x"\nReason = "Why',
        PACK, f'{ST}.tools["SendTheWatch"].parameters', "the same parameter twice",
        id="duplicate-parameter",
    ),
    pytest.param(
        PLACES, 'name = "Harbour Ward Places"', 'name = "HARBOUR WARD PEOPLE"',
        PLACES, "name", "also the name of 01-harbour-ward-people.md", id="duplicate-document",
    ),
    pytest.param(
        PLACES, "+++\nname", "name",
        PLACES, None, "must start with a '+++' line", id="no-front-matter",
    ),
    pytest.param(
        PACK, 'event = "gpt-5-mini"', 'event = "gpt-5-mini',
        PACK, None, "not valid TOML", id="toml-syntax",
    ),
]  # fmt: skip


@pytest.mark.parametrize(("edited", "old", "new", "file", "key", "message"), CASES)
def test_invalid_pack_names_file_and_key(
    copy_pack: Callable[[str], Path],
    edit: Callable[[Path, str, str], None],
    edited: str,
    old: str,
    new: str,
    file: str,
    key: str | None,
    message: str,
) -> None:
    pack_dir = copy_pack("harbour-ward")
    edit(pack_dir / edited, old, new)

    with pytest.raises(ConfigError) as caught:
        read_pack(pack_dir)

    error = caught.value
    assert Path(error.path).resolve() == (pack_dir / file).resolve()
    assert error.key == key
    assert message in error.problem
    assert str(error).startswith(error.path)


def test_unknown_pack_lists_the_packs_available(tmp_path: Path) -> None:
    (tmp_path / "one").mkdir()
    (tmp_path / "one" / "pack.toml").write_text('[pack]\ndescription = "x"\n')

    with pytest.raises(ConfigError, match=r"packs available: one\)"):
        read_pack("two", tmp_path)


def test_a_pack_is_found_by_name_by_directory_and_by_its_pack_file(
    copy_pack: Callable[[str], Path],
) -> None:
    pack_dir = copy_pack("harbour-ward")

    found = [read_pack("harbour-ward", pack_dir.parent), read_pack(pack_dir)]
    found.append(read_pack(pack_dir / "pack.toml"))

    assert {p.path for p in found} == {pack_dir}
    assert found[0] == found[1] == found[2]


def test_a_path_wins_over_a_shipped_pack_of_the_same_name(
    copy_pack: Callable[[str], Path],
    edit: Callable[[Path, str, str], None],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pack_dir = copy_pack("harbour-ward")
    edit(pack_dir / "pack.toml", 'description = "Harbour Ward Watch:', 'description = "Copy:')
    monkeypatch.chdir(pack_dir.parent)

    assert read_pack("./harbour-ward").description.startswith("Copy:")
    assert read_pack("harbour-ward/pack.toml").description.startswith("Copy:")
    assert read_pack("harbour-ward").description.startswith("Harbour Ward Watch:")
