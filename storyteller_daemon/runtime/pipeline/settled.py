"""The verdict memory at work in one storyteller's attention passes (`domain.verdict_memory`).

`SettledVerdicts.recall` finds, among the events a pass would ask the model about, those whose
text, kind and room class the model ignored within ``[attention] verdict_memory_hours`` under
the storyteller's current prompts; `record` counts those hits and keeps what the model newly
ignored. A lane notices a change of its storyteller's prompts and clears what was settled under
the old ones. The memory only saves model calls: when the database cannot be read or written
the events are judged (or the verdicts not kept), with a warning.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from storyteller_daemon.agent.trigger import Trigger
from storyteller_daemon.domain.storytellers import Storyteller
from storyteller_daemon.domain.verdict_memory import (
    Recallable,
    SettledVerdict,
    prompts_digest,
    recallable,
)
from storyteller_daemon.domain.work import WorkItem
from storyteller_daemon.runtime.pipeline.ports import VerdictMemory
from world_adapter.events import RoomEcho, Speech

log = logging.getLogger(__package__)


def as_recallable(trigger: Trigger, names: Mapping[int, str] | None = None) -> Recallable | None:
    """The event of `trigger` as the memory knows it (None: never settled from it); `names`
    are the names seen for characters (an echo carries only its source's id)."""
    event = trigger.event
    if isinstance(event, RoomEcho):
        source = event.source_character_id
        known = (names or {}).get(source) if source is not None else None
        return recallable(
            "room_echo",
            event.text,
            room_id=event.cell_id,
            zone_id=event.zone_id,
            characters=event.involved_character_ids,
            names=(known,) if known else (),
        )
    if isinstance(event, Speech):
        carried = [event.speaker_name]
        if event.target_id is not None and event.target_description:
            carried.append(event.target_description)
        return recallable(
            "speech",
            event.text,
            room_id=event.cell_id,
            zone_id=event.zone_id,
            speaker_id=event.speaker_id,
            characters=event.involved_character_ids,
            names=carried,
        )
    return None


NAMES_KEPT = 1024
"""Character names a lane remembers at most (the least recently seen are forgotten first)."""


@dataclass
class MemoryLane:
    """A lane's view of the memory: the prompts it last saw its storyteller with, and the
    names its speech events gave their speakers (an echo's text names its source, but the
    event carries only the id)."""

    prompts: str | None = None
    names: OrderedDict[int, str] = field(default_factory=OrderedDict)

    def saw(self, triggers: Sequence[Trigger]) -> None:
        """Learn the speakers' names of the speech among `triggers`."""
        for trigger in triggers:
            event = trigger.event
            if isinstance(event, Speech) and event.speaker_name.strip():
                self.names[event.speaker_id] = event.speaker_name
                self.names.move_to_end(event.speaker_id)
        while len(self.names) > NAMES_KEPT:
            self.names.popitem(last=False)


@dataclass
class Recall:
    """What the memory settled in one pass, and what the pass may add to it.

    Attributes:
        prompts: the digest of the storyteller's prompts during the pass.
        settled: index in the batch → the entry that settles it.
        candidates: index in the batch → the event as the memory knows it (those asked).
    """

    prompts: str = ""
    settled: dict[int, SettledVerdict] = field(default_factory=dict)
    candidates: dict[int, Recallable] = field(default_factory=dict)


class SettledVerdicts:
    """Settles repeats from the kept ignore verdicts of a storyteller, and keeps new ones.

    Args:
        memory: the store (None: nothing is settled or kept).
        hours: the horizon (0: off).
    """

    def __init__(self, memory: VerdictMemory | None, hours: float) -> None:
        self._memory = memory if hours > 0 else None
        self._horizon = timedelta(hours=hours)

    async def recall(
        self,
        st: Storyteller,
        lane: MemoryLane,
        triggers: Sequence[Trigger],
        asking: Sequence[int],
        now: datetime,
    ) -> Recall:
        """Which of the events at `asking` (indexes into `triggers`) the memory settles."""
        found = Recall()
        if self._memory is None or st.id is None:
            return found
        found.prompts = prompts_digest(st.system_prompt, st.attention_prompt)
        lane.saw(triggers)
        found.candidates = {
            index: event
            for index in asking
            if (event := as_recallable(triggers[index], lane.names)) is not None
        }
        if not found.candidates:
            return found
        try:
            if lane.prompts != found.prompts:
                cleared = await self._memory.invalidate(st.id, keep_prompts=found.prompts)
                if cleared and lane.prompts is not None:
                    log.info(
                        "storyteller %s: its prompts changed; %d settled verdicts cleared",
                        st.name,
                        cleared,
                    )
                lane.prompts = found.prompts
            kept = await self._memory.recall(
                st.id,
                {e.key for e in found.candidates.values()},
                prompts=found.prompts,
                since=now - self._horizon,
            )
            if not kept:
                return found
            relevant = frozenset[int]()
            if any(e.characters and e.key in kept for e in found.candidates.values()):
                relevant = await self._memory.relevant_characters(st.id)
        except Exception as exc:  # the events are judged by the model instead
            log.warning("storyteller %s: the verdict memory could not be read: %s", st.name, exc)
            return found
        found.settled = _settled(found.candidates, kept, relevant)
        return found

    async def record(
        self,
        st: Storyteller,
        found: Recall,
        items: Sequence[WorkItem],
        ignored: Sequence[int],
    ) -> None:
        """Count the pass's hits and keep the events at `ignored` (the model ignored them)."""
        if self._memory is None or st.id is None:
            return
        fresh = [
            (found.candidates[index], items[index].id)
            for index in ignored
            if index in found.candidates and index not in found.settled
        ]
        try:
            await self._memory.hit([entry.id for entry in found.settled.values()])
            await self._memory.remember(st.id, fresh, prompts=found.prompts)
        except Exception as exc:  # the verdicts are only not kept
            log.warning("storyteller %s: the verdict memory could not be written: %s", st.name, exc)

    async def prune(self, now: datetime) -> int:
        """Delete entries past the horizon."""
        if self._memory is None:
            return 0
        return await self._memory.prune(ignored_before=now - self._horizon)


def _settled(
    candidates: Mapping[int, Recallable],
    kept: Mapping[str, SettledVerdict],
    relevant: frozenset[int],
) -> dict[int, SettledVerdict]:
    return {
        index: kept[event.key]
        for index, event in candidates.items()
        if event.key in kept and event.settles(relevant)
    }
