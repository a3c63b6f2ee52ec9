"""The production install: a wheel built from the checkout, installed in a clean venv outside it.

The operations guide's commands (db upgrade, seed, doctor, run against a game served over the
bridge) must work from there, where neither ``migrations/`` nor ``seed/`` of the checkout can be
seen. The wheel's dependencies come from the package index, as they would for an admin.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import signal
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
INSTALL_SECONDS = 600


def test_the_package_list_holds_every_package_of_the_checkout() -> None:
    listed = set(
        tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    )
    found = {
        ".".join(init.parent.relative_to(ROOT).parts)
        for top in ("storyteller_daemon", "world_adapter", "progs")
        for init in (ROOT / top).rglob("__init__.py")
    }
    assert found <= listed, f"add to [tool.setuptools] packages: {sorted(found - listed)}"
    assert {"storyteller_daemon.bundled.migrations", "storyteller_daemon.bundled.seed"} <= listed


def _run(args: list[str | Path], cwd: Path, env: dict[str, str], timeout: float = 120) -> str:
    done = subprocess.run(
        [str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )
    output = done.stdout + done.stderr
    assert "Traceback" not in output, output
    assert done.returncode == 0, f"{args}: exit {done.returncode}\n{output}"
    return output


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bin directory of a fresh venv holding only the wheel and its dependencies."""
    base = tmp_path_factory.mktemp("wheel")
    env = {k: v for k, v in os.environ.items() if k not in {"VIRTUAL_ENV", "PYTHONPATH"}}
    dist = base / "dist"
    _run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", dist, ROOT],
        base,
        env,
        INSTALL_SECONDS,
    )
    [wheel] = dist.glob("storyteller-*.whl")
    venv = base / "venv"
    _run([sys.executable, "-m", "venv", venv], base, env)
    _run([venv / "bin" / "pip", "install", "--quiet", wheel], base, env, INSTALL_SECONDS)
    return venv / "bin"


def test_the_operations_commands_work_from_the_wheel(installed: Path, tmp_path: Path) -> None:
    token = secrets.token_hex(16)
    env = {k: v for k, v in os.environ.items() if k not in {"VIRTUAL_ENV", "PYTHONPATH"}}
    env |= {"STORYTELLER_BRIDGE_TOKEN": token, "NO_COLOR": "1", "COLUMNS": "200"}
    env.pop("OPENAI_API_KEY", None)
    storyteller = installed / "storyteller"
    game = subprocess.Popen(
        [storyteller, "sim", "serve", "--port", "0", "--tick", "0.2"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert game.stdout is not None
        line = game.stdout.readline()
        match = re.search(r"on (ws://\S+)", line)
        assert match, line
        (tmp_path / "storyteller.toml").write_text(
            f"""
[database]
url = "sqlite+aiosqlite:///{tmp_path / "storyteller.db"}"

[model]
offline_when_no_key = true

[model.prices.gpt-5-mini]
input = 0.25
cached_input = 0.025
output = 2.0

[model.prices.gpt-5-nano]
input = 0.05
cached_input = 0.005
output = 0.4

[world]
kind = "bridge"
url = "{match.group(1)}"
token_env = "STORYTELLER_BRIDGE_TOKEN"
""",
            encoding="utf-8",
        )
        share = installed.parent / "share" / "storyteller"
        assert (share / "config.example.toml").is_file()
        assert (share / "deploy" / "storyteller.service").is_file()
        newest = max(m.name[:4] for m in (ROOT / "migrations" / "versions").glob("[0-9]*.py"))
        assert f"-> {newest}" in _run([storyteller, "db", "upgrade"], tmp_path, env)
        assert "harbour-ward" in _run([storyteller, "seed", "list"], tmp_path, env)
        # a starter pack for the game, as the operations guide writes one (the shipped packs
        # are written for the embedded sim, and doctor would say so against this game)
        config = ["--config", "storyteller.toml"]
        _run([storyteller, *config, "init", "packs", "--pack", "my-game", "--name", "Mine"],
             tmp_path, env)  # fmt: skip
        _run([storyteller, "seed", "load", "packs/my-game", "--check-world"], tmp_path, env)
        _run([storyteller, "ais", "unpause", "Mine"], tmp_path, env)
        _run([storyteller, "doctor"], tmp_path, env)
        daemon = subprocess.Popen(
            [storyteller, "run"],
            cwd=tmp_path,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        deadline = time.monotonic() + 60
        runs: list[object] = []
        while not runs and time.monotonic() < deadline:  # the sim town's activity reaches it
            time.sleep(1)
            runs = json.loads(_run([storyteller, "runs", "list", "--json"], tmp_path, env))
        daemon.send_signal(signal.SIGTERM)
        output, _ = daemon.communicate(timeout=15)
        assert daemon.returncode == 0, output
        assert "Traceback" not in output, output
        assert runs, "the daemon recorded nothing in a minute of the sim town"
    finally:
        game.terminate()
        game.communicate(timeout=15)
