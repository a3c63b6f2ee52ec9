"""How runs look on the terminal: list rows, JSON, the transcript of one run, a replay report.

Everything printed here may hold player text and prompts, so it is printed literally (never
read as rich markup) and only when an admin asks for one run.
"""

from __future__ import annotations

import collections
import json
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Annotated, Any

import typer

from storyteller_daemon.cli.support import format_time, say, table
from storyteller_daemon.domain.durations import parse_duration
from storyteller_daemon.errors import ValidationError

if TYPE_CHECKING:
    from storyteller_daemon.storage.runs import RunSummary

LIST_COLUMNS = (
    "Id",
    "Started",
    "Kind",
    "Storyteller",
    "Trigger",
    "Room",
    "Outcome",
    "Rounds",
    "Calls",
    "Tokens in/out",
    "Cost",
)


def parse_when(text: str, now: datetime) -> datetime:
    """``2026-03-01``, ``2026-03-01T12:00`` (UTC unless it says otherwise) or a time ago (``3d``).

    Raises:
        ValidationError: neither form.
    """
    raw = text.strip()
    try:
        moment = datetime.fromisoformat(raw)
    except ValueError:
        try:
            return now - parse_duration(raw)
        except ValidationError:
            raise ValidationError(
                f"'{text}' is not a time; use e.g. 2026-03-01, 2026-03-01T12:00 or 3d (ago)."
            ) from None
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def usd(value: float) -> str:
    """``$0.0123``."""
    return f"${value:.4f}"


def summary_json(run: RunSummary) -> dict[str, Any]:
    """A run without its record, with stable keys."""
    return run.to_json()


def list_runs(runs: list[RunSummary]) -> None:
    """The ``runs list`` table."""
    table(
        "Runs",
        LIST_COLUMNS,
        [
            (
                r.id,
                format_time(r.started_at),
                r.kind,
                f"{r.storyteller_name} (#{r.storyteller_id})",
                r.trigger_label,
                r.room_id,
                r.outcome,
                r.rounds,
                r.tool_calls,
                f"{r.input_tokens}/{r.output_tokens}",
                usd(r.cost_usd),
            )
            for r in runs
        ],
        wide={"Storyteller", "Trigger"},
    )


def _usage(usage: dict[str, int]) -> str:
    return (
        f"{usage['input_tokens']} in ({usage['cached_tokens']} cached) / "
        f"{usage['output_tokens']} out ({usage['reasoning_tokens']} reasoning) tokens"
    )


def _block(text: str) -> list[str]:
    return [f"  | {line}" for line in text.splitlines()] or ["  |"]


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _trigger_line(run: RunSummary) -> str:
    where = f" in room #{run.room_id}" if run.room_id is not None else ""
    return f"Trigger:   {run.trigger_label}{where} at {format_time(run.started_at)}"


RUN_NAMES = {"turn": "turn", "attention": "attention call", "digest": "digest refresh"}


def show_run(run: RunSummary, record: dict[str, Any], related: list[RunSummary]) -> None:
    """A readable transcript of one run."""
    what = RUN_NAMES.get(run.kind, run.kind)
    lines = [f"Run #{run.id}: {what} of {run.storyteller_name} (#{run.storyteller_id})"]
    lines.append(_trigger_line(run))
    lines.append(f"Turn key:  {run.turn_key}")
    if run.kind == "turn":
        lines += _turn_lines(run, record, related)
    elif run.kind == "digest":
        lines += _digest_lines(run, record)
    else:
        lines += _attention_lines(run, record, related)
    for line in lines:
        say(line)


def _header_usage(run: RunSummary) -> str:
    return (
        f"Usage:     {run.input_tokens} in ({run.cached_tokens} cached) / {run.output_tokens} "
        f"out ({run.reasoning_tokens} reasoning) tokens, {usd(run.cost_usd)}"
    )


def _turn_lines(run: RunSummary, record: dict[str, Any], related: list[RunSummary]) -> list[str]:
    trigger = record.get("trigger", {})
    judged = next((r for r in related if r.kind == "attention"), None)
    if trigger.get("attention_reason") is not None:
        source = f" (run #{judged.id})" if judged else ""
        lines = [f"Attention: interested: {trigger['attention_reason']}{source}"]
    else:
        lines = ["Attention: not asked (this trigger skips the gate)"]
    lines += [
        f"Outcome:   {run.outcome} after {run.rounds} round(s) and {run.tool_calls} tool "
        f"call(s), {run.duration_seconds:.2f} s",
        _header_usage(run),
    ]
    if run.situation_id is not None:
        lines.append(f"Situation: #{run.situation_id}")
    if run.error:
        lines.append(f"Error:     {run.error}")
    lines += _budget_lines(record.get("prompt_budget"))
    lines += ["", "Prompt:", *_block(record.get("prompt", ""))]
    turn = record.get("turn") or {"requests": [], "calls": []}
    charges = collections.deque(record.get("charges", []))
    for request in turn["requests"]:
        lines += ["", *_round_lines(request, charges, turn["calls"])]
    return lines


