"""Admin commands typed in the game (``ais``/``aisr``), run by the daemon as the CLI runs them.

A game sends an ``admin`` frame (docs/bridge-protocol.md): the command, its verb and words, the
caller's account name and permission level. `GameAdmin` checks the level itself, whatever the
game checked (Builder reads, Admin changes, Developer deletes), then runs the very CLI command an
operator would type (``storyteller ais pause NAME``) in a child process, with ``--actor`` naming
the game account, so the change goes through the same code, the same validation and the same
audit entries as on the command line, and its output is the answer. Every change, and every
refusal of one, is also written to the audit log under the game account. After a change the
daemon reloads its settings at once, so a pause holds before the answer reaches the game.

Two verbs have no CLI command of their own: ``ais invoke REF TEXT`` queues a direct invocation
(`Daemon.invoke`), ``ais costs [REF]`` is ``storyteller costs`` since midnight UTC, and
``ais turns [REF]`` is ``storyteller runs list`` of the newest ten.
"""

from __future__ import annotations

import asyncio
import logging
import re
import subprocess
from collections.abc import Sequence
from typing import Any, Protocol

from storyteller_daemon.clock import Clock
from storyteller_daemon.storage.audit import AuditRepository
from world_adapter.bridge.game_calls import AdminRefused
from world_adapter.bridge.messages import Admin, AdminLevel

log = logging.getLogger(__name__)

COMMAND_SECONDS = 30.0
MAX_OUTPUT_CHARS = 60_000
RECENT_TURNS = 10

B, A, D = AdminLevel.BUILDER, AdminLevel.ADMIN, AdminLevel.DEVELOPER
VERBS: dict[str, dict[str, AdminLevel]] = {
    "ais": {
        "list": B, "show": B, "view": B, "refsearch": B, "reference": B, "references": B,
        "costs": B, "turns": B,
        "create": A, "new": A, "clone": A, "set": A, "pause": A, "unpause": A, "invoke": A,
        "delete": D,
    },
    "aisr": {
        "list": B, "show": B, "search": B, "create": A, "clone": A, "set": A, "delete": D,
    },
}  # fmt: skip
"""The level each verb needs; a verb not here is refused."""
GROUPS: dict[str, dict[str, AdminLevel]] = {
    "situation": {"list": B, "show": B, "scope": A},
    "memory": {"list": B, "show": B, "history": B, "forget": D},
    "digest": {"show": B, "refresh": A},
    "plan": {"list": B, "show": B},
    "claim": {"list": B},
}
"""``ais`` groups whose second word is the verb that sets the level."""
GROUP_ALIASES = {"situations": "situation", "memories": "memory"}
_FILE_OPTIONS = ("-f", "--file", "--out", "-o", "--config", "-c", "--db", "--actor")
_BOX = re.compile(r"[│╭╮╰╯─]+")


class AdminDaemon(Protocol):
    """What admin commands need of the running daemon."""

    async def reload(self, *, force: bool = False) -> bool:
        """Pick up changed settings now."""
        ...

    async def invoke(self, storyteller_ref: str | int, text: str) -> Any:
        """Queue a direct invocation."""
        ...


def required_level(command: str, verb: str, args: Sequence[str]) -> AdminLevel:
    """The level a command needs.

    Raises:
        AdminRefused: the command or verb is not one the game may run.
    """
    verbs = VERBS.get(command)
    if verbs is None:
        raise AdminRefused(f"Unknown admin command '{command}'; use ais or aisr.")
    word = verb.lower()
    group = GROUPS.get(GROUP_ALIASES.get(word, word)) if command == "ais" else None
    if group is not None:
        sub = args[0].lower() if args else ""
        if sub not in group:
            raise AdminRefused(f"Use {command} {word} {'|'.join(group)}.")
        return group[sub]
    if word not in verbs:
        known = ", ".join(sorted({*verbs, *(GROUPS if command == "ais" else ())}))
        raise AdminRefused(f"Unknown verb '{verb}' for {command}; known: {known}.")
    return verbs[word]


def check_words(args: Sequence[str]) -> None:
    """Refuse words that would make the CLI read or write files of the daemon's host.

    Raises:
        AdminRefused: one of the words is a file option or ``-`` (standard input).
    """
    for word in args:
        name = word.split("=", 1)[0]
        if name in _FILE_OPTIONS or word == "-":
            raise AdminRefused(f"'{word}' cannot be used in the game; give the text inline.")


