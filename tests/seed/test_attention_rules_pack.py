"""Attention rules in packs: ``[[storyteller.attention_rules]]`` read, checked and loaded."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pytest

from storyteller_daemon.domain.attention_rules import AttentionRule, RuleAction
from storyteller_daemon.errors import ConfigError
from storyteller_daemon.interchange.packs.files import read_pack
from storyteller_daemon.storage.seeding import Action, Change, load_pack
from storyteller_daemon.storage.store import Store

CopyPack = Callable[[str], Path]
EditFile = Callable[[Path, str, str], None]

WATCH = "Harbour Ward Watch"
ST = f'storyteller["{WATCH}"]'
SHIPPED_RULE = """[[storyteller.attention_rules]]
name = "hour-bell"
action = "ignore"
kinds = ["room_echo"]
pattern = '^\\s*the harbour bell tolls the hour\\.?\\s*$'
"""
OFFICE_RULE = """
[[storyteller.attention_rules]]
name = "office-crime"
action = "attend"
kinds = ["crime", "speech"]
rooms = [108, 107]
pattern = 'theft|smuggl'
cooldown_seconds = 300
"""


def test_the_harbour_ward_ignores_only_the_bell_tolling_the_hour() -> None:
    (watch,) = read_pack("harbour-ward").storytellers
    (bell,) = watch.attention_rules
    assert (bell.name, bell.action, bell.kinds, bell.rooms) == (
        "hour-bell",
        RuleAction.IGNORE,
        frozenset({"room_echo"}),
        frozenset(),
    )
    assert bell.cooldown == timedelta(0)
    assert bell.matches("room_echo", 101, "The harbour bell tolls the hour.")
    assert bell.matches("room_echo", 201, "  THE HARBOUR BELL TOLLS THE HOUR ")
    for alarm in (
        "The harbour bell tolls the hour, and a woman screams.",
        "The harbour bell rings out in alarm!",
        "Someone says the harbour bell tolls the hour early today.",
    ):
        assert not bell.matches("room_echo", 101, alarm)
    assert not bell.matches("speech", 101, "The harbour bell tolls the hour.")


def test_every_key_of_a_rule_is_read_in_pack_order(copy_pack: CopyPack, edit: EditFile) -> None:
    pack_dir = copy_pack("harbour-ward")
    edit(pack_dir / "pack.toml", SHIPPED_RULE, SHIPPED_RULE + OFFICE_RULE)

    (watch,) = read_pack(pack_dir).storytellers

    assert [r.name for r in watch.attention_rules] == ["hour-bell", "office-crime"]
    assert watch.attention_rules[1] == AttentionRule(
        "office-crime",
        RuleAction.ATTEND,
        kinds=frozenset({"crime", "speech"}),
        rooms=frozenset({107, 108}),
        pattern="theft|smuggl",
        cooldown=timedelta(minutes=5),
    )


def test_a_pack_without_rules_has_none() -> None:
    (steward,) = read_pack("narrative-steward").storytellers
    assert steward.attention_rules == ()


RULE = f'{ST}.attention_rules["hour-bell"]'


@pytest.mark.parametrize(
    ("old", "new", "key", "message"),
    [
        ('action = "ignore"', 'action = "skip"', f"{RULE}.action", "'skip' is not a rule action"),
        ('action = "ignore"\n', "", f"{RULE}.action", "required key is missing"),
        ('name = "hour-bell"', 'name = "Hour Bell"', f'{ST}.attention_rules["Hour Bell"]',
         "rule name 'Hour Bell' must be 1-40 lower-case letters"),
        ('kinds = ["room_echo"]', 'kinds = ["room"]', RULE, "unknown kind 'room'"),
        ('kinds = ["room_echo"]', 'kinds = ["crime", "crime"]', f"{RULE}.kinds",
         "lists the same value twice"),
        ('kinds = ["room_echo"]', "kinds = [1]", f"{RULE}.kinds", "non-blank strings"),
        ('kinds = ["room_echo"]', 'kinds = ["room_echo"]\nrooms = [0]', f"{RULE}.rooms",
         "positive integer ids"),
        ('kinds = ["room_echo"]', 'kinds = ["room_echo"]\ncooldown_seconds = -1', RULE,
         "cooldown must not be negative"),
        ('kinds = ["room_echo"]', 'kinds = ["room_echo"]\ncooldown_seconds = "5m"',
         f"{RULE}.cooldown_seconds", "must be an integer"),
        ('kinds = ["room_echo"]', 'kinds = ["room_echo"]\ncooldown = 5', f"{RULE}.cooldown",
         "unknown key"),
        ("pattern = '^", "pattern = '(^", RULE, "pattern is not a regular expression"),
        ("pattern = '^", "pattern = 5\nx = '", f"{RULE}.pattern", "must be a string"),
        (SHIPPED_RULE, SHIPPED_RULE * 2, f"{RULE}.name", "a second attention rule named"),
    ],
)  # fmt: skip
def test_a_bad_rule_names_the_file_and_the_key(
    copy_pack: CopyPack, edit: EditFile, old: str, new: str, key: str, message: str
) -> None:
    pack_dir = copy_pack("harbour-ward")
    edit(pack_dir / "pack.toml", old, new)

    with pytest.raises(ConfigError) as caught:
        read_pack(pack_dir)

    assert Path(caught.value.path).resolve() == (pack_dir / "pack.toml").resolve()
    assert caught.value.key == key
    assert message in caught.value.problem


async def test_rules_load_and_reload_as_one_setting(
    store: Store, copy_pack: CopyPack, edit: EditFile
) -> None:
    pack_dir = copy_pack("harbour-ward")
    await load_pack(store.db, read_pack(pack_dir), clock=store.clock)
    loaded = await store.storytellers.get(WATCH)
    assert loaded.attention_rules == read_pack(pack_dir).storytellers[0].attention_rules

    again = await load_pack(store.db, read_pack(pack_dir), clock=store.clock)
    assert not again.changed
    assert (await store.storytellers.get(WATCH)).revision == loaded.revision

    edit(pack_dir / "pack.toml", SHIPPED_RULE, OFFICE_RULE + "\n" + SHIPPED_RULE)
    report = await load_pack(store.db, read_pack(pack_dir), clock=store.clock)
    assert report.changes[0] == Change("storyteller", WATCH, Action.UPDATE, ("attention_rules",))
    updated = await store.storytellers.get(WATCH)
    assert [r.name for r in updated.attention_rules] == ["office-crime", "hour-bell"]
    assert updated.revision == loaded.revision + 1


async def test_reordering_rules_is_a_change(
    store: Store, copy_pack: CopyPack, edit: EditFile
) -> None:
    pack_dir = copy_pack("harbour-ward")
    edit(pack_dir / "pack.toml", SHIPPED_RULE, SHIPPED_RULE + OFFICE_RULE)
    await load_pack(store.db, read_pack(pack_dir), clock=store.clock)
    edit(pack_dir / "pack.toml", SHIPPED_RULE + OFFICE_RULE, OFFICE_RULE + "\n" + SHIPPED_RULE)

    report = await load_pack(store.db, read_pack(pack_dir), dry_run=True, clock=store.clock)

    assert report.changes[0].fields == ("attention_rules",)
