"""The speech-history writer: speech heard in watched rooms, written once per event.

Intake hands each speech to a bounded buffer (overflow is counted as the ``speech_history``
drop); one background task writes what piled up in one transaction, one by one when that
fails, and an attention pass holding speech waits for it to catch up before judging.
"""

from __future__ import annotations

import asyncio

from storyteller_daemon.runtime.pipeline.lanes import log
from storyteller_daemon.runtime.pipeline.ports import SpeechRecorder
from storyteller_daemon.runtime.stats import RuntimeStats
from world_adapter.events import Speech

SPEECH_BUFFER = 256
"""Speech events waiting to be written to the history before new ones are dropped."""


class SpeechHistory:
    """Keeps the rooms' speech history behind a bounded buffer.

    Args:
        recorder: where speech is written (None: no history is kept).
        stats: the daemon's counters (for the ``speech_history`` drop).
        buffer: speeches waiting to be written before new ones are dropped.
    """

    def __init__(
        self, recorder: SpeechRecorder | None, stats: RuntimeStats, buffer: int = SPEECH_BUFFER
    ) -> None:
        self.recorder = recorder
        self._stats = stats
        self._unrecorded: asyncio.Queue[Speech] = asyncio.Queue(maxsize=buffer)
        self._taken = 0
        self._done = 0
        self._progress = asyncio.Condition()

    def remember(self, event: Speech) -> None:
        """Hand one speech to the writer (dropped, and counted, when the buffer is full)."""
        if self.recorder is None:
            return
        try:
            self._unrecorded.put_nowait(event)
        except asyncio.QueueFull:
            self._stats.drop("speech_history")
            lost = self._stats.dropped["speech_history"]
            if lost & (lost - 1) == 0:  # 1st, 2nd, 4th, 8th...: a flood stays a few lines
                log.warning(
                    "speech history buffer full; %d speeches lost so far (room #%s last)",
                    lost,
                    event.cell_id,
                )
            return
        self._taken += 1

    async def caught_up(self) -> None:
        """Return once every speech taken in so far has been written (or has failed to be)."""
        target = self._taken
        async with self._progress:
            await self._progress.wait_for(lambda: self._done >= target)

    async def written(self) -> None:
        """Return once the buffer is empty and its last speeches are written."""
        await self._unrecorded.join()

    async def run(self) -> None:
        """Write what intake hands over, until cancelled."""
        assert self.recorder is not None
        while True:
            events = [await self._unrecorded.get()]
            while not self._unrecorded.empty():  # what piled up goes in one transaction
                events.append(self._unrecorded.get_nowait())
            try:
                await _record(self.recorder, events)
            finally:
                for _ in events:
                    self._unrecorded.task_done()
                self._done += len(events)
                async with self._progress:
                    self._progress.notify_all()


async def _record(recorder: SpeechRecorder, events: list[Speech]) -> None:
    if len(events) > 1:
        try:
            await recorder.record_many(events)
            return
        except Exception:  # one bad line must not lose the others: write them one by one
            log.warning("could not record %d speeches at once; one by one", len(events))
    for event in events:
        try:
            await recorder.record(event)
        except Exception:  # a failed write loses one line, never the pipeline
            log.exception("could not record a speech in room #%s", event.cell_id)
