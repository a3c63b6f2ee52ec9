"""``storyteller ais set REF rule …``: attention rules added, shown, refused and removed."""

from __future__ import annotations

from typing import Any

import pytest
from test_ais_harness import Cli, cli_fixture

cli = cli_fixture("Watcher", "Crier")


def rule(cli: Cli, *args: str) -> str:
    return cli.ok("ais", "set", "Watcher", "rule", *args).rstrip("\n")


def fail(cli: Cli, *args: str) -> str:
    return cli.fails("ais", "set", "Watcher", "rule", *args)


def rules(cli: Cli, ref: str = "Watcher") -> list[dict[str, Any]]:
    shown: list[dict[str, Any]] = cli.show(ref)["attention_rules"]
    return shown


def test_a_new_storyteller_shows_no_rules(cli: Cli) -> None:
    assert rules(cli) == []
    assert "Attention rules: none\n" in cli.ok("ais", "show", "Watcher")


def test_add_with_every_option_then_show_in_text_and_json(cli: Cli) -> None:
    revision = cli.show("Watcher")["revision"]
    assert rule(
        cli,
        "add",
        "hour-bell",
        "ignore",
        "--kind",
        "room_echo",
        "--room",
        "102",
        "--room",
        "101",
        "--pattern",
        r"^the harbour bell tolls\b",
        "--cooldown",
        "300",
    ) == (
        "Storyteller Watcher has attention rule hour-bell (1 of 1): ignore room_echo events in "
        r"rooms #101, #102 matching /^the harbour bell tolls\b/, at most once per 5m per room."
    )
    assert rule(cli, "add", "crimes", "ATTEND", "--kind", "crime") == (
        "Storyteller Watcher has attention rule crimes (2 of 2): always attend to crime events "
        "in any room."
    )
    assert rules(cli) == [
        {
            "name": "hour-bell",
            "action": "ignore",
            "kinds": ["room_echo"],
            "rooms": [101, 102],
            "pattern": r"^the harbour bell tolls\b",
            "cooldown_seconds": 300.0,
        },
        {
            "name": "crimes",
            "action": "attend",
            "kinds": ["crime"],
            "rooms": [],
            "pattern": "",
            "cooldown_seconds": 0.0,
        },
    ]
    # Each change bumps the revision, which is how the running daemon notices it.
    assert cli.show("Watcher")["revision"] == revision + 2
    text = cli.ok("ais", "show", "Watcher")
    assert (
        "Attention rules (checked in order; the first that matches decides):\n"
        "  1. hour-bell: ignore room_echo events in rooms #101, #102 matching "
        r"/^the harbour bell tolls\b/, at most once per 5m per room"
        "\n  2. crimes: always attend to crime events in any room\n"
    ) in text


def test_a_bare_rule_matches_everything_and_cooldowns_take_durations(cli: Cli) -> None:
    assert rule(cli, "add", "all", "ignore", "--cooldown", "1m30s") == (
        "Storyteller Watcher has attention rule all (1 of 1): ignore events of every kind in any "
        "room, at most once per 1m30s per room."
    )
    cli.ok("ais", "set", "Watcher", "rules", "new", "half", "attend", "--cooldown", "2.5")
    assert [r["cooldown_seconds"] for r in rules(cli)] == [90.0, 2.5]


def test_remove_keeps_the_order_of_the_others(cli: Cli) -> None:
    for name in ("one", "two", "three"):
        rule(cli, "add", name, "ignore")
    assert rule(cli, "remove", "two") == "Removed attention rule two from Watcher."
    assert [r["name"] for r in rules(cli)] == ["one", "three"]
    cli.ok("ais", "set", "Watcher", "rule", "delete", "one")
    assert [r["name"] for r in rules(cli)] == ["three"]


def test_rules_belong_to_one_storyteller(cli: Cli) -> None:
    rule(cli, "add", "quiet", "ignore")
    assert rules(cli, "Crier") == []
    cli.ok("ais", "clone", "Watcher", "Copy")
    assert [r["name"] for r in rules(cli, "Copy")] == ["quiet"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ("add", "Bell", "ignore"),
            "Attention rule name 'Bell' must be 1-40 lower-case letters, digits, '-' or '_'.",
        ),
        (
            ("add", "x" * 41, "ignore"),
            f"Attention rule name '{'x' * 41}' must be 1-40 lower-case letters, digits, '-' "
            "or '_'.",
        ),
        (("add", "bell", "maybe"), "'maybe' is not a rule action; use ignore or attend."),
        (
            ("add", "bell", "ignore", "--kind", "state"),
            "Attention rule bell: unknown kind 'state' (expected crime, room_echo, speech).",
        ),
        (
            ("add", "bell", "ignore", "--room", "0"),
            "'0' is not a valid room id; use a positive whole number.",
        ),
        (
            ("add", "bell", "ignore", "--pattern", "(unclosed"),
            "Attention rule bell: pattern is not a regular expression: missing ), unterminated "
            "subpattern at position 0.",
        ),
        (
            ("add", "bell", "ignore", "--pattern", "x" * 201),
            "Attention rule bell: pattern longer than 200 characters.",
        ),
        (
            ("add", "bell", "ignore", "--cooldown", "-5"),
            "Cooldown '-5' is negative; give 0 or more seconds.",
        ),
        (
            ("add", "bell", "ignore", "--cooldown", "soon"),
            "'soon' is not a cooldown; give seconds (e.g. 300) or a duration such as 5m.",
        ),
        (
            ("add", "bell", "ignore", "--cooldown", "9" * 20),
            f"Cooldown '{'9' * 20}' is too long.",
        ),
        (("remove", "nothing"), "Storyteller Watcher has no attention rule named 'nothing'."),
    ],
)
def test_bad_input_is_one_line_and_changes_nothing(
    cli: Cli, args: tuple[str, ...], message: str
) -> None:
    rule(cli, "add", "kept", "attend", "--kind", "crime")
    assert fail(cli, *args) == message


