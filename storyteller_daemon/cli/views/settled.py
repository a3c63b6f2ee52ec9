"""The verdict memory as ``ais show`` reports it: the entries that hold now, and their summary.

The verdict memory (`domain.verdict_memory`) keeps the texts the attention model ignored, so a
repeat within ``[attention] verdict_memory_hours`` is settled by rule without a model call.
``ais set REF rule memory|forget`` lists and clears it.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from storyteller_daemon.domain.storytellers import Storyteller
from storyteller_daemon.domain.verdict_memory import SettledVerdict, prompts_digest


async def holding(store: Any, st: Storyteller, hours: float, now: datetime) -> list[SettledVerdict]:
    """The entries that settle events now: current prompts, within the horizon."""
    if hours <= 0 or st.id is None:
        return []
    prompts = prompts_digest(st.system_prompt, st.attention_prompt)
    entries = await store.verdicts.list(st.id, since=now - timedelta(hours=hours))
    return [e for e in entries if e.prompts == prompts]


def summary(entries: list[SettledVerdict], hours: float) -> dict[str, Any]:
    """What ``ais show`` says of the memory (its JSON ``verdict_memory``)."""
    return {
        "hours": hours,
        "texts": len(entries),
        "events_settled": sum(e.hits for e in entries),
    }


def summary_line(facts: dict[str, Any], ref: object) -> str:
    """One line for ``ais show`` (`ref` names the storyteller in the command it suggests)."""
    if not facts["hours"]:
        return "Verdict memory: off ([attention] verdict_memory_hours = 0)"
    return (
        f"Verdict memory: {facts['texts']} ignored texts settle repeats without a model call "
        f"({facts['events_settled']} events settled so far; horizon {facts['hours']:g} h; "
        f"`ais set {ref} rule memory` lists them)"
    )
