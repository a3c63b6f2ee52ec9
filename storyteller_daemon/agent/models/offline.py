"""A rule-based stand-in for the language model, used by the demo when no API key is set.

It is not a language model and makes no network calls. It answers the two kinds of request the
daemon sends with fixed rules, so the rest of the pipeline (attention gate, tool loop, tools,
storage, world commands) can be shown working offline:

* attention verdicts (a ``text.format`` is requested): each event line of the batch is
  attended to when it contains a watch word, otherwise ignored; any other JSON schema (a
  connection check such as `storyteller doctor`'s) gets a placeholder of its shape;
* tool-loop rounds: after any tool output, ``Noop`` (a request offering no storyteller tools
  that requires a call gets its first tool, with placeholder arguments); for a storyteller
  that plans, the plan rules of `offline_plans` (make a fixed three-step plan on a heartbeat,
  do the step that is due, replan after a failed step); for an event prompt with a
  ``Location: … [#<id>]`` line, ``CreateSituation`` about the event text plus, when offered, a
  custom tool taking a room and a text, called with a fixed in-world line; otherwise ``Noop``.

Arguments fill every property of the tool's schema (strict schemas require all keys). Ids are
derived from the request, so the same request always gets the same answer.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

from storyteller_daemon.agent.models.interface import (
    FunctionCall,
    ModelRequest,
    ModelResponse,
    ResponseItem,
    ToolSpec,
    Usage,
)
from storyteller_daemon.agent.models.offline_plans import plan_calls
from storyteller_daemon.agent.verdicts import format_ids
from storyteller_daemon.domain.tool_names import BUILTIN_TOOL_NAMES
from storyteller_daemon.errors import ModelFatalError

DEFAULT_WATCH_WORDS: tuple[str, ...] = (
    "thief",
    "stole",
    "steal",
    "help",
    "fight",
    "fire",
    "blood",
    "knife",
    "guard",
    "attack",
    "scream",
    "smuggl",
    "drown",
    "murder",
)
"""Word beginnings that make the stand-in's attention verdict ``interested``."""

DEFAULT_AMBIENT_LINE = "A watchman's whistle shrills somewhere along the quay."
"""The in-world line sent through a custom room-echo tool."""

_MODEL_ID = "offline-stand-in"
_TITLE_LIMIT = 80
_DESCRIPTION_LIMIT = 1000
_LOCATION = re.compile(r"^\s*Location:.*\[#([\d,]+)\]", re.MULTILINE)
_EVENT_HEADERS = ("Event Text:", "Spoken Text:")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s")
_ROOM_PARAMETER = re.compile(r"room|location|cell", re.IGNORECASE)
_TEXT_PARAMETER = re.compile(r"text|echo|message|emote|line", re.IGNORECASE)