_HELD = {"share": "its share of the budget", "room": "no room left by higher priorities"}


def _budget_lines(budget: dict[str, Any] | None) -> list[str]:
    """What the prompt's token budget kept and left out, block by block (records written
    before prompts were budgeted have none)."""
    if not budget:
        return []
    over = " (over: the instructions and tools alone exceed it)" if budget["over_budget"] else ""
    lines = ["", f"Budget:    {budget['tokens']:,} of {budget['budget']:,} estimated tokens{over}"]
    for block in budget["blocks"]:
        kept = "cut to fit" if block["cut"] else f"{block['kept']} kept"
        if block["dropped"]:
            kept += f", {block['dropped']} left out"
        held = block["limit"]
        why = f" ({_HELD.get(held, held)})" if held else ""
        lines.append(f"  {block['name']:<20} {block['tokens']:>7,} tokens, {kept}{why}")
    return lines


def _round_lines(
    request: dict[str, Any], charges: collections.deque[dict[str, Any]], calls: list[dict[str, Any]]
) -> list[str]:
    body, response = request["request"], request.get("response")
    head = f"Round {request['round']}: {body.get('model')}, tool_choice {body.get('tool_choice')}"
    if response is None:
        # A failed request has a charge (its ledger status and what it may be billed) in
        # records written since failed requests are in the ledger.
        if charges and charges[0].get("status", "ok") != "ok":
            failed = charges.popleft()
            head += f", {failed['status']}, {usd(failed['cost_usd'])}"
        return [head, f"  failed: {request.get('error')}"]
    charge = charges.popleft() if charges else None
    cost = f", {usd(charge['cost_usd'])}" if charge else ""
    lines = [f"{head}, {_usage(request['usage'])}{cost}"]
    if response.get("output_text"):
        lines += ["  text (discarded):", *("  " + line for line in _block(response["output_text"]))]
    for call in (c for c in calls if c["round"] == request["round"]):
        flags = [
            k for k in ("skipped", "refused", "malformed", "shadowed", "parked") if call.get(k)
        ]
        marker = f" [{', '.join(flags)}]" if flags else ""
        lines.append(f"  -> {call['name']} {call['arguments']}{marker}")
        envelope = call["envelope"]
        if envelope.get("ok"):
            lines.append(f"     <- ok {_compact(envelope.get('result'))}")
        else:
            lines.append(f"     <- error: {envelope.get('error')}")
    return lines


def _attention_lines(
    run: RunSummary, record: dict[str, Any], related: list[RunSummary]
) -> list[str]:
    verdict = record.get("verdict")
    events = record.get("events") or []
    if len(events) > 1:  # a batch: one line per event
        lines = [f"Verdicts:  {len(events)} events, {run.outcome} overall"]
        for number, judged in enumerate(events, start=1):
            given = judged.get("verdict") or {}
            trigger = judged.get("trigger") or {}
            event = trigger.get("event") or {}
            where = f"room #{event['cell_id']}" if "cell_id" in event else "no room"
            reason = f": {given['reason']}" if given.get("reason") else ""
            violation = f" (violation: {given['violation']})" if given.get("violation") else ""
            decision = given.get("decision", "none")
            label = trigger.get("label", "?")
            lines.append(f"  e{number} {label} in {where}: {decision}{reason}{violation}")
    elif verdict is None:
        lines = [f"Verdict:   none ({run.outcome})"]
    else:
        lines = [f"Verdict:   {verdict['decision']}: {verdict['reason']}"]
        if verdict.get("violation"):
            lines.append(f"Violation: {verdict['violation']}")
    request = record.get("request") or {}
    lines += [f"Model:     {request.get('model', 'none')}", _header_usage(run)]
    if run.error:
        lines.append(f"Error:     {run.error}")
    turns = [r for r in related if r.kind == "turn"]
    if turns:
        lines.append(f"Turn:      run #{turns[0].id} ({turns[0].outcome})")
    lines += ["", "Judged:", *_block(record.get("input", ""))]
    requests = record.get("requests") or []
    if len(requests) > 1:  # the reply was re-asked about
        for number, exchange in enumerate(requests, start=1):
            answer = (exchange.get("response") or {}).get("output_text", "")
            failed = exchange.get("error")
            lines += ["", f"Answer {number}:", *_block(answer or f"(failed: {failed})")]
        return lines
    response = record.get("response")
    if response is not None:
        lines += ["", "Answer:", *_block(response.get("output_text", ""))]
    return lines


