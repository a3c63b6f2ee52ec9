"""The offline stand-in's rules for story plans: fixed rules, not a language model's planning.

So the demo can show a plan made and advanced without a model, the stand-in (`offline`) answers
a turn that offers ``CreateStoryPlan`` by these rules, in order:

* a step the prompt says is due is done: its tool is called with the arguments the plan had in
  mind (a situation's title and description are the step's intent);
* a plan whose step failed is replanned with one new step, the reason saying it is a rule;
* on a heartbeat with no plan yet, a three-step plan is made whose goal says it is rule-based:
  open a situation, then (when the prompt names a ``room #N`` and a custom tool takes a room
  and a text) show a line in that room, then open a closing situation.

Anything else is left to the stand-in's other rules.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any

from storyteller_daemon.agent.models.interface import ToolSpec
from storyteller_daemon.domain.tool_names import BUILTIN_TOOL_NAMES

Call = tuple[ToolSpec, dict[str, Any]]
Fill = Callable[[Mapping[str, Any], Mapping[str, Any]], dict[str, Any]]

RULE_GOAL = "Keep the ward stirring between events (a fixed rule-based plan, not a model's)"
RULE_REASON = "Rule-based stand-in: the failed step is dropped and the plan goes on."
BELL_LINE = "The harbour bell rings out across the darkening water."
_QUOTED = r'"(?:[^"\\]|\\.)*"'
_DUE = re.compile(
    rf"^- Plan #(\d+) step \d+ \(due: .*?\): call (\S+) to ({_QUOTED})"
    rf"(?:, arguments in mind ({_QUOTED}))?$",
    re.MULTILINE,
)
_REPLAN = re.compile(r"^- Plan #(\d+) \(needs replan;", re.MULTILINE)
_ROOM = re.compile(r"room #(\d+)")
HEARTBEAT_LINE = "A configured heartbeat event has triggered."


def plan_calls(
    tools: Mapping[str, ToolSpec],
    prompt: str,
    fill: Fill,
    room_and_text: Callable[[ToolSpec], tuple[str, str] | None],
) -> list[Call] | None:
    """The calls the plan rules make for this prompt, or None to leave it to other rules."""
    if "CreateStoryPlan" not in tools:
        return None
    due = [_due_call(tools, match, fill) for match in _DUE.finditer(prompt)]
    if any(call is not None for call in due):
        return [call for call in due if call is not None]
    replan = _REPLAN.search(prompt)
    if replan is not None and "UpdateStoryPlan" in tools:
        update = tools["UpdateStoryPlan"]
        step = {"Tool": "CreateSituation", "Intent": "Note what went wrong", "Arguments": None,
                "WaitFor": None}  # fmt: skip
        known = {"Id": int(replan.group(1)), "Action": "replan", "Reason": RULE_REASON,
                 "Steps": [step]}  # fmt: skip
        return [(update, fill(update.parameters, known))]
    if HEARTBEAT_LINE in prompt and "Your story plans" not in prompt:
        create = tools["CreateStoryPlan"]
        known = {"Goal": RULE_GOAL, "Steps": _steps(tools, prompt, room_and_text)}
        return [(create, fill(create.parameters, known))]
    return None


def _due_call(tools: Mapping[str, ToolSpec], match: re.Match[str], fill: Fill) -> Call | None:
    tool = tools.get(match.group(2))
    if tool is None:
        return None
    intent = json.loads(match.group(3))
    known: dict[str, Any] = {"Title": intent[:80], "Description": intent}
    if match.group(4):
        try:
            known.update(json.loads(json.loads(match.group(4))))
        except (ValueError, TypeError):
            pass
    return tool, fill(tool.parameters, known)


def _steps(
    tools: Mapping[str, ToolSpec],
    prompt: str,
    room_and_text: Callable[[ToolSpec], tuple[str, str] | None],
) -> list[dict[str, Any]]:
    def step(tool: str, intent: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
        text = json.dumps(arguments) if arguments is not None else None
        return {"Tool": tool, "Intent": intent, "Arguments": text, "WaitFor": None}

    middle = step("CreateSituation", "Note that the ward has gone quiet")
    room = _ROOM.search(prompt)
    for tool in tools.values():
        names = room_and_text(tool) if tool.name not in BUILTIN_TOOL_NAMES else None
        if room is not None and names is not None:
            room_name, text_name = names
            arguments = {room_name: int(room.group(1)), text_name: BELL_LINE}
            middle = step(tool.name, "Let the evening bell be heard", arguments)
            break
    return [
        step("CreateSituation", "Open a thread on the ward's evening mood"),
        middle,
        step("CreateSituation", "Note how the ward took the evening"),
    ]
