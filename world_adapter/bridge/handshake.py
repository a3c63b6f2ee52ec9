"""Opening and closing the daemon's WebSocket to a game, below `BridgeConnection`.

`handshake` sends hello on a fresh socket and returns the game's welcome, or raises the typed
error the connection would record: `FatalStreamError` when the game refuses the token or the
protocol version, `TransientStreamError` for anything worth retrying. `closed_error` classifies
a close code the same way wherever a connection ends, and `close_quietly` closes a socket
within a time limit whatever state it is in.
"""

from __future__ import annotations

import asyncio

import aiohttp

from world_adapter.bridge.messages import (
    FATAL_CLOSE_CODES,
    PROTOCOL_VERSION,
    CloseCode,
    Hello,
    Welcome,
    close_code_name,
    frame_type,
)
from world_adapter.bridge.timing import BridgeClock, BridgeTimings, wait_or_timeout
from world_adapter.bridge.wire import BadFrame, encode_frame, parse_frame
from world_adapter.errors import FatalStreamError, StreamError, TransientStreamError


def closed_error(code: int | None, reason: str) -> StreamError:
    """The error for a connection the game closed with `code`: fatal or worth retrying."""
    detail = f"close code {close_code_name(code)}" + (f": {reason}" if reason else "")
    if code == CloseCode.AUTH_FAILED:
        return FatalStreamError(f"the game refused the bridge token ({detail})")
    if code in FATAL_CLOSE_CODES:
        return FatalStreamError(f"the game does not speak protocol {PROTOCOL_VERSION} ({detail})")
    return TransientStreamError(f"the game closed the connection ({detail})")


async def handshake(
    ws: aiohttp.ClientWebSocketResponse,
    token: str,
    client_name: str,
    clock: BridgeClock,
    timings: BridgeTimings,
) -> Welcome:
    """Say hello on `ws` as `client_name` and return the game's welcome.

    Raises:
        FatalStreamError: If the game refuses the token or the protocol version.
        TransientStreamError: If no welcome comes in time or the handshake fails otherwise.
    """
    try:
        await ws.send_str(encode_frame(Hello(PROTOCOL_VERSION, token, client_name)))
    except (aiohttp.ClientError, ConnectionError, RuntimeError) as exc:
        raise TransientStreamError(f"cannot send hello: {exc}") from exc
    receive = asyncio.ensure_future(ws.receive())
    try:
        message = await wait_or_timeout(receive, clock, timings.handshake_seconds)
    except TimeoutError:
        await close_quietly(ws, CloseCode.SILENT, timings.close_seconds, "no welcome")
        raise TransientStreamError(
            f"no welcome from the game within {timings.handshake_seconds:g} seconds"
        ) from None
    finally:
        receive.cancel()
        await asyncio.gather(receive, return_exceptions=True)
    if message.type is aiohttp.WSMsgType.TEXT:
        try:
            frame = parse_frame(message.data)
        except BadFrame as exc:
            raise TransientStreamError(f"the game answered hello with a bad frame: {exc}") from None
        if not isinstance(frame, Welcome):
            raise TransientStreamError(f"the game answered hello with {frame_type(frame)}")
        if frame.protocol != PROTOCOL_VERSION:
            raise FatalStreamError(
                f"the game welcomed protocol {frame.protocol}, not {PROTOCOL_VERSION}"
            )
        return frame
    if message.type is aiohttp.WSMsgType.CLOSE:
        raise closed_error(ws.close_code, message.extra or "")
    if ws.close_code is not None:
        raise closed_error(ws.close_code, "")
    raise TransientStreamError(f"the connection failed during the handshake: {ws.exception()}")


async def close_quietly(
    ws: aiohttp.ClientWebSocketResponse, code: int, seconds: float, reason: str = ""
) -> None:
    """Close `ws` with `code`, giving up after `seconds`; never raises for a broken socket."""
    try:
        async with asyncio.timeout(seconds):
            await ws.close(code=code, message=reason.encode())
    except (TimeoutError, aiohttp.ClientError, OSError):
        pass  # the socket is being dropped either way