def test_a_duplicate_name_is_refused(cli: Cli) -> None:
    rule(cli, "add", "bell", "ignore", "--pattern", "bell")
    assert fail(cli, "add", "bell", "attend") == (
        "Storyteller Watcher already has an attention rule named 'bell'."
    )
    assert [r["action"] for r in rules(cli)] == ["ignore"]


def test_an_unknown_storyteller_is_named(cli: Cli) -> None:
    assert cli.fails("ais", "set", "Nobody", "rule", "add", "bell", "ignore") == (
        "No storyteller with id or name 'Nobody' exists."
    )


def test_rules_travel_through_xml_export_and_import(cli: Cli) -> None:
    rule(cli, "add", "hour-bell", "ignore", "--kind", "room_echo", "--pattern", "^the bell]]>")
    rule(cli, "add", "office", "attend", "--room", "108", "--cooldown", "10m")
    exported = cli.ok("ais", "export", "Watcher", "--part", "tools")
    assert "<AttentionRules>" in exported
    assert cli.ok("ais", "import", "Crier", "--part", "tools", "-", input=exported) == (
        "Imported 0 custom tool(s), 2 attention rule(s) and the speech context of Crier.\n"
    )
    assert rules(cli, "Crier") == rules(cli)
    # A FutureMUD document has no <AttentionRules>: importing it replaces the rules with none.
    plain = cli.ok("ais", "export", "Crier", "--part", "tools").split("  <AttentionRules>")[0]
    assert cli.ok(
        "ais", "import", "Crier", "--part", "tools", "-", input=plain + "</ToolCalls>"
    ) == ("Imported 0 custom tool(s), 0 attention rule(s) and the speech context of Crier.\n")
    assert rules(cli, "Crier") == []


def test_a_bad_rule_in_an_imported_document_changes_nothing(cli: Cli) -> None:
    rule(cli, "add", "kept", "ignore")
    document = (
        "<ToolCalls><AttentionRules><AttentionRule><Name>bell</Name><Action>ignore</Action>"
        "<Kinds><Kind>weather</Kind></Kinds></AttentionRule></AttentionRules></ToolCalls>"
    )
    error = cli.fails("ais", "import", "Watcher", "--part", "tools", "-", input=document)
    assert error == (
        "ToolCalls <AttentionRule> 'bell' is rejected: rule bell: unknown kind 'weather' "
        "(expected crime, room_echo, speech)."
    )


def _remember(cli: Cli, *texts: str, prompts: str | None = None) -> None:
    from storyteller_daemon.domain.verdict_memory import prompts_digest, recallable

    async def work(store: Any) -> None:
        st = await store.storytellers.get("Watcher")
        digest = prompts or prompts_digest(st.system_prompt, st.attention_prompt)
        events = [recallable("room_echo", t, room_id=101, zone_id=1) for t in texts]
        await store.verdicts.remember(
            st.id, [(e, 40 + n) for n, e in enumerate(events) if e is not None], prompts=digest
        )

    cli.with_store(work)


def test_the_verdict_memory_is_shown_listed_and_cleared(cli: Cli) -> None:
    assert "Verdict memory: 0 ignored texts settle repeats" in cli.ok("ais", "show", "Watcher")
    _remember(cli, "Gulls cry.", "A bell tolls.")
    _remember(cli, "Made under other prompts.", prompts="stale")
    assert cli.show("Watcher")["verdict_memory"] == {
        "hours": 6.0,
        "texts": 2,
        "events_settled": 0,
    }
    listed = cli.json("ais", "set", "Watcher", "rule", "memory", "--json")
    assert sorted((e["text"], e["room_class"], e["item_id"]) for e in listed["entries"]) == [
        ("a bell tolls.", "zone:1", 41),
        ("gulls cry.", "zone:1", 40),
    ]
    assert "gulls cry." in rule(cli, "memory")
    first = listed["entries"][0]["id"]
    assert fail(cli, "forget") == "Give the ids of the entries to clear, or --all (not both)."
    assert "has no verdict-memory entry 999" in fail(cli, "forget", str(first), "999")
    assert rule(cli, "forget", str(first)) == (
        "Cleared 1 verdict-memory entries of Watcher; those texts are judged again."
    )
    assert rule(cli, "forget", "--all").startswith("Cleared 2 verdict-memory entries")
    assert cli.show("Watcher")["verdict_memory"]["texts"] == 0
