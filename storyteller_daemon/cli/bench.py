"""``storyteller bench``: measure intake, turn throughput and search on this machine.

The benchmarks use the real pipeline, storage and sim world with the offline stand-in model (no
network), on a throw-away SQLite file, so their numbers say what the daemon itself costs.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Annotated

import typer

from storyteller_daemon.cli.support import JsonFlag, console, print_json, run_async

app = typer.Typer(
    help="Benchmarks: pipeline throughput, reference search, the dashboard's pages, bad "
    "tool-call arguments and the daemon's start-up.",
    no_args_is_help=True,
)


def _report(title: str, rows: dict[str, object], as_json: bool) -> None:
    if as_json:
        print_json(rows)
        return
    console.print(f"[bold]{title}[/]")
    for key, value in rows.items():
        console.print(f"  {key:<34} {value}")


@app.command("pipeline")
@run_async
async def pipeline(
    events: Annotated[int, typer.Option(help="World events to push through.", min=1)] = 500,
    as_json: JsonFlag = False,
) -> None:
    """Push a burst of world events through intake, attention and turns; time every stage."""
    from storyteller_daemon.bench.pipeline import run_pipeline_bench

    report = await run_pipeline_bench(events)
    _report("pipeline benchmark (offline stand-in model, SQLite, sim world)", report, as_json)


@app.command("ready")
@run_async
async def ready(
    storytellers: Annotated[
        int, typer.Option(help="Running storytellers in the database.", min=1)
    ] = 1000,
    memories: Annotated[int, typer.Option(help="Character memories in it.", min=0)] = 1_000_000,
    runs: Annotated[int, typer.Option(help="Times to start the daemon.", min=1)] = 3,
    as_json: JsonFlag = False,
) -> None:
    """Time `storyteller run` from its start to READY=1 (as systemd sees it) over a large
    SQLite database, and its peak memory then."""
    from storyteller_daemon.bench.ready import run_ready_bench

    with console.status("filling a throw-away database, then starting the daemon"):
        report = await run_ready_bench(storytellers=storytellers, memories=memories, runs=runs)
    _report("daemon start-up benchmark (storyteller run, SQLite, sim world)", report, as_json)


@app.command("cli")
def cli(
    runs: Annotated[int, typer.Option(help="Times to run `storyteller --help`.", min=1)] = 10,
    as_json: JsonFlag = False,
) -> None:
    """Time `storyteller --help` in fresh processes (what an admin waits for at a prompt)."""
    from storyteller_daemon.bench.startup import run_cli_bench

    _report(
        "CLI start-up benchmark (storyteller --help, fresh process each time)",
        run_cli_bench(runs),
        as_json,
    )


@app.command("search")
@run_async
async def search(
    documents: Annotated[int, typer.Option(help="Reference documents to index.", min=1)] = 2000,
    queries: Annotated[int, typer.Option(help="Searches to time.", min=1)] = 200,
    database_url: Annotated[
        str | None,
        typer.Option(
            help="Run against this database (its benchmark documents are removed afterwards); "
            "default: a throw-away SQLite file."
        ),
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Index synthetic reference documents and time searches against a plain linear scan."""
    from storyteller_daemon.bench.search import run_search_bench

    report = await run_search_bench(documents, queries, database_url)
    _report(
        "reference search benchmark (word index + trigram substring candidates)",
        report,
        as_json,
    )


@app.command("dashboard")
@run_async
async def dashboard(
    runs: Annotated[int, typer.Option(help="Run records to fill the database with.", min=1)] = (
        100_000
    ),
    requests: Annotated[int, typer.Option(help="Times to fetch each page.", min=1)] = 20,
    as_json: JsonFlag = False,
) -> None:
    """Time every dashboard page over a throw-away SQLite file holding many run records."""
    from storyteller_daemon.bench.dashboard import run_dashboard_bench

    report = await run_dashboard_bench(runs, requests)
    _report("dashboard benchmark (SQLite, whole requests over loopback)", report, as_json)


@app.command("arguments")
@run_async
async def arguments(
    cases: Annotated[
        Path | None,
        typer.Option(help="The case set (default: tests/data/bad_arguments.json of a checkout)."),
    ] = None,
    show: Annotated[
        bool, typer.Option("--show", help="Also print every case's outcome, one line each.")
    ] = False,
    as_json: JsonFlag = False,
) -> None:
    """Run the bad tool-call arguments case set through whole turns on the sim world."""
    from storyteller_daemon.bench.arguments import CASES, run_arguments_bench

    path = cases or CASES
    if not path.is_file():
        console.print(f"[red]No case set at {path}; give one with --cases.[/]")
        raise typer.Exit(2)
    # The policy refuses many of the cases, each with a warning; the report counts them.
    policy_log = logging.getLogger("storyteller_daemon.agent.policy")
    level = policy_log.level
    policy_log.setLevel(logging.ERROR)
    try:
        report, outcomes = await run_arguments_bench(path)
    finally:
        policy_log.setLevel(level)
    if show and not as_json:
        for o in outcomes:
            said = o.crash or (o.envelope or {}).get("error") or "ok"
            console.print(f"  {o.case.id:<36} {o.case.kind:<16} {str(said)[:90]}", markup=False)
    _report("bad-arguments benchmark (whole heartbeat turns, sim world)", report, as_json)
    if report["crashes"] or report["invalid ids sent to the game"]:
        raise typer.Exit(1)


