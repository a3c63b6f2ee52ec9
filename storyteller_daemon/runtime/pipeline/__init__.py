"""The event pipeline over each storyteller's durable backlog.

Intake runs the synchronous stages (shutdown, pause, API key, prefilter: own-prog echoes,
subscriptions, watched rooms) and writes every accepted trigger to the backlog (`domain.work`)
before anything else happens; a trigger is then never lost, whatever happens to the process.

Each storyteller has two tasks over its backlog:

* **attention**: waits for a burst window (no new event for ``quiet_seconds``, or the oldest
  waiting ``max_wait_seconds``; urgent kinds and a full batch go at once), then takes the oldest
  pending events, up to ``max_batch_events``, settles repeats from memory (`domain.repeats`),
  and asks the model about the rest in one request. Each event gets a recorded decision. A
  failed request leaves its events pending and waits (doubling, up to a minute) before the next
  pass; events still unjudged after ``max_age_seconds`` are expired, counted and alerted. When
  the model is slower than the world the backlog grows in the database, not in memory.
* **turns**: claims the oldest interested event and every other interested event of the same
  kind of turn (up to ``max_turn_events``) and runs one turn for them all; events that become
  interesting while a turn runs go to the next one together.

On start, work a previous run left behind resumes: pending events are judged, interested ones
get turns, and a turn that was running is run again under its own turn key (prog calls are
idempotent by that key), once. Stop is quick: intake closes, a judging pass or turn in flight
gets the drain deadline, and everything else stays in the backlog for the next start.

Speech is also written to the rooms' speech history, once per event whoever hears it, by one
background writer behind a bounded buffer (overflow is counted as the ``speech_history`` drop).
A batch holding speech waits for the writer to catch up before it is judged.

The package's modules: `ports` (what the pipeline needs from outside), `lanes` (each
storyteller's lane and the `Lanes` every stage shares: the lanes table, the backlog and the
progress signal), the stages `intake`, `routing`, `attention` (with `judging`, one batch's
decisions), `turn_loop` and `speech`, and `core` (the `Pipeline` that builds and supervises
them). Each stage is an object of its own that the others reach only through the references
`Pipeline` gives them, and every field of a lane changes through a method of `Lane`.
"""

from storyteller_daemon.runtime.pipeline.attention import EXPIRY_EVERY_SECONDS, RETRY_CAP_SECONDS
from storyteller_daemon.runtime.pipeline.core import Pipeline
from storyteller_daemon.runtime.pipeline.ports import (
    Admission,
    Backlog,
    Observer,
    SpeechRecorder,
)
from storyteller_daemon.runtime.pipeline.speech import SPEECH_BUFFER
from storyteller_daemon.runtime.pipeline.turn_loop import FAILED_OUTCOMES, turn_key_of

__all__ = [
    "EXPIRY_EVERY_SECONDS",
    "FAILED_OUTCOMES",
    "RETRY_CAP_SECONDS",
    "SPEECH_BUFFER",
    "Admission",
    "Backlog",
    "Observer",
    "Pipeline",
    "SpeechRecorder",
    "turn_key_of",
]
