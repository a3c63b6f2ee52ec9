"""Reading the ``[[storyteller]]`` tables of a pack's ``pack.toml`` into storytellers.

`read_storyteller` reads one table: models and reasoning efforts per scope, the prompt files it
names (inside the pack directory, UTF-8, not empty), subscriptions, heartbeats and their status
progs, the speech context, surveillance, custom tools and attention rules. Every value goes
through the domain's own parsers and validators; a complaint is a `ConfigError` at its key.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any, TypeVar

from progs.types import ValueType
from storyteller_daemon.domain.attention_rules import AttentionRule, RuleAction
from storyteller_daemon.domain.direction import (
    PACING_KEYS,
    ContextProvider,
    Direction,
    Pacing,
    ProviderKind,
)
from storyteller_daemon.domain.names import name_key
from storyteller_daemon.domain.storytellers import (
    DEFAULT_SPEECH_CONTEXT_WINDOW,
    DICTATED_MODES,
    CustomTool,
    EventKind,
    Heartbeat,
    ReasoningEffort,
    Storyteller,
    validate_speech_context_count,
    validate_speech_context_window,
    validate_tool_name,
)
from storyteller_daemon.domain.surveillance import Surveillance
from storyteller_daemon.domain.tool_names import BUILTIN_TOOL_NAMES
from storyteller_daemon.errors import ValidationError
from storyteller_daemon.interchange.packs.tables import PackTable

T = TypeVar("T")


def _parsed(table: PackTable, key: str, parse: Callable[[str], T], value: str) -> T:
    """Run a domain parser, reporting its complaint at `key`."""
    try:
        return parse(value)
    except ValidationError as exc:
        raise table.error(key, str(exc)) from None


def _distinct(table: PackTable, key: str, parse: Callable[[str], T]) -> frozenset[T]:
    """An array of words parsed by `parse`, each meaning something different."""
    values: list[T] = [_parsed(table, key, parse, word) for word in table.texts(key)]
    if len(set(values)) != len(values):
        raise table.error(key, "lists the same value twice")
    return frozenset(values)


def _prompt_text(prompts: PackTable, key: str, relative: str, pack_dir: Path) -> str:
    """The text of the prompt file `relative` (to the pack directory), named at `key`."""
    file = (pack_dir / relative).resolve()
    if not file.is_relative_to(pack_dir.resolve()):
        raise prompts.error(key, f"'{relative}' points outside the pack directory")
    if not file.is_file():
        raise prompts.error(key, f"prompt file '{relative}' does not exist")
    try:
        text = file.read_text(encoding="utf-8").strip()
    except UnicodeDecodeError:
        raise prompts.error(key, f"prompt file '{relative}' is not UTF-8 text") from None
    if not text:
        raise prompts.error(key, f"prompt file '{relative}' is empty")
    return text


def _effort(efforts: PackTable, key: str) -> ReasoningEffort | None:
    word = efforts.optional_text(key)
    return None if word is None else _parsed(efforts, key, ReasoningEffort.parse, word)


def _read_tool(table: PackTable) -> CustomTool:
    name = table.text("name")
    _parsed(table, "name", lambda n: validate_tool_name(n, BUILTIN_TOOL_NAMES), name)
    description = table.text("description")
    prog = table.text("prog")
    echo_only = table.flag("echo_only", False)
    dictated = table.optional_text("dictated")
    if dictated is not None and dictated not in DICTATED_MODES:
        raise table.error("dictated", f"must be one of {', '.join(DICTATED_MODES)}")
    parameters = table.table("parameters")
    pairs = [(param, parameters.text(param)) for param in parameters.keys()]
    if len({name_key(p) for p, _ in pairs}) != len(pairs):
        raise parameters.error(None, "names the same parameter twice (names ignore case)")
    parameters.finish()
    returns = table.optional_text("returns")
    return_type = None if returns is None else _prog_type(table, "returns", returns)
    types_table = table.table("types")
    described = {name_key(p): p for p, _ in pairs}
    types: list[tuple[str, str]] = []
    for param in types_table.keys():
        if name_key(param) not in described:
            known = ", ".join(p for p, _ in pairs) or "none"
            raise types_table.error(
                param, f"is not a parameter in parameters (parameters: {known})"
            )
        type_name = _prog_type(types_table, param, types_table.text(param))
        types.append((described[name_key(param)], type_name))
    types_table.finish()
    table.finish()
    return CustomTool(
        name=name,
        description=description,
        prog=prog,
        echo_only=echo_only,
        parameter_descriptions=tuple(pairs),
        parameter_types=tuple(types),
        return_type=return_type,
        dictated=dictated,
    )


def _prog_type(table: PackTable, key: str, text: str) -> str:
    """A prog type's canonical name (``Number``, ``Collection<Character>``), checked."""
    try:
        return ValueType.parse(text).describe()
    except ValueError as exc:
        raise table.error(key, f"{exc} (types are FutureMUD's: Text, Number, Character…)") from None


def _read_rule(table: PackTable) -> AttentionRule:
    name = table.text("name")
    action = _parsed(table, "action", RuleAction.parse, table.text("action"))
    kinds = table.texts("kinds")
    if len(set(kinds)) != len(kinds):
        raise table.error("kinds", "lists the same value twice")
    rooms = table.ids("rooms")
    pattern = table.verbatim("pattern")
    cooldown = table.integer("cooldown_seconds", 0)
    table.finish()
    try:
        return AttentionRule(
            name=name,
            action=action,
            kinds=frozenset(kinds),
            rooms=frozenset(rooms),
            pattern=pattern,
            cooldown=timedelta(seconds=cooldown),
        )
    except ValueError as exc:
        raise table.error(None, str(exc)) from None


