"""``storyteller runs compare``: what would change if a storyteller's model, effort or prompt did.

The last N recorded turns are replayed over their tapes with the change applied, asking the
configured model (or the offline stand-in), and their attention batches are asked again; the
report puts before and after side by side (`runs.compare`). A real endpoint costs money, so the
command first says what it will cost (the recorded token counts at the target model's prices) and
asks; ``--yes`` skips the question, and without a terminal to ask on it refuses.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from storyteller_daemon.cli.support import (
    JsonFlag,
    fail,
    open_store,
    print_json,
    run_async,
    say,
    state,
    table,
    working,
)
from storyteller_daemon.cli.views.runs import StorytellerOption, storyteller_filter, usd
from storyteller_daemon.domain.storytellers import ReasoningEffort
from storyteller_daemon.errors import NotFoundError, ValidationError

if TYPE_CHECKING:
    from collections import Counter

    from storyteller_daemon.domain.storytellers import Storyteller
    from storyteller_daemon.runs.compare import RecordedTurn
    from storyteller_daemon.runs.comparison import Comparison, Side
    from storyteller_daemon.storage.store import Store


def interactive() -> bool:
    """Whether someone can answer the cost question (stdin is a terminal)."""
    return sys.stdin.isatty()


@run_async
async def compare(
    ctx: typer.Context,
    last: Annotated[
        int, typer.Option("--last", "-n", help="Compare the last N turns.", min=1)
    ] = 10,
    storyteller: StorytellerOption = None,
    model: Annotated[
        str | None,
        typer.Option("--model", "-m", help="Send every request under this model name."),
    ] = None,
    effort: Annotated[
        ReasoningEffort | None,
        typer.Option(help="Send every request with this reasoning effort."),
    ] = None,
    prompt: Annotated[
        Path | None,
        typer.Option(
            "--prompt",
            help="Use this file's text as the system prompt.",
            exists=True,
            dir_okay=False,
            readable=True,
        ),
    ] = None,
    yes: Annotated[
        bool, typer.Option("--yes", "-y", help="Ask a real endpoint without confirming the cost.")
    ] = False,
    json_out: JsonFlag = False,
) -> None:
    """Replay the last N turns with a changed model, effort or system prompt, side by side.

    The storytellers' saved settings apply otherwise, so a tool or prompt edited with `ais set`
    is compared too. Reports per turn and in total the tool calls added and removed, attention
    verdict flips, and tokens and USD before and after. Nothing acts on the world; the requests
    asked are kept in the cost ledger (purpose replay). A real endpoint's estimated cost is
    shown and confirmed first (--yes skips the question).
    """
    from storyteller_daemon.app import attention_options, choose_model, daemon_secrets
    from storyteller_daemon.app.adapters import close_if_closable
    from storyteller_daemon.clock import SystemClock
    from storyteller_daemon.runs.compare import Comparer, likely_cost_usd
    from storyteller_daemon.runs.comparison import Change
    from storyteller_daemon.runtime.turns import replay_runner

    text = None
    if prompt is not None:
        text = prompt.read_text(encoding="utf-8").strip()
        if not text:
            raise ValidationError(f"--prompt {prompt} is empty.")
    change = Change(model, effort, text, str(prompt) if prompt is not None else None)
    cfg = state(ctx).config()
    async with open_store(ctx) as store:
        turns = await _recorded_turns(store, last, storyteller)
        if not turns:
            say("No recorded turns to compare.")
            return
        choice = choose_model(cfg)
        if choice.model is None:
            raise ValidationError(
                f"No model to ask: set {cfg.model.api_key_env}, or [model] offline_when_no_key "
                "= true for the offline stand-in."
            )
        asked = choice.model
        comparer = Comparer(
            change,
            asked,
            replay_runner,
            cfg.limits,
            attention_options(cfg),
            cfg.model.prices,
            SystemClock(),
            cfg.policy,
            daemon_secrets(cfg),
        )
        try:
            if not choice.offline:
                _confirm(
                    counted(t.kind for t in turns),
                    model or "each turn's model",
                    choice.description,
                    yes,
                    likely_cost_usd(turns, change, cfg.model.prices),
                )
            with working(f"comparing {counted(t.kind for t in turns)}"):
                comparison = await comparer.compare(turns)
        finally:
            await close_if_closable(asked)
            # What was asked is paid for, even when a later turn failed or Ctrl-C cut it short.
            await store.ledger.add(comparer.charges)
    if json_out:
        print_json(comparison.to_dict())
    else:
        show_comparison(comparison)


def counted(kinds: Iterable[str]) -> str:
    """``2 turn(s)``, and ``and 1 ignored batch(es)`` when batches that ignored every event are
    compared too."""
    every = list(kinds)
    batches = every.count("attention")
    ignored = f" and {batches} ignored batch(es)" if batches else ""
    return f"{len(every) - batches} turn(s){ignored}"


def _confirm(what: str, model: str, endpoint: str, yes: bool, estimate: float) -> None:
    """Say what asking about `what` will cost, and ask; refuse without a terminal unless `yes`."""
    if yes:
        return
    what = f"Comparing {what} asks {model} on {endpoint}: about {usd(estimate)}"
    if not interactive():
        raise ValidationError(f"{what}; pass --yes to ask without confirming.")
    typer.echo(f"{what} (the recorded token counts at its prices).", err=True)
    if not typer.confirm("Go ahead?", err=True):
        raise fail("Nothing was asked.")


ATTENTION_LEAD = timedelta(hours=1)
"""How long before the first compared turn the attention batches are looked for."""
BATCHES_PER_TURN = 10
"""Attention batches read per compared turn at most (the busiest storytellers judge many)."""


async def _recorded_turns(store: Store, last: int, ref: str | None) -> list[RecordedTurn]:
    """The last `last` turns (of the storyteller `ref`) with the attention batches that judged
    their events, and up to as many batches since the first of them that ignored every event,
    oldest first, each with its storyteller's current settings."""
    from storyteller_daemon.runs.compare import RecordedTurn, batches_of

    storyteller_id, storyteller_name = storyteller_filter(ref)
    runs = store.runs
    turns = await runs.list(
        kind="turn", storyteller_id=storyteller_id, storyteller_name=storyteller_name, limit=last
    )
    if not turns:
        return []
    first = turns[-1].started_at
    summaries = await runs.list(
        kind="attention",
        storyteller_id=storyteller_id,
        storyteller_name=storyteller_name,
        since=first - ATTENTION_LEAD,
        limit=BATCHES_PER_TURN * last,
    )
    batches = {b.id: (await runs.get(b.id)).record for b in reversed(summaries)}
    ignored = [b for b in summaries if b.outcome == "ignore" and b.started_at >= first][:last]
    settings: dict[int, Storyteller] = {}
    found = []
    for summary in sorted([*turns, *ignored], key=lambda s: (s.started_at, s.id)):
        sid = summary.storyteller_id
        try:
            settings[sid] = settings.get(sid) or await store.storytellers.get(sid)
        except NotFoundError:
            raise ValidationError(
                f"Storyteller #{sid} of run #{summary.id} no longer exists; a comparison needs "
                "its settings."
            ) from None
        if summary.kind == "attention":
            batch = ((summary.id, batches[summary.id]),)
            found.append(RecordedTurn(summary.id, {}, settings[sid], batch, summary.room_id))
            continue
        record = (await runs.get(summary.id)).record
        judged = batches_of(record, list(batches.items()))
        found.append(RecordedTurn(summary.id, record, settings[sid], judged, summary.room_id))
    return found


