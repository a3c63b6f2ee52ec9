"""How storytellers, situations and memories look: text for people, stable JSON for scripts.

The text of `show_storyteller` follows FutureMUD's ``ais show``: models and reasoning per scope,
pause state, description, subscriptions, speech context, status progs, surveillance, the three
prompts, custom tools with their validity, then the situation table. Attention rules, which
FutureMUD lacks, follow the attention prompt.
"""

from __future__ import annotations

from typing import Any

from storyteller_daemon.cli.support import format_time, say, table, yes_no
from storyteller_daemon.cli.views.catalogue import Catalogue, ToolCheck, check_tool, describe_prog
from storyteller_daemon.cli.views.direction import direction_json, show_direction
from storyteller_daemon.domain.attention_rules import AttentionRule, RuleAction
from storyteller_daemon.domain.durations import format_duration
from storyteller_daemon.domain.situations import CharacterMemory, MemoryEdit, Situation
from storyteller_daemon.domain.storytellers import (
    EventKind,
    Heartbeat,
    ReasoningEffort,
    Scope,
    Storyteller,
)

LIST_COLUMNS = (
    "Id",
    "Name",
    "Model",
    "Paused",
    "Room",
    "Speech",
    "Crime",
    "State",
    "5m",
    "10m",
    "30m",
    "1h",
)
SITUATION_COLUMNS = ("Id", "Title", "Resolved", "Scope", "Created")
MEMORY_COLUMNS = ("Id", "Character", "Title", "Created")
HISTORY_COLUMNS = ("When", "Memory", "Action", "Actor", "Before → After", "From players")
HISTORY_WIDE = frozenset({"Actor", "Before → After"})
HISTORY_SIDE_CHARS = 60


def list_row(st: Storyteller) -> list[object]:
    """One row of ``ais list``."""
    return [
        st.id,
        st.name,
        st.model,
        yes_no(st.paused),
        *(yes_no(k in st.subscriptions) for k in EventKind),
        *(yes_no(h in st.heartbeats) for h in Heartbeat),
    ]


def summary_json(st: Storyteller) -> dict[str, Any]:
    """The ``ais list --json`` entry of a storyteller."""
    return {
        "id": st.id,
        "name": st.name,
        "model": st.model,
        "paused": st.paused,
        "subscriptions": {k.value: k in st.subscriptions for k in EventKind},
        "heartbeats": {h.value: h in st.heartbeats for h in Heartbeat},
    }


def _effort_setting(scope: Scope, st: Storyteller) -> ReasoningEffort | None:
    return {
        Scope.EVENT: st.reasoning_effort,
        Scope.TIME: st.time_reasoning_effort,
        Scope.ATTENTION: st.attention_reasoning_effort,
    }[scope]


def _model_setting(scope: Scope, st: Storyteller) -> str | None:
    return {Scope.EVENT: st.model, Scope.TIME: st.time_model, Scope.ATTENTION: st.attention_model}[
        scope
    ]


EFFORT_FALLBACK = {
    Scope.EVENT: "the default, medium",
    Scope.TIME: "the event reasoning",
    Scope.ATTENTION: "the default, low",
}


def scope_line(scope: Scope, st: Storyteller) -> str:
    """``gpt-5 (falls back to the event model), reasoning low (falls back to the default, low)``."""
    model = st.model_for(scope)
    if not _model_setting(scope, st):
        model += " (falls back to the event model)"
    effort = st.effort_for(scope).value
    if _effort_setting(scope, st) is None:
        effort += f" (falls back to {EFFORT_FALLBACK[scope]})"
    return f"{model}, reasoning {effort}"


def situation_json(s: Situation) -> dict[str, Any]:
    """A situation for ``--json``."""
    kind = "character" if s.character_id else "room" if s.room_id else "universal"
    return {
        "id": s.id,
        "title": s.title,
        "text": s.text,
        "resolved": s.resolved,
        "scope": {"kind": kind, "id": s.character_id or s.room_id},
        "created_on": s.created_on.isoformat(),
    }


def situation_row(s: Situation) -> list[object]:
    """One row of the situation table."""
    return [s.id, s.title, yes_no(s.resolved), s.scope_label, format_time(s.created_on)]


def memory_json(m: CharacterMemory) -> dict[str, Any]:
    """A memory for ``--json``."""
    return {
        "id": m.id,
        "character_id": m.character_id,
        "title": m.title,
        "text": m.text,
        "created_on": m.created_on.isoformat(),
    }


def memory_row(m: CharacterMemory) -> list[object]:
    """One row of the memory table."""
    return [m.id, f"#{m.character_id}", m.title, format_time(m.created_on)]


