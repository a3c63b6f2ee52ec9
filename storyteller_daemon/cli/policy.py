"""``storyteller policy``: the limits every prog call passes, and the kill switch.

``policy kill`` sets the kill switch's flag in the database, which every daemon of the database
honours (a cluster's too), and its file flag where there is one: from each daemon's next prog
call on, every storyteller's prog calls are refused (attention, situations, memories and
read-only tools go on), and the flags survive restarts. ``policy resume`` clears both.
``policy show`` prints the limits in force (docs/security.md).

``policy approvals`` lists prog calls parked for approval (tools matched by ``[policy]
approve``); ``policy approve ID`` lets the daemon run one (once, within seconds), ``policy
reject ID`` drops it. A call not decided in ``approval_expiry_seconds`` expires.

``policy report`` counts the refusals of the stored turns by rule, tool, storyteller and the
character whose words or actions started the turn, so an admin sees who is trying what.
"""

from __future__ import annotations

from dataclasses import asdict
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from storyteller_daemon.cli.support import (
    JsonFlag,
    acting_user,
    console,
    fail,
    open_store,
    print_json,
    run_async,
    say,
    state,
    table,
)
from storyteller_daemon.errors import StorytellerError

if TYPE_CHECKING:
    from storyteller_daemon.config import Config
    from storyteller_daemon.domain.approvals import Approval

app = typer.Typer(
    help="The policy every prog call passes: show it, stop all prog calls, resume, approve.",
    no_args_is_help=True,
)


def _kill_file(cfg: Config) -> Path | None:
    """Where the kill switch's file flag is (None: a PostgreSQL database and no setting)."""
    from storyteller_daemon.agent.policy_rules import kill_file_path
    from storyteller_daemon.config import database_url

    return kill_file_path(cfg.policy, database_url(cfg))


async def _set_database_flag(ctx: typer.Context, on: bool) -> str | None:
    """Set the kill switch's database twin; None when done, else why it could not be."""
    from storyteller_daemon.domain.cluster import KILL_SWITCH_FLAG

    try:
        async with open_store(ctx) as store:
            await store.flags.set(KILL_SWITCH_FLAG, on, by=acting_user(ctx))
    except StorytellerError as exc:
        return str(exc)
    return None


async def _database_flag(ctx: typer.Context) -> bool | None:
    """Whether the database twin is on (None: the database cannot say)."""
    from storyteller_daemon.domain.cluster import KILL_SWITCH_FLAG

    try:
        async with open_store(ctx) as store:
            return bool(await store.flags.on(KILL_SWITCH_FLAG))
    except StorytellerError:
        return None


def _flip_file(path: Path | None, on: bool) -> None:
    if path is None:
        return
    try:
        if on:
            path.touch()
        else:
            path.unlink(missing_ok=True)
    except OSError as exc:
        verb = "create" if on else "remove"
        raise fail(f"cannot {verb} {path}: {exc.strerror}", 73) from None


@app.command("kill")
@run_async
async def kill(ctx: typer.Context) -> None:
    """Stop every storyteller's prog calls now (survives restarts) until `policy resume`."""
    path = _kill_file(state(ctx).config())
    _flip_file(path, True)
    problem = await _set_database_flag(ctx, True)
    if problem is not None and path is None:
        raise fail(f"the kill switch could not be set in the database: {problem}", 69)
    where = " and ".join(
        w for w in (str(path) if path else "", "" if problem else "the database") if w
    )
    console.print(
        f"kill switch on ({where}): every daemon refuses every prog call from its next one; "
        "`storyteller policy resume` lifts it"
    )
    if problem is not None:
        console.print(f"the database flag was not set ({problem}); the file flag stops this host")


@app.command("resume")
@run_async
async def resume(ctx: typer.Context) -> None:
    """Lift the kill switch's flags (a `kill_switch = true` setting stays in force)."""
    cfg = state(ctx).config()
    path = _kill_file(cfg)
    _flip_file(path, False)
    problem = await _set_database_flag(ctx, False)
    if problem is not None and path is None:
        raise fail(f"the kill switch could not be lifted in the database: {problem}", 69)
    if problem is not None:
        console.print(f"file flag removed, but the database flag could not be ({problem})")
    elif cfg.policy.kill_switch:
        console.print("flags removed, but [policy] kill_switch = true still stops prog calls")
    else:
        console.print("kill switch off: prog calls run again from each daemon's next one")