def first_error_line(text: str) -> str:
    """The line of a failed command's output that says what was wrong, without decoration."""
    lines = [_BOX.sub(" ", line).strip() for line in text.splitlines()]
    lines = [line for line in lines if line]
    for index, line in enumerate(lines):
        if line.lower() == "error" and index + 1 < len(lines):  # a box titled "Error"
            return lines[index + 1]
        if line.lower().startswith("error:"):
            return line[len("error:") :].strip()
    return lines[-1] if lines else "The command failed."


class GameAdmin:
    """Runs the game's admin commands (the bridge client's admin handler).

    Args:
        cli: The command that starts this storyteller's CLI with its configuration, e.g.
            ``[sys.executable, "-m", "storyteller_daemon", "--config", "/etc/storyteller.toml"]``.
        daemon: The running daemon (invocations, settings reloads).
        audit: The audit log.
        now: The time, for "today" in ``ais costs``.
        seconds: How long a command may run.
    """

    def __init__(
        self,
        cli: Sequence[str],
        daemon: AdminDaemon,
        audit: AuditRepository,
        clock: Clock,
        *,
        seconds: float = COMMAND_SECONDS,
    ) -> None:
        self._cli = list(cli)
        self._daemon = daemon
        self._audit = audit
        self._clock = clock
        self._seconds = seconds

    async def __call__(self, frame: Admin) -> dict[str, Any]:
        """Run one command; ``{"text": output}``.

        Raises:
            AdminRefused: the caller's level is too low, the command is unknown or failed.
        """
        command, verb, args = frame.command.lower(), frame.verb.lower(), list(frame.args)
        needed = required_level(command, verb, args)
        actor = f"{frame.caller} (game, {frame.level.value})"
        subject = " ".join([command, verb, *args[:1]])
        if frame.level.rank < needed.rank:
            await self._audit.add(actor, "game_admin_refused", subject, {"args": args})
            raise AdminRefused(
                f"{command} {verb} needs the {needed.value} permission; "
                f"{frame.caller} has {frame.level.value}."
            )
        check_words(args)
        if (command, verb) == ("ais", "invoke"):
            text = await self._invoke(args)
        else:
            text = await self._run(actor, self._argv(command, verb, args))
        if needed.rank > AdminLevel.BUILDER.rank:
            await self._audit.add(actor, "game_admin", subject, {"args": args})
            await self._daemon.reload()
        return {"text": text}

    def _argv(self, command: str, verb: str, args: list[str]) -> list[str]:
        if (command, verb) == ("ais", "costs"):
            since = self._clock.now().strftime("%Y-%m-%d")
            only = ["--storyteller", " ".join(args)] if args else []
            return ["costs", "--by", "storyteller", "--since", since, *only]
        if (command, verb) == ("ais", "turns"):
            only = ["--storyteller", " ".join(args)] if args else []
            return ["runs", "list", "--limit", str(RECENT_TURNS), *only]
        return [command, verb, *args]

    async def _invoke(self, args: list[str]) -> str:
        if len(args) < 2:
            raise AdminRefused("Use ais invoke STORYTELLER TEXT.")
        result = await self._daemon.invoke(args[0], " ".join(args[1:]))
        if not result.accepted:
            raise AdminRefused(f"Not invoked: {result.reason}.")
        return f"Invoked storyteller #{result.storyteller_id}: its turn is queued."

    async def _run(self, actor: str, argv: list[str]) -> str:
        # The CLI is this package's own entry point, started without a shell.
        process = await asyncio.create_subprocess_exec(
            *self._cli, "--actor", actor, *argv,
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )  # fmt: skip
        try:
            async with asyncio.timeout(self._seconds):
                out, err = await process.communicate()
        except TimeoutError:
            process.kill()
            await process.wait()
            raise AdminRefused(f"The command took longer than {self._seconds:g} seconds.") from None
        finally:
            if process.returncode is None:  # cancelled: never leave the child behind
                process.kill()
                await process.wait()
        output = out.decode(errors="replace").rstrip()
        if process.returncode != 0:
            message = first_error_line(err.decode(errors="replace") + "\n" + output)
            log.info("game admin command %s failed: %s", argv[:2], message)
            raise AdminRefused(message)
        if len(output) > MAX_OUTPUT_CHARS:
            output = output[:MAX_OUTPUT_CHARS] + "\n[cut: use the command line for the rest]"
        return output or "Done."
