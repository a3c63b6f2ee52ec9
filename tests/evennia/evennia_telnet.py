"""A minimal asyncio telnet client for tests: refuses all options, strips colour, reads by regex."""

from __future__ import annotations

import asyncio
import re
from types import TracebackType

IAC, DONT, DO, WONT, WILL, SB, SE = 255, 254, 253, 252, 251, 250, 240
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


class TelnetClient:
    """One telnet connection to 127.0.0.1.

    Every ``IAC WILL`` is answered with ``DONT`` and every ``IAC DO`` with ``WONT``, so the server
    falls back to plain text. Everything received is kept in `transcript`.
    """

    def __init__(self, port: int, *, timeout: float = 10.0) -> None:
        self._port = port
        self._timeout = timeout
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None
        self.transcript = ""
        self._read_upto = 0
        self._pending = b""

    async def __aenter__(self) -> TelnetClient:
        self._reader, self._writer = await asyncio.wait_for(
            asyncio.open_connection("127.0.0.1", self._port), self._timeout
        )
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    async def close(self) -> None:
        """Close the connection; safe to call twice."""
        writer, self._writer = self._writer, None
        if writer is not None:
            writer.close()
            try:
                await asyncio.wait_for(writer.wait_closed(), self._timeout)
            except (ConnectionError, TimeoutError):
                pass

    async def send_line(self, line: str) -> None:
        """Send one line of input."""
        assert self._writer is not None, "not connected"
        self._writer.write(line.encode() + b"\r\n")
        await self._writer.drain()

    async def read_until(self, pattern: str, *, within: float | None = None) -> str:
        """Read until `pattern` (a regex) matches text not yet consumed; return that text.

        Raises:
            TimeoutError: with the unconsumed text, when nothing matched `within` seconds.
        """
        regex = re.compile(pattern)
        try:
            async with asyncio.timeout(within or self._timeout):
                while True:
                    match = regex.search(self.transcript, self._read_upto)
                    if match:
                        seen = self.transcript[self._read_upto : match.end()]
                        self._read_upto = match.end()
                        return seen
                    await self._receive()
        except TimeoutError:
            unread = self.transcript[self._read_upto :]
            raise TimeoutError(f"no match for {pattern!r}; unread text: {unread!r}") from None

    async def _receive(self) -> None:
        assert self._reader is not None and self._writer is not None, "not connected"
        chunk = await self._reader.read(4096)
        if not chunk:
            raise ConnectionError("the server closed the telnet connection")
        data, replies = self._negotiate(self._pending + chunk)
        if replies:
            self._writer.write(replies)
            await self._writer.drain()
        text = data.decode("utf-8", errors="replace").replace("\r", "")
        self.transcript += _ANSI.sub("", text)

    def _negotiate(self, data: bytes) -> tuple[bytes, bytes]:
        """Split plain bytes from telnet commands; return (plain bytes, our refusals)."""
        out = bytearray()
        replies = bytearray()
        i = 0
        self._pending = b""
        while i < len(data):
            byte = data[i]
            if byte != IAC:
                out.append(byte)
                i += 1
                continue
            if i + 1 >= len(data):
                self._pending = data[i:]
                break
            command = data[i + 1]
            if command == IAC:
                out.append(IAC)
                i += 2
            elif command in (WILL, WONT, DO, DONT):
                if i + 2 >= len(data):
                    self._pending = data[i:]
                    break
                option = data[i + 2]
                if command == WILL:
                    replies += bytes((IAC, DONT, option))
                elif command == DO:
                    replies += bytes((IAC, WONT, option))
                i += 3
            elif command == SB:
                end = data.find(bytes((IAC, SE)), i + 2)
                if end < 0:
                    self._pending = data[i:]
                    break
                i = end + 2
            else:
                i += 2
        return bytes(out), bytes(replies)
