"""The director around a turn: which plan steps are due, the prompt's plan and claim blocks, and
what the turn did about each due step.

Before a turn (`gather`), the storyteller's open plans are read (overdue ones expire there) and
the scene claims holding now. A plan's first pending step is *due* on a heartbeat when it waits
for nothing, and on any turn whose events meet its condition (`domain.story_plans.WaitFor`). A
due step whose tool this storyteller may no longer call fails at once, so the plan is replanned
rather than acted on: the plan is an action menu checked when it is made and again when a step
runs.

In the prompt, the open plans are a stable block (it changes only when a plan changes, so the
prompt's cacheable start survives the heartbeats between changes); what is due now and the
claims are volatile blocks next to the events.

After the turn (`settle`), each due step is marked by what the model did: a successful call of
the step's tool marks it done; calls of it that all failed mark it failed, with the error as the
reason, and the plan then needs a replan, which its next prompt asks for. A step the model left
alone stays due; one it marked itself with ``UpdateStoryPlan`` is left as the model set it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from storyteller_daemon.agent.context import Block, Item, Priority
from storyteller_daemon.agent.fencing import Fence, quoted
from storyteller_daemon.agent.ports import SceneClaimStore, StoryPlanStore
from storyteller_daemon.agent.records import TurnRecord
from storyteller_daemon.agent.tools.arguments import MalformedArguments, parse_arguments
from storyteller_daemon.agent.trigger import Trigger, TriggerKind
from storyteller_daemon.domain.scenes import SceneClaim
from storyteller_daemon.domain.story_plans import PlanStatus, PlanStep, StepState, StoryPlan
from storyteller_daemon.errors import NotFoundError, ToolError, ValidationError
from world_adapter.events import Crime, RoomEcho, Speech

PLANS_HEADER = "Your story plans (oldest first):"
DUE_HEADER = "Plan steps due now:"
CLAIMS_HEADER = "Scene claims holding now:"
PLANS_SHARE = 0.10
DUE_SHARE = 0.05
CLAIMS_SHARE = 0.03
_STATE_MARK = {StepState.DONE: "done", StepState.FAILED: "failed", StepState.PENDING: "pending"}


@dataclass(frozen=True)
class DueStep:
    """A plan step due in this turn."""

    plan_id: int
    step: int
    """Counted from 1."""
    tool: str
    intent: str
    arguments: str | None
    why: str


@dataclass
class DirectorView:
    """What the director gathered for one turn."""

    plans: list[StoryPlan] = field(default_factory=list)
    due: list[DueStep] = field(default_factory=list)
    claims: list[SceneClaim] = field(default_factory=list)
    failed_on_start: list[dict[str, Any]] = field(default_factory=list)
    """Steps failed before the turn because their tool may no longer be called."""
    plans_unavailable: str = ""
    claims_unavailable: str = ""


def event_features(trigger: Trigger) -> list[tuple[str, int | None, frozenset[int], str]]:
    """What a `WaitFor` is checked against, for each event of the trigger: its kind, room,
    characters and text (a crime's type for a crime)."""
    features = []
    for each in trigger.all:
        event = each.event
        if event is None:
            continue
        text = ""
        if isinstance(event, RoomEcho | Speech):
            text = event.text
        elif isinstance(event, Crime):
            text = event.crime_type
        features.append((each.kind.value, each.room_id, each.character_ids, text))
    return features


def _due_why(step: PlanStep, trigger: Trigger) -> str | None:
    """Why the step is due in this turn (None: it is not)."""
    if step.wait_for is None:
        return "the heartbeat" if trigger.kind is TriggerKind.HEARTBEAT else None
    if any(step.wait_for.met_by(*f) for f in event_features(trigger)):
        return f"its condition was met ({step.wait_for.describe()})"
    return None


async def gather(
    storyteller_id: int,
    trigger: Trigger,
    *,
    plans: StoryPlanStore | None,
    claims: SceneClaimStore | None,
    plannable: frozenset[str],
    run: str,
) -> DirectorView:
    """The open plans, the steps due in this turn, and the claims holding now."""
    view = DirectorView()
    allowed = {name.lower() for name in plannable}
    if plans is not None:
        try:
            opened = await plans.open_plans(storyteller_id)
        except ToolError as exc:
            view.plans_unavailable = str(exc)
            opened = []
        for plan in opened:
            step = plan.due if plan.status is PlanStatus.ACTIVE else None
            index = plan.due_index
            if step is not None and index is not None and step.tool.lower() not in allowed:
                reason = f"tool {step.tool} is no longer one this storyteller may call"
                try:
                    plan = await plans.step_failed(storyteller_id, plan.id, reason=reason, run=run)
                except (ToolError, ValidationError, NotFoundError):
                    continue  # changed meanwhile: the next turn sees it as it is
                view.failed_on_start.append(
                    {"plan": plan.id, "step": index + 1, "tool": step.tool, "reason": reason}
                )
                step = None
            view.plans.append(plan)
            why = _due_why(step, trigger) if step is not None else None
            if step is not None and index is not None and why is not None:
                view.due.append(
                    DueStep(plan.id, index + 1, step.tool, step.intent, step.arguments, why)
                )
    if claims is not None:
        try:
            view.claims = await claims.active(None)
        except ToolError as exc:
            view.claims_unavailable = str(exc)
    return view


def _step_line(number: int, step: PlanStep) -> str:
    mark = _STATE_MARK[step.state]
    if step.state is StepState.PENDING and step.wait_for is not None:
        mark += f", waits for {step.wait_for.describe()}"
    line = f"  {number}. [{mark}] {step.tool}: {quoted(step.intent)}"
    if step.arguments is not None:
        line += f" with {quoted(step.arguments)}"
    if step.note:
        line += f" ({quoted(step.note)})"
    return line


def _plan_item(plan: StoryPlan) -> Item:
    status = plan.status.value.replace("_", " ")
    head = (
        f"- Plan #{plan.id} ({status}; lapses {plan.expires_at:%Y-%m-%d %H:%M} UTC)"
        f"{' [from players]' if plan.from_player else ''}: goal {quoted(plan.goal)}"
    )
    lines = [head, *(_step_line(n, s) for n, s in enumerate(plan.steps, start=1))]
    if plan.status is PlanStatus.NEEDS_REPLAN:
        lines.append(
            "  A step failed: replan it (UpdateStoryPlan, Action replan, with the Reason) or "
            "abandon it before acting on it again."
        )
    return Item("\n".join(lines), plan.from_player, own_words=True)


def plans_block(view: DirectorView, notes: Fence) -> Block:
    """The open plans (stable: it reads the same until a plan changes)."""

    def render(lines: Sequence[str], dropped: int) -> str:
        if not lines:
            return ""
        body = notes.block("\n".join(lines), "story plans", strip=False)
        more = ["Older plans are not shown."] if dropped else []
        return "\n".join([PLANS_HEADER, body, *more])

    return Block(
        "plans",
        Priority.PLANS,
        tuple(_plan_item(p) for p in view.plans),
        render,
        share=PLANS_SHARE,
        stable=True,
        drop_oldest=True,
        notes=True,
        unavailable=view.plans_unavailable,
    )


def due_block(view: DirectorView) -> Block:
    """What is due now, for the model to do in this turn."""

    def line(due: DueStep) -> str:
        text = f"- Plan #{due.plan_id} step {due.step} (due: {due.why}): call {due.tool}"
        text += f" to {quoted(due.intent)}"
        if due.arguments is not None:
            text += f", arguments in mind {quoted(due.arguments)}"
        return text

    def render(lines: Sequence[str], dropped: int) -> str:
        if not lines:
            return ""
        tail = (
            "Do each due step now if it still serves the goal; if the world has made it wrong, "
            "replan with UpdateStoryPlan and say why."
        )
        return "\n".join([DUE_HEADER, *lines, tail])

    return Block(
        "plan steps due",
        Priority.PLANS,
        tuple(Item(line(d)) for d in view.due),
        render,
        share=DUE_SHARE,
    )


def claims_block(view: DirectorView, storyteller_id: int) -> Block:
    """The scene claims holding now (yours and others')."""

    def line(claim: SceneClaim) -> str:
        who = "you" if claim.storyteller_id == storyteller_id else quoted(claim.storyteller_name)
        reason = f": {quoted(claim.reason)}" if claim.reason else ""
        return f"- room #{claim.room_id} by {who} until {claim.expires_at:%H:%M} UTC{reason}"

    def render(lines: Sequence[str], dropped: int) -> str:
        if not lines:
            return ""
        tail = "Do not act on the game in a room another storyteller holds."
        return "\n".join([CLAIMS_HEADER, *lines, tail])

    return Block(
        "scene claims",
        Priority.PLANS,
        tuple(Item(line(c)) for c in view.claims),
        render,
        share=CLAIMS_SHARE,
        unavailable=view.claims_unavailable,
    )


def _names_plan(arguments: str, plan_id: int) -> bool:
    try:
        value = parse_arguments(arguments)
    except MalformedArguments:
        return False
    return str(value.get("Id")) == str(plan_id)


async def settle(
    view: DirectorView,
    record: TurnRecord,
    plans: StoryPlanStore,
    storyteller_id: int,
    run: str,
) -> list[dict[str, Any]]:
    """Mark each due step by what the turn did; the outcomes, for the run record."""
    outcomes: list[dict[str, Any]] = list(view.failed_on_start)
    for due in view.due:
        entry: dict[str, Any] = {"plan": due.plan_id, "step": due.step, "tool": due.tool}
        if any(
            c.name.strip().lower() == "updatestoryplan" and _names_plan(c.arguments, due.plan_id)
            for c in record.calls
        ):
            outcomes.append({**entry, "outcome": "updated by the model"})
            continue
        calls = [
            c
            for c in record.calls
            if c.name.strip().lower() == due.tool.lower() and not (c.skipped or c.malformed)
        ]
        try:
            if not calls:
                outcomes.append({**entry, "outcome": "still due"})
            elif good := [c for c in calls if c.envelope.get("ok")]:
                how = "simulated (shadow mode)" if good[0].shadowed else "ran"
                how = "parked for approval" if good[0].parked else how
                note = f"{due.tool} {how} in turn {run}"
                await plans.step_done(storyteller_id, due.plan_id, note=note, run=run)
                outcomes.append({**entry, "outcome": "done", "note": note})
            else:
                error = str(calls[-1].envelope.get("error") or "the call failed")
                reason = f"{due.tool} failed: {error}"
                await plans.step_failed(storyteller_id, due.plan_id, reason=reason, run=run)
                outcomes.append({**entry, "outcome": "failed", "reason": reason})
        except (ToolError, ValidationError, NotFoundError) as exc:  # changed meanwhile
            outcomes.append({**entry, "outcome": "not recorded", "reason": str(exc)})
    return outcomes
