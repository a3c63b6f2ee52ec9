"""The agent behind the pipeline: prompts, the attention gate, the tool loop, and accounting.

`AgentTurnRunner` is the one `TurnRunner` (`agent.turn_runner`): attention batches go to its
`AttentionJudge` (`runtime.attention_calls`), turns to the tool loop over the turn's `TurnServices`.
Each attention call and each turn runs inside a `RunRecorder` run, which attributes its model
requests (for the budgets and the cost ledger), tapes what the turn's services answered, and
stores the run record. A replay builds this same runner over services that answer from a tape.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from storyteller_daemon.agent.attention import (
    AttentionGate,
    AttentionOptions,
)
from storyteller_daemon.agent.director import (
    DirectorView,
    claims_block,
    due_block,
    gather,
    plans_block,
    settle,
)
from storyteller_daemon.agent.fencing import NOTES, Fence, Fences
from storyteller_daemon.agent.loop import ToolLoop
from storyteller_daemon.agent.models.interface import Model
from storyteller_daemon.agent.policy import Policy
from storyteller_daemon.agent.ports import StoryPlanStore
from storyteller_daemon.agent.prompts import PromptBuilder
from storyteller_daemon.agent.providers import (
    ProviderOutput,
    prog_output,
    provider_blocks,
    read_providers,
)
from storyteller_daemon.agent.records import TurnOutcome, TurnRecord
from storyteller_daemon.agent.services import TurnServices
from storyteller_daemon.agent.tools.base import Envelope
from storyteller_daemon.agent.tools.context import Taint, ToolContext
from storyteller_daemon.agent.tools.custom import run_approved
from storyteller_daemon.agent.tools.registry import plannable_tools, with_catalogue
from storyteller_daemon.agent.trigger import Trigger, turn_key
from storyteller_daemon.agent.turn_runner import Finish
from storyteller_daemon.agent.verdicts import AttentionVerdict
from storyteller_daemon.alerts.sink import AlertSink
from storyteller_daemon.clock import Clock
from storyteller_daemon.config import LimitsConfig
from storyteller_daemon.domain.approvals import Approval
from storyteller_daemon.domain.direction import ProviderKind
from storyteller_daemon.domain.storytellers import Storyteller
from storyteller_daemon.runs import RunRecorder
from storyteller_daemon.runtime.attention_calls import AttentionJudge
from storyteller_daemon.runtime.stats import RuntimeStats
from world_adapter.errors import WorldAdapterError
from world_adapter.protocol import WorldClient

log = logging.getLogger(__name__)


class AgentTurnRunner:
    """Implements the `TurnRunner` of the pipeline and of replays with the real agent."""

    def __init__(
        self,
        services: TurnServices,
        *,
        model: Model,
        limits: LimitsConfig,
        clock: Clock,
        stats: RuntimeStats,
        recorder: RunRecorder | None = None,
        alerts: AlertSink | None = None,
        attention: AttentionOptions | None = None,
        lookups: WorldClient | None = None,
        policy: Policy | None = None,
        fences: Fences | None = None,
    ) -> None:
        """A runner over `services` (whole; see `TurnServices`) asking `model`.

        Args:
            services: what turns may use besides the model.
            model: the endpoint for attention and turns.
            limits: prompt, round, time and output bounds.
            clock: the tool loop's time (budgets, retries) and the recorder's.
            stats: counts attention calls, judged events and tool calls.
            recorder: records every run (default: one that stores nothing).
            alerts: where a broken verdict contract or a refused turn is raised.
            attention: the attention gate's options.
            lookups: names rooms and characters in attention lines (a cache; default: the
                services' world). A turn's own prompt and tools use the taped world.
            policy: the policy point every tool call passes.
            fences: fixed fence tokens (a replay's recorded ones; default: fresh ones).
        """
        self._stats = stats
        self._alerts = alerts
        self._limits = limits
        self._services = services
        self._prompts = _prompts(services, limits, lookups or services.world)
        fences = fences or Fences()
        self._world_fence = fences.world
        # Stored notes are fenced with one token for all of this runner's turns, so the start
        # of the prompt (stored knowledge that changed not) reads the same turn after turn.
        self._notes_fence = fences.notes or Fence.new().token
        self.gate = AttentionGate(model, limits, options=attention)
        self._recorder = recorder or RunRecorder(None, None, clock)
        self._judge = AttentionJudge(self.gate, self._prompts, self._recorder, stats, alerts)
        self._loop = ToolLoop(model, limits, clock, policy=policy)
        self._policy = policy

    async def judge(
        self, storyteller: Storyteller, triggers: Sequence[Trigger]
    ) -> list[AttentionVerdict]:
        """Verdicts for a batch of triggers, one recorded request for all (`AttentionJudge`)."""
        return await self._judge.judge(storyteller, triggers)

    async def interrupted(
        self,
        storyteller: Storyteller,
        trigger: Trigger,
        key: str,
        attempt: int,
        *,
        given_up: bool = False,
    ) -> int | None:
        """Record that an earlier attempt of this turn was cut off (see `RunRecorder`); the
        record's id."""
        return await self._recorder.interrupted(
            storyteller, trigger, key, attempt, given_up=given_up
        )

    async def _status_text(
        self, storyteller: Storyteller, trigger: Trigger, world: WorldClient
    ) -> str:
        """The heartbeat's status prog output ("" when none is set or it fails)."""
        if trigger.heartbeat is None:
            return ""
        prog = storyteller.status_prog(trigger.heartbeat)
        if not prog:
            return ""
        key = f"status:{turn_key(storyteller, trigger)}"
        try:
            return await prog_output(world, prog, key)
        except WorldAdapterError as exc:
            log.warning("status prog %s of storyteller %s failed: %s", prog, storyteller.id, exc)
            return ""

    async def run_turn(
        self,
        storyteller: Storyteller,
        trigger: Trigger,
        key: str | None = None,
        *,
        finish: Finish | None = None,
    ) -> TurnRecord:
        """Build the prompt and run the tool loop, as one recorded run.

        The prompt is built within the token budget with the turn's tool schemas counted; when
        it holds stored text written from players' words, the turn counts as reached by
        players' text from its start, so what it writes is marked so.

        Args:
            storyteller: whose turn.
            trigger: what it is about (with any triggers coalesced into it).
            key: the turn key (prog idempotency keys derive from it); by default
                `turn_key` of the trigger.
            finish: ends the turn's work items for its outcome, in the transaction storing
                its record (see `RunRecorder.turn`).
        """
        key = key or turn_key(storyteller, trigger)
        started = self._recorder.turn(storyteller, trigger, key, self._services, finish)
        async with started as run:
            used = run.services
            prompts = self._prompts
            if used is not self._services:  # taped: the prompt's lookups go on the tape too
                prompts = _prompts(used, self._limits, used.world)
            status = await self._status_text(storyteller, trigger, used.world)
            tools = await with_catalogue(ToolContext(used))
            offered = await self._loop.offered(storyteller, trigger, tools)
            run.policed = self._policy is not None
            run.fence = self._world_fence or Fence.new().token
            run.notes_fence = self._notes_fence
            world_fence, notes = Fence(run.fence), Fence(run.notes_fence, NOTES)
            assert storyteller.id is not None
            direction = storyteller.direction
            view = await gather(
                storyteller.id,
                trigger,
                plans=used.plans if direction.plans else None,
                claims=used.claims,
                plannable=plannable_tools(storyteller, tools) if direction.plans else frozenset(),
                run=key,
            )
            outputs = await read_providers(
                direction.providers,
                trigger,
                storyteller_id=storyteller.id,
                world=used.world,
                queries=used.queries,
                turn_key=key,
            )
            lead, late = provider_blocks(
                outputs, self._limits.prompt_max_tokens, world_fence, notes
            )
            prompt = await prompts.build(
                storyteller,
                trigger,
                status_text=status,
                fence=world_fence,
                notes_fence=notes,
                tools=offered.specs(),
                lead=lead,
                stable=[plans_block(view, notes)] if direction.plans else [],
                volatile=[due_block(view), claims_block(view, storyteller.id), *late],
                digest_share=self._digest_share(outputs),
            )
            run.prompt = prompt.text
            run.prompt_budget = prompt.report.to_dict()
            tools = replace(tools, taint=Taint(prompt.from_player, noted=prompt.player_notes))
            if self._policy is not None:
                self._policy.note_events(storyteller, len([t for t in trigger.all if t.event]))
            record = await self._loop.run(
                storyteller, trigger, prompt.text, tools, turn_key=key, offered=offered
            )
            run.record = record
            run.direction = await self._directed(storyteller, view, record, used, key, outputs)
        self._stats.tool_calls += len(record.calls)
        if record.outcome is TurnOutcome.MODEL_FATAL_ERROR:
            self._alert_refused(storyteller, record)
        return record

    def _digest_share(self, outputs: Sequence[ProviderOutput]) -> float | None:
        """The digest's share when the storyteller lists its providers: its digest provider's
        budget, or none without one (None: no providers, the default share)."""
        if not outputs:
            return None
        budget = self._limits.prompt_max_tokens
        digest = [o.provider for o in outputs if o.provider.kind is ProviderKind.DIGEST]
        return min(1.0, digest[0].budget_tokens / budget) if digest else 0.0

    async def _directed(
        self,
        storyteller: Storyteller,
        view: DirectorView,
        record: TurnRecord,
        used: TurnServices,
        key: str,
        outputs: Sequence[ProviderOutput],
    ) -> dict[str, Any]:
        """Settle the due plan steps and say what the director did, for the run record."""
        assert storyteller.id is not None
        steps: list[dict[str, Any]] = list(view.failed_on_start)
        if used.plans is not None and storyteller.direction.plans:
            steps = await self._settle(view, record, used.plans, storyteller.id, key)
        pacing = self._policy.pacing_report(storyteller) if self._policy is not None else None
        return {
            "plan_steps": steps,
            "claims": [
                {
                    "room_id": c.room_id,
                    "storyteller_id": c.storyteller_id,
                    "expires_at": c.expires_at.isoformat(),
                }
                for c in view.claims
            ],  # fmt: skip
            "providers": [o.to_dict() for o in outputs],
            "pacing": pacing,
        }

    async def _settle(
        self,
        view: DirectorView,
        record: TurnRecord,
        plans: StoryPlanStore,
        storyteller_id: int,
        key: str,
    ) -> list[dict[str, Any]]:
        """`settle` the due steps once per turn: a re-run after a crash finds them settled."""
        journal = self._services.journal
        if journal is None:
            return await settle(view, record, plans, storyteller_id, key)

        async def write() -> str:
            return json.dumps(await settle(view, record, plans, storyteller_id, key))

        body, _ = await journal.once(key, "settle", write)
        steps: list[dict[str, Any]] = json.loads(body)
        return steps

    async def run_approved(self, storyteller: Storyteller, approval: Approval) -> Envelope:
        """Run a parked call an admin approved; it counts toward the policy's caps."""
        envelope, effect = await run_approved(storyteller, approval, ToolContext(self._services))
        if effect is not None and self._policy is not None:
            await self._policy.ran(storyteller, approval.tool, effect)
        self._stats.tool_calls += 1
        return envelope

    def _alert_refused(self, storyteller: Storyteller, record: TurnRecord) -> None:
        """Tell the admins the endpoint refused a turn (the alert's key allows one an hour)."""
        if self._alerts is None:
            return
        self._alerts.alert(
            "model_fatal",
            f"{storyteller.name}: the model endpoint refused its turn",
            # The error names the HTTP status and the API's reason; the adapter keeps keys out.
            f"{record.error or 'no detail'}\n\nEvery turn of this storyteller will fail the same "
            "way until the API key, the model name (`storyteller ais set … model`) or the "
            "endpoint (`[model] base_url`) is fixed. `storyteller doctor` checks all three.",
            severity="error",
            key=f"model_fatal:{storyteller.id}",
        )


def _prompts(services: TurnServices, limits: LimitsConfig, world: WorldClient) -> PromptBuilder:
    """The prompt builder over `services` (live or taped), naming things through `world`."""
    return PromptBuilder(
        world,
        services.situations,
        limits,
        services.speech,
        memories=services.memories,
        digests=services.digests,
    )


def replay_runner(
    services: TurnServices,
    model: Model,
    limits: LimitsConfig,
    clock: Clock,
    fences: Fences,
    policy: Policy | None = None,
) -> AgentTurnRunner:
    """The daemon's turn runner over a replay's services, model and policy point
    (`runs.replay_turn`)."""
    return AgentTurnRunner(
        services,
        model=model,
        limits=limits,
        clock=clock,
        stats=RuntimeStats(),
        fences=fences,
        policy=policy,
    )
