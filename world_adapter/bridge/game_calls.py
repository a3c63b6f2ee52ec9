"""What a game asks of the daemon on one bridge connection: invocations and admin commands.

`GameCalls` answers a game's ``invoke`` frame through whoever takes invocations (or refuses it
as ``not_supported`` when nobody does) and runs its ``admin`` frames (the in-game ``ais`` and
``aisr``) in tasks of their own, at most `MAX_ADMIN_COMMANDS` at once, so the connection's
reader reads on. Answers go out through the connection's `send`; a handler that fails is logged
and answered with an error frame, and never ends the connection.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from world_adapter.bridge.messages import Admin, Error, ErrorCode, Frame, Result
from world_adapter.bridge.wire import FrameTooLarge, short_message
from world_adapter.errors import StreamError
from world_adapter.invocations import (
    GameInvocation,
    InvocationAnswer,
    InvocationHandler,
    RefusalCode,
)

log = logging.getLogger(__name__)

HandlerLookup = Callable[[], InvocationHandler | None]
"""Where a connection finds who answers the game's invocations (None: nobody)."""
MAX_ADMIN_COMMANDS = 4
"""Admin commands from the game running at once on one connection; more are refused."""


class AdminRefused(Exception):
    """An admin command the daemon will not run; the message (one line) goes to the game."""


AdminHandler = Callable[[Admin], Awaitable[Any]]
"""Runs an admin command from the game; returns the ``result`` value or raises `AdminRefused`."""
Send = Callable[[Frame], Awaitable[None]]


class GameCalls:
    """Answers one connection's invocations and admin commands.

    Args:
        send: Sends a frame on the connection (raises `StreamError` once it is broken).
        invocations: Finds who answers invocations (None: nobody does).
        admin: Runs admin commands (None: they are refused).
    """

    def __init__(
        self, send: Send, invocations: HandlerLookup | None, admin: AdminHandler | None
    ) -> None:
        self._send = send
        self._invocations = invocations
        self._admin = admin
        self._admin_tasks: set[asyncio.Task[None]] = set()

    async def invoke(self, invocation: GameInvocation) -> None:
        """Answer an ``invoke`` frame (``invoked``, or an error frame if the handler failed).

        Raises:
            StreamError: If the answer cannot be sent.
        """
        await self._send(await self._answer_invocation(invocation))

    async def admin(self, frame: Admin) -> None:
        """Run an admin command in a task of this connection's, so the reader reads on."""
        if self._admin is None:
            await self._send(Error(ErrorCode.COMMAND_FAILED, "This daemon takes no admin commands.",
                                   frame.id))  # fmt: skip
            return
        if len(self._admin_tasks) >= MAX_ADMIN_COMMANDS:
            await self._send(Error(ErrorCode.COMMAND_FAILED, "The daemon is busy with other admin "
                                   "commands; try again.", frame.id))  # fmt: skip
            return
        task = asyncio.create_task(self._run_admin(self._admin, frame), name="bridge-admin")
        self._admin_tasks.add(task)
        task.add_done_callback(self._admin_tasks.discard)

    def cancel(self) -> list[asyncio.Task[None]]:
        """Cancel every running admin command; the tasks, for the caller to wait on."""
        tasks = list(self._admin_tasks)
        for task in tasks:
            task.cancel()
        return tasks

    async def _answer_invocation(self, invocation: GameInvocation) -> InvocationAnswer | Error:
        handler = self._invocations() if self._invocations is not None else None
        if handler is None:
            return InvocationAnswer(
                invocation.id,
                accepted=False,
                reason=RefusalCode.NOT_SUPPORTED.value,
                message="This client takes no invocations.",
            )
        try:
            return await handler(invocation)
        except Exception:  # a bug must not end the connection; the game hears of it
            log.exception("answering invocation %s failed", invocation.id)
            return Error(ErrorCode.INTERNAL, "The daemon failed to answer.", invocation.id)

    async def _run_admin(self, handler: AdminHandler, frame: Admin) -> None:
        answer: Result | Error
        try:
            answer = Result(frame.id, await handler(frame))
        except AdminRefused as exc:
            answer = Error(ErrorCode.COMMAND_FAILED, short_message(str(exc)), frame.id)
        except Exception:
            log.exception("the admin command %s %s failed", frame.command, frame.verb)
            answer = Error(ErrorCode.INTERNAL, "The admin command failed in the daemon.", frame.id)
        try:
            await self._send(answer)
        except (StreamError, FrameTooLarge):
            log.warning("could not answer the admin command %s %s", frame.command, frame.verb)
