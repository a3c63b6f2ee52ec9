"""What each dashboard page and API route shows, as plain JSON-ready data.

`DashboardData` reads the database (and the running daemon, when there is one) and returns dicts
with stable keys (each stored record shaped by `records`): the API sends them as they are, and
the pages render the same dicts through autoescaped templates. World text (echoes, speech,
names, tool results) stays plain text here; escaping is the templates' and the browser's
``textContent``'s job.
"""

from __future__ import annotations

import asyncio
from collections import Counter, defaultdict
from dataclasses import dataclass, replace
from datetime import timedelta
from pathlib import Path
from typing import Any, Protocol

from storyteller_daemon.agent.policy_rules import kill_switch_on
from storyteller_daemon.clock import Clock
from storyteller_daemon.config import BudgetsConfig, PolicyConfig
from storyteller_daemon.domain.cluster import KILL_SWITCH_FLAG
from storyteller_daemon.domain.verdict_memory import RULE_PREFIX as SETTLED_RULE
from storyteller_daemon.domain.work import WorkState
from storyteller_daemon.errors import ValidationError
from storyteller_daemon.runs.refusals import refusal_report
from storyteller_daemon.runtime.dashboard.plot import cost_plots, eval_trend
from storyteller_daemon.runtime.dashboard.records import (
    memory_json,
    run_detail,
    run_json,
    situation_json,
    timeline_entry,
)
from storyteller_daemon.runtime.spending.budgets import daily_cap
from storyteller_daemon.runtime.stats import RuntimeStats
from storyteller_daemon.storage.dashboard_queries import RunFilter
from storyteller_daemon.storage.store import Store

WINDOWS = {"hour": timedelta(hours=1), "day": timedelta(days=1)}
"""The windows the overview counts events and turns over."""
MAX_PLOT_HOURS = 24 * 14
POLICY_TURNS = 5000
"""The policy page reads at most this many turns (the newest) with tool calls."""


class LiveDaemon(Protocol):
    """What the dashboard asks of a running daemon (`runtime.daemon.Daemon` has it)."""

    ready: asyncio.Event

    @property
    def world_status(self) -> str:
        """How the daemon stands with the world."""
        ...

    async def reload(self, *, force: bool = False) -> bool:
        """Pick up changed settings now."""
        ...


@dataclass(frozen=True)
class Controls:
    """What the dashboard may change: pause state always; the kill switch's database flag
    (which every daemon of the database honours) unless the configuration sets the switch, and
    its file flag too when there is one (``[policy] kill_file``, or next to a SQLite database)."""

    policy: PolicyConfig
    kill_file: Path | None


def _stages(counts: Counter[tuple[str, str | None]]) -> dict[str, Any]:
    """Events of a window: how many came in, were judged, were interesting, were dropped."""
    by_state: Counter[str] = Counter()
    dropped: Counter[str] = Counter()
    settled = 0  # ignored by the verdict memory, without a model call
    for (state, rule), n in counts.items():
        by_state[state] += n
        if state == WorkState.IGNORED and rule and rule.startswith(f"{SETTLED_RULE}:"):
            settled += n
        if state == WorkState.FILTERED:
            dropped[rule or "filtered"] += n
        elif state in (WorkState.EXPIRED, WorkState.VIOLATION):
            dropped[state] += n
    interested = sum(by_state[s] for s in ("interested", "running", "done", "failed"))
    return {
        "in": sum(by_state.values()),
        "judged": interested + by_state["ignored"] + by_state["violation"],
        "interested": interested,
        "ignored": by_state["ignored"],
        "settled": settled,
        "pending": by_state["pending"],
        "dropped": dict(sorted(dropped.items())),
    }


