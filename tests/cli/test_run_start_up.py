"""`storyteller run` loads only what its configuration uses: a daemon of the sim world with the
offline stand-in, no listener and no webhook reaches READY=1 and stops without importing the
heavy libraries it does not use (together they were most of its CPU time to ready)."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from storyteller_daemon.bench.ready import fill

NOT_USED = (
    "openai",  # the offline stand-in needs no SDK
    "aiohttp",  # no listener, no webhook, no bridged game
    "prometheus_client",  # no /metrics
    "jinja2",  # no dashboard
    "asyncpg",  # SQLite
    "lxml",
    "mcp",
)
"""Libraries this daemon has no use for, each costing tens of milliseconds or more to import."""

PROBE = f"""
import gc, json, sys
from storyteller_daemon.cli import main

starting = []
def collected(phase, info):  # a collection once the daemon's own imports began, before ready
    if phase == "start" and not gc.get_freeze_count() and "storyteller_daemon.app" in sys.modules:
        starting.append(info["generation"])
gc.callbacks.append(collected)
config = sys.argv[1]
sys.argv = ["storyteller", "--config", config, "run", "--seconds", "0"]
code = 0
try:
    main()
except SystemExit as done:
    code = done.code
print(json.dumps({{
    "code": code,
    "loaded": [m for m in {NOT_USED!r} if m in sys.modules],
    "collections while starting": len(starting),
    "frozen once ready": gc.get_freeze_count() > 0,
    "collecting": gc.isenabled(),
}}))
"""
"""Runs the daemon to READY=1 and at once stops it, then names what it had imported and how
the garbage collector ran."""


def _start_once(
    tmp_path: Path, sections: str = "", model: str = "", world: str = "", key: str | None = None
) -> tuple[str, dict[str, object]]:
    """Start the daemon as PROBE does over a small filled database; what it told systemd
    first, and its exit code and the unused libraries it had imported."""
    url = asyncio.run(fill(tmp_path / "ready.db", storytellers=4, memories=40))
    config = tmp_path / "storyteller.toml"
    config.write_text(
        f'[database]\nurl = "{url}"\n\n[model]\noffline_when_no_key = true\n{model}\n'
        f'[world]\nkind = "sim"\n{world}\n[logging]\nlevel = "WARNING"\n\n{sections}',
        encoding="utf-8",
    )
    address = f"@storyteller-start-{uuid.uuid4().hex}"
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    env["NOTIFY_SOCKET"] = address
    if key is not None:
        env["STORYTELLER_TEST_START_KEY"] = key
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as manager:
        manager.bind("\0" + address[1:])
        done = subprocess.run(
            [sys.executable, "-c", PROBE, str(config)],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        seen = json.loads(done.stdout.strip().splitlines()[-1])
        assert seen["code"] == 0, done.stderr
        manager.settimeout(5)  # the daemon has exited: what it sent is waiting
        ready = manager.recv(4096).decode()
    return ready, seen


def test_a_sim_daemon_without_listener_or_webhook_imports_none_of_them(tmp_path: Path) -> None:
    ready, seen = _start_once(tmp_path, "")
    assert ready.startswith("READY=1\nSTATUS=ready: 4 storytellers;")
    assert seen["loaded"] == []
    # The collector, idle while start-up built what lives on, runs again without it.
    assert seen["collections while starting"] == 0
    assert seen["frozen once ready"] and seen["collecting"]


def test_a_daemon_with_a_model_key_imports_the_sdk_only_for_a_request(tmp_path: Path) -> None:
    ready, seen = _start_once(  # no events, so no request: the endpoint is never called
        tmp_path,
        model='api_key_env = "STORYTELLER_TEST_START_KEY"\nbase_url = "http://127.0.0.1:9/v1"\n',
        world="sim_activity = false\n",
        key="sk-never-sent",
    )
    assert ready.startswith("READY=1")
    assert seen["loaded"] == []


@pytest.mark.parametrize(
    ("sections", "loaded"),
    [
        pytest.param(
            "[http]\nenabled = true\nport = 0\n",
            ["aiohttp", "prometheus_client", "jinja2"],
            id="listener and dashboard",
        ),
        pytest.param(
            "[http]\nenabled = true\nport = 0\ndashboard = false\n",
            ["aiohttp", "prometheus_client"],
            id="listener alone",
        ),
    ],
)
def test_what_the_configuration_uses_is_imported(
    tmp_path: Path, sections: str, loaded: list[str]
) -> None:
    ready, seen = _start_once(tmp_path, sections)
    assert ready.startswith("READY=1")
    assert seen["loaded"] == loaded