CHANGE_NAMES = {
    "resolved_situations": "resolved situation(s)",
    "open_situations": "open situation(s)",
    "turns": "turn(s) that acted",
    "memory_changes": "memory change(s)",
}


def describe_changes(changes: dict[str, int]) -> str:
    """A digest's changes as ``1 open situation(s) and 2 memory change(s)`` ("" for none)."""
    parts = [f"{n} {CHANGE_NAMES.get(kind, kind)}" for kind, n in changes.items() if n]
    return " and ".join([", ".join(parts[:-1]), parts[-1]]) if len(parts) > 1 else "".join(parts)


def _digest_lines(run: RunSummary, record: dict[str, Any]) -> list[str]:
    read = describe_changes(record.get("changes") or {}) or "none"
    request = record.get("request") or {}
    lines = [
        f"Outcome:   {run.outcome}",
        f"Changes:   {read}",
        f"Model:     {request.get('model', 'none')}",
        _header_usage(run),
    ]
    if run.error:
        lines.append(f"Error:     {run.error}")
    previous = record.get("previous")
    lines += ["", "Previous digest:", *_block(previous if previous is not None else "(none)")]
    lines += ["", "Input:", *_block(record.get("input", ""))]
    response = record.get("response")
    if response is not None:
        lines += ["", "Answer:", *_block(response.get("output_text", ""))]
    digest = record.get("digest")
    lines += ["", "Digest:", *_block(digest if digest is not None else "(not written)")]
    return lines


def show_replay(report: dict[str, Any], *, live: bool) -> None:
    """The differences of a replay, and for a live model its calls next to the recorded ones."""
    run_id = report["run_id"]
    against = f"the live model {report['model']}" if live else "the recorded answers"
    if report["identical"]:
        say(f"Replay of run #{run_id} against {against}: identical.")
    else:
        count = len(report["differences"])
        say(f"Replay of run #{run_id} against {against}: {count} difference(s).")
    if live:
        recorded, replayed = report["recorded"]["calls"], report["replayed"]["calls"]
        rows = [
            (
                index + 1,
                _call_text(recorded[index]) if index < len(recorded) else "",
                _call_text(replayed[index]) if index < len(replayed) else "",
            )
            for index in range(max(len(recorded), len(replayed)))
        ]
        table("Tool calls", ("#", "Recorded", "Replayed"), rows, wide={"Recorded", "Replayed"})
        before, after = report["recorded"]["outcome"], report["replayed"]["outcome"]
        say(f"Outcome: recorded {before}, replayed {after}; cost {usd(report['cost_usd'])}")
    if report["differences"]:
        table(
            "Differences",
            ("Where", "Recorded", "Replayed"),
            [(d["where"], d["recorded"], d["replayed"]) for d in report["differences"]],
            wide={"Where", "Recorded", "Replayed"},
        )


def _call_text(call: dict[str, Any]) -> str:
    envelope = call["envelope"]
    result = "ok" if envelope.get("ok") else f"error: {envelope.get('error')}"
    return f"{call['name']} {call['arguments']} -> {result}"


StorytellerOption = Annotated[
    str | None,
    typer.Option("--storyteller", "-s", help="Only this storyteller (id, or name in any case)."),
]
Since = Annotated[
    str | None,
    typer.Option(help="Only from this time: 2026-03-01, 2026-03-01T12:00 (UTC) or 3d (ago)."),
]
Until = Annotated[str | None, typer.Option(help="Only before this time (same forms).")]


def storyteller_filter(ref: str | None) -> tuple[int | None, str | None]:
    """``--storyteller`` as the (id, name) filter pair: digits are an id, anything else a name."""
    if ref is None or not ref.strip():
        return None, None
    text = ref.strip()
    return (int(text), None) if text.isdigit() else (None, text)


def time_window(
    since: str | None, until: str | None, now: datetime
) -> tuple[datetime | None, datetime | None]:
    """``--since`` and ``--until`` as UTC times, relative ones counted back from `now`."""
    start = parse_when(since, now) if since else None
    end = parse_when(until, now) if until else None
    if start is not None and end is not None and end <= start:
        raise ValidationError("--until must be later than --since.")
    return start, end
