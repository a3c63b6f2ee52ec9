"""Reading storyteller packs: a pack directory becomes validated domain objects.

A pack is a directory (``seed/README.md`` is the format reference)::

    <pack>/pack.toml          [pack] description, one [[storyteller]] table per storyteller
    <pack>/prompts/*.md       prompt texts, named from pack.toml
    <pack>/references/*.md    reference documents: +++ TOML front matter +++, then the contents

Reading only touches the pack's files and checks everything before any database work: an
unknown key, a bad value or a missing file is a `ConfigError` naming the file and the key.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import timedelta
from pathlib import Path
from typing import Any, TypeVar

from storyteller_daemon.bundled import bundled_dir
from storyteller_daemon.domain.attention_rules import AttentionRule, RuleAction
from storyteller_daemon.domain.references import DEFAULT_FOLDER, DEFAULT_TYPE, ReferenceDocument
from storyteller_daemon.domain.settings import (
    DEFAULT_SPEECH_CONTEXT_WINDOW,
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
from storyteller_daemon.errors import ConfigError, ValidationError
from storyteller_daemon.storage.storytellers import name_key

SEED_DIR = bundled_dir("seed")
"""Where `storyteller seed` looks for packs by name."""
PACK_FILE = "pack.toml"
REFERENCES_DIR = "references"
FRONT_MATTER_FENCE = "+++"

T = TypeVar("T")


# --------------------------------------------------------------------------- what a pack holds


@dataclass(frozen=True)
class PackDocument:
    """A reference document of a pack, with its restriction still given by storyteller names."""

    document: ReferenceDocument
    restricted_to: tuple[str, ...]
    """Names of storytellers of the same pack; empty means every storyteller may read it."""
    source: Path


@dataclass(frozen=True)
class Pack:
    """A fully validated pack, ready to compare with a database.

    Each storyteller's ``paused`` holds the pack's ``starts_paused``; it applies on creation only.
    """

    name: str
    path: Path
    description: str
    storytellers: tuple[Storyteller, ...]
    documents: tuple[PackDocument, ...]


# --------------------------------------------------------------------------- reading TOML tables


def _display(path: Path) -> str:
    """A path as the operator typed it: relative to the working directory when possible."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


class _Table:
    """One TOML table being read: typed getters whose errors name the file and the key.

    Every key read is remembered, so `finish` can reject the keys nobody asked for.
    """

    def __init__(self, data: dict[str, Any], file: Path, path: str = "") -> None:
        self._data = data
        self._file = file
        self._path = path
        self._seen: set[str] = set()

    def key(self, key: str) -> str:
        """The dotted path of `key` inside this table."""
        return f"{self._path}.{key}" if self._path else key

    def error(self, key: str | None, problem: str) -> ConfigError:
        """An error at `key` of this table (or at the table itself)."""
        where = self.key(key) if key is not None else (self._path or None)
        return ConfigError(_display(self._file), problem, where)

    def keys(self) -> list[str]:
        """Every key of the table, for tables whose keys are data (names → values)."""
        return list(self._data)

    def _take(self, key: str) -> Any:
        self._seen.add(key)
        return self._data.get(key)

    def _typed(self, key: str, kind: type[T], what: str) -> T | None:
        value = self._take(key)
        # bool is a subclass of int: a TOML boolean is never accepted where a number is wanted.
        if value is None or (isinstance(value, kind) and isinstance(value, bool) == (kind is bool)):
            return value
        raise self.error(key, f"must be {what}, not {type(value).__name__} {value!r}")

    def optional_text(self, key: str) -> str | None:
        """A non-blank string, stripped, or None when the key is absent."""
        value = self._typed(key, str, "a string")
        if value is None:
            return None
        if not value.strip():
            raise self.error(key, "must not be blank")
        return value.strip()

    def text(self, key: str, default: str | None = None) -> str:
        """A required non-blank string (or `default` when absent and a default is given)."""
        value = self.optional_text(key)
        if value is None:
            if default is None:
                raise self.error(key, "required key is missing")
            return default
        return value

    def verbatim(self, key: str) -> str:
        """A string exactly as written, blank allowed ("" when absent): a regular expression."""
        value = self._typed(key, str, "a string")
        return "" if value is None else value

    def flag(self, key: str, default: bool) -> bool:
        """A boolean."""
        value = self._typed(key, bool, "true or false")
        return default if value is None else value

    def integer(self, key: str, default: int) -> int:
        """An integer."""
        value = self._typed(key, int, "an integer")
        return default if value is None else value

    def _array(self, key: str) -> list[Any]:
        value = self._typed(key, list, "an array")
        return [] if value is None else value

    def texts(self, key: str) -> list[str]:
        """An array of non-blank strings (empty when absent)."""
        items = self._array(key)
        for item in items:
            if not isinstance(item, str) or not item.strip():
                raise self.error(key, f"must hold only non-blank strings, not {item!r}")
        return [str(item).strip() for item in items]

    def ids(self, key: str) -> list[int]:
        """An array of distinct positive integer ids (empty when absent)."""
        items = self._array(key)
        for item in items:
            if not isinstance(item, int) or isinstance(item, bool) or item <= 0:
                raise self.error(key, f"must hold only positive integer ids, not {item!r}")
        if len(set(items)) != len(items):
            raise self.error(key, "lists the same id twice")
        return [int(i) for i in items]

    def table(self, key: str, *, required: bool = False) -> _Table:
        """A sub-table (empty when absent and not required)."""
        value = self._take(key)
        if value is None:
            if required:
                raise self.error(key, "required table is missing")
            value = {}
        if not isinstance(value, dict):
            raise self.error(key, f"must be a table, not {type(value).__name__}")
        return _Table(value, self._file, self.key(key))

    def tables(self, key: str) -> list[_Table]:
        """An array of tables; each is addressed by its ``name`` when it has one."""
        items = self._array(key)
        out = []
        for index, item in enumerate(items):
            if not isinstance(item, dict):
                raise self.error(f"{key}[{index}]", "must be a table")
            name = item.get("name")
            label = f'"{name.strip()}"' if isinstance(name, str) and name.strip() else str(index)
            out.append(_Table(item, self._file, f"{self.key(key)}[{label}]"))
        return out

    def finish(self) -> None:
        """Reject every key that was not read."""
        for key in self._data:
            if key not in self._seen:
                raise self.error(key, "unknown key")