def edit_json(e: MemoryEdit) -> dict[str, Any]:
    """One entry of a memory's edit history for ``--json``."""
    return {
        "id": e.id,
        "storyteller_id": e.storyteller_id,
        "memory_id": e.memory_id,
        "character_id": e.character_id,
        "action": e.action.value,
        "actor": e.actor,
        "at": e.at.isoformat(),
        "title_before": e.title_before,
        "text_before": e.text_before,
        "title_after": e.title_after,
        "text_after": e.text_after,
        "from_player": e.from_player,
    }


def _side(title: str | None, text: str | None) -> str:
    if title is None:
        return "-"
    whole = " ".join(f"{title}: {text or ''}".split())
    cut = HISTORY_SIDE_CHARS
    return whole if len(whole) <= cut else whole[: cut - 3] + "..."


def edit_row(e: MemoryEdit) -> list[object]:
    """One row of the memory history table (the texts cut short; ``--json`` has them whole)."""
    change = f"{_side(e.title_before, e.text_before)} → {_side(e.title_after, e.text_after)}"
    return [
        format_time(e.at),
        f"#{e.memory_id}",
        e.action.value,
        e.actor,
        change,
        yes_no(e.from_player),
    ]


def rule_json(rule: AttentionRule) -> dict[str, Any]:
    """An attention rule for ``--json``; empty kinds or rooms mean every kind or room."""
    return {
        "name": rule.name,
        "action": rule.action.value,
        "kinds": sorted(rule.kinds),
        "rooms": sorted(rule.rooms),
        "pattern": rule.pattern,
        "cooldown_seconds": rule.cooldown.total_seconds(),
    }


def describe_rule(rule: AttentionRule) -> str:
    """``ignore room_echo events in room #101 matching /bell/, at most once per 5m per room``."""
    verb = "ignore" if rule.action is RuleAction.IGNORE else "always attend to"
    kinds = f"{', '.join(sorted(rule.kinds))} events" if rule.kinds else "events of every kind"
    rooms = ", ".join(f"#{r}" for r in sorted(rule.rooms))
    where = "in any room" if not rule.rooms else f"in room{'s' if len(rule.rooms) > 1 else ''} "
    text = f"{verb} {kinds} {where}{rooms}"
    if rule.pattern:
        text += f" matching /{rule.pattern}/"
    if rule.cooldown:
        text += f", at most once per {format_duration(rule.cooldown)} per room"
    return text


def _parameter_types(check: ToolCheck) -> dict[str, str]:
    """Casefolded parameter name → type, from the bound prog when the catalogue has it."""
    params = check.prog.parameters if check.prog else ()
    return {p.name.casefold(): p.type.describe() for p in params}


def storyteller_json(
    st: Storyteller, catalogue: Catalogue, situations: list[Situation]
) -> dict[str, Any]:
    """Everything ``ais show --json`` reports; a null setting means the scope falls back."""
    tools = []
    for tool in st.custom_tools:
        check = check_tool(tool, catalogue)
        types = _parameter_types(check)
        tools.append(
            {
                "name": tool.name,
                "description": tool.description,
                "prog": tool.prog,
                "echo_only": tool.echo_only,
                "parameters": [
                    {"name": n, "type": types.get(n.casefold()), "description": d}
                    for n, d in tool.parameter_descriptions
                ],
                "valid": check.valid,
                "problems": list(check.problems),
            }
        )
    return {
        "id": st.id,
        "name": st.name,
        "description": st.description,
        "paused": st.paused,
        "scopes": {
            scope.value: {
                "model": st.model_for(scope),
                "model_setting": _model_setting(scope, st),
                "reasoning": st.effort_for(scope).value,
                "reasoning_setting": (e.value if (e := _effort_setting(scope, st)) else None),
            }
            for scope in Scope
        },
        "subscriptions": {k.value: k in st.subscriptions for k in EventKind},
        "heartbeats": {h.value: h in st.heartbeats for h in Heartbeat},
        "speech_context": {
            "count": st.speech_context_count,
            "window_seconds": st.speech_context_window.total_seconds(),
        },
        "status_progs": {h.value: st.status_prog(h) for h in Heartbeat},
        "player_info_prog": st.player_info_prog,
        "surveillance": {
            "zones": sorted(st.surveillance.zones),
            "included": sorted(st.surveillance.included),
            "excluded": sorted(st.surveillance.excluded),
        },
        "attention_prompt": st.attention_prompt,
        "attention_rules": [rule_json(r) for r in st.attention_rules],
        "system_prompt": st.system_prompt,
        "time_system_prompt": st.time_system_prompt,
        "custom_tools": tools,
        "mcp_tools": [{"server": g.server, "tools": list(g.tools)} for g in st.mcp_grants],
        "direction": direction_json(st),
        "catalogue_known": catalogue is not None,
        "situations": [situation_json(s) for s in situations],
        "revision": st.revision,
        "created_on": st.created_on.isoformat() if st.created_on else None,
    }


