"""The shipped unit file passes systemd's checks, and `storyteller run` speaks sd_notify."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from storyteller_daemon.config import DaemonConfig, load_config

ROOT = Path(__file__).resolve().parents[2]
UNIT = ROOT / "deploy" / "storyteller.service"
INSTALLED_EXECUTABLE = "/opt/storyteller/.venv/bin/storyteller"
SYSTEMD_ANALYZE = shutil.which("systemd-analyze")
needs_systemd_analyze = pytest.mark.skipif(
    SYSTEMD_ANALYZE is None, reason="systemd-analyze is not installed (Debian package: systemd)"
)


def unit_settings() -> dict[str, list[str]]:
    settings: dict[str, list[str]] = {}
    for line in UNIT.read_text(encoding="utf-8").splitlines():
        if "=" in line and not line.startswith(("#", "[")):
            key, value = line.split("=", 1)
            settings.setdefault(key, []).append(value)
    return settings


def local_copy(tmp_path: Path) -> Path:
    """The unit with its executable pointed at this checkout's, which exists on this machine."""
    executable = Path(sys.executable).parent / "storyteller"
    assert executable.exists(), f"{executable} is missing: install the project with pip -e"
    copy = tmp_path / "storyteller.service"
    text = UNIT.read_text(encoding="utf-8")
    assert INSTALLED_EXECUTABLE in text
    copy.write_text(text.replace(INSTALLED_EXECUTABLE, str(executable)), encoding="utf-8")
    return copy


@needs_systemd_analyze
def test_the_unit_passes_systemd_analyze_verify_without_any_output(tmp_path: Path) -> None:
    assert SYSTEMD_ANALYZE is not None
    result = subprocess.run(
        [SYSTEMD_ANALYZE, "verify", str(local_copy(tmp_path))],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    # verify exits 0 on unknown keys and bad values, so any output at all is a failure.
    assert (result.returncode, result.stdout + result.stderr) == (0, "")


@needs_systemd_analyze
def test_the_unit_is_hardened(tmp_path: Path) -> None:
    assert SYSTEMD_ANALYZE is not None
    result = subprocess.run(
        [SYSTEMD_ANALYZE, "security", "--offline=true", str(local_copy(tmp_path))],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    match = re.search(r"Overall exposure level for storyteller\.service: ([\d.]+)", result.stdout)
    assert match is not None, result.stdout + result.stderr
    assert float(match.group(1)) <= 2.0


def test_the_unit_declares_notify_watchdog_restart_and_a_stop_timeout_above_the_drain() -> None:
    settings = unit_settings()
    for key, value in [
        ("Type", "notify"),
        ("NotifyAccess", "main"),
        ("Restart", "on-failure"),
        ("RestartPreventExitStatus", "78"),
        ("DynamicUser", "yes"),
        ("StateDirectory", "storyteller"),
        ("ProtectSystem", "strict"),
        ("EnvironmentFile", "/etc/storyteller/storyteller.env"),
    ]:
        assert settings.get(key) == [value], key
    assert int(settings["WatchdogSec"][0]) >= 10
    assert int(settings["TimeoutStopSec"][0]) > DaemonConfig().drain_seconds
    assert all(INSTALLED_EXECUTABLE in line for line in settings["ExecStart"])
    # a failed migration must not stop the daemon from starting and raising its alert
    assert [line.split()[0] for line in settings["ExecStartPre"]] == ["-" + INSTALLED_EXECUTABLE]


def test_the_deployment_config_loads_and_fits_the_unit() -> None:
    cfg = load_config(ROOT / "deploy" / "storyteller.toml")
    assert cfg.database.url.startswith("sqlite+aiosqlite:////var/lib/storyteller/")
    assert cfg.daemon.drain_seconds < int(unit_settings()["TimeoutStopSec"][0])
    assert cfg.http.host == "127.0.0.1"
    env_names = (ROOT / "deploy" / "storyteller.env.example").read_text(encoding="utf-8")
    for name in (cfg.model.api_key_env, cfg.alerts.discord_webhook_env):
        assert f"\n{name}=" in env_names


def test_storyteller_run_notifies_ready_pings_and_stopping_on_sigterm(tmp_path: Path) -> None:
    config = tmp_path / "storyteller.toml"
    config.write_text(
        f'[database]\nurl = "sqlite+aiosqlite:///{tmp_path / "s.db"}"\n'
        '[model]\napi_key_env = "STORYTELLER_TEST_NO_KEY"\n',
        encoding="utf-8",
    )
    state = tmp_path / "state"
    state.mkdir()
    # Two recent starts already recorded: this one makes three within five minutes.
    now = datetime.now(UTC)
    earlier = [(now - timedelta(minutes=m)).isoformat() for m in (2, 1)]
    (state / "start-history.json").write_text(json.dumps(earlier), encoding="utf-8")
    address = f"@storyteller-run-{uuid.uuid4().hex}"
    manager = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    manager.bind("\0" + address[1:])
    manager.settimeout(30)
    env = {k: v for k, v in os.environ.items() if k != "STORYTELLER_TEST_NO_KEY"}
    env |= {"NOTIFY_SOCKET": address, "WATCHDOG_USEC": "400000", "STATE_DIRECTORY": str(state)}
    base = [sys.executable, "-m", "storyteller_daemon", "--config", str(config)]
    subprocess.run([*base, "db", "upgrade"], check=True, env=env, capture_output=True, timeout=60)
    proc = subprocess.Popen(
        [*base, "run"], env=env, stderr=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        ready = manager.recv(4096).decode()
        pings = [manager.recv(4096).decode() for _ in range(2)]
        proc.send_signal(signal.SIGTERM)
        rest = manager.recv(4096).decode()
        while rest.startswith("WATCHDOG=1"):  # a ping may cross the signal
            rest = manager.recv(4096).decode()
        _, err = proc.communicate(timeout=30)
    finally:
        manager.close()
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert ready.startswith("READY=1\nSTATUS=ready: 0 storytellers;")
    assert all(p.startswith("WATCHDOG=1\nSTATUS=") for p in pings)
    assert rest.startswith("STOPPING=1")
    assert proc.returncode == 0, err
    assert "stopped cleanly" in err
    assert "alert [crash_loop]: The storyteller daemon has started 3 times in the last 5 min" in err
    assert len(json.loads((state / "start-history.json").read_text(encoding="utf-8"))) == 3


def test_a_failed_start_is_alerted_before_the_process_exits(tmp_path: Path) -> None:
    config = tmp_path / "storyteller.toml"
    config.write_text(  # never migrated: the daemon refuses to start
        f'[database]\nurl = "sqlite+aiosqlite:///{tmp_path / "s.db"}"\n', encoding="utf-8"
    )
    result = subprocess.run(
        [sys.executable, "-m", "storyteller_daemon", "--config", str(config), "run"],
        env={**os.environ, "STATE_DIRECTORY": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 78  # EX_CONFIG: the unit does not restart it
    assert (
        "alert [startup_failed]: The storyteller daemon could not start — Failed with "
        "NotMigratedError." in result.stderr
    )
    assert "error: database is at revision none" in result.stderr
    assert (tmp_path / "start-history.json").exists()  # the failed start still counts