class OfflineStandInModel:
    """A deterministic `Model` that follows fixed rules instead of calling a language model.

    Args:
        watch_words: word beginnings (case-insensitive) that make an event interesting.
        ambient_line: what a custom room-echo tool is asked to show.

    Raises:
        ValueError: a watch word or the ambient line is blank.
    """

    def __init__(
        self,
        *,
        watch_words: Iterable[str] = DEFAULT_WATCH_WORDS,
        ambient_line: str = DEFAULT_AMBIENT_LINE,
    ) -> None:
        words = tuple(watch_words)
        for word in words:
            if not word.strip():
                raise ValueError(f"watch words must be non-blank strings, got {word!r}")
        if not ambient_line.strip():
            raise ValueError("ambient_line must not be blank")
        self._watch_words = tuple(word.strip().lower() for word in words)
        self._watch_pattern = (
            re.compile(r"\b(" + "|".join(map(re.escape, self._watch_words)) + ")", re.IGNORECASE)
            if words
            else None
        )
        self._ambient_line = ambient_line

    @property
    def name(self) -> str:
        """Says plainly that this is not a language model."""
        return "offline stand-in (rule-based, not a language model)"

    async def respond(self, request: ModelRequest) -> ModelResponse:
        """Answer by rule.

        Raises:
            ModelFatalError: a ``text.format`` that is not a JSON schema was requested.
        """
        digest = _digest(request)
        if request.text_format is not None:
            return self._verdict(request, digest)
        if not request.tools:
            return _response(digest, (), _summary(request), [])
        calls = self._calls(request)
        if request.parallel_tool_calls is False:
            calls = calls[:1]
        function_calls: list[FunctionCall] = []
        items: list[ResponseItem] = []
        for index, (tool, arguments) in enumerate(calls):
            call_id = f"call_offline_{digest}_{index}"
            text = json.dumps(arguments)
            function_calls.append(FunctionCall(call_id, tool.name, text))
            items.append(
                {
                    "type": "function_call",
                    "id": f"fc_offline_{digest}_{index}",
                    "call_id": call_id,
                    "name": tool.name,
                    "arguments": text,
                    "status": "completed",
                }
            )
        return _response(digest, tuple(function_calls), "", items)

    # ------------------------------------------------------------------ attention verdict

    def _verdict(self, request: ModelRequest, digest: str) -> ModelResponse:
        text_format = request.text_format or {}
        schema = text_format.get("schema")
        properties = schema.get("properties") if isinstance(schema, Mapping) else None
        if text_format.get("type") != "json_schema" or not isinstance(properties, Mapping):
            raise ModelFatalError("the offline stand-in needs a json_schema text format")
        if "attend" not in properties or "ignore" not in properties:
            # Not a verdict (a connection check, say): the schema's shape with placeholders.
            return _text_response(
                digest, json.dumps(_fill_arguments({"properties": properties}, {}))
            )
        reasons = _wants_objects(properties["ignore"])
        attend: list[dict[str, Any]] = []
        ignore: list[Any] = []
        for number, line in _batch_lines("\n".join(_user_texts(request.input))):
            item_id = int(number)
            found = self._watch_hits(_last_quoted(line))
            if found:
                attend.append({"id": item_id, "why": "mentions " + ", ".join(found)})
            elif reasons:
                ignore.append({"id": item_id, "why": "no watch word in the text"})
            else:
                ignore.append(item_id)
        as_text = isinstance(properties["ignore"], Mapping) and (
            properties["ignore"].get("type") == "string"
        )
        output_text = json.dumps(
            {"attend": attend, "ignore": format_ids(ignore) if as_text else ignore}
        )
        return _text_response(digest, output_text)

    def _watch_hits(self, text: str) -> list[str]:
        if self._watch_pattern is None:
            return []
        hits = {match.group(1).lower() for match in self._watch_pattern.finditer(text)}
        return [word for word in self._watch_words if word in hits][:3]

    # ------------------------------------------------------------------ tool loop

    def _calls(self, request: ModelRequest) -> list[tuple[ToolSpec, dict[str, Any]]]:
        tools = {tool.name: tool for tool in request.tools}
        if not tools or request.tool_choice == "none":
            return []
        # A request that requires a call and offers no storyteller tools (a connection check,
        # say) gets one to its first tool with placeholder arguments.
        foreign = not any(t.name in BUILTIN_TOOL_NAMES for t in request.tools)
        fallback = request.tools[0] if request.tool_choice == "required" and foreign else None
        quiet = tools.get("Noop", fallback)
        noop = [(quiet, _fill_arguments(quiet.parameters, {}))] if quiet is not None else []
        if any(item.get("type") == "function_call_output" for item in request.input):
            return noop
        texts = _user_texts(request.input)
        prompt = texts[-1] if texts else ""
        planned = plan_calls(tools, prompt, _fill_arguments, _room_and_text_parameters)
        if planned is not None:
            return planned
        location = _LOCATION.search(prompt)
        if location is None:
            return noop
        room_id = int(location.group(1).replace(",", ""))
        event_text = _event_text(prompt)
        calls: list[tuple[ToolSpec, dict[str, Any]]] = []
        situation = tools.get("CreateSituation")
        if situation is not None:
            known = {
                "Title": _title(event_text, room_id),
                "Description": _truncate(
                    f'Reported in room #{room_id}: "{event_text}"'
                    if event_text
                    else f"Something happened in room #{room_id}.",
                    _DESCRIPTION_LIMIT,
                ),
                "RoomId": room_id,
                "CharacterId": None,
            }
            calls.append((situation, _fill_arguments(situation.parameters, known)))
        for tool in request.tools:
            parameters = _room_and_text_parameters(tool)
            if tool.name not in BUILTIN_TOOL_NAMES and parameters is not None:
                room_name, text_name = parameters
                known = {room_name: room_id, text_name: self._ambient_line}
                calls.append((tool, _fill_arguments(tool.parameters, known)))
                break
        return calls or noop


_BATCH_LINE = re.compile(r"^\[(\d+)\] (.*)$", re.MULTILINE)


def _batch_lines(text: str) -> list[tuple[str, str]]:
    """The (id, line) of every event of an attention batch."""
    return [(m.group(1), m.group(2)) for m in _BATCH_LINE.finditer(text)]


def _last_quoted(line: str) -> str:
    """The event's own text: the line's last JSON string (not the room or speaker names)."""
    start = line.rfind(': "')
    if start < 0:
        return line
    try:
        value = json.loads(line[start + 2 :])
    except json.JSONDecodeError:
        return line
    return value if isinstance(value, str) else line


def _wants_objects(schema: Any) -> bool:
    """Whether a list's items are objects (ignore verdicts with reasons)."""
    items = schema.get("items") if isinstance(schema, Mapping) else None
    return isinstance(items, Mapping) and items.get("type") == "object"


SUMMARY_HEADER = "Offline stand-in summary (rule-based, not a language model); the newest changes:"
SUMMARY_LINES = 8


def _summary(request: ModelRequest) -> str:
    """A text-only request (a rolling digest) answered by rule: the newest change lines of
    its input, as given, under a header that says what wrote them."""
    lines = [
        line.strip()
        for text in _user_texts(request.input)
        for line in text.splitlines()
        if line.strip().startswith("- ")
    ]
    kept = list(dict.fromkeys(lines))[-SUMMARY_LINES:]
    return "\n".join([SUMMARY_HEADER, *kept]) if kept else SUMMARY_HEADER


