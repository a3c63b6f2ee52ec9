"""The daemon's lifecycle: load settings, follow the world, run heartbeats, shut down cleanly.

Changes made with the CLI while the daemon runs take effect without a restart: every storyteller
row carries a revision that grows on each change, and the daemon compares revisions (and the
world's zone membership) every ``reload_seconds``; on a difference it reloads the settings,
re-routes, re-syncs heartbeats and, if the set of watched rooms changed, resubscribes to the
world from its last cursor.

Direct invocation (`Daemon.invoke`, FutureMUD's ``InvokeStorytellerAttention``) names a
storyteller by id or case-insensitive name in the current routing table and answers whether the
turn was queued, and if not, why. A bridged game invokes it with an ``invoke`` frame
(`invocations`): the request id makes it idempotent, and the turn's outcome is sent back.

With an event inbox (a bridged game), every batch of events is stored and the stream cursor
advanced in one transaction before the events are dispatched, and marked afterwards; on start the
daemon resumes from the stored cursor and first dispatches what was stored but never dispatched.
A game that refuses the daemon (bad token, protocol version) stops it with that error.

Every event a storyteller hears becomes work in its durable backlog (see `pipeline`). While
storytellers are idle, reflection (`IdleWork`) consolidates their memories and refreshes their
digests. Shutdown (SIGINT/SIGTERM): intake stops, heartbeats and reflection stop, a judging pass
or turn in flight gets ``drain_seconds`` to finish, then is cancelled; everything else stays in
the backlog for the next start. No task outlives `run()`.

The package's modules: `ports` (what the daemon needs from outside), `state` (the world link's
status, which every part may change), `settings_watch` (settings reloads), `invocations`
(direct invocations and a game's over the bridge, and their outcomes), `world_pump` (the
world's events into the pipeline, durably), `intake_watch` (the stalled-intake watchdog) and
`core` (the `Daemon` that builds them as collaborators and runs them, with its lifecycle).
"""

from storyteller_daemon.runtime.daemon.core import Daemon, stop_on_signals
from storyteller_daemon.runtime.daemon.invocations import InvocationResult
from storyteller_daemon.runtime.daemon.ports import EventInbox, IdleWork, SettingsSource
from storyteller_daemon.runtime.daemon.world_pump import INBOX_BATCH

__all__ = [
    "INBOX_BATCH",
    "Daemon",
    "EventInbox",
    "IdleWork",
    "InvocationResult",
    "SettingsSource",
    "stop_on_signals",
]
