"""``storyteller ais export|import``: FutureMUD's surveillance and ToolCalls documents."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from test_ais_harness import Cli, cli_fixture

from storyteller_daemon.domain.storytellers import CustomTool
from storyteller_daemon.interchange.futuremud_xml import parse_surveillance, parse_tool_calls
from storyteller_daemon.storage.store import Store

TOOL_CALLS = """<ToolCalls>
  <SpeechContextEventCount>5</SpeechContextEventCount>
  <SpeechContextMaximumSeparationMilliseconds>180000</SpeechContextMaximumSeparationMilliseconds>
  <ToolCall>
    <Name><![CDATA[RecordNarrativeCue]]></Name>
    <Description><![CDATA[Records a short narrative cue and echoes it back.]]></Description>
    <Prog>3</Prog>
    <IncludeWithEcho>false</IncludeWithEcho>
    <ParameterDescriptions>
      <Description name="Cue"><![CDATA[A concise narrative cue.]]></Description>
    </ParameterDescriptions>
  </ToolCall>
  <ToolCall>
    <Name><![CDATA[ShoutFromCrowd]]></Name>
    <Description><![CDATA[Makes an anonymous crowd voice call out in the room.]]></Description>
    <Prog>12</Prog>
    <IncludeWithEcho>true</IncludeWithEcho>
    <ParameterDescriptions>
      <Description name="Room"><![CDATA[Room to echo into.]]></Description>
    </ParameterDescriptions>
  </ToolCall>
  <CustomPlayerInformationProgId>15</CustomPlayerInformationProgId>
</ToolCalls>
"""

SURVEILLANCE = (
    "<Definition><Zones><Zone>100</Zone></Zones><IncludedCells><Cell>3</Cell></IncludedCells>"
    "<ExcludedCells><Cell>2</Cell></ExcludedCells></Definition>"
)


cli = cli_fixture("Watcher", "Crier")


def test_import_tools_replaces_tools_speech_context_and_player_prog(
    cli: Cli, tmp_path: Path
) -> None:
    source = tmp_path / "tools.xml"
    source.write_text(TOOL_CALLS, encoding="utf-8")
    cli.ok("ais", "set", "Watcher", "tool", "add", "Doomed", "3")
    assert cli.ok("ais", "import", "Watcher", "--part", "tools", str(source)) == (
        "Imported 2 custom tool(s) and the speech context of Watcher; "
        "not offered until fixed: ShoutFromCrowd.\n"
    )
    shown = cli.show("Watcher")
    assert sorted(t["name"] for t in shown["custom_tools"]) == [
        "RecordNarrativeCue",
        "ShoutFromCrowd",
    ]
    shout = next(t for t in shown["custom_tools"] if t["name"] == "ShoutFromCrowd")
    assert shout["problems"] == ["no description entry for parameter(s) Text"]
    assert shown["speech_context"] == {"count": 5, "window_seconds": 180.0}
    assert shown["player_info_prog"] == "15"


def test_export_round_trips_into_another_storyteller(cli: Cli, tmp_path: Path) -> None:
    cli.ok("ais", "import", "Watcher", "--part", "tools", "-", input=TOOL_CALLS)
    cli.ok("ais", "import", "Watcher", "--part", "surveillance", "-", input=SURVEILLANCE)
    out = tmp_path / "out" / "tools.xml"
    out.parent.mkdir()
    assert cli.ok("ais", "export", "Watcher", "--part", "tools", "-o", str(out)) == (
        f"Exported the tools of Watcher to {out}.\n"
    )
    assert parse_tool_calls(out.read_text()).player_info_prog == "15"
    cli.ok("ais", "import", "Crier", "--part", "tools", str(out))
    surveillance = cli.ok("ais", "export", "Watcher", "--part", "surveillance")
    assert sorted(parse_surveillance(surveillance).zones) == [100]
    cli.ok("ais", "import", "Crier", "--part", "surveillance", "-", input=surveillance)
    watcher, crier = cli.show("Watcher"), cli.show("Crier")
    for key in ("custom_tools", "speech_context", "player_info_prog", "surveillance"):
        assert crier[key] == watcher[key]
    assert crier["surveillance"] == {"zones": [100], "included": [3], "excluded": [2]}


@pytest.mark.parametrize(
    ("part", "document", "message"),
    [
        (
            "surveillance",
            "<Definition><Zones><Zone>x</Zone></Zones></Definition>",
            "Surveillance <Zones> <Zone> value 'x' is not a numeric id.",
        ),
        (
            "tools",
            "<ToolCalls><ToolCall><Name>Bad Name</Name><Prog>3</Prog></ToolCall>",
            "ToolCalls document is not well-formed XML at line 1, column 68: ",
        ),
        (
            "tools",
            '<!DOCTYPE x [<!ENTITY a "b">]><ToolCalls/>',
            "ToolCalls document declares <!DOCTYPE x>; DOCTYPE and entity declarations are not "
            "allowed.",
        ),
        (
            "tools",
            "<Definition/>",
            "ToolCalls document root is <Definition> and has no <ToolCalls> child.",
        ),
        ("tables", "<ToolCalls/>", "'tables' is not a part; use surveillance or tools."),
    ],
)
def test_a_bad_document_changes_nothing(cli: Cli, part: str, document: str, message: str) -> None:
    cli.ok("ais", "import", "Watcher", "--part", "tools", "-", input=TOOL_CALLS)
    error = cli.fails("ais", "import", "Watcher", "--part", part, "-", input=document)
    assert error.startswith(message)


def test_a_rejected_tool_name_in_a_document_is_named(cli: Cli) -> None:
    document = "<ToolCalls><ToolCall><Name>noop</Name><Prog>3</Prog></ToolCall></ToolCalls>"
    error = cli.fails("ais", "import", "Watcher", "--part", "tools", "-", input=document)
    assert "'noop'" in error and "collides with the built-in tool" in error


def test_file_errors_are_one_line_and_leave_no_partial_file(cli: Cli, tmp_path: Path) -> None:
    missing = tmp_path / "missing.xml"
    assert cli.fails("ais", "import", "Watcher", "--part", "tools", str(missing)) == (
        f"Cannot read {missing}: No such file or directory."
    )
    nowhere = tmp_path / "no-such-dir" / "out.xml"
    assert cli.fails("ais", "export", "Watcher", "--part", "tools", "-o", str(nowhere)) == (
        f"Cannot write {nowhere}: No such file or directory."
    )
    assert not nowhere.parent.exists()
    assert cli.fails("ais", "export", "Nobody", "--part", "tools") == (
        "No storyteller with id or name 'Nobody' exists."
    )


def test_export_writes_prog_names_as_the_worlds_ids(cli: Cli) -> None:
    # Packs name progs (ids differ between worlds); FutureMUD reads only numeric ids in <Prog>.
    async def named_progs(store: Store) -> None:
        st = await store.storytellers.get("Watcher")
        tool = CustomTool("Crowd", "shout", "CrowdShout", True, (("Room", "r"), ("Text", "t")))
        await store.storytellers.save(
            replace(st, custom_tools=(tool,), player_info_prog="HarbourPlayerProfile")
        )

    cli.with_store(named_progs)
    exported = parse_tool_calls(cli.ok("ais", "export", "Watcher", "--part", "tools"))
    assert [(t.name, t.prog) for t in exported.tools] == [("Crowd", "12")]
    assert exported.player_info_prog == "15"
    assert cli.show("Watcher")["player_info_prog"] == "HarbourPlayerProfile"  # stored as named
