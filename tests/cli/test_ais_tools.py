"""``storyteller ais set REF tool …``: custom tools against the sim world's prog catalogue.

The sim world's catalogue has AIStorytellerToolRecordCue (#3, ``Cue``), EchoToRoom (#11,
``Room``, ``Text``), CrowdShout (#12) and BrokenProg (#16, which does not compile).
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from test_ais_harness import Cli, cli_fixture, text_prog, use_catalogue

cli = cli_fixture("Watcher")


def tool(cli: Cli, *args: str) -> str:
    return cli.ok("ais", "set", "Watcher", "tool", *args).rstrip("\n")


def fail(cli: Cli, *args: str) -> str:
    return cli.fails("ais", "set", "Watcher", "tool", *args)


def tools(cli: Cli) -> dict[str, Any]:
    return {t["name"]: t for t in cli.show("Watcher")["custom_tools"]}


def test_add_binds_the_prog_by_id_with_blank_parameter_descriptions(cli: Cli) -> None:
    assert tool(cli, "add", "RecordCue", "aistorytellertoolrecordcue") == (
        "Storyteller Watcher has a new tool RecordCue running AIStorytellerToolRecordCue (#3), "
        "offered on every trigger."
    )
    assert tools(cli)["RecordCue"] == {
        "name": "RecordCue",
        "description": "Custom tool RecordCue",
        "prog": "3",
        "echo_only": False,
        "parameters": [{"name": "Cue", "type": "Text", "description": ""}],
        "valid": True,
        "problems": [],
    }


def test_add_with_echo_and_the_new_alias(cli: Cli) -> None:
    tool(cli, "new", "Shout", "CrowdShout", "--echo")
    cli.ok("ais", "set", "Watcher", "tools", "add", "Echo", "11")
    listed = tools(cli)
    assert (listed["Shout"]["echo_only"], listed["Echo"]["echo_only"]) == (True, False)
    text = cli.ok("ais", "show", "Watcher")
    assert (
        "  Shout: Custom tool Shout\n    Prog: CrowdShout (#12)\n    Offered: Echoes Only\n" in text
    )
    assert "    Parameter Location Room: (no description)\n" in text


@pytest.mark.parametrize(
    ("name", "prog", "message"),
    [
        (
            "Record Cue",
            "3",
            "Tool name 'Record Cue' is invalid: use 1-64 letters, digits, '_' or '-' (no spaces).",
        ),
        (
            "x" * 65,
            "3",
            f"Tool name '{'x' * 65}' is invalid: use 1-64 letters, digits, '_' or '-' (no spaces).",
        ),
        ("noop", "3", "Tool name 'noop' collides with the built-in tool of that name."),
        (
            "CreateSituation",
            "3",
            "Tool name 'CreateSituation' collides with the built-in tool of that name.",
        ),
        (
            "RecordCue",
            "NoSuchProg",
            "The world has no prog with id or name 'NoSuchProg' (--unchecked takes it as typed).",
        ),
        ("recordcue", "3", "Storyteller Watcher already has a custom tool named 'recordcue'."),
    ],
)
def test_add_errors(cli: Cli, name: str, prog: str, message: str) -> None:
    tool(cli, "add", "RecordCue", "3")
    assert fail(cli, "add", name, prog) == message


def test_with_the_world_unreachable_and_nothing_stored_a_prog_is_refused_unless_unchecked(
    cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_catalogue(monkeypatch, None)
    assert cli.fails("ais", "set", "Watcher", "tool", "add", "Later", "FutureProg", code=69) == (
        "The world is unreachable and no catalogue of its progs is stored, so 'FutureProg' "
        "cannot be checked: start the game (the daemon, or a tool command run while it is up, "
        "stores its progs), or pass --unchecked to take it as typed."
    )
    assert tool(cli, "add", "Later", "FutureProg", "--unchecked") == (
        "Storyteller Watcher has a new tool Later running FutureProg, offered on every trigger "
        "(not checked against the world's progs: --unchecked)."
    )
    assert tool(cli, "parameter", "later", "Target", "Who", "to", "find.") == (
        "Parameter Target of tool Later has a new description (world unreachable and no stored "
        "catalogue: not checked against its progs)."
    )
    later = tools(cli)["Later"]
    assert (later["prog"], later["valid"], later["problems"]) == ("FutureProg", None, [])
    assert later["parameters"] == [{"name": "Target", "type": None, "description": "Who to find."}]
    assert "    Validity: unknown (world unreachable)\n" in cli.ok("ais", "show", "Watcher")


def test_with_the_world_unreachable_progs_are_checked_against_the_stored_catalogue(
    cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    tool(cli, "add", "Cue", "3")  # the world answers: its catalogue is kept
    use_catalogue(monkeypatch, None)  # ...and now it is down
    assert re.fullmatch(
        r"Storyteller Watcher has a new tool Echo running EchoToRoom \(#11\), offered on every "
        r"trigger \(world unreachable: checked against its progs as of "
        r"\d{4}-\d\d-\d\d \d\d:\d\d UTC\)\.",
        tool(cli, "add", "Echo", "EchoToRoom"),
    )
    assert tools(cli)["Echo"]["prog"] == "11"  # stored by id, as with the world up
    assert cli.fails("ais", "set", "Watcher", "tool", "prog", "Echo", "Gone") == (
        "The world has no prog with id or name 'Gone' (--unchecked takes it as typed)."
    )
    tool(cli, "prog", "Echo", "Gone", "--unchecked")
    assert tools(cli)["Echo"]["prog"] == "Gone"


def test_parameter_descriptions_match_the_prog_case_insensitively(cli: Cli) -> None:
    """Covers FutureMUD's SetParameterDescription_UpdatesExistingValue."""
    tool(cli, "add", "Echo", "EchoToRoom")
    assert tool(cli, "param", "echo", "room", "Room", "to", "echo", "into.") == (
        "Parameter Room of tool Echo has a new description."
    )
    tool(cli, "parameter", "Echo", "TEXT", "What is seen.")
    tool(cli, "parameter", "Echo", "Room", "The room.")
    assert tools(cli)["Echo"]["parameters"] == [
        {"name": "Room", "type": "Location", "description": "The room."},
        {"name": "Text", "type": "Text", "description": "What is seen."},
    ]
    assert fail(cli, "parameter", "Echo", "Volume", "Loud") == (
        "Prog EchoToRoom has no parameter 'Volume' (its parameters: Room, Text)."
    )
    assert fail(cli, "parameter", "Nope", "Room", "x") == (
        "Storyteller Watcher has no custom tool named 'Nope'."
    )