def _parsed(table: _Table, key: str, parse: Callable[[str], T], value: str) -> T:
    """Run a domain parser, reporting its complaint at `key`."""
    try:
        return parse(value)
    except ValidationError as exc:
        raise table.error(key, str(exc)) from None


def _distinct(table: _Table, key: str, parse: Callable[[str], T]) -> frozenset[T]:
    """An array of words parsed by `parse`, each meaning something different."""
    values: list[T] = [_parsed(table, key, parse, word) for word in table.texts(key)]
    if len(set(values)) != len(values):
        raise table.error(key, "lists the same value twice")
    return frozenset(values)


# --------------------------------------------------------------------------- pack.toml


def _prompt_text(prompts: _Table, key: str, relative: str, pack_dir: Path) -> str:
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


def _effort(efforts: _Table, key: str) -> ReasoningEffort | None:
    word = efforts.optional_text(key)
    return None if word is None else _parsed(efforts, key, ReasoningEffort.parse, word)


def _read_tool(table: _Table) -> CustomTool:
    name = table.text("name")
    _parsed(table, "name", lambda n: validate_tool_name(n, BUILTIN_TOOL_NAMES), name)
    description = table.text("description")
    prog = table.text("prog")
    echo_only = table.flag("echo_only", False)
    parameters = table.table("parameters")
    pairs = [(param, parameters.text(param)) for param in parameters.keys()]
    if len({name_key(p) for p, _ in pairs}) != len(pairs):
        raise parameters.error(None, "names the same parameter twice (names ignore case)")
    parameters.finish()
    table.finish()
    return CustomTool(
        name=name,
        description=description,
        prog=prog,
        echo_only=echo_only,
        parameter_descriptions=tuple(pairs),
    )


def _read_rule(table: _Table) -> AttentionRule:
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


def _read_storyteller(table: _Table, pack_dir: Path) -> Storyteller:
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
    )


# --------------------------------------------------------------------------- reference documents


def _split_front_matter(file: Path) -> tuple[str, str]:
    """The TOML between the two ``+++`` lines, and the Markdown after them."""
    try:
        text = file.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ConfigError(_display(file), "is not UTF-8 text") from None
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].strip() != FRONT_MATTER_FENCE:
        raise ConfigError(
            _display(file),
            f"must start with a '{FRONT_MATTER_FENCE}' line opening its front matter",
        )
    for end in range(1, len(lines)):
        if lines[end].strip() == FRONT_MATTER_FENCE:
            return "".join(lines[1:end]), "".join(lines[end + 1 :])
    raise ConfigError(_display(file), f"front matter has no closing '{FRONT_MATTER_FENCE}' line")


