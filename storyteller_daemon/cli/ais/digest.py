"""``storyteller ais digest …``: a storyteller's rolling digest, and reflection on demand.

The daemon refreshes each storyteller's digest while it is idle (``[reflection]``); ``show``
prints the stored digest, ``refresh`` runs the same reflection pass once from the shell
(merge duplicate memories, then refresh the digest with the configured model, through the
budgets, recorded as a run).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from storyteller_daemon.cli.support import (
    JsonFlag,
    command_group,
    fail,
    format_time,
    open_store,
    print_json,
    register,
    run_async,
    say,
    state,
)
from storyteller_daemon.cli.views.runs import describe_changes
from storyteller_daemon.errors import EX_UNAVAILABLE

if TYPE_CHECKING:
    from storyteller_daemon.domain.digest import Digest
    from storyteller_daemon.domain.storytellers import Storyteller
    from storyteller_daemon.runtime.reflection import ReflectionReport

digests = command_group("A storyteller's rolling digest: show it, or refresh it now.")

Ref = Annotated[str, typer.Argument(metavar="REF", help="Storyteller id or name.")]

KEPT = ("refreshed", "unchanged")
"""Outcomes of a refresh that are not a failure."""


def digest_json(st: Storyteller, digest: Digest | None) -> dict[str, Any]:
    """A storyteller's digest with stable keys (``digest`` is null before the first)."""
    return {
        "storyteller": {"id": st.id, "name": st.name},
        "digest": None
        if digest is None
        else {
            "text": digest.text,
            "refreshed_on": digest.refreshed_on.isoformat(),
            "run_key": digest.run_key,
            "fingerprint": digest.fingerprint,
        },
    }


@register(digests, "show")
@run_async
async def show_digest(ctx: typer.Context, ref: Ref, json_out: JsonFlag = False) -> None:
    """Show a storyteller's digest: its text, when its inputs were read and which run wrote it."""
    async with open_store(ctx) as store:
        st = await store.storytellers.get(ref)
        assert st.id is not None
        digest = await store.digests.latest(st.id)
    if json_out:
        print_json(digest_json(st, digest))
        return
    if digest is None:
        say(
            f"{st.name} has no digest yet: one is written once it has been idle after something "
            f"happened, or by `storyteller ais digest refresh {st.id}`."
        )
        return
    say(f"Digest of {st.name} (#{st.id})")
    say(f"Covers: up to {format_time(digest.refreshed_on)}")
    say(f"Run: {digest.run_key} (`storyteller runs list --kind digest`)")
    say("")
    say(digest.text)


@register(digests, "refresh")
@run_async
async def refresh_digest(
    ctx: typer.Context,
    ref: Ref,
    force: Annotated[
        bool, typer.Option("--force", help="Rewrite the digest even if nothing changed.")
    ] = False,
    json_out: JsonFlag = False,
) -> None:
    """Run a reflection pass now: merge duplicate memories, then refresh the digest.

    The pass the daemon runs while the storyteller is idle, once, against the database and the
    configured model: its request passes the budgets and is recorded as a run of kind digest.
    Nothing is asked of the model when nothing changed since the last digest, unless --force.
    """
    from storyteller_daemon.app import one_shot_reflection

    cfg = state(ctx).config()
    async with open_store(ctx) as store:
        st = await store.storytellers.get(ref)
        async with one_shot_reflection(cfg, store, clock=store.clock) as reflection:
            report = await reflection.reflect(st, force=force)
    outcome = report.digest.outcome
    if json_out:
        print_json(_report_json(st, report))
    else:
        for line in _report_lines(st, report):
            say(line)
    if outcome not in KEPT:
        detail = report.digest.detail or outcome
        if outcome == "no_model":
            detail = f"no model is configured (set {cfg.model.api_key_env})"
        raise fail(
            f"The digest of {st.name} was not refreshed: {detail}; the old one stays.",
            EX_UNAVAILABLE,
        )


def _report_json(st: Storyteller, report: ReflectionReport) -> dict[str, Any]:
    result = report.digest
    return {
        **digest_json(st, result.digest),
        "merges": [
            {"character_id": m.character_id, "kept": m.kept, "merged": list(m.merged)}
            for m in report.merges
        ],
        "outcome": result.outcome,
        "changes": result.changes,
        "run_key": result.run_key,
        "cost_usd": result.cost_usd,
        "detail": result.detail,
    }


def _report_lines(st: Storyteller, report: ReflectionReport) -> list[str]:
    lines = [
        f"Merged memories {', '.join(f'#{i}' for i in m.merged)} into #{m.kept} "
        f"(character #{m.character_id})."
        for m in report.merges
    ]
    result = report.digest
    changes = describe_changes(result.changes)
    if result.outcome == "refreshed":
        lines.append(
            f"Refreshed the digest of {st.name} from {changes or 'no new changes'} "
            f"(${result.cost_usd:.4f}); "
            f"`storyteller ais digest show {st.id}` shows it."
        )
    elif result.outcome == "unchanged" and result.digest is None:
        lines.append(f"Nothing has happened yet for {st.name} to write a digest about.")
    elif result.outcome == "unchanged":
        lines.append(
            f"The digest of {st.name} is unchanged: nothing happened since it was written "
            "(--force rewrites it)."
        )
    return lines