def test_rebinding_prunes_stale_descriptions_and_adds_missing_ones(cli: Cli) -> None:
    """The FutureMUD bug (rebinding only added descriptions, so the tool went invalid) is fixed."""
    tool(cli, "add", "Speak", "3")
    tool(cli, "parameter", "Speak", "Cue", "A cue.")
    assert (
        tool(cli, "prog", "Speak", "EchoToRoom")
        == "Tool Speak of Watcher now runs EchoToRoom (#11)."
    )
    speak = tools(cli)["Speak"]
    assert [p["name"] for p in speak["parameters"]] == ["Room", "Text"]
    assert (speak["prog"], speak["valid"]) == ("11", True)
    assert (
        fail(cli, "prog", "Speak", "Missing")
        == "The world has no prog with id or name 'Missing' (--unchecked takes it as typed)."
    )


def test_a_prog_that_gains_a_parameter_invalidates_the_tool_until_rebound(
    cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """FutureMUD's RefreshParameterDescriptions_WhenProgChanges_AddsMissingEntries, via rebind."""
    use_catalogue(monkeypatch, [text_prog(40, "Note", "Cue")])
    tool(cli, "add", "Note", "Note")
    tool(cli, "parameter", "Note", "Cue", "Keep me.")
    use_catalogue(monkeypatch, [text_prog(40, "Note", "Cue", "Mood")])
    note = tools(cli)["Note"]
    assert note["valid"] is False
    assert note["problems"] == ["no description entry for parameter(s) Mood"]
    assert "    Validity: INVALID (not offered): no description entry for parameter(s) Mood\n" in (
        cli.ok("ais", "show", "Watcher")
    )
    tool(cli, "prog", "Note", "40")
    assert tools(cli)["Note"]["parameters"] == [
        {"name": "Cue", "type": "Text", "description": "Keep me."},
        {"name": "Mood", "type": "Text", "description": ""},
    ]
    assert tools(cli)["Note"]["valid"] is True


def test_validity_reports_compile_errors_and_missing_progs(
    cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Covers FutureMUD's IsValid_WhenProgHasCompileError_ReturnsFalse."""
    tool(cli, "add", "Broken", "BrokenProg")
    tool(cli, "add", "Gone", "3")
    assert tools(cli)["Broken"]["problems"] == [
        "prog BrokenProg does not compile: Unknown variable @foo on line 2"
    ]
    use_catalogue(monkeypatch, [text_prog(16, "BrokenProg", "Text")])
    listed = tools(cli)
    assert (listed["Broken"]["valid"], listed["Gone"]["valid"]) == (True, False)
    assert listed["Gone"]["problems"] == ["the world has no prog '3'"]


def test_description_echo_and_remove(cli: Cli) -> None:
    tool(cli, "add", "Shout", "CrowdShout")
    assert tool(cli, "desc", "shout", "Makes", "the", "crowd", "shout.") == (
        "Tool Shout of Watcher has a new description."
    )
    assert tools(cli)["Shout"]["description"] == "Makes the crowd shout."
    assert fail(cli, "description", "Shout", " ") == "A tool description must not be blank."
    assert tool(cli, "echo", "Shout") == (
        "Tool Shout of Watcher is offered on echo and speech triggers only."
    )
    assert tools(cli)["Shout"]["echo_only"] is True
    tool(cli, "echo", "Shout")
    assert tools(cli)["Shout"]["echo_only"] is False
    assert tool(cli, "delete", "SHOUT") == "Removed tool Shout from Watcher."
    assert tools(cli) == {}
    assert fail(cli, "remove", "Shout") == "Storyteller Watcher has no custom tool named 'Shout'."
