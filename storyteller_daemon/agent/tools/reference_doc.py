"""docs/tools.md, generated from the tool registry, so the list a pack author reads cannot drift.

`builtin_tools_markdown` renders every built-in the registry holds: FutureMUD's 24 in their
declaration order, then the director's, each with the turns that offer it, whether it changes
anything, what the model is told it does and its parameters as the strict schema states them.
``storyteller tools doc --output docs/tools.md`` writes it; a test compares the file with it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from storyteller_daemon.agent.tools.base import Tool
from storyteller_daemon.agent.tools.registry import BUILTIN_TOOLS
from storyteller_daemon.domain.tool_names import (
    DIRECTOR_TOOLS,
    EVENT_FOCUSED_TOOLS,
    FULL_PROFILE_TOOLS,
    WRITING_TOOLS,
)

COMMAND = "storyteller tools doc --output docs/tools.md"

_HEADER = f"""# Built-in tools

<!-- GENERATED from the tool registry (storyteller_daemon/agent/tools/registry.py) by
`{COMMAND}`.
Do not edit: a test fails when this file differs from what the registry generates. -->

Every storyteller is offered these tools on its turns, besides its pack's custom tools (the
game's progs, `[[storyteller.tools]]` in [seed/README.md](../seed/README.md)) and the tools of
the MCP servers it is granted. Prompts and reference documents should mention only these and
the pack's own tools.

Which built-ins a turn offers depends on what started it (FutureMUD's two profiles):

- a turn on a room echo, a line of speech or a crime is offered the {len(EVENT_FOCUSED_TOOLS)}
  tools marked *every turn*;
- a turn on a heartbeat, a character's change of state or a direct invocation is offered all
  {len(FULL_PROFILE_TOOLS)}, the heavier world look-ups included;
- a storyteller that plans (`[storyteller.direction] plans = true`) is also offered the
  director's {len(DIRECTOR_TOOLS)} tools ([docs/director.md](director.md)).

A tool that **writes** changes the storyteller's own records (situations, memories, plans,
scene claims); none of the built-ins acts on the game: only custom tools (progs) do. A tool's
failure is a result the model reads (`{{"ok": false, "error": …}}`), never the end of the
turn. Parameters marked optional may be passed as `null`.
"""


def _type(schema: Mapping[str, Any]) -> tuple[str, bool]:
    """A property's type in words, and whether it may be null."""
    raw = schema.get("type", "any")
    types = [raw] if isinstance(raw, str) else list(raw)
    nullable = "null" in types
    words = [t for t in types if t != "null"] or ["any"]
    text = " or ".join(words)
    if "array" in words and isinstance(schema.get("items"), Mapping):
        inner, _ = _type(schema["items"])
        text = text.replace("array", f"array of {inner}")
    if "enum" in schema:
        options = ", ".join(f"`{v}`" for v in schema["enum"] if v is not None)
        text += f" (one of {options})"
    return text, nullable


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _tool_section(tool: Tool, offered: str) -> str:
    changes = "writes" if tool.name in WRITING_TOOLS else "reads only"
    lines = [f"### {tool.name}", "", f"*Offered on {offered}; {changes}.*", ""]
    lines += [_cell(tool.description), ""]
    properties: Mapping[str, Any] = tool.parameters.get("properties", {})
    if not properties:
        lines += ["No parameters.", ""]
        return "\n".join(lines)
    lines += ["| parameter | type | | description |", "|---|---|---|---|"]
    for name, schema in properties.items():
        kind, nullable = _type(schema)
        need = "optional" if nullable else "required"
        lines.append(f"| `{name}` | {kind} | {need} | {_cell(schema.get('description', ''))} |")
    lines.append("")
    return "\n".join(lines)


def builtin_tools_markdown() -> str:
    """The whole of docs/tools.md."""
    parts = [_HEADER, f"## The {len(FULL_PROFILE_TOOLS)} built-in tools", ""]
    index = ", ".join(f"[{n}](#{n.lower()})" for n in FULL_PROFILE_TOOLS)
    parts += [index, ""]
    for name in FULL_PROFILE_TOOLS:
        offered = (
            "every turn" if name in EVENT_FOCUSED_TOOLS else "heartbeat, state and direct turns"
        )
        parts.append(_tool_section(BUILTIN_TOOLS[name], offered))
    parts += [f"## The director's {len(DIRECTOR_TOOLS)} tools", ""]
    for name in DIRECTOR_TOOLS:
        parts.append(_tool_section(BUILTIN_TOOLS[name], "every turn of a storyteller that plans"))
    return "\n".join(parts).rstrip("\n") + "\n"