def _text_response(digest: str, output_text: str) -> ModelResponse:
    """An answer of one assistant message holding `output_text`."""
    message: ResponseItem = {
        "type": "message",
        "id": f"msg_offline_{digest}",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": output_text, "annotations": []}],
    }
    return _response(digest, (), output_text, [message])


def _digest(request: ModelRequest) -> str:
    payload = json.dumps(
        [request.model, request.instructions, request.input], sort_keys=True, default=str
    )
    return hashlib.sha256(payload.encode()).hexdigest()[:16]


def _response(
    digest: str, calls: tuple[FunctionCall, ...], text: str, items: list[ResponseItem]
) -> ModelResponse:
    return ModelResponse(
        id=f"resp_offline_{digest}",
        model=_MODEL_ID,
        status="completed",
        function_calls=calls,
        output_text=text,
        continuation=tuple(items),
        usage=Usage(),
    )


def _user_texts(items: Iterable[ResponseItem]) -> list[str]:
    """The text of each user message, in order."""
    texts: list[str] = []
    for item in items:
        if item.get("role") != "user" or item.get("type", "message") != "message":
            continue
        content = item.get("content")
        if isinstance(content, str):
            texts.append(content)
        elif isinstance(content, list):
            parts = [
                part["text"]
                for part in content
                if isinstance(part, Mapping) and isinstance(part.get("text"), str)
            ]
            texts.append("\n".join(parts))
    return texts


def _event_text(prompt: str) -> str:
    """The text after an ``Event Text:``/``Spoken Text:`` header, up to the next blank line."""
    lines = prompt.splitlines()
    for index, line in enumerate(lines):
        stripped = line.strip()
        header = next((h for h in _EVENT_HEADERS if stripped.startswith(h)), None)
        if header is None:
            continue
        collected = [_unquote(stripped[len(header) :])]
        for following in lines[index + 1 :]:
            if not following.strip() or following.startswith("<<end world-text "):
                break
            collected.append(_unquote(following))
        return " ".join(part for part in collected if part)
    return ""


_FENCE_MARKER = re.compile(r"<<(end )?world-text [0-9a-f]+( from [^>]*)?>>")


def _unquote(line: str) -> str:
    """A line of world text; the markers of the fence around it count as blank."""
    text = line.strip()
    return "" if _FENCE_MARKER.fullmatch(text) else text


_TITLE_WORDS = 4
"""Words of the event a title keeps: fewer than the policy's run of copied words (6), so the
stand-in's titles are its own words, as a storyteller's must be (`dictated`)."""


def _title(event_text: str, room_id: int) -> str:
    if not event_text:
        return f"Something stirs in room #{room_id}"
    sentence = _SENTENCE_END.split(event_text, maxsplit=1)[0].split()
    if len(sentence) > _TITLE_WORDS:
        return _truncate(f"In room #{room_id}: {' '.join(sentence[:_TITLE_WORDS])}…", _TITLE_LIMIT)
    return _truncate(" ".join(sentence), _TITLE_LIMIT)


def _truncate(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _types(schema: Any) -> set[str]:
    """Every JSON type a property schema allows (``type`` lists and ``anyOf`` included)."""
    if not isinstance(schema, Mapping):
        return set()
    declared = schema.get("type")
    types = {declared} if isinstance(declared, str) else set(declared or ())
    for option in schema.get("anyOf") or ():
        types |= _types(option)
    return {str(t) for t in types}


def _room_and_text_parameters(tool: ToolSpec) -> tuple[str, str] | None:
    """Names of an integer room parameter and a string parameter of ``tool``, if it has both."""
    properties = tool.parameters.get("properties") or {}
    room = next(
        (
            name
            for name, schema in properties.items()
            if _ROOM_PARAMETER.search(name) and "integer" in _types(schema)
        ),
        None,
    )
    strings = [name for name, schema in properties.items() if "string" in _types(schema)]
    if room is None or not strings:
        return None
    text = next((name for name in strings if _TEXT_PARAMETER.search(name)), strings[0])
    return room, text


def _fill_arguments(schema: Mapping[str, Any], known: Mapping[str, Any]) -> dict[str, Any]:
    """A value for every property of an object schema: ``known`` ones (by case-insensitive
    name) where their type allows, a neutral placeholder otherwise."""
    lowered = {name.lower(): value for name, value in known.items()}
    arguments: dict[str, Any] = {}
    for name, prop in (schema.get("properties") or {}).items():
        types = _types(prop)
        key = str(name).lower()
        if key in lowered and (lowered[key] is not None or "null" in types):
            arguments[name] = lowered[key]
        else:
            arguments[name] = _placeholder(prop, types)
    return arguments


def _placeholder(schema: Any, types: set[str]) -> Any:
    if "null" in types:
        return None
    if isinstance(schema, Mapping) and schema.get("enum"):
        return schema["enum"][0]
    if "string" in types:
        return ""
    if "integer" in types or "number" in types:
        return 0
    if "boolean" in types:
        return False
    if "array" in types:
        return []
    if "object" in types and isinstance(schema, Mapping):
        return _fill_arguments(schema, {})
    return None