def speech_context_line(st: Storyteller) -> str:
    """How the speech-context settings read in ``show`` and ``set speech-context``."""
    window = format_duration(st.speech_context_window)
    if st.speech_context_count == 0:
        return f"off (0 events; window {window})"
    return f"up to {st.speech_context_count} recent speech events, at most {window} apart"


def _block(title: str, text: str) -> None:
    say(f"{title}:")
    for line in (text or "(empty)").splitlines() or [""]:
        say(f"  {line}")


def show_storyteller(
    st: Storyteller,
    catalogue: Catalogue,
    situations: list[Situation],
    *,
    settled: str | None = None,
) -> None:
    """Print the full human-readable description of a storyteller (`settled`: the verdict
    memory's line, after the attention rules)."""
    say(f"Storyteller #{st.id}: {st.name}")
    say(f"Paused: {yes_no(st.paused)}")
    for scope in Scope:
        say(f"{scope.value.capitalize()} model: {scope_line(scope, st)}")
    _block("Description", st.description)
    say("Events: " + ", ".join(f"{k.value} {yes_no(k in st.subscriptions)}" for k in EventKind))
    say("Heartbeats: " + ", ".join(f"{h.value} {yes_no(h in st.heartbeats)}" for h in Heartbeat))
    say(f"Speech context: {speech_context_line(st)}")
    say(
        "Status progs: "
        + ", ".join(
            f"{h.value} {describe_prog(catalogue, p) if (p := st.status_prog(h)) else 'none'}"
            for h in Heartbeat
        )
    )
    player = st.player_info_prog
    say(f"Player information prog: {describe_prog(catalogue, player) if player else 'none'}")
    say(f"Surveillance: {st.surveillance.describe()}")
    _block("Attention prompt", st.attention_prompt)
    show_rules(st)
    if settled is not None:
        say(settled)
    _block("System prompt", st.system_prompt)
    if st.time_system_prompt is None:
        say("Time system prompt: (falls back to the system prompt)")
    else:
        _block("Time system prompt", st.time_system_prompt)
    _show_tools(st, catalogue)
    show_mcp(st)
    show_direction(st)
    table("Situations", SITUATION_COLUMNS, [situation_row(s) for s in situations])


def show_rules(st: Storyteller) -> None:
    """The attention rules, numbered in the order they are checked."""
    if not st.attention_rules:
        say("Attention rules: none")
        return
    say("Attention rules (checked in order; the first that matches decides):")
    for number, rule in enumerate(st.attention_rules, 1):
        say(f"  {number}. {rule.name}: {describe_rule(rule)}")


def show_mcp(st: Storyteller) -> None:
    """The MCP servers the storyteller may use, each with its allowed tools."""
    if not st.mcp_grants:
        say("MCP tools: none")
        return
    say("MCP tools (offered as mcp__SERVER__TOOL):")
    for grant in st.mcp_grants:
        say(f"  {grant.server}: {', '.join(grant.tools) or '(no tools allowed)'}")


def _show_tools(st: Storyteller, catalogue: Catalogue) -> None:
    if not st.custom_tools:
        say("Custom tools: none")
        return
    say("Custom tools:")
    for tool in st.custom_tools:
        check = check_tool(tool, catalogue)
        types = _parameter_types(check)
        say(f"  {tool.name}: {tool.description}")
        say(f"    Prog: {describe_prog(catalogue, tool.prog)}")
        say(f"    Offered: {'Echoes Only' if tool.echo_only else 'Always'}")
        for name, desc in tool.parameter_descriptions:
            kind = types.get(name.casefold(), "?")
            say(f"    Parameter {kind} {name}: {desc or '(no description)'}")
        say(f"    Validity: {check.describe()}")


def show_policy(limits: dict[str, Any]) -> None:
    """The policy limits the storyteller's prog tools run under (docs/security.md)."""
    say(
        "Policy: at most {max_prog_calls_per_turn} prog calls a turn, {max_prog_calls_per_hour} "
        "an hour, {max_prog_calls_per_day} a day; {max_prog_calls_per_player_per_hour} an hour "
        "set off by one character; texts up to {max_text_chars} characters".format(**limits)
    )
    if limits["kill_switch"]:
        say("  Kill switch: ON (no prog call runs)")
    for name, tool in limits["tools"].items():
        extra = "".join(
            (", shadow (recorded, not run)" if tool["shadow"] else "",
             ", waits for approval" if tool["approve"] else "")
        )  # fmt: skip
        say(
            f"  {name}: on event turns acts in {tool['scope'].replace('_', ' ')}; "
            f"once per {tool['cooldown_seconds']:g} s per room or character{extra}; "
            f"texts repeating {tool['dictated_words']} words of players': {tool['dictated']}"
        )
