"""The daemon start-up benchmark: how long ``storyteller run`` takes to be ready over a large
database, measured as systemd measures it.

A throw-away SQLite file is filled with many storytellers (each watching a room of the sim town)
and many character memories; then ``storyteller run`` starts in fresh processes, each with
``$NOTIFY_SOCKET`` pointing at a socket of the benchmark's, and the time from starting the
process to its ``READY=1`` is what an admin (and systemd) waits for. Each process's peak
resident memory is read at that point, then it is stopped with SIGTERM as systemd stops it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from storyteller_daemon.clock import SystemClock
from storyteller_daemon.storage.store import Store

READY_TIMEOUT_SECONDS = 120.0
"""A daemon not ready within this is reported as failed (not waited for)."""

ROOMS = (101, 102, 103, 104, 105, 106, 107, 108)
"""Sim town rooms the storytellers watch, one each in turn."""

_MEMORIES = (
    "WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < :count - 1) "
    "INSERT INTO character_memories "
    "(storyteller_id, character_id, title, text, created_on, importance, from_player, "
    "source_run, source_events) "
    "SELECT :first + (i % :storytellers), 1000 + (i % 5000), 'memory ' || i, "
    "'what was seen of this character, note ' || i, :created, 1 + (i % 9), 0, '', '' FROM n"
)


async def fill(path: Path, *, storytellers: int, memories: int) -> str:
    """A migrated SQLite file holding `storytellers` running storytellers and `memories`
    memories spread over them; its URL."""
    url = f"sqlite+aiosqlite:///{path}"
    store = Store.open(url, clock=SystemClock())
    try:
        await store.db.upgrade()
        first: int | None = None
        for number in range(1, storytellers + 1):
            st = await store.storytellers.create(f"Watch {number}")
            room = ROOMS[(number - 1) % len(ROOMS)]
            st = replace(st, paused=False, surveillance=st.surveillance.toggled("include", room))
            await store.storytellers.save(st)
            first = st.id if first is None else first
    finally:
        await store.close()
    if memories and first is not None:  # one statement inside SQLite, not a million inserts
        with contextlib.closing(sqlite3.connect(path)) as db, db:
            db.execute(
                _MEMORIES,
                {
                    "count": memories,
                    "first": first,
                    "storytellers": storytellers,
                    "created": "2026-01-01 00:00:00.000000",
                },
            )
    return url


def _config(directory: Path, url: str) -> Path:
    path = directory / "storyteller.toml"
    path.write_text(
        f'[database]\nurl = "{url}"\n\n'
        "[model]\noffline_when_no_key = true\n\n"
        '[world]\nkind = "sim"\n\n'
        '[logging]\nlevel = "WARNING"\n',
        encoding="utf-8",
    )
    return path


def _peak_rss_mb(pid: int) -> float:
    """The process's peak resident memory (VmHWM), in MB."""
    for line in Path(f"/proc/{pid}/status").read_text(encoding="utf-8").splitlines():
        if line.startswith("VmHWM:"):
            return round(int(line.split()[1]) / 1024, 1)
    return 0.0


def _cpu_seconds(pid: int) -> float:
    """The CPU time the process has used so far (user and system, all its threads)."""
    fields = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8").rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def start_once(config: Path, directory: Path) -> tuple[float, float, float]:
    """Start ``storyteller run`` once; the seconds to READY=1, the CPU seconds it used until
    then (less dependent on what else the machine runs) and the peak RSS (MB) then."""
    address = str(directory / "notify.sock")
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as notify:
        notify.bind(address)
        notify.settimeout(READY_TIMEOUT_SECONDS)
        env = dict(os.environ, NOTIFY_SOCKET=address)
        env.pop("OPENAI_API_KEY", None)  # the offline stand-in: no network
        command = [sys.executable, "-m", "storyteller_daemon", "--config", str(config), "run"]
        started = time.perf_counter()
        daemon = subprocess.Popen(  # noqa: S603 - this interpreter, our own command
            command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        try:
            while True:
                try:
                    message = notify.recv(4096).decode("utf-8", "replace")
                except TimeoutError:
                    raise RuntimeError(
                        f"the daemon was not ready within {READY_TIMEOUT_SECONDS:g} s"
                    ) from None
                if "READY=1" in message.splitlines():
                    break
            took = time.perf_counter() - started
            cpu = _cpu_seconds(daemon.pid)
            rss = _peak_rss_mb(daemon.pid)
        finally:
            daemon.send_signal(signal.SIGTERM)
            _, stderr = daemon.communicate(timeout=60)
            os.unlink(address)
        if daemon.returncode != 0:
            last = stderr.decode("utf-8", "replace").strip().splitlines()[-1:]
            raise RuntimeError(f"the daemon exited with {daemon.returncode}: {' '.join(last)}")
    return took, cpu, rss


async def run_ready_bench(*, storytellers: int, memories: int, runs: int) -> dict[str, object]:
    """Fill a throw-away database, then start the daemon `runs` times; the report's rows."""
    with tempfile.TemporaryDirectory(prefix="storyteller-bench-ready-") as tmp:
        directory = Path(tmp)
        began = time.perf_counter()
        url = await fill(directory / "ready.db", storytellers=storytellers, memories=memories)
        filled = time.perf_counter() - began
        config = _config(directory, url)
        timings: list[float] = []
        cpu: list[float] = []
        peaks: list[float] = []
        for _ in range(runs):
            took, used, rss = start_once(config, directory)
            timings.append(took)
            cpu.append(used)
            peaks.append(rss)
        size = (directory / "ready.db").stat().st_size
    return {
        "storytellers": storytellers,
        "memories": memories,
        "database size (MB)": round(size / 1e6, 1),
        "filling it took (s)": round(filled, 1),
        "runs": runs,
        "start to READY=1 p50 (s)": round(statistics.median(timings), 3),
        "start to READY=1 max (s)": round(max(timings), 3),
        "CPU to READY=1 p50 (s)": round(statistics.median(cpu), 3),
        "CPU to READY=1 max (s)": round(max(cpu), 3),
        "peak RSS at ready, max (MB)": max(peaks),
    }
