"""A real Evennia game for tests: its own cached venv, a game dir with the bridge, start and stop.

The venv (Evennia pinned to `EVENNIA_VERSION`) lives in ``.evennia-venv/`` at the repository root
(or ``$STORYTELLER_EVENNIA_VENV``) and is installed from the package registry on first use; a
failed install raises, it never skips. Each game gets a fresh directory and its own loopback
ports, and is stopped with ``evennia stop`` (its processes killed if that fails).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

EVENNIA_VERSION = "5.0.1"
REPO = Path(__file__).resolve().parents[2]
BRIDGE_SOURCE = REPO / "world_adapter" / "bridges" / "evennia"
TOKEN_ENV = "STORYTELLER_BRIDGE_TOKEN"
ADMIN = ("admin", "adminpass123")

INSTALL_SECONDS = 600
COMMAND_SECONDS = 120
READY_SECONDS = 90

_ROOMS_PY = '''\
"""Rooms: every message to a room is also a storyteller bridge event."""

from evennia.objects.objects import DefaultRoom
from storyteller_bridge.tap import StorytellerRoomMixin

from .objects import ObjectParent


class Room(StorytellerRoomMixin, ObjectParent, DefaultRoom):
    """A room the storyteller can watch."""
'''

_CHARACTERS_PY = '''\
"""Characters: logging in and out is announced to the storyteller bridge."""

from evennia.objects.objects import DefaultCharacter
from storyteller_bridge.tap import StorytellerCharacterMixin

from .objects import ObjectParent


class Character(StorytellerCharacterMixin, ObjectParent, DefaultCharacter):
    """A character whose arrivals in the game reach the storyteller."""
'''

_PROGS_PY = '''\
"""Progs the storyteller may run in this game."""

from storyteller_bridge.registry import storyteller_prog
from storyteller_bridge.tap import prog_origin


@storyteller_prog(
    name="EchoToRoom",
    params=[("Room", "Location"), ("Text", "Text")],
    returns="Boolean",
    description="Narrates something that happens in a room.",
)
def echo_to_room(room, text):
    room.msg_contents(text)
    return True


@storyteller_prog(name="LaterEcho", params=[("Room", "Location"), ("Text", "Text")], returns="Text")
def later_echo(room, text):
    """Echoes after a short delay: a prog that returns a Deferred."""
    from twisted.internet import reactor, task

    def echo():
        with prog_origin():
            room.msg_contents(text)
        return text

    return task.deferLater(reactor, 0.05, echo)


@storyteller_prog(name="Broken", returns="Boolean")
def broken():
    raise RuntimeError("an internal detail the model must not see")
'''


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _run(
    args: list[str | Path], *, cwd: Path | None = None, env: dict[str, str] | None = None,
    timeout: float = COMMAND_SECONDS,
) -> subprocess.CompletedProcess[str]:  # fmt: skip
    result = subprocess.run(
        [str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )
    if result.returncode != 0:
        raise RuntimeError(
            f"{' '.join(str(a) for a in args)} exited {result.returncode}\n"
            f"--- stdout\n{result.stdout[-4000:]}\n--- stderr\n{result.stderr[-4000:]}"
        )
    return result


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def evennia_venv() -> tuple[Path, float]:
    """The venv with Evennia installed, and how many seconds installing it took (0 if cached).

    Raises:
        RuntimeError: the install failed (e.g. the package registry cannot be reached).
    """
    root = Path(os.environ.get("STORYTELLER_EVENNIA_VENV", REPO / ".evennia-venv"))
    stamp = root / f".installed-evennia-{EVENNIA_VERSION}"
    if stamp.exists():
        return root, 0.0
    with _locked(root.with_name(root.name + ".lock")):
        if stamp.exists():
            return root, 0.0
        started = time.monotonic()
        shutil.rmtree(root, ignore_errors=True)
        _run([sys.executable, "-m", "venv", root])
        pip: list[str | Path] = [
            root / "bin" / "python",
            "-m",
            "pip",
            "install",
            "--disable-pip-version-check",
        ]
        # setuptools brings the `distutils` Evennia still imports, gone from Python 3.12 on.
        _run(
            [*pip, "--quiet", f"evennia=={EVENNIA_VERSION}", "setuptools"],
            timeout=INSTALL_SECONDS,
        )
        stamp.touch()
        return root, time.monotonic() - started


@dataclass
class EvenniaGame:
    """One game directory and its processes."""

    venv: Path
    root: Path
    telnet_port: int = field(default_factory=free_port)
    amp_port: int = field(default_factory=free_port)
    bridge_port: int = field(default_factory=free_port)
    token: str = field(default_factory=lambda: secrets.token_urlsafe(24))
    _pids: list[int] = field(default_factory=list)

    @property
    def bridge_url(self) -> str:
        """Where the daemon connects."""
        return f"ws://127.0.0.1:{self.bridge_port}/storyteller"

    @property
    def env(self) -> dict[str, str]:
        """The environment Evennia's commands run in: its venv first on PATH (the launcher
        starts ``twistd`` by name), the bridge token and the superuser for the first start."""
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
        env.update(
            PATH=f"{self.venv / 'bin'}{os.pathsep}{env.get('PATH', '')}",
            VIRTUAL_ENV=str(self.venv),
            EVENNIA_SUPERUSER_USERNAME=ADMIN[0],
            EVENNIA_SUPERUSER_PASSWORD=ADMIN[1],
            EVENNIA_SUPERUSER_EMAIL="admin@example.com",
        )
        env[TOKEN_ENV] = self.token
        return env

    def evennia(self, *args: str, timeout: float = COMMAND_SECONDS) -> str:
        """Run the ``evennia`` launcher in the game dir; its output."""
        result = _run([self.venv / "bin" / "evennia", *args], cwd=self.root, env=self.env,
                      timeout=timeout)  # fmt: skip
        return result.stdout + result.stderr

    @classmethod
    def create(cls, venv: Path, parent: Path) -> EvenniaGame:
        """A new game dir under `parent` with the bridge installed and the database migrated."""
        game = cls(venv, parent / "game")
        _run([venv / "bin" / "evennia", "--init", "game"], cwd=parent, env=game.env)
        game.install_bridge()
        game.evennia("migrate")
        return game

    def install_bridge(self) -> None:
        """The README's install steps: copy the package, settings, typeclasses, progs, and the
        admin commands in the character cmdset."""
        shutil.copytree(
            BRIDGE_SOURCE, self.root / "storyteller_bridge",
            ignore=shutil.ignore_patterns("__pycache__"),
        )  # fmt: skip
        settings = self.root / "server" / "conf" / "settings.py"
        settings.write_text(
            settings.read_text()
            + textwrap.dedent(
                f"""
                # Loopback only, no web server: a test game.
                LOCKDOWN_MODE = True
                TELNET_PORTS = [{self.telnet_port}]
                TELNET_INTERFACES = ["127.0.0.1"]
                WEBSERVER_ENABLED = False
                WEBCLIENT_ENABLED = False
                WEBSOCKET_CLIENT_ENABLED = False
                WEBSERVER_INTERFACES = ["127.0.0.1"]
                WEBSOCKET_CLIENT_INTERFACE = "127.0.0.1"
                SSL_INTERFACES = ["127.0.0.1"]
                SSH_INTERFACES = ["127.0.0.1"]
                AMP_HOST = "127.0.0.1"
                AMP_INTERFACE = "127.0.0.1"
                AMP_PORT = {self.amp_port}

                # The storyteller bridge.
                SERVER_SERVICES_PLUGIN_MODULES = SERVER_SERVICES_PLUGIN_MODULES + [
                    "storyteller_bridge.service"
                ]
                STORYTELLER_BRIDGE_INTERFACE = "127.0.0.1"
                STORYTELLER_BRIDGE_PORT = {self.bridge_port}
                STORYTELLER_BRIDGE_TOKEN_ENV = "{TOKEN_ENV}"
                STORYTELLER_BRIDGE_PROG_MODULES = ["world.storyteller_progs"]
                """
            )
        )
        (self.root / "typeclasses" / "rooms.py").write_text(_ROOMS_PY)
        (self.root / "typeclasses" / "characters.py").write_text(_CHARACTERS_PY)
        (self.root / "world" / "storyteller_progs.py").write_text(_PROGS_PY)
        cmdsets = self.root / "commands" / "default_cmdsets.py"
        source = cmdsets.read_text()
        first = source.index("super().at_cmdset_creation()") + len("super().at_cmdset_creation()")
        cmdsets.write_text(
            "from storyteller_bridge.commands import StorytellerAdminCmdSet\n"
            + source[:first]
            + "\n        self.add(StorytellerAdminCmdSet)"
            + source[first:]
        )

    def server_log(self) -> str:
        """The Server process's log so far."""
        path = self.root / "server" / "logs" / "server.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def start(self) -> None:
        """Start Portal and Server; return once the Server is up for good and the bridge listens.

        On the first start Evennia creates the superuser and Limbo, then restarts the Server once;
        logging in before that restart would be cut off, so this waits for it.
        """
        self.evennia("start")
        deadline = time.monotonic() + READY_SECONDS
        while time.monotonic() < deadline:
            self._pids = self._read_pids()
            if self._server_ready() and self._bridge_listening():
                return
            time.sleep(0.1)  # waiting on an external process: poll with a deadline
        raise TimeoutError(f"Evennia did not come up in {READY_SECONDS} s:\n{self.server_log()}")

    def reload(self) -> None:
        """``evennia reload`` (a new Server process; telnet sessions stay with the Portal);
        return once the new Server is up and the bridge listens again."""
        reloads = self.server_log().count("Server successfully reloaded")
        self.evennia("reload")
        deadline = time.monotonic() + READY_SECONDS
        while time.monotonic() < deadline:
            if (
                self.server_log().count("Server successfully reloaded") > reloads
                and self._bridge_listening()
            ):
                return
            time.sleep(0.1)  # waiting on an external process: poll with a deadline
        raise TimeoutError(f"Evennia did not reload in {READY_SECONDS} s:\n{self.server_log()}")

    def _server_ready(self) -> bool:
        log = self.server_log()
        setup = log.rfind("Initial setup complete")
        if setup >= 0:
            return log.find("successfully restarted", setup) >= 0
        return "Evennia Server successfully started" in log

    def _bridge_listening(self) -> bool:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.settimeout(0.5)
            return sock.connect_ex(("127.0.0.1", self.bridge_port)) == 0

    def _read_pids(self) -> list[int]:
        pids = []
        for name in ("portal.pid", "server.pid"):
            with contextlib.suppress(OSError, ValueError):
                pids.append(int((self.root / "server" / name).read_text().strip()))
        return pids or self._pids

    def stop(self) -> None:
        """``evennia stop``; kill whatever is still running afterwards."""
        pids = self._read_pids()
        try:
            self.evennia("stop", timeout=60)
        finally:
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline and any(_alive(p) for p in pids):
                time.sleep(0.1)  # waiting on external processes to exit
            for pid in pids:
                if _alive(pid):
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGKILL)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