def _read_document(file: Path) -> PackDocument:
    front, body = _split_front_matter(file)
    try:
        data = tomllib.loads(front)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(_display(file), f"front matter is not valid TOML: {exc}") from None
    table = _Table(data, file)
    document = ReferenceDocument(
        name=table.text("name"),
        description=table.text("description"),
        folder=table.text("folder", DEFAULT_FOLDER),
        doc_type=table.text("type", DEFAULT_TYPE),
        keywords=", ".join(table.texts("keywords")),
        contents=body.strip(),
    )
    restricted = table.texts("restricted_to")
    table.finish()
    if not document.contents:
        raise ConfigError(_display(file), "has no contents after its front matter")
    return PackDocument(document=document, restricted_to=tuple(restricted), source=file)


# --------------------------------------------------------------------------- the whole pack


def find_pack(ref: str | Path, seed_dir: Path = SEED_DIR) -> Path:
    """The directory of a pack given by name (under `seed_dir`) or by path.

    Raises:
        ConfigError: nothing with a ``pack.toml`` is found; the message lists the known packs.
    """
    path = Path(ref)
    # A bare name is looked up under seed_dir first; "./x", "a/b" or a Path is always a path.
    is_bare_name = isinstance(ref, str) and "/" not in ref and os.sep not in ref
    candidates = [seed_dir / ref, path] if is_bare_name and ref not in {".", ".."} else [path]
    for candidate in candidates:
        try:
            if candidate.name == PACK_FILE and candidate.is_file():
                return candidate.parent
            if (candidate / PACK_FILE).is_file():
                return candidate
        except OSError:  # a name too long for the file system, for one: not a pack
            continue
    known = ", ".join(p.name for p in list_packs(seed_dir)) or "none"
    raise ConfigError(
        str(ref), f"no pack of that name under {_display(seed_dir)} and no {PACK_FILE} at that "
        f"path (packs available: {known})"
    )  # fmt: skip


def list_packs(seed_dir: Path = SEED_DIR) -> list[Path]:
    """Every pack directory directly under `seed_dir`, by name."""
    if not seed_dir.is_dir():
        return []
    return sorted(p for p in seed_dir.iterdir() if (p / PACK_FILE).is_file())


def read_pack(ref: str | Path, seed_dir: Path = SEED_DIR) -> Pack:
    """Read and validate a whole pack without touching any database.

    Args:
        ref: a pack name under `seed_dir`, a pack directory, or its ``pack.toml``.
        seed_dir: where pack names are looked up.

    Raises:
        ConfigError: naming the file and key of the first problem found.
    """
    pack_dir = find_pack(ref, seed_dir)
    pack_file = pack_dir / PACK_FILE
    try:
        data = tomllib.loads(pack_file.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(_display(pack_file), f"not valid TOML: {exc}") from None
    root = _Table(data, pack_file)
    header = root.table("pack", required=True)
    description = header.text("description")
    header.finish()
    storytellers: list[Storyteller] = []
    by_key: dict[str, Storyteller] = {}
    for table in root.tables("storyteller"):
        st = _read_storyteller(table, pack_dir)
        if name_key(st.name) in by_key:
            raise table.error("name", f"a second storyteller named '{st.name}'")
        by_key[name_key(st.name)] = st
        storytellers.append(st)
    root.finish()

    documents: list[PackDocument] = []
    seen: dict[str, Path] = {}
    reference_dir = pack_dir / REFERENCES_DIR
    files = sorted(reference_dir.glob("*.md")) if reference_dir.is_dir() else []
    for file in files:
        doc = _read_document(file)
        key = name_key(doc.document.name)
        if key in seen:
            raise ConfigError(
                _display(file),
                f"'{doc.document.name}' is also the name of {seen[key].name}",
                "name",
            )
        seen[key] = file
        names = []
        for wanted in doc.restricted_to:
            if name_key(wanted) not in by_key:
                known = ", ".join(st.name for st in storytellers) or "none"
                raise ConfigError(
                    _display(file),
                    f"'{wanted}' is not a storyteller of this pack (storytellers: {known})",
                    "restricted_to",
                )
            names.append(by_key[name_key(wanted)].name)
        documents.append(replace(doc, restricted_to=tuple(names)))

    return Pack(
        name=pack_dir.name,
        path=pack_dir,
        description=description,
        storytellers=tuple(storytellers),
        documents=tuple(documents),
    )