def _counts(counts: Counter[str]) -> str:
    return ", ".join(f"{name} ×{n}" if n > 1 else name for name, n in sorted(counts.items()))


def _tokens(before: Side, after: Side) -> str:
    return f"{before.tokens} → {after.tokens}"


def _usd(before: Side, after: Side) -> str:
    return f"{usd(before.usd)} → {usd(after.usd)}"


def show_comparison(comparison: Comparison) -> None:
    """The comparison as a table, turn by turn with a total, then the verdict flips."""
    change = comparison.change
    parts = [
        *([f"model {change.model}"] if change.model else []),
        *([f"effort {change.effort.value}"] if change.effort else []),
        *([f"the system prompt of {change.prompt_file}"] if change.prompt_file else []),
    ]
    changed = ", ".join(parts) or "today's settings"
    compared = counted(t.kind for t in comparison.turns)
    say(f"Compared {compared} with {changed}, asking {comparison.model}.")
    rows = [
        (
            f"#{t.run_id}",
            t.trigger,
            f"{t.before.outcome} → {t.after.outcome}",
            _counts(t.added),
            _counts(t.removed),
            f"{t.before.refused} → {t.after.refused}",
            len(t.flips),
            _tokens(t.before, t.after),
            _usd(t.before, t.after),
        )
        for t in comparison.turns
    ]
    data = comparison.to_dict()["total"]
    before, after = comparison.total("before"), comparison.total("after")
    rows.append(
        (
            "Total",
            "",
            "",
            _counts(_counter(data["added"])),
            _counts(_counter(data["removed"])),
            f"{before.refused} → {after.refused}",
            data["flips"],
            _tokens(before, after),
            _usd(before, after),
        )
    )
    columns = ("Run", "Trigger", "Outcome", "Added", "Removed", "Refused", "Flips", "Tokens", "USD")
    table("Before → after", columns, rows, wide={"Trigger", "Outcome", "Added", "Removed"})
    flips = [
        (f"#{f.run_id}", f.event, f.label, f.before, f.after)
        for t in comparison.turns
        for f in t.flips
    ]
    if flips:
        table("Verdict flips", ("Attention run", "Event", "Trigger", "Before", "After"), flips)
    for turn in comparison.turns:
        if turn.note:
            say(f"Run #{turn.run_id}: {turn.note}")
    if comparison.unpriced:
        models = ", ".join(comparison.unpriced)
        say(f"No price in [model.prices] for {models}: their requests count as $0.")


def _counter(counts: dict[str, int]) -> Counter[str]:
    from collections import Counter

    return Counter(counts)
