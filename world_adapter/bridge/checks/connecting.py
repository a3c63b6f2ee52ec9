"""Conformance checks of the connection itself: handshake, refusals, pings, limits, bad frames.

A hello with the right token and version is welcomed with the protocol version; a wrong token
or version is refused with its close code; a ping is answered with a pong carrying its nonce;
a frame over the size limit closes the connection (1009, or a dropped connection); and frames
that are not valid JSON, not objects or of an unknown type are each answered with a
``bad_frame`` error while the connection stays usable.
"""

from __future__ import annotations

import secrets

import aiohttp

from world_adapter.bridge.checks.context import CheckContext
from world_adapter.bridge.messages import (
    MAX_FRAME_BYTES,
    PROTOCOL_VERSION,
    CloseCode,
    Error,
    ErrorCode,
    Hello,
    Ping,
    Pong,
    close_code_name,
    frame_type,
)
from world_adapter.bridge.probe import CheckFailed, Closed

ABNORMAL_CLOSURE = 1006
"""The close code a client reports for a connection that ended without a close frame."""


class ConnectionChecks(CheckContext):
    """The checks of the handshake, pings, the frame size limit and bad frames."""

    # ------------------------------------------------------------------ handshake

    async def handshake(self) -> str:
        probe = await self._session_probe()
        await probe.ws.close()
        welcome = self._welcome
        assert welcome is not None
        if welcome.protocol != PROTOCOL_VERSION:
            raise CheckFailed(f"welcome says protocol {welcome.protocol}")
        return f"game {welcome.game!r}, head {welcome.head}"

    async def _refused(self, hello: Hello, expected: CloseCode) -> str:
        probe = await self._open()
        await probe.send(hello)
        closed = await probe.receive()
        if not isinstance(closed, Closed):
            await probe.ws.close()
            raise CheckFailed(
                f"answered {frame_type(closed)} instead of closing with {close_code_name(expected)}"
            )
        if closed.code != expected:
            raise CheckFailed(
                f"expected close {close_code_name(expected)}, got {close_code_name(closed.code)}"
            )
        return f"closed with {close_code_name(closed.code)}"

    async def bad_token(self) -> str:
        wrong = self._token + "-" + secrets.token_hex(4)
        return await self._refused(Hello(PROTOCOL_VERSION, wrong), CloseCode.AUTH_FAILED)

    async def bad_version(self) -> str:
        return await self._refused(Hello(999, self._token), CloseCode.UNSUPPORTED_VERSION)

    async def ping(self) -> str:
        probe = await self._session_probe()
        try:
            nonce = "conformance-" + secrets.token_hex(4)
            await probe.send(Ping(nonce))
            pong = await probe.expect(Pong, "pong")
            if pong.nonce != nonce:
                raise CheckFailed(f"pong carried nonce {pong.nonce!r}, not {nonce!r}")
        finally:
            await probe.ws.close()
        return "pong with the same nonce"

    # ------------------------------------------------------------------ limits and bad frames

    async def oversize(self) -> str:
        # 1006 is what a WebSocket library reports when the TCP connection ended with no close
        # frame: the game dropped the connection on the oversize frame, which is a refusal.
        probe = await self._session_probe()
        padding = "x" * (MAX_FRAME_BYTES + 1)
        try:
            try:
                await probe.send(f'{{"type": "ping", "nonce": "n", "padding": "{padding}"}}')
            except (ConnectionError, aiohttp.ClientError):
                # The game may close as soon as it reads the frame's length, while the rest of
                # the frame is still being sent; the close frame is then lost with it.
                if probe.ws.close_code in (None, ABNORMAL_CLOSURE):
                    return "the connection was closed while the oversize frame was being sent"
            closed = await probe.expect_close()
        finally:
            await probe.ws.close()
        if closed.code in (None, ABNORMAL_CLOSURE):
            return "the connection was closed while the oversize frame was being sent"
        if closed.code != CloseCode.TOO_BIG:
            raise CheckFailed(f"expected close 1009, got {close_code_name(closed.code)}")
        return "closed with 1009"

    async def malformed(self) -> str:
        probe = await self._session_probe()
        try:
            for text in ("this is not JSON", '{"type": "no_such_frame"}', "[1, 2, 3]"):
                await probe.send(text)
                error = await probe.expect(Error, f"an error for {text!r}")
                if error.code is not ErrorCode.BAD_FRAME or error.id is not None:
                    raise CheckFailed(f"{text!r} got {error.code} with id {error.id!r}")
            await probe.send(Ping("after-bad-frames"))
            await probe.expect(Pong, "pong after the bad frames")
        finally:
            await probe.ws.close()
        return "each answered with bad_frame; the connection stays usable"
