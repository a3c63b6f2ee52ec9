"""A pack's scenario files read into scenarios; bad ones refused with the file and key."""

from __future__ import annotations

import shutil
from datetime import timedelta
from pathlib import Path

import pytest

from storyteller_daemon.domain.scenarios import Needs, Verdict
from storyteller_daemon.errors import ConfigError
from storyteller_daemon.interchange.packs.files import SEED_DIR, read_pack
from storyteller_daemon.interchange.packs.scenarios import read_scenario, read_scenarios

WATCH = "Harbour Ward Watch"

# The example of the format reference, whole.
BRIBE = """
name = "a bribe at the docks opens a situation"
description = "what the scenario is about"
storyteller = "Harbour Ward Watch"
world = "sim"
needs = "any"

[[events]]
at = "0s"
action = "say"
character = 12
room = 101
text = "Take this purse and look the other way."
expect = "attend"

[[events]]
at = "40s"
action = "crime"
character = 12
room = 101
values = { crime = "bribery", victim = 14 }
expect = "attend"

[[events]]
at = "1h"
action = "heartbeat"
values = { heartbeat = "10m" }

[[expect.calls]]
tool = "CreateSituation"
arguments = { title = "(?i)bribe" }
least = 1
most = 2

[[expect.no_calls]]
tool = "EchoToRoom"
arguments = { room = "^104$" }

[expect]
situations = ["(?i)bribe"]
memories = []
refusals = ["dictated"]

[expect.budget]
tokens = 20000
usd = 0.01
rounds = 6
"""


