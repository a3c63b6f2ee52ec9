"""What the conformance checks share: the game's address, what was learnt of it, connections.

`CheckContext` holds the options of a run and what the checks learn on the way (the welcome,
the rooms the game reports, sample ids), opens a raw `Probe` past a successful handshake, calls
a request method with its result decoded, and finds the rooms to subscribe to. A check that
cannot run against the game as it is raises `CheckSkipped`; one that finds a fault raises
`CheckFailed`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

import aiohttp

from world_adapter.bridge.messages import (
    MAX_FRAME_BYTES,
    PROTOCOL_VERSION,
    Error,
    ErrorCode,
    Hello,
    Welcome,
)
from world_adapter.bridge.methods import world_methods
from world_adapter.bridge.probe import CheckFailed, Probe
from world_adapter.codec import CodecError


class CheckSkipped(Exception):
    """The check cannot run against this game as it is now."""


class CheckContext:
    """The state and tools the checks of one run share.

    Args:
        url: The game's bridge endpoint.
        token: The shared secret.
        prog: A harmless prog to run twice for the idempotency check (None: skip it).
        prog_arguments: Its arguments by parameter name.
        seconds: Time limit of each step.
        idle_seconds: How long the resume check waits for more events.
    """

    def __init__(
        self,
        url: str,
        token: str,
        *,
        prog: str | None = None,
        prog_arguments: Mapping[str, Any] | None = None,
        seconds: float = 5.0,
        idle_seconds: float = 1.0,
    ) -> None:
        self.url = url
        self._token = token
        self._prog = prog
        self._prog_arguments = dict(prog_arguments or {})
        self._seconds = seconds
        self._idle = idle_seconds
        self._session: aiohttp.ClientSession | None = None
        self._welcome: Welcome | None = None
        self._cells: list[int] = []
        self._sample_ids: dict[str, Any] = {}

    async def _open(self) -> Probe:
        """A new connection to the game, before any frame."""
        assert self._session is not None
        async with asyncio.timeout(self._seconds):
            ws = await self._session.ws_connect(self.url, max_msg_size=MAX_FRAME_BYTES)
        return Probe(ws, self._seconds)

    async def _session_probe(self) -> Probe:
        """A connection past a successful handshake."""
        probe = await self._open()
        await probe.send(Hello(PROTOCOL_VERSION, self._token, "storyteller bridge check"))
        self._welcome = await probe.expect(Welcome, "welcome")
        return probe

    async def _call(
        self, probe: Probe, name: str, params: dict[str, Any], *, refusal_ok: bool = False
    ) -> Any:
        """Call method `name` and decode its result (None for a refusal when `refusal_ok`)."""
        spec = world_methods()[name]
        answer = await probe.request(name, params)
        if isinstance(answer, Error):
            if refusal_ok and answer.code is ErrorCode.COMMAND_FAILED:
                return None
            raise CheckFailed(f"{name} answered {answer.code}: {answer.message}")
        try:
            return spec.decode_result(answer.result)
        except CodecError as exc:
            raise CheckFailed(f"{name} answered a malformed result: {exc}") from None

    async def _cells_or_skip(self) -> list[int]:
        """The rooms of the game's zones, asked once; skips the check when there are none."""
        if not self._cells:
            probe = await self._session_probe()
            try:
                zones = await self._call(probe, "zones", {})
            finally:
                await probe.ws.close()
            self._cells = sorted({cell for cells in zones.values() for cell in cells})
        if not self._cells:
            raise CheckSkipped("the game reports no zones, so no rooms to subscribe to")
        return self._cells
