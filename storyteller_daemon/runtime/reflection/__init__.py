"""Reflection while idle: what a storyteller does with its quiet moments.

When a storyteller has had no work for a while (`idle`: quiet for ``quiet_seconds``, at most
one pass per ``interval_seconds``), the daemon runs a reflection pass for it (`reflect`):

1. **consolidation** (`consolidation`): near-duplicate memories about one character are merged
   into the oldest, deterministically and without a model (`domain.consolidation`);
2. **digest** (`digest`): the rolling digest, a short account of what happened that every
   turn's prompt reads (`DigestStore.latest`), is rewritten by a cheap model from the previous
   digest and what changed since (`changes`), unless nothing did. The request passes the
   budgets like any other and is recorded as a run of kind ``digest``.

``storyteller ais digest show`` prints a digest; ``storyteller ais digest refresh`` runs one
pass from the shell. Settings: ``[reflection]``.
"""

from storyteller_daemon.runtime.reflection.consolidation import Merge, consolidate_memories
from storyteller_daemon.runtime.reflection.digest import (
    DigestRefresher,
    DigestResult,
    digest_options,
)
from storyteller_daemon.runtime.reflection.idle import ReflectionScheduler
from storyteller_daemon.runtime.reflection.reflect import Reflection, ReflectionReport

__all__ = [
    "DigestRefresher",
    "DigestResult",
    "Merge",
    "Reflection",
    "ReflectionReport",
    "ReflectionScheduler",
    "consolidate_memories",
    "digest_options",
]
