"""docs/tools.md is what the tool registry generates (`storyteller tools doc`), so the list of
built-in tools a pack author reads cannot drift from the tools the daemon offers."""

from __future__ import annotations

import re
from pathlib import Path

from typer.testing import CliRunner

from storyteller_daemon.agent.tools.reference_doc import COMMAND, builtin_tools_markdown
from storyteller_daemon.agent.tools.registry import BUILTIN_TOOLS
from storyteller_daemon.cli import app
from storyteller_daemon.domain.tool_names import FULL_PROFILE_TOOLS

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "tools.md"


def test_docs_tools_md_is_what_the_registry_generates() -> None:
    assert DOC.read_text(encoding="utf-8") == builtin_tools_markdown(), (
        f"docs/tools.md is stale: run `{COMMAND}`"
    )


def test_the_doc_has_a_section_per_registered_tool_with_its_parameters() -> None:
    text = DOC.read_text(encoding="utf-8")
    sections = re.findall(r"^### (\w+)$", text, re.MULTILINE)
    assert sections == [
        *FULL_PROFILE_TOOLS,
        *(n for n in BUILTIN_TOOLS if n not in FULL_PROFILE_TOOLS),
    ]
    assert len(FULL_PROFILE_TOOLS) == 24 and "## The 24 built-in tools" in text
    for name, tool in BUILTIN_TOOLS.items():
        section = text.split(f"### {name}\n", 1)[1].split("\n### ", 1)[0]
        for parameter in tool.parameters["properties"]:
            assert f"| `{parameter}` |" in section, (name, parameter)


def test_the_command_prints_and_writes_the_doc(tmp_path: Path) -> None:
    runner = CliRunner()
    printed = runner.invoke(app, ["tools", "doc"])
    assert printed.exit_code == 0 and printed.stdout == builtin_tools_markdown()
    written = runner.invoke(app, ["tools", "doc", "--output", str(tmp_path / "tools.md")])
    assert written.exit_code == 0
    assert (tmp_path / "tools.md").read_text(encoding="utf-8") == builtin_tools_markdown()


def test_the_pack_format_links_the_doc() -> None:
    assert "(../docs/tools.md)" in (ROOT / "seed" / "README.md").read_text(encoding="utf-8")
