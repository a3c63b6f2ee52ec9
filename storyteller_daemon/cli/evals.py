"""``storyteller eval``: run a pack's scenarios through the whole daemon and report pass rates.

Each scenario (``scenarios/*.toml`` of the pack, docs/evals.md) runs through the real pipeline
on a throw-away database and virtual time, N times with ``--repeat``; the report gives per
expectation how often it held, with tokens, USD and latency, and shows each failing run's
transcript (what ``storyteller runs show`` prints for it). The exit status is 0 when every
expectation held in at least ``--threshold`` of the runs, 1 otherwise.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape
from rich.table import Table

from storyteller_daemon.cli.support import (
    JsonFlag,
    console,
    err_console,
    fail,
    open_store,
    print_json,
    run_async,
    say,
    state,
)

if TYPE_CHECKING:
    from storyteller_daemon.app.evals import EvalReport
    from storyteller_daemon.config import Config


@run_async
async def evaluate(
    ctx: typer.Context,
    pack: Annotated[
        str, typer.Argument(help="A pack (name under seed/ or a directory) or a storyteller.")
    ],
    scenario: Annotated[
        str | None,
        typer.Option("--scenario", "-s", help="Only scenarios whose name or file matches."),
    ] = None,
    model: Annotated[
        str,
        typer.Option(
            "--model",
            "-m",
            help="stand-in (offline, rule-based), configured (the config's endpoint) or "
            "ENDPOINT/MODEL (default/gpt-5-mini).",
        ),
    ] = "stand-in",
    repeat: Annotated[int, typer.Option("--repeat", "-n", help="Runs per scenario.", min=1)] = 1,
    threshold: Annotated[
        float,
        typer.Option(help="Share of runs each expectation must hold in (0-1).", min=0, max=1),
    ] = 0.8,
    junit: Annotated[
        Path | None, typer.Option("--junit", help="Also write the report as JUnit XML here.")
    ] = None,
    keep: Annotated[
        bool,
        typer.Option(
            "--keep/--no-keep",
            help="Keep the results in the configured database (the dashboard's Evals page).",
        ),
    ] = True,
    json_out: JsonFlag = False,
) -> None:
    """Run a pack's scenarios through the whole daemon against a model and report how often
    each expectation held (exit 1 below the threshold)."""
    from storyteller_daemon.app.evals import evaluate, find_pack_of, find_scenarios, junit_xml
    from storyteller_daemon.app.evals.models import eval_model
    from storyteller_daemon.clock import SystemClock

    found, storyteller = find_pack_of(pack)
    chosen = find_scenarios(found, storyteller=storyteller, pattern=scenario)
    if not chosen:
        which = f" matching '{scenario}'" if scenario else ""
        raise fail(f"pack {found.name} has no scenarios{which} (scenarios/*.toml)")
    cfg, configured = _config(ctx, model)
    chosen_model = eval_model(model, cfg)
    # The daemons under test are throw-away: their start-up notes (the stand-in's banner, a
    # model without a price) would bury the report; errors still show.
    logging.getLogger("storyteller_daemon").setLevel(logging.ERROR)
    if not json_out:
        say(f"{len(chosen)} scenarios of {found.name} against {chosen_model.description}")
    with _progress(len(chosen) * repeat) as tell:
        report = await evaluate(
            found,
            chosen,
            base=cfg,
            model=chosen_model,
            real=SystemClock(),
            repeat=repeat,
            threshold=threshold,
            progress=tell,
        )
    if junit is not None:
        junit.write_text(junit_xml(report), encoding="utf-8")
    if configured and keep:
        await _keep(ctx, report)
    if json_out:
        print_json(report.to_json())
    else:
        _show(report)
    if not report.passed:
        raise typer.Exit(1)


def _config(ctx: typer.Context, model: str) -> tuple[Config, bool]:
    """The configuration, and whether there is one: the stand-in needs none (then the
    defaults, and nothing is kept)."""
    from storyteller_daemon.config import parse_config
    from storyteller_daemon.errors import ConfigError

    try:
        return state(ctx).config(), True
    except ConfigError:
        if model != "stand-in":
            raise
        return parse_config({}, "defaults"), False


async def _keep(ctx: typer.Context, report: EvalReport) -> None:
    """Keep the results in the configured database; a database that cannot take them is
    reported on stderr, and the evaluation's outcome stands."""
    from storyteller_daemon.app.evals.report import kept_results
    from storyteller_daemon.errors import StorageError

    try:
        async with open_store(ctx) as store:
            await store.eval_results.add(kept_results(report, store.clock.now()))
    except StorageError as exc:
        err_console.print(f"the results were not kept: {escape(str(exc))}")


class _progress:
    """A rich progress bar on stderr (nothing off a terminal); calls advance it."""

    def __init__(self, total: int) -> None:
        from rich.progress import Progress

        self._bar = (
            Progress(console=err_console, transient=True) if err_console.is_terminal else None
        )
        self._total = total
        self._task: object = None

    def __enter__(self) -> _progress:
        if self._bar is not None:
            self._bar.start()
            self._task = self._bar.add_task("running scenarios", total=self._total)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.stop()

    def __call__(self, name: str, number: int, runs: int) -> None:
        if self._bar is not None:
            self._bar.update(self._task, advance=1, description=f"{name} ({number}/{runs})")  # type: ignore[arg-type]


def _show(report: EvalReport) -> None:
    from storyteller_daemon.cli.views.runs import show_run, usd

    table = Table(title=f"storyteller eval {report.pack}: {report.model}")
    for column in ("Scenario", "Expectation", "Pass rate", "Tokens", "USD", "Latency"):
        table.add_column(column, justify="right" if column in ("Tokens", "USD") else "left")
    for scenario in report.scenarios:
        if scenario.skipped is not None:
            table.add_row(escape(scenario.name), f"skipped: {scenario.skipped}", "", "", "", "")
            continue
        for index, rate in enumerate(scenario.rates):
            mark = "[green]" if rate.rate >= report.threshold else "[bold red]"
            first = index == 0
            table.add_row(
                escape(scenario.name) if first else "",
                escape(rate.label),
                f"{mark}{rate.passed}/{rate.runs}[/]",
                f"{scenario.tokens:.0f}" if first else "",
                usd(scenario.usd) if first else "",
                f"{scenario.seconds:.1f} s" if first else "",
            )
        table.add_section()
    console.print(table)
    for scenario in report.scenarios:
        for failure in scenario.failures[:1]:  # the first failing run tells the story
            say("")
            say(f"FAILED {scenario.name} (run {failure.run} of {scenario.runs}):")
            for result in failure.failed:
                say(f"  {result.label}: got {result.detail}")
            for transcript in failure.transcripts:
                say("")
                show_run(transcript.summary, transcript.record, list(transcript.related))
    passed, failed, skipped = report.counts()
    verdict = "passed" if report.passed else "FAILED"
    say(
        f"\n{verdict}: {passed} scenarios passed, {failed} failed, {skipped} skipped "
        f"(threshold {report.threshold:.0%} of {report.repeat} runs)"
    )
