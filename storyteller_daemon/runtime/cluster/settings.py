"""`LeasedSettings`: the storyteller settings as one daemon of a cluster sees them.

It wraps the daemon's settings source so that the settings watch lists, routes and runs only
the storytellers whose leases the daemon holds: a lease taken changes the revisions it shows,
so the next poll routes the storyteller and the pipeline picks up its backlog; a lease lost
drops it, so its lanes stop. Each poll also tells the keeper which storytellers exist, so a
storyteller created or deleted gets or loses its lease row at the keeper's next renewal.
"""

from __future__ import annotations

from storyteller_daemon.domain.storytellers import Storyteller
from storyteller_daemon.runtime.cluster.keeper import LeaseKeeper
from storyteller_daemon.runtime.daemon.ports import SettingsSource


class LeasedSettings:
    """A `SettingsSource` showing only the storytellers `keeper` holds."""

    def __init__(self, settings: SettingsSource, keeper: LeaseKeeper) -> None:
        self._settings = settings
        self._keeper = keeper

    async def list(self) -> list[Storyteller]:
        """The held storytellers."""
        held = self._keeper.held
        return [s for s in await self._settings.list() if s.id in held]

    async def revisions(self) -> dict[int, int]:
        """Id → revision of the held storytellers (the keeper hears of every one)."""
        revisions = await self._settings.revisions()
        self._keeper.storytellers_are(revisions.keys())
        held = self._keeper.held
        return {sid: rev for sid, rev in revisions.items() if sid in held}
