"""The CLI start-up benchmark: ``storyteller --help`` in fresh processes, against a bare
``python -c pass`` timed in the same run, so the ratio says what the CLI adds on this machine.

The runs share a cache of their own: the first prints the help through typer (cold) and keeps
it (`cli.help_cache`), the others print it back (warm), as an admin's second look does."""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time

HEAVY_MODULES = ("sqlalchemy", "alembic", "aiohttp", "openai", "lxml", "pydantic")
"""Libraries `storyteller --help` must not import: each command imports what it needs."""

HELP_PROBE = (
    "import sys\n"
    "from storyteller_daemon.cli import main\n"
    "sys.argv = ['storyteller', '--help']\n"
    "try:\n    main()\nexcept SystemExit:\n    pass\n"
    f"print('HEAVY:' + ','.join(m for m in {HEAVY_MODULES!r} if m in sys.modules),"
    " file=sys.stderr)\n"
)


def _timed(script: str, env: dict[str, str] | None = None) -> tuple[float, str]:
    """Seconds this interpreter takes to run `script` in a fresh process, and its stderr."""
    started = time.perf_counter()
    done = subprocess.run(  # noqa: S603 - this interpreter, a fixed script
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, env=env
    )
    return time.perf_counter() - started, done.stderr


def run_cli_bench(runs: int) -> dict[str, object]:
    """Time `runs` fresh ``storyteller --help`` and as many bare interpreters, interleaved so
    both meet the same machine load; the report's rows."""
    timings: list[float] = []
    bare: list[float] = []
    heavy = ""
    with tempfile.TemporaryDirectory(prefix="storyteller-bench-cache-") as cache:
        env = dict(os.environ, XDG_CACHE_HOME=cache)
        for _ in range(runs + 1):  # the first, cold, is reported apart
            bare.append(_timed("pass")[0])
            seconds, stderr = _timed(HELP_PROBE, env)
            timings.append(seconds)
            if len(timings) == 1:  # the cold run is the one that imports the CLI
                tagged = [line for line in stderr.splitlines() if line.startswith("HEAVY:")]
                heavy = tagged[-1].removeprefix("HEAVY:") if tagged else "?"
    cold, warm = timings[0], timings[1:]
    p50 = statistics.median(warm)
    bare_p50 = statistics.median(bare)
    return {
        "runs": runs,
        "p50 s": round(p50, 3),
        "max s": round(max(warm), 3),
        "first run, printed through typer (s)": round(cold, 3),
        "bare python p50 s": round(bare_p50, 3),
        "times a bare python": round(p50 / bare_p50, 1),
        "first run, times a bare python": round(cold / bare_p50, 1),
        "heavy libraries imported": heavy or "none",
    }
