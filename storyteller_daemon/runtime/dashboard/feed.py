"""`RunFeed`: wakes the live timeline's streams when a run is stored.

Inside the daemon the run recorder calls `RunFeed.stored` for every run it stores, so an open
timeline shows it at once. Without a daemon (``storyteller dashboard`` reading a database that
another process writes) nothing calls it and each stream looks again every `poll_seconds`.
"""

from __future__ import annotations

import asyncio


class RunFeed:
    """A version number that grows with every stored run, and a way to wait for it to grow.

    Args:
        poll_seconds: how long a stream waits before looking again on its own.
    """

    def __init__(self, poll_seconds: float) -> None:
        self.poll_seconds = poll_seconds
        self.version = 0
        self.closed = False
        self._changed = asyncio.Event()

    def stored(self, run_id: int) -> None:
        """A run was stored (a run recorder listener)."""
        self.version += 1
        self._wake()

    def close(self) -> None:
        """The listener stops: every waiting stream returns and ends."""
        self.closed = True
        self._wake()

    def _wake(self) -> None:
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()

    async def wait(self, seen: int) -> bool:
        """Return once the version passed `seen`, the feed closed or `poll_seconds` passed;
        False when the feed is closed."""
        if self.closed:
            return False
        if self.version == seen:
            changed = self._changed
            try:
                async with asyncio.timeout(self.poll_seconds):
                    await changed.wait()
            except TimeoutError:
                pass
        return not self.closed
