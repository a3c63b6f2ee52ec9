"""`LeaseKeeper`: the storytellers this daemon of a cluster runs, kept by leases.

Every ``renew_seconds`` on the daemon's clock it tells the others it is alive, evens out (past
its fair share of the live daemons it releases the excess so a newcomer can take them, below it
takes free or expired leases) and renews the leases it holds (a lease another daemon took
meanwhile is gone; a row a write holds is renewed once the write is done). Word that another
daemon joined, released or left evens out at once, even while a renewal waits. A daemon that
says it is alive but has kept no lease for a lease span is not counted in the share
(`LeaseStore.sharing_instances`), so what it lost is taken.

A renewal that fails (the database is unreachable) keeps the leases while they have time for
another try; once they may run out first it gives every lease up: the daemon stops writing for
storytellers it may no longer own, and joins again as a newcomer (taking them with new fencing
tokens) once the database answers; so does a daemon whose leases were all taken over. A daemon
that dies outright is seen gone at the others' next renewal: its presence lock, held by the
database for as long as its process lives, is free (`storage.presence`), and its leases are
freed. A clean stop hands over (`hand_over`): the daemon leaves the cluster, so the others
stop counting it in their shares, and releases at once the storytellers with no work in flight
here, then each of the others as its work ends; meanwhile its renewals only keep what it still
holds. `stop` releases what is left and leaves. Every release wakes the others (NOTIFY), so they
take the storytellers at once instead of waiting for the leases to expire. Listeners hear each
change of the held set (the settings watch re-routes). Taking a lease over from a daemon that
still renews its presence (it hangs, or its database link fails for leases only) raises a
``lease_takeover`` alert.

Every storyteller gets its lease row (`LeaseStore.sync`) when the keeper starts or rejoins, and
when the storytellers change (`storytellers_are`, told by each settings poll), not at every
renewal.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Collection, Mapping

from storyteller_daemon.alerts.sink import AlertSink
from storyteller_daemon.clock import Clock
from storyteller_daemon.config import ClusterConfig
from storyteller_daemon.domain.cluster import fair_share
from storyteller_daemon.runtime.cluster.ports import LeaseSignals, LeaseStore, PresenceLock

log = logging.getLogger(__name__)


class LeaseKeeper:
    """Takes, renews and releases this daemon's storyteller leases.

    Args:
        leases: the lease repository.
        cfg: the ``[cluster]`` settings.
        instance: this daemon's name (``[cluster] instance``, or the host name).
        clock: the daemon's clock (lease times and the renewal interval).
        alerts: where a takeover from a live-looking daemon is alerted (None: only logged).
        signals: word of other daemons joining, releasing or leaving, which starts a renewal
            at once (None: only every ``renew_seconds``).
        presence: this daemon's presence lock, held from the start to the stop; each renewal
            frees at once the leases of daemons whose presence is gone (None: a dead daemon's
            leases are free when they expire).
        checks: where `holds_now` asks before each prog call (default: `leases`; a daemon
            keeps its leases on connections of their own, which these checks must not crowd).
    """

    def __init__(
        self,
        leases: LeaseStore,
        cfg: ClusterConfig,
        instance: str,
        clock: Clock,
        *,
        alerts: AlertSink | None = None,
        signals: LeaseSignals | None = None,
        presence: PresenceLock | None = None,
        checks: LeaseStore | None = None,
    ) -> None:
        self._leases = leases
        self._presence = presence
        self._checks = checks or leases
        self._signals = signals
        self._woken = asyncio.Event()
        self._alerts = alerts
        self._cfg = cfg
        self.instance = instance
        self._clock = clock
        self._held: dict[int, int] = {}
        self._listeners: list[Callable[[], None]] = []
        self.renewals = 0
        """Renewals that reached the database."""
        self.failures = 0
        """Renewals that failed."""
        self._valid_until = 0.0
        """When (the clock's monotonic seconds) the leases last renewed run out."""
        self.taken = 0
        """Leases taken since the start."""
        self._ticked = asyncio.Condition()
        self._rejoin = False
        """A renewal failed: the next one joins again as a newcomer (what it held is stale)."""
        self._leaving = False
        """A clean stop is handing the storytellers over: renew what is held, take nothing."""
        self._changing = asyncio.Lock()
        """Held while a renewal takes or releases and while a hand-over releases, so a renewal
        never takes or says it is alive after the daemon left."""
        self._total = 0
        """Storytellers with a lease row at the last `LeaseStore.sync`."""
        self._seen: frozenset[int] | None = None
        """The storytellers the settings last showed (None: not told yet)."""
        self._sync_due = True
        """The storytellers changed (or the keeper starts): give them lease rows and count."""
        self.syncs = 0
        """Lease-row syncs run."""

    @property
    def held(self) -> frozenset[int]:
        """The storytellers this daemon runs now."""
        return frozenset(self._held)

    def token(self, storyteller_id: int) -> int | None:
        """The fencing token held for the storyteller (None: not held)."""
        return self._held.get(storyteller_id)

    async def holds_now(self, storyteller_id: int) -> bool:
        """Whether the database still gives this daemon the storyteller (before a prog call)."""
        token = self._held.get(storyteller_id)
        if token is None:
            return False
        return await self._checks.holds(self.instance, storyteller_id, token)

    def listen(self, changed: Callable[[], None]) -> None:
        """Call `changed` whenever the held set changes (quick: it must not wait)."""
        self._listeners.append(changed)

    async def start(self) -> None:
        """Join the cluster and take a first share (before the daemon loads its settings).

        Raises:
            ConfigError: a live daemon already runs under this name (``cluster.instance``).
        """
        if self._presence is not None:
            await self._presence.hold()  # refuses a name a live daemon holds
        # Without a presence lock, a name whose daemon renewed recently may be a live one's.
        first = self._presence is None
        await self._leases.join(self.instance, self._cfg.lease_seconds, first=first)
        await self.tick()

    def storytellers_are(self, ids: Collection[int]) -> None:
        """The storytellers that exist now (each settings poll says): when they changed, the
        next renewal gives the new ones lease rows and shares them out (at once, after the
        first poll: the keeper's start synced just before it)."""
        seen = frozenset(ids)
        if seen != self._seen:
            if self._seen is not None:
                self._woken.set()
            self._seen = seen
            self._sync_due = True

    def wake(self, by: str) -> None:
        """Renew now: daemon `by` joined, released leases or left (not this one itself)."""
        if by != self.instance:
            self._woken.set()

    async def run(self) -> None:
        """Renew and even out every ``renew_seconds``, and even out at once when another
        daemon's leases changed (even while a renewal waits on a write), until cancelled."""
        listening = (
            self._signals(self.wake) if self._signals is not None else contextlib.nullcontext()
        )
        async with listening, asyncio.TaskGroup() as group:
            group.create_task(self._even_out_when_woken())
            while True:
                await self._clock.sleep(self._cfg.renew_seconds)
                await self.tick()

    async def _even_out_when_woken(self) -> None:
        """Take (or release) at once when woken: another daemon joined, released or left."""
        while True:
            await self._woken.wait()
            self._woken.clear()
            before = set(self._held)
            try:
                async with self._changing:
                    if not self._leaving:
                        await self._even_out(self._cfg.lease_seconds)
            except Exception as exc:  # the next renewal evens out
                log.warning("cluster: could not even out at once (%s)", type(exc).__name__)
            if set(self._held) != before:
                self._tell_listeners()

    async def tick(self) -> None:
        """One renewal: alive, release the excess or take up to the fair share, then renew
        (while handing over: only renew what is still held)."""
        before = set(self._held)
        began = self._clock.monotonic()
        try:
            await self._even_out_and_renew()
        except Exception as exc:  # the database did not answer (or chose this one to undo)
            self.failures += 1
            left = self._valid_until - self._clock.monotonic()
            if self._held and left > self._cfg.renew_seconds:  # the next renewal may work
                log.warning(
                    "cluster: renewal failed (%s); keeping %d storytellers, whose leases run "
                    "out in %.0f s, and trying again",
                    type(exc).__name__,
                    len(self._held),
                    left,
                )
            else:  # they may run out before the next try: give up what may be lost
                if self._held:
                    log.warning(
                        "cluster: renewal failed (%s); giving up %d storytellers until it works",
                        type(exc).__name__,
                        len(self._held),
                    )
                self._held = {}
                self._rejoin = not self._leaving
        else:
            self.renewals += 1
        took = self._clock.monotonic() - began
        if took > self._cfg.renew_seconds:
            log.warning(
                "cluster: a renewal took %.1f s, longer than renew_seconds (%s s): the database "
                "or this daemon is slow, and leases not renewed within lease_seconds (%s s) "
                "are taken over",
                took,
                self._cfg.renew_seconds,
                self._cfg.lease_seconds,
            )
        if set(self._held) != before:
            self._tell_listeners()
        async with self._ticked:
            self._ticked.notify_all()

    def _tell_listeners(self) -> None:
        for changed in self._listeners:
            changed()

    async def _even_out_and_renew(self) -> None:
        """Take and release first (they never wait on a write), then renew (which waits for
        the writes in flight); a hand-over waits only for the first part."""
        lease = self._cfg.lease_seconds
        started = self._clock.monotonic()  # every lease held after this tick runs out later
        async with self._changing:
            if not self._leaving:
                await self._even_out(lease)
        if self._held:
            renewing = dict(self._held)
            kept = await self._leases.renew(self.instance, renewing, lease)
            lost = sorted(renewing.keys() - kept.keys())
            if lost:
                log.warning("cluster: storytellers %s were taken over by another daemon", lost)
            # what was let go meanwhile stays gone, what was taken meanwhile stays held
            self._held = {sid: token for sid, token in kept.items() if sid in self._held} | {
                sid: token for sid, token in self._held.items() if sid not in renewing
            }
            if not kept:  # all taken over (it was paused, say): join again as a newcomer
                async with self._changing:
                    if not self._leaving:
                        self._held = {}  # joining frees what it took meanwhile as well
                        await self._leases.join(self.instance, lease)
        self._valid_until = started + lease

    async def _even_out(self, lease: float) -> None:
        if self._presence is not None:
            await self._presence.hold()  # again, if its connection broke
        if self._rejoin:
            await self._leases.join(self.instance, lease)
            self._rejoin = False
            self._sync_due = True
        else:
            await self._leases.beat(self.instance, lease)
        if self._sync_due:
            self._total = await self._leases.sync()
            self._sync_due = False
            self.syncs += 1
        if self._presence is not None:
            gone = await self._leases.free_departed(self.instance)
            if gone:
                log.warning("cluster: daemons %s died; their storytellers are free", gone)
        sharing = await self._leases.sharing_instances(lease)
        share = fair_share(self._total, len(set(sharing) | {self.instance}))
        if len(self._held) > share:
            excess = {sid: self._held[sid] for sid in sorted(self._held)[share:]}
            await self._leases.release(self.instance, excess)
            for sid in excess:
                del self._held[sid]
            log.info("cluster: released %d storytellers to even out", len(excess))
        elif len(self._held) < share:
            live_owners = await self._leases.expired_of_live(self.instance)
            taken = await self._leases.take(self.instance, share - len(self._held), lease)
            if taken:
                self._held.update(taken)
                self.taken += len(taken)
                log.info("cluster: took %d storytellers (%d held)", len(taken), len(self._held))
                self._alert_takeover({sid: live_owners[sid] for sid in taken if sid in live_owners})

    def _alert_takeover(self, from_live: Mapping[int, str]) -> None:
        """Say which storytellers were taken from daemons that still renew their presence."""
        if not from_live:
            return
        owners = ", ".join(sorted(set(from_live.values())))
        detail = (
            f"{self.instance} took over storytellers {sorted(from_live)} from {owners}, which "
            "still renews its presence but not these leases: it may hang, or reach the "
            "database too slowly. Its writes for them are refused; look at its log."
        )
        log.warning("cluster: %s", detail, extra={"alert": False})
        if self._alerts is not None:
            self._alerts.alert(
                "lease_takeover",
                "A storyteller was taken over from a daemon that looks alive",
                detail,
                severity="warning",
                key=f"lease_takeover:{owners}",
            )

    async def hand_over(self, keep: Collection[int]) -> None:
        """A clean stop is under way: release at once every lease but those of `keep` (the
        storytellers with work still in flight here), so the others take them now; called
        again, with fewer, as that work ends.

        The first call leaves the cluster, so the others no longer count this daemon in their
        shares and take what it releases at once; from then on its renewals only keep what it
        still holds, and take nothing.
        """
        async with self._changing:
            going = {sid: token for sid, token in self._held.items() if sid not in keep}
            first, self._leaving = not self._leaving, True
            if not going and not first:
                return
            try:
                if first:
                    await self._leases.leave(self.instance)
                if going:
                    await self._leases.release(self.instance, going)
            except Exception as exc:  # the leases then expire on their own
                log.warning(
                    "cluster: could not hand %d storytellers over: %s",
                    len(going),
                    type(exc).__name__,
                )
            else:
                if going:
                    log.info(
                        "cluster: handed over %d storytellers (%d still finishing work here)",
                        len(going),
                        len(self._held) - len(going),
                    )
            # Not renewed from here on, even if the release failed (they expire); a release
            # cut off by the drain deadline leaves them held, for `stop` to release.
            for sid in going:
                self._held.pop(sid, None)
            if going:
                self._tell_listeners()

    async def stop(self) -> None:
        """Release every lease and leave the cluster (a clean stop: the others take over at
        once)."""
        async with self._changing:
            self._leaving = True
            held, self._held = self._held, {}
            try:
                if held:
                    await self._leases.release(self.instance, held)
                await self._leases.leave(self.instance)
            except Exception as exc:  # the leases then expire on their own
                log.warning("cluster: could not release the leases on stop: %s", type(exc).__name__)
            else:
                log.info("cluster: released %d storytellers and left", len(held))
        if self._presence is not None:
            with contextlib.suppress(Exception):  # its session ends with the process anyway
                await self._presence.release()

    async def wait_ticks(self, count: int) -> None:
        """Return once `count` renewals have been tried in all (tests)."""
        async with self._ticked:
            await self._ticked.wait_for(lambda: self.renewals + self.failures >= count)
