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

Arguments fill every property of the tool's schema (strict schemas require all keys,
`offline_schemas`); what a prompt says is read by `offline_prompts`. Ids are derived from the
request, so the same request always gets the same answer.
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
from storyteller_daemon.agent.models.offline_prompts import (
    batch_lines,
    event_text,
    last_quoted,
    title,
    truncate,
    user_texts,
)
from storyteller_daemon.agent.models.offline_schemas import (
    fill_arguments,
    room_and_text_parameters,
    wants_objects,
)
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
_DESCRIPTION_LIMIT = 1000
_LOCATION = re.compile(r"^\s*Location:.*\[#([\d,]+)\]", re.MULTILINE)


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
                digest, json.dumps(fill_arguments({"properties": properties}, {}))
            )
        reasons = wants_objects(properties["ignore"])
        attend: list[dict[str, Any]] = []
        ignore: list[Any] = []
        for number, line in batch_lines("\n".join(user_texts(request.input))):
            item_id = int(number)
            found = self._watch_hits(last_quoted(line))
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
        noop = [(quiet, fill_arguments(quiet.parameters, {}))] if quiet is not None else []
        if any(item.get("type") == "function_call_output" for item in request.input):
            return noop
        texts = user_texts(request.input)
        prompt = texts[-1] if texts else ""
        planned = plan_calls(tools, prompt, fill_arguments, room_and_text_parameters)
        if planned is not None:
            return planned
        location = _LOCATION.search(prompt)
        if location is None:
            return noop
        room_id = int(location.group(1).replace(",", ""))
        happened = event_text(prompt)
        calls: list[tuple[ToolSpec, dict[str, Any]]] = []
        situation = tools.get("CreateSituation")
        if situation is not None:
            known = {
                "Title": title(happened, room_id),
                "Description": truncate(
                    f'Reported in room #{room_id}: "{happened}"'
                    if happened
                    else f"Something happened in room #{room_id}.",
                    _DESCRIPTION_LIMIT,
                ),
                "RoomId": room_id,
                "CharacterId": None,
            }
            calls.append((situation, fill_arguments(situation.parameters, known)))
        for tool in request.tools:
            parameters = room_and_text_parameters(tool)
            if tool.name not in BUILTIN_TOOL_NAMES and parameters is not None:
                room_name, text_name = parameters
                known = {room_name: room_id, text_name: self._ambient_line}
                calls.append((tool, fill_arguments(tool.parameters, known)))
                break
        return calls or noop


SUMMARY_HEADER = "Offline stand-in summary (rule-based, not a language model); the newest changes:"
SUMMARY_LINES = 8


def _summary(request: ModelRequest) -> str:
    """A text-only request (a rolling digest) answered by rule: the newest change lines of
    its input, as given, under a header that says what wrote them."""
    lines = [
        line.strip()
        for text in user_texts(request.input)
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