@app.command("show")
@run_async
async def show(ctx: typer.Context, as_json: JsonFlag = False) -> None:
    """The limits in force and whether the kill switch is on."""
    from storyteller_daemon.agent.policy_rules import kill_switch_on

    cfg = state(ctx).config()
    path = _kill_file(cfg)
    flag = await _database_flag(ctx)
    data: dict[str, Any] = {
        "kill_switch": kill_switch_on(cfg.policy, path) or bool(flag),
        "kill_file": str(path) if path is not None else None,
        "kill_flag_in_database": flag,
        **cfg.policy.model_dump(exclude={"kill_switch", "kill_file"}),
    }
    if as_json:
        print_json(data)
        return
    for key, value in data.items():
        say(f"{key:<28} {value}")


ApprovalId = Annotated[int, typer.Argument(help="The parked call's number (policy approvals).")]
Note = Annotated[str, typer.Option("--note", help="Why, for the record.")]


def _approval_json(approval: Approval) -> dict[str, Any]:
    return {k: v.isoformat() if isinstance(v, datetime) else v for k, v in asdict(approval).items()}


@app.command("approvals")
@run_async
async def approvals(
    ctx: typer.Context,
    show_all: Annotated[
        bool, typer.Option("--all", help="Decided, expired and finished calls too.")
    ] = False,
    limit: Annotated[int, typer.Option(help="At most this many, newest first.", min=1)] = 50,
    as_json: JsonFlag = False,
) -> None:
    """Prog calls parked for approval (pending and approved; --all for every one)."""
    from storyteller_daemon.domain.approvals import OPEN_APPROVAL_STATES

    async with open_store(ctx) as store:
        states = () if show_all else tuple(OPEN_APPROVAL_STATES)
        found = await store.approvals.list(states, limit=limit)
    if as_json:
        print_json([_approval_json(a) for a in found])
        return
    table(
        "Parked calls",
        ["id", "state", "storyteller", "tool", "arguments", "trigger", "expires (UTC)"],
        [
            (
                a.id,
                a.state.value,
                a.storyteller_id,
                a.tool,
                a.arguments,
                a.trigger,
                f"{a.expires_at:%Y-%m-%d %H:%M}",
            )
            for a in found
        ],
        wide={"storyteller", "tool", "arguments", "trigger"},
    )


async def _decide(ctx: typer.Context, approval_id: int, *, approve: bool, note: str) -> Approval:
    async with open_store(ctx) as store:
        decided: Approval = await store.approvals.decide(
            approval_id, approve=approve, now=store.clock.now(), by=acting_user(ctx), note=note
        )
    return decided


@app.command("approve")
@run_async
async def approve(ctx: typer.Context, approval_id: ApprovalId, note: Note = "") -> None:
    """Let the daemon run a parked call (once, within seconds of this)."""
    approval = await _decide(ctx, approval_id, approve=True, note=note)
    console.print(
        f"approved #{approval.id} ({approval.tool}): the daemon runs it within seconds; "
        "`storyteller policy approvals --all` shows the outcome"
    )


@app.command("reject")
@run_async
async def reject(ctx: typer.Context, approval_id: ApprovalId, note: Note = "") -> None:
    """Drop a parked call: it never runs."""
    approval = await _decide(ctx, approval_id, approve=False, note=note)
    console.print(f"rejected #{approval.id} ({approval.tool}): it will not run")


@app.command("report")
@run_async
async def report(
    ctx: typer.Context,
    since: Annotated[
        str | None,
        typer.Option(help="Only turns from this time: 2026-03-01, 2026-03-01T12:00 (UTC) or 3d."),
    ] = None,
    limit: Annotated[int, typer.Option(help="Read at most this many turns, newest.", min=1)] = 5000,
    as_json: JsonFlag = False,
) -> None:
    """Refused calls by rule, tool, storyteller and triggering character."""
    from storyteller_daemon.cli.views.runs import time_window
    from storyteller_daemon.runs.refusals import refusal_report

    async with open_store(ctx) as store:
        start, _ = time_window(since, None, store.clock.now())
        runs = await store.runs.records_since(
            None, start, kind="turn", limit=limit, min_tool_calls=1
        )
    found = refusal_report(runs, start)
    if as_json:
        print_json(found.to_json())
        return
    window = f"since {start:%Y-%m-%d %H:%M} UTC" if start is not None else "in every kept turn"
    say(f"{found.refused} refused and {found.parked} parked calls in {found.turns} turns {window}")
    data = found.to_json()
    for title, key in (
        ("By rule", "by_rule"),
        ("By tool", "by_tool"),
        ("By storyteller", "by_storyteller"),
    ):
        table(title, ["", "refused"], list(data[key].items()), wide={""})
    table(
        "By triggering character",
        ["character", "refused", "rules"],
        [
            (name, entry["refused"], ", ".join(f"{r} {n}" for r, n in entry["rules"].items()))
            for name, entry in data["by_character"].items()
        ],
        wide={"character", "rules"},
    )
