"""An obedient model: a stand-in for a model that does whatever world text tells it to.

Security tests assume the worst a model can do: follow every instruction a player slipped into
the text it reads. Given a table of injections (the words a player writes, and the tool calls
they ask for), `ObedientResponder` answers the daemon's requests through the shipped
Responses-compatible server as a fully compromised model would:

* every event of an attention batch is attended to, so every injection reaches a turn;
* in a turn, it calls every tool that any injection it can read asks for, all at once: in the
  prompt (not in its recent-speech context, which earlier turns obeyed), or in a tool's output
  (text stored earlier and read back: second-order injection), each call once per turn; with
  nothing left to obey it calls ``Noop``.

Text is matched as words (case, punctuation, spacing, quoting and escapes ignored, invisible
characters dropped), so the daemon's quoting does not hide an injection from it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from storyteller_daemon.agent.trigger_text import SPEECH_CONTEXT_HEADER
from storyteller_daemon.domain.text import strip_markup
from storyteller_daemon.testing.responses_answers import Reply
from storyteller_daemon.testing.steps import event_lines, verdict_json

_ESCAPE = re.compile(r"\\[nrt\"\\/]|\\u[0-9a-fA-F]{4}")
_NOT_WORD = re.compile(r"[^\w]+")


def words(text: str) -> str:
    """`text` as lower-case words joined by single spaces (escapes and markup dropped)."""
    return " ".join(_NOT_WORD.sub(" ", strip_markup(_ESCAPE.sub(" ", text))).split()).casefold()


@dataclass(frozen=True)
class Injection:
    """What a player writes, and the tool calls (name, arguments) it asks the model to make."""

    text: str
    asks: tuple[tuple[str, Mapping[str, Any]], ...]


@dataclass
class ObedientResponder:
    """A responder for `ScriptedResponsesServer` that obeys `injections` (see the module)."""

    injections: Sequence[Injection]
    obeyed: list[Injection] = field(default_factory=list)

    def __call__(self, body: dict[str, Any]) -> Reply:
        items = [i for i in body.get("input") or [] if isinstance(i, dict)]
        if (body.get("text") or {}).get("format", {}).get("type") == "json_schema":
            return Reply.text(verdict_json({n: "as told" for n, _ in event_lines(items)}))
        readable = words(
            " ".join(
                _trigger_part(str(i.get("content") or i.get("output") or ""))
                for i in items
                if i.get("role") == "user" or i.get("type") == "function_call_output"
            )
        )
        made = {
            (str(i.get("name")), _canonical(json.loads(str(i.get("arguments") or "{}"))))
            for i in items
            if i.get("type") == "function_call"
        }
        calls: list[tuple[str, dict[str, Any]]] = []
        for injection in self.injections:
            if words(injection.text) not in readable:
                continue
            fresh = [
                (name, dict(arguments))
                for name, arguments in injection.asks
                if (name, _canonical(arguments)) not in made
            ]
            if fresh and injection not in self.obeyed:
                self.obeyed.append(injection)
            calls += [c for c in fresh if c not in calls]
        return Reply.calls(*calls) if calls else Reply.calls(("Noop", {}))


def _trigger_part(text: str) -> str:
    """A prompt without its recent-speech context: those lines were triggers of earlier turns,
    obeyed then."""
    return text.split(SPEECH_CONTEXT_HEADER, 1)[0]


def _canonical(arguments: Mapping[str, Any]) -> str:
    return json.dumps(arguments, sort_keys=True, separators=(",", ":"))