def read_storyteller(table: PackTable, pack_dir: Path) -> Storyteller:
    """The storyteller of one ``[[storyteller]]`` table (prompt files relative to `pack_dir`)."""
    name = table.text("name")
    description = table.text("description")
    starts_paused = table.flag("starts_paused", True)

    models = table.table("models", required=True)
    model, time_model, attention_model = (
        models.text("event"),
        models.optional_text("time"),
        models.optional_text("attention"),
    )
    models.finish()

    efforts = table.table("effort")
    effort, time_effort, attention_effort = (
        _effort(efforts, "event"),
        _effort(efforts, "time"),
        _effort(efforts, "attention"),
    )
    efforts.finish()

    prompts = table.table("prompts", required=True)
    system_prompt = _prompt_text(prompts, "system", prompts.text("system"), pack_dir)
    time_file = prompts.optional_text("time_system")
    time_system_prompt = (
        None if time_file is None else _prompt_text(prompts, "time_system", time_file, pack_dir)
    )
    attention_prompt = _prompt_text(prompts, "attention", prompts.text("attention"), pack_dir)
    prompts.finish()

    subscriptions = _distinct(table, "subscriptions", EventKind.parse)
    heartbeats = _distinct(table, "heartbeats", Heartbeat.parse)
    status_table = table.table("status_progs")
    status: dict[Heartbeat, str] = {}
    for word in status_table.keys():
        beat = _parsed(status_table, word, Heartbeat.parse, word)
        if beat in status:
            raise status_table.error(word, f"a second status prog for the {beat.value} heartbeat")
        if beat not in heartbeats:
            raise status_table.error(word, f"the {beat.value} heartbeat is not in heartbeats")
        status[beat] = status_table.text(word)
    status_table.finish()
    player_info_prog = table.optional_text("player_info_prog")

    speech = table.table("speech_context")
    count = speech.integer("events", 0)
    default_window = int(DEFAULT_SPEECH_CONTEXT_WINDOW.total_seconds())
    window = timedelta(seconds=speech.integer("window_seconds", default_window))
    try:
        validate_speech_context_count(count)
    except ValidationError as exc:
        raise speech.error("events", str(exc)) from None
    try:
        validate_speech_context_window(window)
    except ValidationError as exc:
        raise speech.error("window_seconds", str(exc)) from None
    speech.finish()

    watch = table.table("surveillance")
    surveillance = Surveillance(
        zones=frozenset(watch.ids("zones")),
        included=frozenset(watch.ids("include")),
        excluded=frozenset(watch.ids("exclude")),
    )
    watch.finish()

    tools: list[CustomTool] = []
    for tool_table in table.tables("tools"):
        tool = _read_tool(tool_table)
        if any(name_key(t.name) == name_key(tool.name) for t in tools):
            raise tool_table.error("name", f"a second tool named '{tool.name}'")
        tools.append(tool)

    rules: list[AttentionRule] = []
    for rule_table in table.tables("attention_rules"):
        rule = _read_rule(rule_table)
        if any(r.name == rule.name for r in rules):
            raise rule_table.error("name", f"a second attention rule named '{rule.name}'")
        rules.append(rule)
    direction = _read_direction(table.table("direction"))
    table.finish()

    return Storyteller(
        name=name,
        description=description,
        model=model,
        time_model=time_model,
        attention_model=attention_model,
        reasoning_effort=effort,
        time_reasoning_effort=time_effort,
        attention_reasoning_effort=attention_effort,
        system_prompt=system_prompt,
        time_system_prompt=time_system_prompt,
        attention_prompt=attention_prompt,
        subscriptions=subscriptions,
        heartbeats=heartbeats,
        status_progs=tuple((b, status[b]) for b in Heartbeat if b in status),
        player_info_prog=player_info_prog,
        paused=starts_paused,
        speech_context_count=count,
        speech_context_window=window,
        custom_tools=tuple(tools),
        surveillance=surveillance,
        attention_rules=tuple(rules),
        direction=direction,
    )


def _read_direction(table: PackTable) -> Direction:
    """``[storyteller.direction]``: plans, co-operation, pacing, context providers."""
    plans = table.flag("plans", False)
    cooperates = table.flag("cooperates", False)
    pacing_table = table.table("pacing")
    values: dict[str, Any] = {}
    for key, wanted in PACING_KEYS.items():
        if wanted is str:
            text = pacing_table.optional_text(key)
            if text is not None:
                values[key] = text
        elif wanted is int:
            values[key] = pacing_table.integer(key, getattr(Pacing(), key))
        else:
            values[key] = pacing_table.number(key, getattr(Pacing(), key))
    pacing_table.finish()
    try:
        pacing = Pacing(**values)
    except ValidationError as exc:
        raise table.error("pacing", str(exc)) from None
    providers: list[ContextProvider] = []
    for entry in table.tables("providers"):
        name = entry.text("name")
        reads = entry.text("kind")
        budget = entry.integer("budget_tokens", 300)
        source = entry.verbatim("source")
        entry.finish()
        try:
            providers.append(ContextProvider(name, ProviderKind.parse(reads), budget, source))
        except ValidationError as exc:
            raise entry.error(None, str(exc)) from None
    table.finish()
    try:
        return Direction(plans, cooperates, pacing, tuple(providers))
    except ValidationError as exc:
        raise table.error(None, str(exc)) from None
