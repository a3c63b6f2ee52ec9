"""The benchmarks run end to end on small sizes and report consistent numbers."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from typer.testing import CliRunner

from storyteller_daemon.cli import app
from storyteller_daemon.clock import SystemClock
from storyteller_daemon.storage.store import Store


def test_pipeline_benchmark_reports_every_turn() -> None:
    result = CliRunner().invoke(app, ["bench", "pipeline", "--events", "20", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["events"] == 20
    assert data["verdicts"] == {"interested": 10, "ignore": 10}
    assert 1 <= data["turns"] <= 10  # interested events judged together share a turn
    assert data["events per turn"] * data["turns"] == 10
    assert data["attention requests"] < 20  # batches, not one request per event
    # One request when the turn's first response acts and ends with Noop, two otherwise.
    assert 1.0 <= data["model requests per turn"] <= 2.0
    assert data["dropped"]["attention"] == 10


def test_dashboard_benchmark_times_every_page_over_the_run_records() -> None:
    result = CliRunner().invoke(
        app, ["bench", "dashboard", "--runs", "300", "--requests", "2", "--json"]
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["run records"] == 300 and report["requests per page"] == 2
    pages = [k for k in report if k.endswith("p50/p95 ms")]
    assert len(pages) == 11
    for key in pages:
        p50, p95 = (float(v) for v in report[key].split(" / "))
        assert 0 < p50 <= p95, key
    assert report["slowest page p95 ms (target 200)"] == max(
        float(report[k].split(" / ")[1]) for k in pages
    )


def _search_report(*options: str) -> dict[str, Any]:
    result = CliRunner().invoke(
        app, ["bench", "search", "--documents", "60", "--queries", "8", *options, "--json"]
    )
    assert result.exit_code == 0, result.output
    report: dict[str, Any] = json.loads(result.stdout)
    assert report["documents"] == 60 and report["queries"] == 8
    assert report["mean hits per query"] > 0
    assert report["p50 ms"] <= report["p95 ms"] <= report["max ms"]
    assert report["linear p95 ms"] > 0 and report["speed-up vs linear"] >= 0
    assert report["linear matches missed"] == 0
    assert report["indexing documents per second"] > 0
    return report


def test_search_benchmark_finds_what_a_linear_scan_finds() -> None:
    assert _search_report()["database"] == "sqlite"


@pytest.mark.postgres
def test_search_benchmark_runs_on_a_given_database_and_cleans_up(pg_url: str) -> None:
    assert _search_report("--database-url", pg_url)["database"] == "postgresql"

    async def count() -> int:
        store = Store.open(pg_url, clock=SystemClock())
        try:
            return len(await store.references.list())
        finally:
            await store.close()

    assert asyncio.run(count()) == 0


def test_help_imports_no_heavy_library() -> None:
    # `storyteller --help` answers quickly because each command imports its own libraries.
    result = CliRunner().invoke(app, ["bench", "cli", "--runs", "1", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["heavy libraries imported"] == "none", report


async def test_a_long_benchmark_shows_progress_on_a_terminal_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import io

    from rich.console import Console

    from storyteller_daemon.cli import bench
    from storyteller_daemon.cli import support as common

    heard: list[tuple[int, int]] = []

    async def run(options: object, progress: object = None) -> dict[str, object]:
        heard.append((0, 0) if progress is None else (1, 1))
        if callable(progress):
            progress(50, 100)
        return {"done": True}

    terminal = Console(file=io.StringIO(), force_terminal=True)
    monkeypatch.setattr(common, "err_console", terminal)
    assert await bench._with_progress(run, None, quiet=False) == {"done": True}
    assert await bench._with_progress(run, None, quiet=True) == {"done": True}  # --json
    monkeypatch.setattr(common, "err_console", Console(file=io.StringIO()))  # a pipe
    await bench._with_progress(run, None, quiet=False)
    assert heard == [(1, 1), (0, 0), (0, 0)]


def test_arguments_benchmark_runs_the_case_set_without_a_crash_or_a_bad_id() -> None:
    result = CliRunner().invoke(app, ["bench", "arguments", "--json"])
    assert result.exit_code == 0, result.output[:2000]
    report = json.loads(result.stdout)
    assert report["cases"] >= 80
    assert report["crashes"] == 0
    assert report["invalid ids sent to the game"] == 0
    assert report["not as the case set expects"] == []
    assert report["tool errors"] + report["valid results"] == report["cases"]


def test_ready_benchmark_starts_the_daemon_over_the_filled_database() -> None:
    result = CliRunner().invoke(
        app, ["bench", "ready", "--storytellers", "3", "--memories", "50", "--runs", "1", "--json"]
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["storytellers"] == 3 and report["memories"] == 50
    assert report["runs"] == 1
    assert {"start to READY=1 p50 (s)", "start to READY=1 max (s)"} <= set(report)
    assert report["CPU to READY=1 p50 (s)"] > 0
    assert report["peak RSS at ready, max (MB)"] > 10


async def test_the_filled_database_holds_what_was_asked(tmp_path: Any) -> None:
    from storyteller_daemon.bench.ready import fill

    url = await fill(tmp_path / "ready.db", storytellers=4, memories=10)
    store = Store.open(url, clock=SystemClock())
    try:
        listed = await store.storytellers.list()
        assert [st.paused for st in listed] == [False] * 4
        assert all(st.surveillance.included for st in listed)
        counts = [len(await store.memories.list(st.id)) for st in listed]  # type: ignore[arg-type]
        assert counts == [3, 3, 2, 2]
    finally:
        await store.close()
