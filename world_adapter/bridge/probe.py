"""The conformance checker's tools: a raw frame connection, and plausible request parameters.

`Probe` sends and receives frames with a time limit per step and reports a close as `Closed`
(with the code the game sent). `sample_value` makes a value of any parameter type, so every
method of the protocol — including ones added later — can be called by the checker.
"""

from __future__ import annotations

import asyncio
import dataclasses
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from enum import Enum
from typing import Any, Union

import aiohttp

from world_adapter.bridge.messages import (
    Error,
    EventFrame,
    Frame,
    Ping,
    Pong,
    Request,
    Result,
    Subscribe,
    Subscribed,
    close_code_name,
    frame_type,
)
from world_adapter.bridge.methods import Method
from world_adapter.bridge.wire import BadFrame, encode_frame, parse_frame
from world_adapter.events import Cursor, WorldEvent
from world_adapter.replay import Gap


class CheckFailed(Exception):
    """The game did not do what the protocol says."""


@dataclass(frozen=True)
class Closed:
    """The game closed the connection."""

    code: int | None
    reason: str


class Probe:
    """A raw connection that sends and receives frames with a time limit per step."""

    def __init__(self, ws: aiohttp.ClientWebSocketResponse, seconds: float) -> None:
        self.ws = ws
        self.seconds = seconds
        self._ids = 0

    async def send(self, frame: Frame | str) -> None:
        await self.ws.send_str(frame if isinstance(frame, str) else encode_frame(frame))

    async def receive(self, seconds: float | None = None) -> Frame | Closed:
        try:
            async with asyncio.timeout(seconds or self.seconds):
                message = await self.ws.receive()
        except TimeoutError:
            raise CheckFailed(f"nothing arrived within {seconds or self.seconds:g} s") from None
        if message.type is aiohttp.WSMsgType.TEXT:
            try:
                return parse_frame(message.data)
            except BadFrame as exc:
                raise CheckFailed(f"the game sent a bad frame: {exc}") from None
        if message.type is aiohttp.WSMsgType.BINARY:
            raise CheckFailed("the game sent a binary frame")
        if message.type is aiohttp.WSMsgType.CLOSE:  # the code the game sent
            return Closed(int(message.data), str(message.extra or ""))
        return Closed(self.ws.close_code, "")

    async def expect(self, kind: type[Any] | tuple[type[Any], ...], what: str) -> Any:
        """The next frame of `kind`, answering pings on the way."""
        while True:
            frame = await self.receive()
            if isinstance(frame, kind):
                return frame
            if isinstance(frame, Ping):
                await self.send(Pong(frame.nonce))
            elif isinstance(frame, Closed):
                raise CheckFailed(f"closed ({close_code_name(frame.code)}) instead of {what}")
            elif not isinstance(frame, EventFrame | Pong):
                raise CheckFailed(f"got {frame_type(frame)} instead of {what}")

    async def expect_close(self) -> Closed:
        while True:
            frame = await self.receive()
            if isinstance(frame, Closed):
                return frame

    async def request(self, method: str, params: dict[str, Any]) -> Result | Error:
        self._ids += 1
        request_id = f"c-{self._ids}"
        await self.send(Request(request_id, method, params))
        while True:
            answer = await self.expect((Result, Error), f"an answer to {method}")
            if answer.id == request_id:
                return answer  # type: ignore[no-any-return]
            if answer.id is not None:
                raise CheckFailed(f"an answer carried id {answer.id!r}, expected {request_id!r}")

    async def subscribe(self, cells: list[int], after: Cursor | None) -> Subscribed:
        await self.send(Subscribe(tuple(cells), after))
        subscribed: Subscribed = await self.expect(Subscribed, "subscribed")
        return subscribed

    async def next_stream_frame(self, seconds: float) -> WorldEvent | Gap | None:
        """The next event or gap, or None when nothing came within `seconds`."""
        while True:
            try:
                frame = await self.receive(seconds)
            except CheckFailed:
                return None
            if isinstance(frame, EventFrame):
                return frame.event
            if isinstance(frame, Gap):
                return frame
            if isinstance(frame, Ping):
                await self.send(Pong(frame.nonce))
            elif isinstance(frame, Closed):
                raise CheckFailed(f"closed ({close_code_name(frame.code)}) during the stream")


def looks_up_one_id(spec: Method) -> bool:
    """A method like ``character(character_id) -> X | None``."""
    args = typing.get_args(spec.result)
    optional = types.NoneType in args
    return (
        optional
        and len(spec.params) == 1
        and spec.params[0].hint is int
        and spec.params[0].name.endswith("id")
    )


def sample_value(hint: Any, name: str, ids: Mapping[str, Any]) -> Any:
    """A plausible value of type `hint` for a parameter called `name`."""
    origin = typing.get_origin(hint)
    if origin is Union or origin is types.UnionType:
        options = [a for a in typing.get_args(hint) if a is not types.NoneType]
        return sample_value(options[0], name, ids)
    if hint is int:
        if "room" in name:
            return ids.get("room", 1)
        if "character" in name:
            return ids.get("character", 1)
        return 1
    if hint is str:
        return "conformance-check"
    if hint is bool:
        return False
    if hint is float:
        return 60.0
    if hint is timedelta:
        return timedelta(hours=1)
    if isinstance(hint, type) and issubclass(hint, Enum):
        return next(iter(hint))
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        hints = typing.get_type_hints(hint)
        values = {
            f.name: sample_value(hints[f.name], f.name, ids)
            for f in dataclasses.fields(hint)
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        }
        return hint(**values)
    if origin is not None:
        args = typing.get_args(hint)
        return [sample_value(args[0], name, ids)] if args else []
    return None
