"""Ready-made `ScriptedModel` steps that answer from the request.

* `attend_all` answers an attention batch by attending to every event in it (or to those a
  predicate picks, ignoring the rest);
* `by_kind` sends attention requests (those offering no tools) to one step and a turn's
  requests to another (and, optionally, a turn's later rounds to a third);
* `cycle` takes its steps in turn, starting over after the last (a fault every fifth request);
* `hang` never answers, like a model that stopped responding.

    model = ScriptedModel(
        then=by_kind(attention=attend_all(why="It matters."), turn=calls(("Noop", {}))),
    )

`event_lines` and `verdict_json` read a batch and write a verdict, for responders of
`ScriptedResponsesServer` too.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from storyteller_daemon.agent.models.interface import ModelRequest, ModelResponse, Usage
from storyteller_daemon.agent.verdicts import ATTEND_KEY, IGNORE_KEY, format_ids
from storyteller_daemon.testing.model import Step, StepFunction, respond_with, text

_EVENT_LINE = re.compile(r"^\[(\d+)\] (.*)$", re.MULTILINE)
IGNORED_WHY = "not picked"
"""The reason given for an ignored event when the request asks for reasons on ignores."""


def event_lines(items: Iterable[Mapping[str, Any]]) -> list[tuple[int, str]]:
    """The events of an attention batch, as (id, line) for every ``[id] …`` line in the text of
    the request's input items (`ModelRequest.input`, or the ``input`` of a request body)."""
    texts = (item["content"] for item in items if isinstance(item.get("content"), str))
    return [(int(m.group(1)), m.group(2)) for m in _EVENT_LINE.finditer("\n".join(texts))]


def verdict_json(
    attend: Mapping[int, str],
    ignore: Sequence[int] = (),
    text_format: Mapping[str, Any] | None = None,
) -> str:
    """A batch verdict: `attend` maps ids to reasons; the `ignore` ids are written as the
    request's `text_format` asks (a string of ids and ranges, or reasoned entries when the
    schema wants a list)."""
    schema = (text_format or {}).get("schema") or {}
    ignore_type = (schema.get("properties") or {}).get(IGNORE_KEY, {}).get("type")
    ignored: str | list[dict[str, Any]] = (
        [{"id": n, "why": IGNORED_WHY} for n in ignore]
        if ignore_type == "array"
        else format_ids(ignore)
    )
    attended = [{"id": n, "why": why} for n, why in attend.items()]
    return json.dumps({ATTEND_KEY: attended, IGNORE_KEY: ignored})


def attend_all(
    why: str = "It matters.",
    *,
    only: Callable[[str], bool] | None = None,
    usage: Usage | None = None,
) -> StepFunction:
    """Answers an attention batch request by attending to every event id in it, each for `why`.

    Args:
        why: the reason given for every attended event.
        only: when given, attends only to the events whose line (after its ``[id]``) it
            accepts, and ignores the others.
        usage: the token counts the answer reports.
    """

    async def step(request: ModelRequest) -> ModelResponse:
        lines = event_lines(request.input)
        picked = {n: why for n, line in lines if only is None or only(line)}
        ignored = [n for n, _ in lines if n not in picked]
        return text(verdict_json(picked, ignored, request.text_format), usage=usage)

    return step


def by_kind(*, attention: Step, turn: Step, follow_up: Step | None = None) -> StepFunction:
    """Answers a request by its kind.

    Args:
        attention: for a request that offers no tools (the attention gate's).
        turn: for a turn's request (it offers tools).
        follow_up: when given, for a turn's later rounds instead of `turn`: the requests whose
            input already holds tool outputs.
    """

    async def step(request: ModelRequest) -> ModelResponse:
        if not request.tools:
            return await respond_with(attention, request)
        if follow_up is not None and any(
            item.get("type") == "function_call_output" for item in request.input
        ):
            return await respond_with(follow_up, request)
        return await respond_with(turn, request)

    return step


def cycle(*steps: Step) -> StepFunction:
    """Answers with `steps` in turn, one per request, starting over after the last.

    Raises:
        ValueError: no step was given.
    """
    if not steps:
        raise ValueError("cycle needs at least one step")
    turns = itertools.cycle(steps)

    async def step(request: ModelRequest) -> ModelResponse:
        return await respond_with(next(turns), request)

    return step


def hang() -> StepFunction:
    """Never answers: the request waits until it is cancelled (a model that stopped
    responding, or a process that died while waiting)."""

    async def step(request: ModelRequest) -> ModelResponse:
        never: asyncio.Future[ModelResponse] = asyncio.get_running_loop().create_future()
        return await never

    return step