class DashboardData:
    """Answers every page's question from the database and, when given, the running daemon.

    Args:
        store: the repositories.
        budgets: the daily caps shown against today's spend.
        clock: decides "now", "today" and the windows.
        controls: the pause and kill-switch settings.
        daemon: the running daemon; None when reading a database alone.
        stats: the running daemon's counters (what its intake dropped before the backlog).
    """

    def __init__(
        self,
        store: Store,
        budgets: BudgetsConfig,
        clock: Clock,
        controls: Controls,
        daemon: LiveDaemon | None = None,
        stats: RuntimeStats | None = None,
    ) -> None:
        self.store = store
        self.queries = store.dashboard
        self.runs = store.runs
        self._backlog = store.backlog
        self._ledger = store.ledger
        self._budgets = budgets
        self.clock = clock
        self.controls = controls
        self.daemon = daemon
        self._stats = stats

    # ------------------------------------------------------------------ overview

    async def cluster(self) -> dict[str, Any] | None:
        """The daemons sharing the database (``storyteller cluster status``); None when no
        daemon ever joined a cluster here."""
        status = await self.store.leases.status()
        if not status.instances:
            return None
        return {
            "instances": [
                {
                    "name": i.name,
                    "live": i.live,
                    "leases": i.leases,
                    "open_work": i.open_work,
                    "renewed_at": i.renewed_at.isoformat(),
                }
                for i in status.instances
            ],
            "unowned": status.unowned,
            "unowned_work": status.unowned_work,
        }

    async def kill_switch(self) -> dict[str, Any]:
        """Whether the kill switch stops prog calls, and whether the page may flip it."""
        flagged = await self.store.flags.on(KILL_SWITCH_FLAG)
        return {
            "on": kill_switch_on(self.controls.policy, self.controls.kill_file) or flagged,
            "by_setting": self.controls.policy.kill_switch,
            "switchable": not self.controls.policy.kill_switch,
        }

    def _daemon_state(self) -> dict[str, Any]:
        dropped = dict(sorted(self._stats.dropped.items())) if self._stats is not None else {}
        if self.daemon is None:
            return {
                "running": False,
                "world": "not connected (reading the database only)",
                "dropped_at_intake": dropped,
            }
        return {
            "running": self.daemon.ready.is_set(),
            "world": self.daemon.world_status,
            "dropped_at_intake": dropped,
        }

    async def overview(self) -> dict[str, Any]:
        """Per storyteller: state, backlog, events by stage, turns, situations, spend."""
        now = self.clock.now()
        storytellers = await self.store.storytellers.list()
        depth = await self._backlog.depth()
        spend = await self._ledger.spend_on(now.date())
        situations = await self.queries.open_situation_counts()
        stages: dict[str, dict[int, Counter[tuple[str, str | None]]]] = {}
        turns: dict[str, dict[int, dict[str, int]]] = {}
        for name, length in WINDOWS.items():
            stages[name] = defaultdict(Counter)
            for count in await self.queries.stage_counts(now - length):
                stages[name][count.storyteller_id][(count.state, count.rule)] += count.count
            turns[name] = defaultdict(dict)
            for sid, outcome, n in await self.queries.turn_outcomes(now - length):
                turns[name][sid][outcome] = n
        daemon = self._daemon_state()
        rows = []
        for st in storytellers:
            sid = st.id or 0
            cap = daily_cap(self._budgets, st)
            spent = spend.by_storyteller.get(sid, 0.0)
            if st.paused:
                status = "paused"
            else:
                status = "running" if daemon["running"] else "active (daemon not seen)"
            rows.append(
                {
                    "id": sid,
                    "name": st.name,
                    "paused": st.paused,
                    "status": status,
                    "backlog": {
                        s: depth.get((sid, s), 0) for s in ("pending", "interested", "running")
                    },
                    "stages": {w: _stages(stages[w][sid]) for w in WINDOWS},
                    "turns": {w: dict(sorted(turns[w][sid].items())) for w in WINDOWS},
                    "open_situations": situations.get(sid, 0),
                    "spend": _gauge(spent, cap),
                }
            )
        return {
            "generated_at": now.isoformat(),
            "daemon": daemon,
            "kill_switch": await self.kill_switch(),
            "cluster": await self.cluster(),
            "spend": _gauge(spend.total, self._budgets.daily_usd),
            "storytellers": rows,
        }

    # ------------------------------------------------------------------ runs

    async def run_page(self, where: RunFilter, before: int | None, limit: int) -> dict[str, Any]:
        """A page of runs, newest first, and the cursor of the next page."""
        runs = await self.queries.runs_before(where, before=before, limit=limit + 1)
        more = len(runs) > limit
        runs = runs[:limit]
        return {
            "runs": [run_json(r) for r in runs],
            "next_before": runs[-1].id if more and runs else None,
        }

    async def run(self, run_id: int) -> dict[str, Any]:
        """The run inspector's content (raises NotFoundError for an unknown run)."""
        stored = await self.runs.get(run_id)
        related = await self.runs.related(stored.summary)
        return run_detail(stored, related)

    async def timeline(
        self, where: RunFilter, *, after: int | None = None, limit: int = 50
    ) -> list[dict[str, Any]]:
        """Timeline entries: the newest, or those stored after run `after`, oldest first."""
        runs = await self.queries.runs_with_records(where, after=after, limit=limit)
        if after is None:
            runs.reverse()
        return [timeline_entry(r) for r in runs]

    # ------------------------------------------------------------------ costs

    async def costs(self, hours: int) -> dict[str, Any]:
        """Spending per hour of the last `hours`, stacked by storyteller and by purpose, with
        the cached-token share and where today is heading against the daily cap."""
        hours = max(1, min(hours, MAX_PLOT_HOURS))
        now = self.clock.now()
        end = now.replace(minute=0, second=0, microsecond=0) + timedelta(hours=1)
        start = end - timedelta(hours=hours)
        spend = await self.queries.hourly_spend(start, end)
        today = await self._ledger.spend_on(now.date())
        recent_start = now - timedelta(hours=3)
        recent = sum(s.cost_usd for s in spend if s.hour >= recent_start.strftime("%Y-%m-%d %H"))
        midnight = now.replace(hour=0, minute=0, second=0, microsecond=0) + timedelta(days=1)
        left_hours = (midnight - now).total_seconds() / 3600
        projected = today.total + recent / 3 * left_hours
        input_tokens = sum(s.input_tokens for s in spend)
        cached = sum(s.cached_tokens for s in spend)
        return {
            "hours": hours,
            "since": start.isoformat(),
            "total_usd": sum(s.cost_usd for s in spend),
            "requests": sum(s.requests for s in spend),
            "failed_requests": sum(s.failed for s in spend),
            "cached_share": cached / input_tokens if input_tokens else 0.0,
            "today": _gauge(today.total, self._budgets.daily_usd),
            "projected_today_usd": projected,
            "plots": cost_plots(spend, start, hours),
        }

    # ------------------------------------------------------------------ policy

    async def policy(self, hours: int) -> dict[str, Any]:
        """The policy's refusals of the last `hours` by rule, tool, storyteller and triggering
        character (`runs.refusals`)."""
        since = self.clock.now() - timedelta(hours=max(1, min(hours, MAX_PLOT_HOURS)))
        turns = await self.runs.records_since(
            None, since, kind="turn", limit=POLICY_TURNS, min_tool_calls=1
        )
        return {"hours": hours, **refusal_report(turns, since).to_json()}

    # ------------------------------------------------------------------ narrative

    async def situations(
        self, storyteller_id: int | None, words: str, include_resolved: bool
    ) -> dict[str, Any]:
        """Situations matching the search, each with the run that wrote it."""
        found = await self.queries.situations(
            storyteller_id=storyteller_id, words=words, include_resolved=include_resolved
        )
        runs = await self.queries.runs_for_keys([s.provenance.run for s in found])
        return {"situations": [situation_json(s, runs) for s in found]}

    async def memories(
        self, storyteller_id: int | None, character_id: int | None, words: str
    ) -> dict[str, Any]:
        """Memories matching the search, each with the run that wrote it."""
        found = await self.queries.memories(
            storyteller_id=storyteller_id, character_id=character_id, words=words
        )
        runs = await self.queries.runs_for_keys([m.provenance.run for m in found])
        return {"memories": [memory_json(m, runs) for m in found]}

    async def evals(self) -> dict[str, Any]:
        """Each storyteller's latest ``storyteller eval`` per scenario, and the trend of its
        evaluations (the share of scenarios that passed each time)."""
        kept = self.store.eval_results
        rows = []
        for name, results in sorted((await kept.latest()).items()):
            newest = results[0]
            rows.append(
                {
                    "storyteller": name,
                    "evaluated_at": newest.evaluated_at.isoformat(),
                    "model": newest.model,
                    "passed": sum(r.passed for r in results),
                    "failed": sum(not r.passed and not r.skipped for r in results),
                    "skipped": sum(r.skipped for r in results),
                    "scenarios": [
                        {
                            "scenario": r.scenario,
                            "pack": r.pack,
                            "passed": r.passed,
                            "skipped": r.skipped,
                            "pass_rate": r.pass_rate,
                            "runs": r.runs,
                            "tokens": r.tokens,
                            "usd": r.usd,
                            "seconds": r.seconds,
                        }
                        for r in results
                    ],
                    "trend": eval_trend(await kept.rounds(name)),
                }
            )
        return {"storytellers": rows}

    async def storyteller_names(self) -> list[dict[str, Any]]:
        """Every storyteller's id and name (for filters)."""
        return [{"id": s.id, "name": s.name} for s in await self.store.storytellers.list()]

    # ------------------------------------------------------------------ controls

    async def set_paused(self, storyteller_id: int, paused: bool) -> dict[str, Any]:
        """Pause or resume a storyteller; a running daemon picks it up at once."""
        st = await self.store.storytellers.get(storyteller_id)
        if st.paused != paused:
            st = await self.store.storytellers.save(replace(st, paused=paused))
            action = "pause" if paused else "resume"
            await self.store.audit.add("dashboard", action, f"storyteller {st.id}", {})
        if self.daemon is not None:
            await self.daemon.reload()
        return {"id": st.id, "name": st.name, "paused": st.paused}

    async def set_kill_switch(self, on: bool) -> dict[str, Any]:
        """Turn the kill switch's database flag (and its file flag, when there is one) on or
        off; refused when the configuration sets the switch."""
        if self.controls.policy.kill_switch:
            raise ValidationError(
                "The kill switch is set in the configuration ([policy] kill_switch); change it "
                "there."
            )
        await self.store.flags.set(KILL_SWITCH_FLAG, on, by="dashboard")
        file = self.controls.kill_file
        if file is not None:
            if on:
                file.touch()
            else:
                file.unlink(missing_ok=True)
        action = "kill_switch_on" if on else "kill_switch_off"
        await self.store.audit.add("dashboard", action, "policy", {})
        return await self.kill_switch()


def _gauge(spent: float, cap: float) -> dict[str, Any]:
    return {"spent_usd": spent, "cap_usd": cap, "share": spent / cap if cap > 0 else None}
