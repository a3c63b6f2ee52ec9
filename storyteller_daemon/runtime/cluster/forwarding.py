"""`InvocationForwarder`: a game's ``invoke`` received by one daemon of a cluster, answered by the
daemon that runs the storyteller.

Every daemon takes the game's invocations on its own connections, but only the one holding a
storyteller's lease may store its turn. A daemon given an invocation for a storyteller it does
not hold looks up the holder in the lease table and sends it the invocation (`MessageSender`,
PostgreSQL's NOTIFY); the holder answers it as its own (the same admission, the same request-id
idempotency), sends the answer back, and once the turn has ended sends the `invoke_outcome` to
the game on its own connection. The receiving daemon answers the game with what the holder
said. When no daemon holds the storyteller (it is being handed over), or the holder does not
answer within `answer_seconds`, the game is told ``not_running`` and may send the same id
again: an accepted id is stored once, whichever daemon it reaches.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import uuid
from collections.abc import Awaitable, Callable, Collection, Mapping
from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol

from storyteller_daemon.clock import Clock, DeadlinePassed, within
from storyteller_daemon.domain.storytellers import Storyteller
from storyteller_daemon.errors import NotFoundError
from world_adapter.invocations import (
    GameInvocation,
    InvocationAnswer,
    InvocationHandler,
    RefusalCode,
)

log = logging.getLogger(__name__)

MessageSender = Callable[[str, dict[str, Any]], Awaitable[None]]
"""Sends a message to the named daemon (`storage.cluster_messages.send_message`)."""
MessageListener = Callable[
    [Callable[[str, dict[str, Any]], None]], AbstractAsyncContextManager[None]
]
"""While inside, calls back with each message for this daemon and its sender's name."""


class Storytellers(Protocol):
    """Every storyteller of the database (the storyteller repository)."""

    async def get(self, ref: str | int) -> Storyteller:
        """A storyteller by id or name in any case.

        Raises:
            NotFoundError: none has that id or name.
        """
        ...


Holders = Callable[[Collection[int]], Awaitable[Mapping[int, tuple[str | None, int]]]]
"""Of these storytellers: id → the daemon holding its lease (None: none) and the token
(`LeaseRepository.holders`)."""

WAITING_REQUESTS = 100
"""Forwarded invocations waiting to be answered here at most (more: the senders time out)."""


