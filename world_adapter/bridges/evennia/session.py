"""One bridge connection, sans I/O: frames in, frames out (docs/bridge-protocol.md, version 1).

Pure Python, so the protocol logic is tested without a network or an engine. The engine glue
feeds received text to `BridgeSession.received`, tells it when the socket's buffer is full or
drained (`pause` / `resume`) and when the connection is gone (`closed`), and supplies:

* ``send_text(text)`` and ``close(code, reason)``;
* ``call_later(seconds, fn)`` returning something with ``cancel()`` (for the hello and idle
  timeouts);
* the world queries (``methods``: name → ``fn(params) -> JSON``, see `params`) and a
  `ProgExecutor`;
* optionally the Server's `InvocationDesk`, to which the daemon's ``invoked`` and
  ``invoke_outcome`` frames go (``send_invoke`` carries the game's ``invoke`` frames).

In-game admin commands sent to the daemon (``send_admin``) wait for their answers in
`admincommands`.
"""

from __future__ import annotations

import hmac
import json
import logging
from collections.abc import Callable, Mapping
from typing import Any, TypeGuard

from .admincommands import AdminCommands, AdminReply
from .eventlog import EventLog, Frame, gap_frame
from .executor import ProgExecutor
from .invocations import BadFrame, Cancellable, InvocationDesk
from .params import BadParams, CommandFailed, Method, prog_call_params
from .registry import ProgError
from .replaybuffer import Cursor

log = logging.getLogger(__name__)

PROTOCOL_VERSION = 1
MAX_FRAME_BYTES = 1_048_576
HELLO_SECONDS = 10.0
IDLE_SECONDS = 60.0
MAX_ID_CHARS = 64
MAX_EPOCH_CHARS = 200

CLOSE_IDLE = 4000
CLOSE_BAD_TOKEN = 4001
CLOSE_BAD_VERSION = 4002
CLOSE_HANDSHAKE = 4003


def _is_id(value: Any) -> TypeGuard[str]:
    return isinstance(value, str) and 1 <= len(value) <= MAX_ID_CHARS


def _is_cursor(value: Any) -> bool:
    return (
        isinstance(value, dict)
        and isinstance(value.get("epoch"), str)
        and 1 <= len(value["epoch"]) <= MAX_EPOCH_CHARS
        and isinstance(value.get("seq"), int)
        and not isinstance(value["seq"], bool)
        and value["seq"] >= 0
    )


