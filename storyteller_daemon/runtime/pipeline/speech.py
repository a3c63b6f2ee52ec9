"""The speech-history writer: speech heard in watched rooms, written once per event.

Intake hands each speech to a bounded buffer (overflow is counted as the ``speech_history``
drop); one background task writes what piled up in one transaction, one by one when that
fails, and an attention pass holding speech waits for it to catch up before judging.
"""

from __future__ import annotations

import asyncio

from storyteller_daemon.runtime.pipeline.ports import SpeechRecorder
from storyteller_daemon.runtime.pipeline.state import PipelineState, log
from world_adapter.events import Speech


class SpeechWriter(PipelineState):
    """Keeps the rooms' speech history behind a bounded buffer."""

    def _remember_speech(self, event: Speech) -> None:
        if self._speech is None:
            return
        try:
            self._unrecorded.put_nowait(event)
        except asyncio.QueueFull:
            self.stats.drop("speech_history")
            lost = self.stats.dropped["speech_history"]
            if lost & (lost - 1) == 0:  # 1st, 2nd, 4th, 8th...: a flood stays a few lines
                log.warning(
                    "speech history buffer full; %d speeches lost so far (room #%s last)",
                    lost,
                    event.cell_id,
                )
            return
        self._speech_taken += 1

    async def _speech_caught_up(self) -> None:
        """Return once every speech taken in so far has been written (or has failed to be)."""
        target = self._speech_taken
        async with self._speech_progress:
            await self._speech_progress.wait_for(lambda: self._speech_done >= target)

    async def _speech_writer(self, recorder: SpeechRecorder) -> None:
        while True:
            events = [await self._unrecorded.get()]
            while not self._unrecorded.empty():  # what piled up goes in one transaction
                events.append(self._unrecorded.get_nowait())
            try:
                await self._record_speech(recorder, events)
            finally:
                for _ in events:
                    self._unrecorded.task_done()
                self._speech_done += len(events)
                async with self._speech_progress:
                    self._speech_progress.notify_all()

    @staticmethod
    async def _record_speech(recorder: SpeechRecorder, events: list[Speech]) -> None:
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