class InvocationForwarder:
    """Forwards invocations for storytellers held elsewhere, and answers those forwarded here.

    Args:
        instance: this daemon's name.
        storytellers: every storyteller of the database (to find one this daemon does not run).
        holders: who holds each storyteller's lease.
        send: sends a message to another daemon.
        listen: hears the messages for this daemon.
        clock: the daemon's clock (the answer's deadline).
        answer_seconds: how long the holder has to answer.
        retry_seconds: the wait before listening again after the database connection failed.
    """

    def __init__(
        self,
        instance: str,
        *,
        storytellers: Storytellers,
        holders: Holders,
        send: MessageSender,
        listen: MessageListener,
        clock: Clock,
        answer_seconds: float = 5.0,
        retry_seconds: float = 5.0,
    ) -> None:
        self.instance = instance
        self._storytellers = storytellers
        self._holders = holders
        self._send = send
        self._listen = listen
        self._clock = clock
        self._answer_seconds = answer_seconds
        self._retry_seconds = retry_seconds
        self._asked: dict[str, asyncio.Future[InvocationAnswer]] = {}
        self._requests: asyncio.Queue[tuple[str, str, GameInvocation]] = asyncio.Queue(
            WAITING_REQUESTS
        )
        self.forwarded = 0
        """Invocations sent to the daemon holding their storyteller."""
        self.answered = 0
        """Invocations another daemon forwarded, answered here."""

    async def forward(self, invocation: GameInvocation) -> InvocationAnswer | None:
        """The holder's answer to an invocation for a storyteller this daemon does not run;
        None when no storyteller has that name or id."""
        if isinstance(invocation.storyteller, bool):  # a bool is an int to Python, never an id
            return None
        try:
            storyteller = await self._storytellers.get(invocation.storyteller)
        except NotFoundError:
            return None
        if storyteller.id is None:
            return None
        owner, _token = (await self._holders((storyteller.id,))).get(storyteller.id, (None, 0))
        if owner is None or owner == self.instance:
            return _not_running(
                invocation,
                storyteller.id,
                f"no daemon runs storyteller #{storyteller.id} just now (it is being handed "
                "over): send the same request again shortly",
            )
        ask = uuid.uuid4().hex
        answer = asyncio.get_running_loop().create_future()
        self._asked[ask] = answer
        try:
            await self._send(
                owner, {"kind": "invoke", "ask": ask, "invocation": dataclasses.asdict(invocation)}
            )
            self.forwarded += 1
            return await within(self._clock.sleep, self._answer_seconds, answer)
        except DeadlinePassed:
            return _not_running(
                invocation,
                storyteller.id,
                f"daemon {owner}, which runs storyteller #{storyteller.id}, did not answer in "
                f"{self._answer_seconds:g} s: send the same request again shortly",
            )
        finally:
            self._asked.pop(ask, None)

    def heard(self, sender: str, message: dict[str, Any]) -> None:
        """A message from another daemon: an invocation to answer, or an answer awaited."""
        try:
            if message.get("kind") == "invoke":
                invocation = GameInvocation(**message["invocation"])
                self._requests.put_nowait((sender, str(message["ask"]), invocation))
            elif message.get("kind") == "invoked":
                waiting = self._asked.get(str(message["ask"]))
                if waiting is not None and not waiting.done():
                    waiting.set_result(InvocationAnswer(**message["answer"]))
        except asyncio.QueueFull:
            log.warning("cluster: too many forwarded invocations waiting; one from %s", sender)
        except (KeyError, TypeError) as exc:
            log.warning("cluster: a malformed message from %s: %s", sender, exc)

    async def serve(self, answer_here: InvocationHandler) -> None:
        """Answer the invocations other daemons forward here with `answer_here`, until
        cancelled; a lost connection to the database is opened again after `retry_seconds`."""
        while True:
            try:
                async with self._listen(self.heard), asyncio.TaskGroup() as group:
                    while True:
                        sender, ask, invocation = await self._requests.get()
                        group.create_task(self._answer(sender, ask, invocation, answer_here))
            except Exception as exc:  # the forwarding daemons time out meanwhile
                log.warning(
                    "cluster: not hearing forwarded invocations (%s); listening again in %g s",
                    type(exc).__name__,
                    self._retry_seconds,
                )
            await self._clock.sleep(self._retry_seconds)

    async def _answer(
        self, sender: str, ask: str, invocation: GameInvocation, answer_here: InvocationHandler
    ) -> None:
        try:
            answer = await answer_here(invocation)
            if answer.reason == RefusalCode.UNKNOWN_STORYTELLER.value:  # taken, not loaded yet
                answer = _not_running(
                    invocation,
                    answer.storyteller_id,
                    f"daemon {self.instance} is taking the storyteller over: send the same "
                    "request again shortly",
                )
            await self._send(
                sender, {"kind": "invoked", "ask": ask, "answer": dataclasses.asdict(answer)}
            )
            self.answered += 1
        except Exception as exc:  # the sender times out and the game sends the id again
            log.warning(
                "cluster: request %s forwarded by %s could not be answered: %s",
                invocation.id,
                sender,
                type(exc).__name__,
            )


def _not_running(
    invocation: GameInvocation, storyteller_id: int | None, message: str
) -> InvocationAnswer:
    return InvocationAnswer(
        invocation.id,
        accepted=False,
        reason=RefusalCode.NOT_RUNNING.value,
        message=message,
        storyteller_id=storyteller_id,
    )