async def _with_progress(
    run: Callable[..., Awaitable[dict[str, object]]], options: object, *, quiet: bool
) -> dict[str, object]:
    """Run a benchmark with a progress bar on a terminal (none for --json or a pipe)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    from storyteller_daemon.cli.support import err_console

    if quiet or not err_console.is_terminal:
        return await run(options)
    columns = ("{task.description}", BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=err_console, transient=True) as bar:
        task = bar.add_task("playing the stream (then the backlog settles)", total=None)

        def advance(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        return await run(options, advance)


@app.command("stream")
@run_async
async def stream(
    path: Annotated[
        Path | None,
        typer.Option("--stream", help="A labelled JSON-lines stream; default: one from the sim."),
    ] = None,
    hours: Annotated[float, typer.Option(help="Length of a generated stream.", min=0.01)] = 1.0,
    seed: Annotated[int, typer.Option(help="Seed of a generated stream.")] = 1,
    events_per_hour: Annotated[
        int, typer.Option(help="Density of a generated stream.", min=1)
    ] = 5000,
    attention_latency: Annotated[
        float, typer.Option(help="Seconds the stand-in model takes per attention call.", min=0)
    ] = 1.5,
    round_latency: Annotated[
        float, typer.Option(help="Seconds the stand-in model takes per tool-loop round.", min=0)
    ] = 4.0,
    speedup: Annotated[
        float, typer.Option(help="How much faster than real time the stream plays.", min=1)
    ] = 60.0,
    storytellers: Annotated[
        int, typer.Option(help="Copies of the harbour watch listening at once.", min=1)
    ] = 1,
    split_rooms: Annotated[
        bool,
        typer.Option("--split-rooms", help="Each storyteller watches one room (round robin)."),
    ] = False,
    one_call_per_event: Annotated[
        bool,
        typer.Option("--one-call-per-event", help="Run the reference design for comparison."),
    ] = False,
    price_model: Annotated[
        str, typer.Option(help="Price every request at this model's prices (equal models).")
    ] = "gpt-5",
    fail_share: Annotated[
        float,
        typer.Option(
            help="Share of model requests the stand-in fails (429/500/503).", min=0, max=0.9
        ),
    ] = 0.0,
    crash_every: Annotated[
        float,
        typer.Option(help="Kill and restart the daemon every this many stream seconds.", min=0),
    ] = 0.0,
    cut_every: Annotated[
        float,
        typer.Option(help="Cut the bridge connection every this many stream seconds.", min=0),
    ] = 0.0,
    stop_every: Annotated[
        float,
        typer.Option(
            help="Stop the daemon as SIGTERM does and start it again every this many stream "
            "seconds.",
            min=0,
        ),
    ] = 0.0,
    acting_turns: Annotated[
        bool,
        typer.Option("--acting-turns", help="Each turn runs one prog (repeats are counted)."),
    ] = False,
    reasoning_tokens: Annotated[
        int,
        typer.Option(help="Hidden reasoning tokens billed on every model request.", min=0),
    ] = 0,
    contract_faults: Annotated[
        float,
        typer.Option(
            metavar="SHARE",
            help="Share of attention replies in which the stand-in breaks the verdict contract "
            "(wrong ids, junk fields, truncated JSON).",
            min=0,
            max=1,
        ),
    ] = 0.0,
    short_prompts: Annotated[
        bool,
        typer.Option(
            "--short-prompts",
            help="Cut the storyteller's system prompt to its remit, so its attention "
            "instructions stay under the 1,024-token cache floor.",
        ),
    ] = False,
    cache_floor: Annotated[
        int | None,
        typer.Option(
            help="Override [attention] cache_floor_tokens (0: no contract examples).", min=0
        ),
    ] = None,
    verdict_memory_hours: Annotated[
        float | None,
        typer.Option(help="Override [attention] verdict_memory_hours (0: off).", min=0),
    ] = None,
    quiet: Annotated[
        float | None, typer.Option(help="Override [attention] quiet_seconds.", min=0)
    ] = None,
    max_wait: Annotated[
        float | None, typer.Option(help="Override [attention] max_wait_seconds.", min=0)
    ] = None,
    calm_wait_factor: Annotated[
        float | None,
        typer.Option(help="Override [attention] calm_wait_factor (1: no pacing).", min=1),
    ] = None,
    calm_requests_per_hour: Annotated[
        float | None,
        typer.Option(
            help="Override [attention] calm_requests_per_hour (0: calm events always wait).",
            min=0,
        ),
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Replay a labelled world stream through the daemon, the bridge and a stand-in model."""
    from storyteller_daemon.bench.stand_ins import LogLineCounter
    from storyteller_daemon.bench.stream import run_stream_bench
    from storyteller_daemon.bench.stream_report import StreamBenchOptions
    from storyteller_daemon.errors import ValidationError
    from world_adapter.sim.stream_files import read_stream

    if path is not None:
        try:
            read_stream(path)  # a bad file is one line naming it, before anything starts
        except (OSError, ValueError) as exc:
            raise ValidationError(str(exc)) from None
    options = StreamBenchOptions(
        stream=path,
        hours=hours,
        seed=seed,
        events_per_hour=events_per_hour,
        attention_latency=attention_latency,
        round_latency=round_latency,
        speedup=speedup,
        one_call_per_event=one_call_per_event,
        storytellers=storytellers,
        split_rooms=split_rooms,
        price_model=price_model,
        fail_share=fail_share,
        crash_every=crash_every,
        cut_every=cut_every,
        stop_every=stop_every,
        acting_turns=acting_turns,
        reasoning_tokens=reasoning_tokens,
        quiet_seconds=quiet,
        max_wait_seconds=max_wait,
        calm_wait_factor=calm_wait_factor,
        calm_requests_per_hour=calm_requests_per_hour,
        contract_faults=contract_faults,
        short_prompts=short_prompts,
        cache_floor=cache_floor,
        verdict_memory_hours=verdict_memory_hours,
    )
    with LogLineCounter() as log_lines:
        report = await _with_progress(run_stream_bench, options, quiet=as_json)
    stream_hours = report["stream hours"]
    assert isinstance(stream_hours, float | int)
    report["log lines at INFO and above, per stream hour"] = round(log_lines.lines / stream_hours)
    title = "stream benchmark (daemon over the bridge, stand-in model answering from labels)"
    _report(title, report, as_json)