def _write(folder: Path, name: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    file = folder / name
    file.write_text(text, encoding="utf-8")
    return file


def test_the_format_example_reads_into_a_scenario(tmp_path: Path) -> None:
    scenario = read_scenario(_write(tmp_path, "bribe.toml", BRIBE), [WATCH])
    assert scenario.name == "a bribe at the docks opens a situation"
    assert (scenario.storyteller, scenario.world, scenario.needs) == (WATCH, "sim", Needs.ANY)
    say, crime, beat = scenario.events
    assert (say.at, say.action, say.character, say.room) == (timedelta(0), "say", 12, 101)
    assert say.text.startswith("Take this purse") and say.expect is Verdict.ATTEND
    assert crime.at == timedelta(seconds=40)
    assert dict(crime.values) == {"crime": "bribery", "victim": 14, "witnesses": 1}
    assert (beat.at, beat.expect, dict(beat.values)) == (
        timedelta(hours=1),
        None,
        {"heartbeat": "10m"},
    )
    (bounds,) = scenario.expect.calls
    assert (bounds.pattern.tool, bounds.least, bounds.most) == ("CreateSituation", 1, 2)
    assert bounds.pattern.arguments["title"].search("A BRIBE")
    (never,) = scenario.expect.no_calls
    assert never.arguments["room"].search("104") and not never.arguments["room"].search("1040")
    assert [p.pattern for p in scenario.expect.situations] == ["(?i)bribe"]
    assert scenario.expect.refusals == ("dictated",)
    budget = scenario.expect.budget
    assert (budget.tokens, budget.usd, budget.rounds) == (20000, 0.01, 6)


def test_defaults_name_the_only_storyteller_and_the_sim(tmp_path: Path) -> None:
    text = 'name = "quiet"\n[[events]]\nat = "5m"\naction = "heartbeat"\n'
    scenario = read_scenario(_write(tmp_path, "q.toml", text), ["Harbour Ward Watch"])
    assert (scenario.storyteller, scenario.world, scenario.needs) == (WATCH, "sim", Needs.ANY)
    assert scenario.expect.calls == () and scenario.expect.budget.tokens is None
    assert scenario.events[0].at == timedelta(minutes=5)


def test_a_snapshot_world_is_a_file_beside_the_scenario(tmp_path: Path) -> None:
    (tmp_path / "worlds").mkdir()
    (tmp_path / "worlds" / "docks.json").write_text("{}", encoding="utf-8")
    text = (
        'name = "s"\nworld = "../worlds/docks.json"\n[[events]]\nat = "0s"\naction = "heartbeat"\n'
    )
    scenario = read_scenario(_write(tmp_path / "scenarios", "s.toml", text))
    assert scenario.world == str((tmp_path / "worlds" / "docks.json").resolve())


def test_a_pack_reads_its_scenarios_folder(tmp_path: Path) -> None:
    pack_dir = tmp_path / "harbour-ward"
    shutil.copytree(SEED_DIR / "harbour-ward", pack_dir)
    shutil.rmtree(pack_dir / "scenarios", ignore_errors=True)
    assert read_scenarios(read_pack(pack_dir)) == ()
    _write(pack_dir / "scenarios", "b.toml", BRIBE)
    _write(pack_dir / "scenarios", "a.toml", BRIBE.replace("a bribe at", "another bribe at"))
    found = read_scenarios(read_pack(pack_dir))
    assert [f.source.name for f in found] == ["a.toml", "b.toml"]
    assert found[1].scenario.name == "a bribe at the docks opens a situation"
    _write(pack_dir / "scenarios", "c.toml", BRIBE.replace("a bribe", "A Bribe"))
    with pytest.raises(ConfigError, match=r"c\.toml: name: 'A Bribe at the docks.*' is also"):
        read_scenarios(read_pack(pack_dir))


# id: (text to replace, replacement, key, words in the message)
CASES = {
    "unknown-key": ('needs = "any"', 'needs = "any"\ncolour = 1', "colour", "unknown key"),
    "bad-duration": ('at = "40s"', 'at = "forty"', "events[1].at", "'forty' is not a duration"),
    "bare-number": ('at = "40s"', 'at = "40"', "events[1].at", "is not a duration"),
    "out-of-order": ('at = "1h"', 'at = "30s"', "events[2].at", "comes before the event above"),
    "bad-action": (
        'action = "crime"',
        'action = "steal"',
        "events[1].action",
        "'steal' is not an action",
    ),
    "bad-verdict": (
        'expect = "attend"\n\n[[events]]\nat = "40s"',
        'expect = "notice"\n\n[[events]]\nat = "40s"',
        "events[0].expect",
        '\'notice\' is not one of "attend" or "ignore"',
    ),
    "bad-needs": ('needs = "any"', 'needs = "gpt"', "needs", "'gpt' is not one of"),
    "bad-argument-regex": (
        'title = "(?i)bribe"',
        'title = "(bribe"',
        "expect.calls[0].arguments.title",
        "'(bribe' is not a regular expression",
    ),
    "bad-situation-regex": (
        'situations = ["(?i)bribe"]',
        'situations = ["[bribe"]',
        "expect.situations",
        "'[bribe' is not a regular expression",
    ),
    "most-below-least": (
        "most = 2",
        "most = 0",
        "expect.calls[0].most",
        "must be at least `least`",
    ),
    "unknown-budget-key": ("rounds = 6", "round = 6", "expect.budget.round", "unknown key"),
    "usd-not-a-number": ("usd = 0.01", 'usd = "cheap"', "expect.budget.usd", "must be a number"),
    "unknown-value": (
        "victim = 14 }",
        'victim = 14, weapon = "knife" }',
        "events[1].values.weapon",
        "unknown key",
    ),
    "crime-without-name": (
        '{ crime = "bribery", victim = 14 }',
        "{ victim = 14 }",
        "events[1].values.crime",
        "required key is missing",
    ),
    "say-without-text": (
        'text = "Take this purse and look the other way."',
        "",
        "events[0].text",
        "required for a say",
    ),
    "say-without-character": (
        "character = 12\nroom = 101\ntext",
        "room = 101\ntext",
        "events[0].character",
        "required for a say",
    ),
    "bad-heartbeat": (
        'values = { heartbeat = "10m" }',
        'values = { heartbeat = "7m" }',
        "events[2].values.heartbeat",
        "'7m'",
    ),
    "heartbeat-with-character": (
        'action = "heartbeat"',
        'action = "heartbeat"\ncharacter = 3',
        "events[2].character",
        "a heartbeat takes no character",
    ),
    "unknown-storyteller": (
        'storyteller = "Harbour Ward Watch"',
        'storyteller = "Temple Watch"',
        "storyteller",
        "'Temple Watch' is not a storyteller of this pack",
    ),
    "missing-snapshot": (
        'world = "sim"',
        'world = "docks.json"',
        "world",
        'neither "sim" nor a snapshot file',
    ),
    "negative-id": (
        "character = 12\nroom = 101\ntext",
        "character = -2\nroom = 101\ntext",
        "events[0].character",
        "must be a positive id",
    ),
    "no-name": (
        'name = "a bribe at the docks opens a situation"',
        "",
        "name",
        "required key is missing",
    ),
}


@pytest.mark.parametrize(("old", "new", "key", "message"), CASES.values(), ids=CASES.keys())
def test_a_bad_scenario_is_refused_naming_file_and_key(
    tmp_path: Path, old: str, new: str, key: str, message: str
) -> None:
    assert BRIBE.count(old) == 1, old
    file = _write(tmp_path, "bribe.toml", BRIBE.replace(old, new))
    with pytest.raises(ConfigError) as caught:
        read_scenario(file, [WATCH])
    assert caught.value.key == key
    assert caught.value.path.endswith("bribe.toml")
    assert message in caught.value.problem
    assert "\n" not in str(caught.value)


def test_a_scenario_without_events_or_valid_toml_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="events: a scenario needs at least one"):
        read_scenario(_write(tmp_path, "e.toml", 'name = "empty"\n'))
    with pytest.raises(ConfigError, match="not valid TOML"):
        read_scenario(_write(tmp_path, "t.toml", 'name = "x\n'))
