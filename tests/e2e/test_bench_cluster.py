"""`bench cluster` in small: two real daemons on the suite's PostgreSQL, a short busy stream, a
kill -9, a SIGTERM and a SIGSTOP, then two throughput bursts. The report's invariants are
checked, not its timings."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from storyteller_daemon.bench.cluster import run_cluster_bench
from storyteller_daemon.bench.cluster_rig import ClusterBenchOptions
from storyteller_daemon.cli import app

pytestmark = pytest.mark.cluster_processes


@pytest.mark.postgres
async def test_a_small_cluster_loses_nothing_repeats_nothing_and_ends_held(pg_url: str) -> None:
    options = ClusterBenchOptions(
        database_url=pg_url,
        daemons=2,
        storytellers=6,
        hours=0.1,
        speedup=8.0,
        lease_seconds=3.0,
        renew_seconds=0.5,
        drain_seconds=1.0,
        attention_latency=0.05,
        round_latency=0.05,
        burst=40,
        settle_seconds=120.0,
    )
    phases: list[str] = []
    report = await run_cluster_bench(options, phases.append)

    held = report["storytellers held per daemon"]
    assert isinstance(held, dict) and sorted(held.values()) == [3, 3]
    assert report["kill -9: storytellers it held"] == 3
    # The events played into its rooms while it was dead reached the new owner: turns ran.
    assert report["kill -9: of them with a turn since"] == 3
    assert report["accepted events lost"] == 0, report.get("accepted events lost, first")
    narrations = report["narrations run"]
    assert isinstance(narrations, int) and narrations >= 3
    assert report["narrations run twice (prog calls repeated)"] == 0
    assert report["prog calls from a daemon without the lease"] == 0
    assert report["work writes from a daemon without the lease"] == 0
    assert report["SIGSTOP: prog calls it sent without the lease"] == 0
    assert report["SIGSTOP: its work writes accepted without the lease"] == 0
    assert report["storytellers not held by one live daemon"] == 0
    assert report["SIGTERM: exit code"] == 0
    received, answered, ledger = map(
        int, str(report["model requests received / answered / ledger rows"]).split(" / ")
    )
    assert received >= answered > 0 and ledger > 0
    assert [p.split()[0] for p in phases[1:4]] == ["kill", "SIGTERM", "SIGSTOP"]
    for label in ("all daemons", "one daemon"):  # what bounds the scaling: the machine's cores
        (busy,) = [v for k, v in report.items() if k.startswith(f"machine CPU busy, {label} ")]
        assert isinstance(busy, float) and 0 < busy <= 1


def test_bench_cluster_refuses_a_database_that_is_not_postgresql(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'x.db'}"
    result = CliRunner().invoke(app, ["bench", "cluster", "--database-url", url])
    assert result.exit_code != 0
    assert "--database-url must be a postgresql+asyncpg:// URL" in result.output
    assert not (tmp_path / "x.db").exists()


def test_bench_cluster_refuses_a_lease_no_longer_than_its_renewal() -> None:
    args = ["bench", "cluster", "--lease-seconds", "2", "--renew-seconds", "2"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2
    assert "--lease-seconds must be longer than --renew-seconds" in result.output