@app.command("cluster")
@run_async
async def cluster(
    database_url: Annotated[
        str | None,
        typer.Option(
            help="An empty PostgreSQL database to run on; default: a throw-away embedded server."
        ),
    ] = None,
    daemons: Annotated[int, typer.Option(help="`storyteller run` processes.", min=1)] = 3,
    storytellers: Annotated[
        int, typer.Option(help="Storytellers, each watching one room.", min=1)
    ] = 150,
    hours: Annotated[float, typer.Option(help="Length of the busy stream.", min=0.01)] = 0.5,
    speedup: Annotated[
        float, typer.Option(help="How much faster than its own times it plays.", min=1)
    ] = 12.0,
    lease_seconds: Annotated[
        float, typer.Option(help="Each daemon's cluster.lease_seconds.", min=1)
    ] = 10.0,
    renew_seconds: Annotated[
        float, typer.Option(help="Each daemon's cluster.renew_seconds.", min=0.1)
    ] = 2.0,
    drain_seconds: Annotated[
        float, typer.Option(help="Each daemon's daemon.drain_seconds.", min=0)
    ] = 8.0,
    burst: Annotated[
        int, typer.Option(help="Events of the throughput bursts (half each).", min=2)
    ] = 600,
    logs: Annotated[
        Path | None, typer.Option(help="Copy the daemons' logs into this directory.")
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Run several daemons on one PostgreSQL under the busy stream; kill -9, SIGTERM and
    SIGSTOP them; report the spread, hand-over times, losses, repeats and throughput."""
    from storyteller_daemon.bench.cluster import run_cluster_bench
    from storyteller_daemon.bench.cluster_rig import ClusterBenchOptions
    from storyteller_daemon.cli.support import err_console

    if lease_seconds <= renew_seconds:
        console.print("[red]--lease-seconds must be longer than --renew-seconds.[/]")
        raise typer.Exit(2)
    options = ClusterBenchOptions(
        database_url=database_url,
        daemons=daemons,
        storytellers=storytellers,
        hours=hours,
        speedup=speedup,
        lease_seconds=lease_seconds,
        renew_seconds=renew_seconds,
        drain_seconds=drain_seconds,
        burst=burst,
        logs=logs,
    )

    def say(phase: str) -> None:
        if not as_json:
            err_console.print(f"[dim]{phase}…[/]")

    report = await run_cluster_bench(options, say)
    _report("cluster benchmark (real daemons on one PostgreSQL, busy stream)", report, as_json)
