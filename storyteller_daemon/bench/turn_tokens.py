"""Where a tool-loop request's input tokens go, for ``storyteller bench stream``'s report.

A turn's request reads, in the order the provider reads it: the instructions (the system prompt
and the tool boundary), the tool schemas, the user prompt (the stored notes first, then the
events from the note on world text on: `agent.fencing.WORLD_TEXT_NOTE`), and, from the second
round on, the calls already made and their results. `turn_parts` splits a request's text into
those parts, so the report can say which of them a cheaper turn has to cut, and the report
prices every request at the model it names (`by_model`), as the storyteller's own models bill.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from typing import Any

from storyteller_daemon.agent.models.interface import Usage
from storyteller_daemon.agent.models.pricing import cost_usd
from storyteller_daemon.config import ModelPrice

PARTS = ("instructions", "tools", "notes", "events", "calls and results")
"""The parts of a tool-loop request, in the order they are read."""
_EVENTS_START = "World text below ("
"""How the note on world text begins: the events of a user prompt start there."""


def turn_parts(body: Mapping[str, Any]) -> dict[str, str]:
    """A tool-loop request's text by part (`PARTS`); their lengths add up to what is counted."""
    parts = dict.fromkeys(PARTS, "")
    parts["instructions"] = str(body.get("instructions") or "")
    if body.get("tools"):
        parts["tools"] = json.dumps(body["tools"], ensure_ascii=False, separators=(",", ":"))
    prompt_seen = False
    later: list[str] = []
    for item in body.get("input") or []:
        if not isinstance(item, dict):
            continue
        text = _item_text(item)
        if not prompt_seen and item.get("role") == "user":
            prompt_seen = True
            cut = text.find(_EVENTS_START)
            cut = len(text) if cut < 0 else cut
            parts["notes"] += text[:cut]
            parts["events"] += text[cut:]
        else:
            later.append(text)
    parts["calls and results"] = "\n".join(later)
    return parts


def _item_text(item: Mapping[str, Any]) -> str:
    content = item.get("content")
    texts: list[str] = []
    if isinstance(content, str):
        texts.append(content)
    elif isinstance(content, list):
        texts += [str(c.get("text", "")) for c in content if isinstance(c, dict)]
    for key in ("arguments", "output"):
        if isinstance(item.get(key), str):
            texts.append(item[key])
    return "\n".join(texts)


class TurnTokens:
    """Input tokens of the tool-loop requests by part, and every request's usage by model.

    Args:
        chars_per_token: how characters are turned into tokens (as the stand-in bills them).
    """

    def __init__(self, chars_per_token: int) -> None:
        self._per_token = chars_per_token
        self.parts: Counter[str] = Counter()
        self.by_model: dict[str, Usage] = {}

    def add_round(self, body: Mapping[str, Any]) -> None:
        """Count one tool-loop request's parts."""
        for name, text in turn_parts(body).items():
            self.parts[name] += len(text) // self._per_token

    def bill(self, model: str, usage: Usage) -> None:
        """Count one answered request's usage under the model it named."""
        self.by_model[model] = self.by_model.get(model, Usage()) + usage

    def usd(self, prices: Mapping[str, ModelPrice]) -> float:
        """What every request cost at the price of the model it named."""
        return sum(cost_usd(prices, model, usage) for model, usage in self.by_model.items())

    def shares(self) -> dict[str, float]:
        """Each part's share of the tool-loop input tokens (empty before any round)."""
        total = sum(self.parts.values())
        if not total:
            return {}
        return {name: round(self.parts[name] / total, 3) for name in PARTS}