class BridgeSession:
    """The protocol state of one connection."""

    def __init__(
        self,
        *,
        token: str,
        game: str,
        events: EventLog,
        methods: Mapping[str, Method],
        executor: ProgExecutor,
        send_text: Callable[[str], None],
        close: Callable[[int, str], None],
        call_later: Callable[[float, Callable[[], None]], Cancellable],
        invocations: InvocationDesk | None = None,
    ) -> None:
        self._token = token.encode()
        self._game = game
        self._events = events
        self._methods = methods
        self._executor = executor
        self._send_text = send_text
        self._close = close
        self._call_later = call_later
        self._invocations = invocations
        self.state = "hello"
        """``hello`` (waiting for it), ``open`` or ``closed``."""
        self.bad_frames = 0
        self._paused = False
        self._pumping = False
        self._cells: frozenset[int] | None = None
        self._position = 0
        self._timer: Cancellable | None = None
        self._admin = AdminCommands(self._send, call_later)

    # ------------------------------------------------------------------ lifecycle

    def opened(self) -> None:
        """The WebSocket is open: the peer has `HELLO_SECONDS` to say hello."""
        self._timer = self._call_later(HELLO_SECONDS, self._hello_timeout)

    def closed(self) -> None:
        """The connection is gone: stop everything it started."""
        if self.state == "closed":
            return
        self.state = "closed"
        self._events.remove_listener(self.pump)
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._admin.closed()
        if self._invocations is not None:
            self._invocations.connection_closed(self)

    def pause(self) -> None:
        """The socket's send buffer is full: hold events until `resume`."""
        self._paused = True

    def resume(self) -> None:
        """The send buffer drained: send the events held back."""
        self._paused = False
        self.pump()

    def _hello_timeout(self) -> None:
        self._timer = None
        self._shut(CLOSE_HANDSHAKE, "no hello within 10 seconds")

    def _idle_timeout(self) -> None:
        self._timer = None
        self._shut(CLOSE_IDLE, "nothing received for 60 seconds")

    def _shut(self, code: int, reason: str) -> None:
        if self.state != "closed":
            self._close(code, reason)
            self.closed()

    # ------------------------------------------------------------------ receiving

    def received(self, text: str) -> None:
        """One text frame from the daemon."""
        if self.state == "closed":
            return
        if self.state == "hello":
            self._hello(text)
            return
        if self._timer is not None:
            self._timer.cancel()
        self._timer = self._call_later(IDLE_SECONDS, self._idle_timeout)
        try:
            frame = json.loads(text)
        except ValueError:
            self._bad_frame("Frame is not valid JSON.")
            return
        if not isinstance(frame, dict):
            self._bad_frame("Frame is not a JSON object.")
            return
        kind = frame.get("type")
        handler = {
            "ping": self._on_ping,
            "pong": self._ignore,
            "error": self._on_answer,
            "result": self._on_answer,
            "subscribe": self._on_subscribe,
            "request": self._on_request,
            "invoked": self._on_invocation_report,
            "invoke_outcome": self._on_invocation_report,
        }.get(kind if isinstance(kind, str) else "")
        if handler is None:
            self._bad_frame(f"Unknown frame type {kind!r}." if kind else "Frame has no type.")
            return
        handler(frame)

    def received_binary(self) -> None:
        """A binary frame: not part of the protocol."""
        if self.state == "hello":
            self._shut(CLOSE_HANDSHAKE, "the first frame must be a hello")
        elif self.state == "open":
            self._bad_frame("Binary frames are not allowed.")

    def _hello(self, text: str) -> None:
        try:
            frame = json.loads(text)
        except ValueError:
            frame = None
        if not (
            isinstance(frame, dict)
            and frame.get("type") == "hello"
            and isinstance(frame.get("token"), str)
            and isinstance(frame.get("protocol"), int)
        ):
            self._shut(CLOSE_HANDSHAKE, "the first frame must be a hello")
            return
        if not hmac.compare_digest(frame["token"].encode(), self._token):
            log.warning("refused a connection: wrong token")
            self._shut(CLOSE_BAD_TOKEN, "authentication failed")
            return
        if frame["protocol"] != PROTOCOL_VERSION or isinstance(frame["protocol"], bool):
            log.warning("refused a connection: protocol %r", frame["protocol"])
            self._shut(CLOSE_BAD_VERSION, f"supported protocol versions: {PROTOCOL_VERSION}")
            return
        log.info("connection from %s", str(frame.get("client") or "a daemon")[:80])
        if self._timer is not None:
            self._timer.cancel()
        self._timer = self._call_later(IDLE_SECONDS, self._idle_timeout)
        self.state = "open"
        self._send(
            {
                "type": "welcome",
                "protocol": PROTOCOL_VERSION,
                "game": self._game,
                "head": self._events.head,
            }
        )

    def _ignore(self, frame: dict[str, Any]) -> None:
        """Pongs and errors from the daemon are never answered."""

    # ------------------------------------------------------------------ admin commands

    @property
    def subscribed(self) -> bool:
        """Whether the daemon subscribed on this connection (a daemon's stream, not a probe)."""
        return self.state == "open" and self._cells is not None

    def send_admin(
        self,
        command: str,
        verb: str,
        args: list[str],
        caller: str,
        level: str,
        reply: AdminReply,
    ) -> bool:
        """Send an in-game admin command to the daemon; False when the connection is not open.

        `reply` gets the daemon's text, or an error line (the daemon's, or a timeout after
        `admincommands.ADMIN_SECONDS`, or the connection closing first).
        """
        return self.state == "open" and self._admin.send(command, verb, args, caller, level, reply)

    def _on_answer(self, frame: dict[str, Any]) -> None:
        """A result or error frame: the answer to an admin command (errors about the game's own
        frames, with no such id, need nothing)."""
        if not self._admin.answered(frame) and frame.get("type") == "result":
            self._bad_frame("A result frame answers nothing the game sent.")

    # ------------------------------------------------------------------ invocations

    def send_invoke(self, frame: Frame) -> bool:
        """Send the game's ``invoke`` frame; False when the connection is not open."""
        return self.state == "open" and self._send(frame)

    def _on_invocation_report(self, frame: dict[str, Any]) -> None:
        """The daemon's ``invoked`` or ``invoke_outcome``: to the desk, which routes it by id
        (one for an id the game does not know is ignored, as the protocol says)."""
        if self._invocations is None:
            return
        try:
            if frame["type"] == "invoked":
                self._invocations.answered(frame)
            else:
                self._invocations.outcome_arrived(frame)
        except BadFrame as exc:
            request_id = frame.get("id")
            self._bad_frame(f"{frame['type']}: {exc}", request_id if _is_id(request_id) else None)

    def _on_ping(self, frame: dict[str, Any]) -> None:
        nonce = frame.get("nonce")
        if not _is_id(nonce):
            self._bad_frame("A ping needs a nonce of 1-64 characters.")
            return
        self._send({"type": "pong", "nonce": nonce})

    # ------------------------------------------------------------------ events

    def _can_send(self) -> bool:
        return not self._paused and self.state == "open"

    def _on_subscribe(self, frame: dict[str, Any]) -> None:
        cells, after = frame.get("cells"), frame.get("after")
        if not isinstance(cells, list) or not all(
            isinstance(c, int) and not isinstance(c, bool) for c in cells
        ):
            self._bad_frame("subscribe needs 'cells', an array of integers.")
            return
        if after is not None and not _is_cursor(after):
            self._bad_frame("subscribe needs 'after', a cursor or null.")
            return
        self._events.remove_listener(self.pump)
        start = self._events.start(None if after is None else Cursor(after["epoch"], after["seq"]))
        self._cells = frozenset(cells)
        self._position = start.position
        self._send({"type": "subscribed", "cells": cells, "head": self._events.head})
        log.info(
            "subscribed to %d rooms after %s",
            len(self._cells),
            "now" if after is None else f"{after['epoch']}:{after['seq']}",
        )
        if start.gap is not None:
            self._send(gap_frame(start.gap))
        self._events.add_listener(self.pump)
        self.pump()

    def pump(self) -> None:
        """Send the subscription's events after its position until paused or caught up."""
        if self._pumping or self._cells is None:
            return
        self._pumping = True
        try:
            events = self._events
            while self._can_send():
                lost = events.behind(self._position)
                if lost is not None:
                    self._send(gap_frame(lost))
                    self._position = lost.resume_after.seq
                following = events.held_after(self._position, 1)
                if not following:
                    break
                [(self._position, event)] = following
                if event.get("cell_id") in self._cells:
                    self._send(event)
        finally:
            self._pumping = False

    # ------------------------------------------------------------------ requests

    def _on_request(self, frame: dict[str, Any]) -> None:
        request_id, method, params = frame.get("id"), frame.get("method"), frame.get("params", {})
        if not _is_id(request_id):
            self._bad_frame("A request needs an id of 1-64 characters.")
            return
        if not isinstance(method, str) or not isinstance(params, dict):
            self._bad_frame("A request needs a 'method' string and a 'params' object.", request_id)
            return
        if method == "execute_prog":
            self._execute_prog(request_id, params)
            return
        handler = self._methods.get(method)
        if handler is None:
            self._error(request_id, "unknown_method", f"There is no method '{method}'.")
            return
        try:
            result = handler(params)
        except BadParams as exc:
            self._error(request_id, "bad_params", str(exc))
        except CommandFailed as exc:
            self._error(request_id, "command_failed", str(exc))
        except Exception:
            log.exception("bridge method %s failed", method)
            self._error(request_id, "internal", f"The game failed answering '{method}'.")
        else:
            self._result(request_id, result)

    def _execute_prog(self, request_id: str, params: dict[str, Any]) -> None:
        try:
            prog, arguments, key = prog_call_params(params)
        except BadParams as exc:
            self._error(request_id, "bad_params", str(exc))
            return

        def reply(outcome: dict[str, Any] | None, error: ProgError | None) -> None:
            if self.state != "open":
                return
            if error is not None:
                self._error(request_id, "command_failed", str(error))
            else:
                self._result(request_id, outcome)

        self._executor.execute(prog, arguments, key, reply)

    # ------------------------------------------------------------------ sending

    def _result(self, request_id: str, result: Any) -> None:
        if not self._send({"type": "result", "id": request_id, "result": result}):
            self._error(request_id, "internal", "The answer is larger than 1 MiB.")

    def _error(self, request_id: str | None, code: str, message: str) -> None:
        self._send({"type": "error", "id": request_id, "code": code, "message": message})

    def _bad_frame(self, message: str, request_id: str | None = None) -> None:
        self.bad_frames += 1
        self._error(request_id, "bad_frame", message)

    def _send(self, frame: Frame) -> bool:
        """Send a frame; False (and nothing sent) when it would exceed the size limit."""
        if self.state == "closed":
            return False
        text = json.dumps(frame, ensure_ascii=False, separators=(",", ":"))
        if len(text.encode()) > MAX_FRAME_BYTES:
            log.warning("bridge: not sending a %s frame over 1 MiB", frame.get("type"))
            return False
        self._send_text(text)
        return True
