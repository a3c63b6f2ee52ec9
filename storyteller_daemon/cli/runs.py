"""``storyteller runs``: what the storytellers did and why, replays, and pruning.

Every turn, attention call and digest refresh is stored as a run (see
`storyteller_daemon.storage.runs`). ``list`` filters them, ``show`` prints one as a transcript,
``replay`` re-runs a turn with today's code against its recorded model answers (or a live model
with ``--model``) and reports what differs, ``compare`` replays the last turns with a changed
model, effort or prompt and puts before and after side by side (`cli.runs_compare`), ``retry``
queues a failed turn again, and ``prune`` deletes runs past the retention period.
"""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Annotated

import typer

from storyteller_daemon.agent.trigger import TriggerKind
from storyteller_daemon.cli.runs_compare import compare
from storyteller_daemon.cli.support import (
    JsonFlag,
    command_group,
    open_store,
    print_json,
    register,
    run_async,
    say,
    state,
    working,
)
from storyteller_daemon.cli.views.runs import (
    Since,
    StorytellerOption,
    Until,
    list_runs,
    show_replay,
    show_run,
    storyteller_filter,
    summary_json,
    time_window,
)
from storyteller_daemon.domain.durations import format_duration, parse_duration
from storyteller_daemon.errors import NotFoundError, ValidationError

if TYPE_CHECKING:
    from storyteller_daemon.agent.models.interface import Model
    from storyteller_daemon.config import Config

app = command_group(
    "Run records: list and show what storytellers did, replay a turn, compare a change, prune."
)

RUN_KINDS = ("turn", "attention", "digest")

RunId = Annotated[int, typer.Argument(metavar="ID", help="Run id (see `runs list`).", min=1)]


@register(app, "list")
@run_async
async def list_command(
    ctx: typer.Context,
    storyteller: StorytellerOption = None,
    trigger: Annotated[
        TriggerKind | None, typer.Option("--trigger", "-t", help="Only this trigger kind.")
    ] = None,
    outcome: Annotated[
        str | None,
        typer.Option(help="Only this outcome (completed, noop, budget_exceeded, ignore...)."),
    ] = None,
    kind: Annotated[
        str | None,
        typer.Option(
            help="Only turns ('turn'), attention calls ('attention') or digest refreshes "
            "('digest')."
        ),
    ] = None,
    since: Since = None,
    until: Until = None,
    limit: Annotated[int, typer.Option(help="At most this many, newest first.", min=1)] = 50,
    json_out: JsonFlag = False,
) -> None:
    """List runs, newest first."""
    if kind is not None and kind not in RUN_KINDS:
        raise ValidationError("--kind must be 'turn', 'attention' or 'digest'.")
    storyteller_id, storyteller_name = storyteller_filter(storyteller)
    async with open_store(ctx) as store:
        start, end = time_window(since, until, store.clock.now())

        runs = await store.runs.list(
            storyteller_id=storyteller_id,
            storyteller_name=storyteller_name,
            trigger_kind=trigger.value if trigger else None,
            outcome=outcome,
            kind=kind,
            since=start,
            until=end,
            limit=limit,
        )
    if json_out:
        print_json([summary_json(r) for r in runs])
    else:
        list_runs(runs)


@register(app, "show")
@run_async
async def show(ctx: typer.Context, run_id: RunId, json_out: JsonFlag = False) -> None:
    """Show one run as a transcript: trigger, verdict, each round's calls and results, cost."""
    async with open_store(ctx) as store:
        runs = store.runs
        stored = await runs.get(run_id)
        related = await runs.related(stored.summary)
    if json_out:
        print_json(
            {
                "run": summary_json(stored.summary),
                "related": [summary_json(r) for r in related],
                "record": stored.record,
            }
        )
    else:
        show_run(stored.summary, stored.record, related)


@register(app, "replay")
@run_async
async def replay(
    ctx: typer.Context,
    run_id: RunId,
    model: Annotated[
        str | None,
        typer.Option(
            "--model",
            "-m",
            help="Ask this live model (on the configured endpoint) instead of replaying the "
            "recorded answers.",
        ),
    ] = None,
    base_url: Annotated[
        str | None,
        typer.Option(help="With --model: the Responses-API endpoint; overrides model.base_url."),
    ] = None,
    json_out: JsonFlag = False,
) -> None:
    """Re-run a recorded turn with today's code and show what differs; acts on nothing.

    The world's answers and prog results come from the recording, so no prog runs and nothing
    is stored, except the cost of a live model's requests in the cost ledger.
    """
    from storyteller_daemon.app import daemon_secrets
    from storyteller_daemon.clock import SystemClock
    from storyteller_daemon.runs import replay_turn
    from storyteller_daemon.runtime.turns import replay_runner

    if base_url is not None and model is None:
        raise ValidationError("--base-url needs --model.")
    cfg = state(ctx).config()
    async with open_store(ctx) as store:
        stored = await store.runs.get(run_id)
        if stored.summary.kind != "turn":
            raise ValidationError(f"Run #{run_id} is not a turn; only turns can be replayed.")
        try:
            storyteller = await store.storytellers.get(stored.summary.storyteller_id)
        except NotFoundError:
            raise ValidationError(
                f"Storyteller #{stored.summary.storyteller_id} no longer exists; a replay needs "
                "its settings."
            ) from None
        live = _live_model(cfg, base_url) if model is not None else None
        asking = f", asking {model}" if model is not None else ""
        try:
            with working(f"replaying run #{run_id}{asking}"):
                report = await replay_turn(
                    run_id,
                    stored.record,
                    storyteller,
                    cfg.limits,
                    runner=replay_runner,
                    clock=SystemClock(),
                    live=live,
                    live_name=model,
                    prices=cfg.model.prices,
                    policy=cfg.policy,
                    secrets=daemon_secrets(cfg),
                )
        finally:
            close = getattr(live, "close", None)
            if close is not None:
                await close()
        await store.ledger.add(report.charges)
    if json_out:
        print_json(report.to_dict())
    else:
        show_replay(report.to_dict(), live=live is not None)


register(app, "compare")(compare)


def _live_model(cfg: Config, base_url: str | None) -> Model:
    """The configured endpoint's model, as ``storyteller run`` would build it."""
    from storyteller_daemon.app import choose_model

    if base_url is not None:
        endpoint = cfg.model.model_copy(update={"base_url": base_url})
        cfg = cfg.model_copy(update={"model": endpoint})
    choice = choose_model(cfg)
    if choice.model is None or choice.offline:
        raise ValidationError(
            f"No live model: set {cfg.model.api_key_env} to ask the configured endpoint."
        )
    return choice.model


@register(app, "retry")
@run_async
async def retry(
    ctx: typer.Context,
    ref: Annotated[
        str,
        typer.Argument(
            metavar="ID", help="The failed turn: a run id (see `runs list`) or its turn key."
        ),
    ],
    json_out: JsonFlag = False,
) -> None:
    """Queue a failed turn again: it resumes from its journal, so nothing it did runs twice."""
    from storyteller_daemon.cli.support import os_user

    async with open_store(ctx) as store:
        key = ref.strip()
        if key.isdigit():
            key = (await store.runs.get(int(key))).summary.turn_key
        async with store.db.unit():  # all of it, or nothing
            items = await store.backlog.retry(key)
            if not items:
                raise ValidationError(f"turn {key} has no failed events to queue again")
            sid = items[0].storyteller_id
            try:  # a new revision makes a running daemon look at its backlog again
                await store.storytellers.save(await store.storytellers.get(sid))
            except NotFoundError:
                raise ValidationError(f"turn {key}'s storyteller {sid} no longer exists") from None
            detail = {"turn_key": key, "events": len(items)}
            await store.audit.add(os_user(), "retry_turn", f"storyteller {sid}", detail)
    if json_out:
        print_json({"turn_key": key, "storyteller_id": sid, "events": len(items)})
    else:
        say(
            f"Queued turn {key} again ({len(items)} event(s)); a running daemon takes it up at "
            "its next settings poll, or the next start does."
        )


@register(app, "prune")
@run_async
async def prune(
    ctx: typer.Context,
    older_than: Annotated[
        str | None,
        typer.Option(help="Delete runs older than this (e.g. 30d); default runs.retention_days."),
    ] = None,
) -> None:
    """Delete run records past their retention, and cost-ledger rows past theirs."""

    cfg = state(ctx).config()
    keep = parse_duration(older_than) if older_than else timedelta(days=cfg.runs.retention_days)
    if not keep:
        raise ValidationError("Runs are kept forever (runs.retention_days = 0); give --older-than.")
    async with open_store(ctx) as store:
        now = store.clock.now()
        runs = await store.runs.prune(now - keep)
        ledger = 0
        if cfg.runs.ledger_retention_days:
            kept = timedelta(days=cfg.runs.ledger_retention_days)
            ledger = await store.ledger.prune(now - kept)
    say(
        f"Deleted {runs} run record(s) older than {format_duration(keep)} and {ledger} cost-ledger "
        "row(s) past their retention."
    )
