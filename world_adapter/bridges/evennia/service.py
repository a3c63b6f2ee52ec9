"""The bridge's WebSocket server inside Evennia's Server process (a Server services plugin).

Add ``"storyteller_bridge.service"`` to ``SERVER_SERVICES_PLUGIN_MODULES``; Evennia then calls
`start_plugin_services` at Server start. Everything runs on the Twisted reactor thread: frames
are handled as they arrive, world queries read the Django ORM as Evennia's own commands do, and
progs run through ``maybeDeferred`` with a timeout, so a prog may return a Deferred and nothing
here blocks the reactor.

Settings (``server/conf/settings.py``):

=====================================  ================================================
``STORYTELLER_BRIDGE_PORT``            required; the TCP port to listen on
``STORYTELLER_BRIDGE_INTERFACE``       ``"127.0.0.1"``
``STORYTELLER_BRIDGE_TOKEN_ENV``       ``"STORYTELLER_BRIDGE_TOKEN"``: the environment variable
                                       holding the shared secret (never put it in settings)
``STORYTELLER_BRIDGE_PROG_MODULES``    ``[]``: modules whose ``@storyteller_prog`` functions
                                       are served
``STORYTELLER_BRIDGE_REPLAY_EVENTS``   ``10000``: events kept for resuming daemons
``STORYTELLER_BRIDGE_PROG_SECONDS``    ``8``: a prog that has not finished by then fails
``STORYTELLER_BRIDGE_STATE_DIR``       ``server/storyteller`` in the game dir: the event and
                                       prog-outcome journals (see `journal`)
``STORYTELLER_BRIDGE_OUTCOME_SECONDS`` ``3600``: prog outcomes kept at least this long
``STORYTELLER_BRIDGE_SYNC_EVENTS``     ``True``: ``fsync`` each event (off: a power loss may
                                       lose the newest events; a reload or crash never does)
``STORYTELLER_BRIDGE_ZONE_CATEGORY``   ``"zone"``: tag category naming a room's zone
``STORYTELLER_BRIDGE_LANDMARK_CATEGORY`` ``"landmark"``: tag category naming landmarks
=====================================  ================================================

A quest script or command asks a storyteller for a turn with `invoke_storyteller`.
"""

from __future__ import annotations

import importlib
import itertools
import logging
import os
import secrets
from collections.abc import Callable
from typing import Any

from autobahn.twisted.websocket import WebSocketServerFactory, WebSocketServerProtocol
from django.conf import settings
from evennia.utils import logger
from twisted.application import internet
from twisted.internet import defer, reactor

from . import state, worldview
from .executor import ProgExecutor
from .invocations import InvocationCallback, InvocationDesk
from .params import (
    int_list_param,
    int_param,
    optional_int_param,
    path_rule_param,
    seconds_param,
    str_param,
)
from .pathing import MAX_STEPS
from .registry import REGISTRY
from .session import MAX_FRAME_BYTES, BridgeSession
from .tap import prog_origin

DEFAULT_TOKEN_ENV = "STORYTELLER_BRIDGE_TOKEN"  # noqa: S105 - a variable name, not a secret
_OPENED = itertools.count(1)
CLOSE_SECONDS = 1.0
"""How long a stopping Server waits for daemons to acknowledge its close frames."""


class _EvenniaLog(logging.Handler):
    """Sends this package's standard-library log records to Evennia's server log."""

    def emit(self, record: logging.LogRecord) -> None:
        text = f"storyteller bridge: {record.getMessage()}"
        if record.exc_info:
            text += "\n" + logging.Formatter().formatException(record.exc_info)
        if record.levelno >= logging.ERROR:
            logger.log_err(text)
        elif record.levelno >= logging.WARNING:
            logger.log_warn(text)
        else:
            logger.log_info(text)


def _zones(params: dict[str, Any]) -> dict[str, list[int]]:
    return {str(zone): rooms for zone, rooms in worldview.zones().items()}


def _path(params: dict[str, Any]) -> dict[str, Any]:
    rule = path_rule_param(params, "rule")
    max_exits = optional_int_param(params, "max_exits")
    return worldview.room_path(
        int_param(params, "origin_room_id"),
        int_param(params, "destination_room_id"),
        character_id=rule["character_id"],
        character_must_cross=rule["character_must_cross"],
        max_exits=MAX_STEPS if max_exits is None else max_exits,
    )


def _calendar(params: dict[str, Any]) -> dict[str, Any] | None:
    return worldview.calendar(str_param(params, "ref"), optional_int_param(params, "year"))


def _no_params(fn: Callable[[], Any]) -> Callable[[dict[str, Any]], Any]:
    def method(params: dict[str, Any]) -> Any:
        return fn()

    return method


METHODS: dict[str, Callable[[dict[str, Any]], Any]] = {
    "zones": _zones,
    "online_players": _no_params(worldview.online_players),
    "character": lambda p: worldview.character_info(int_param(p, "character_id")),
    "room": lambda p: worldview.room_info(int_param(p, "room_id")),
    "entity": lambda p: worldview.entity_info(str_param(p, "kind"), int_param(p, "entity_id")),
    "progs": _no_params(REGISTRY.catalogue),
    "landmarks": _no_params(worldview.landmarks),
    "landmark": lambda p: worldview.landmark(str_param(p, "name")),
    "path": _path,
    "character_plan": lambda p: worldview.character_plan(int_param(p, "character_id")),
    "recent_plans": lambda p: worldview.recent_plans(seconds_param(p, "within")),
    "room_times": lambda p: worldview.room_times(int_list_param(p, "room_ids")),
    "calendar": _calendar,
}
"""The request methods of the protocol (``execute_prog`` is the session's own)."""


def _invoke(
    call: Callable[[], Any],
    on_value: Callable[[Any], None],
    on_error: Callable[[BaseException], None],
) -> None:
    """Run a prog on the reactor thread; its room messages are marked as the storyteller's."""

    def run() -> Any:
        with prog_origin():
            return call()

    seconds = float(getattr(settings, "STORYTELLER_BRIDGE_PROG_SECONDS", 8))
    deferred = defer.maybeDeferred(run)
    deferred.addTimeout(seconds, reactor)

    def failed(failure: Any) -> None:
        if failure.check(defer.TimeoutError, defer.CancelledError):
            on_error(TimeoutError())
        else:
            on_error(failure.value)

    deferred.addCallbacks(on_value, failed)
    deferred.addErrback(lambda f: logger.log_err(f"storyteller bridge: {f.getTraceback()}"))


class BridgeProtocol(WebSocketServerProtocol):
    """One daemon connection; the protocol itself lives in `BridgeSession`."""

    session: BridgeSession | None = None
    opened = 0
    """The order in which connections opened."""

    def onOpen(self) -> None:
        factory = self.factory
        self.opened = next(_OPENED)
        self.session = BridgeSession(
            token=factory.token,
            game=str(getattr(settings, "SERVERNAME", "")),
            events=state.event_log(),
            methods=METHODS,
            executor=factory.executor,
            send_text=lambda text: self.sendMessage(text.encode(), isBinary=False),
            close=lambda code, reason: self.sendClose(code=code, reason=reason),
            call_later=reactor.callLater,
            invocations=INVOCATIONS,
        )
        # Twisted tells a streaming producer when the socket's buffer fills and drains: that is
        # the back-pressure that holds events back for a slow daemon.
        self.transport.registerProducer(self, True)
        factory.connections.add(self)
        self.session.opened()

    def onMessage(self, payload: bytes, isBinary: bool) -> None:
        if self.session is None:
            return
        if isBinary:
            self.session.received_binary()
        else:
            self.session.received(payload.decode("utf-8"))

    def onClose(self, wasClean: bool, code: int | None, reason: str | None) -> None:
        self.factory.connections.discard(self)
        if self.session is not None:
            self.session.closed()

    # IPushProducer
    def pauseProducing(self) -> None:
        if self.session is not None:
            self.session.pause()

    def resumeProducing(self) -> None:
        if self.session is not None:
            self.session.resume()

    def stopProducing(self) -> None:
        if self.session is not None:
            self.session.closed()


class BridgeFactory(WebSocketServerFactory):
    """Makes `BridgeProtocol`s that share the token and the prog executor."""

    protocol = BridgeProtocol

    def __init__(self, token: str, executor: ProgExecutor) -> None:
        super().__init__()
        self.token = token
        self.executor = executor
        self.connections: set[BridgeProtocol] = set()
        self.setProtocolOptions(
            maxMessagePayloadSize=MAX_FRAME_BYTES,
            maxFramePayloadSize=MAX_FRAME_BYTES,
            failByDrop=False,  # close with 1009 on an oversized frame rather than drop
            openHandshakeTimeout=10,
        )


class BridgeService(internet.TCPServer):
    """The listening port; on Server shutdown or reload it says goodbye (1001) to every daemon."""

    def __init__(self, port: int, factory: BridgeFactory, interface: str) -> None:
        super().__init__(port, factory, interface=interface)
        self.bridge_factory = factory

    def stopService(self) -> Any:
        # Twisted waits for this Deferred before it stops the reactor, so the close frames are
        # sent rather than dropped with the sockets (bounded: a peer may never answer).
        closing = []
        for connection in list(self.bridge_factory.connections):
            try:
                # sendClose() only takes application codes; 1001 "going away" is a protocol one.
                connection.sendCloseFrame(code=1001, reasonUtf8=b"the game is going down")
            except Exception:
                logger.log_trace("storyteller bridge: could not close a connection")
            else:
                closing.append(connection.is_closed)
        stopped = super().stopService()
        goodbyes = defer.DeferredList(closing, consumeErrors=True)
        goodbyes.addTimeout(CLOSE_SECONDS, reactor)
        goodbyes.addErrback(lambda failure: None)
        return defer.DeferredList([d for d in (stopped, goodbyes) if d is not None])


_factory: BridgeFactory | None = None
"""The listening bridge of this Server process (None until it listens)."""


def _open_sessions() -> list[BridgeSession]:
    """The open daemon connections' sessions, the running daemon's stream connection first: it
    subscribes and stays, while tools such as `storyteller bridge check` connect for a moment."""
    connections = sorted(
        [] if _factory is None else _factory.connections,
        key=lambda c: (not (c.session and c.session.subscribed), c.opened),
    )
    return [c.session for c in connections if c.session is not None]


def _send_invoke(frame: dict[str, Any]) -> BridgeSession | None:
    for session in _open_sessions():
        if session.send_invoke(frame):
            return session
    return None


INVOCATIONS = InvocationDesk(
    boot=secrets.token_hex(6), send=_send_invoke, call_later=reactor.callLater
)
"""This Server process's invocations, waiting for the daemon's answers (a new boot id each
start, so request ids never repeat across reloads and restarts)."""


def _object_id(value: Any) -> Any:
    """A game object's dbref number; anything else as it is (`invoke_frame` checks it)."""
    return getattr(value, "id", value)


def invoke_storyteller(
    storyteller: str | int,
    text: str,
    character: Any = None,
    room: Any = None,
    callback: InvocationCallback | None = None,
    request_id: str | None = None,
) -> str:
    """Ask a storyteller (its name or id) for a turn about `text`; returns the request id.

    `character` and `room` (game objects or their ids) say whom and where it concerns.
    `callback` is called on the reactor thread with an `invocations.Invoked` (accepted, or
    refused with a reason: at once when no daemon is connected), then, when accepted, with an
    `invocations.InvokeOutcome` once the turn has ended. Pass an earlier `request_id` to ask
    about that invocation again: nothing runs twice.

    Raises:
        ValueError: A field does not fit the protocol (one line naming it).
    """
    return INVOCATIONS.invoke(
        storyteller,
        text,
        character_id=_object_id(character),
        room_id=_object_id(room),
        callback=callback,
        request_id=request_id,
    )


def send_admin(
    command: str,
    verb: str,
    args: list[str],
    caller: str,
    level: str,
    reply: Callable[[str | None, str | None], None],
) -> bool:
    """Send an in-game admin command over a daemon's open connection; False when no daemon is
    connected. `reply` gets ``(text, None)`` or ``(None, error)`` once (see
    `BridgeSession.send_admin`)."""
    return any(
        session.send_admin(command, verb, args, caller, level, reply)
        for session in _open_sessions()
    )


def _load_progs() -> None:
    for module in getattr(settings, "STORYTELLER_BRIDGE_PROG_MODULES", []):
        try:
            importlib.import_module(module)
        except Exception:
            logger.log_trace(f"storyteller bridge: cannot import prog module {module}")


def start_plugin_services(server: Any) -> None:
    """Evennia's hook: start listening (called once per Server start)."""
    package_log = logging.getLogger(__package__)
    if not any(isinstance(h, _EvenniaLog) for h in package_log.handlers):
        package_log.addHandler(_EvenniaLog())
        package_log.setLevel(logging.INFO)
    events = state.event_log()
    port = getattr(settings, "STORYTELLER_BRIDGE_PORT", None)
    token_env = str(getattr(settings, "STORYTELLER_BRIDGE_TOKEN_ENV", DEFAULT_TOKEN_ENV))
    token = os.environ.get(token_env, "")
    if not port:
        logger.log_err("storyteller bridge: STORYTELLER_BRIDGE_PORT is not set; not listening")
        return
    if not token:
        logger.log_err(
            f"storyteller bridge: environment variable {token_env} is empty; not listening"
        )
        return
    _load_progs()
    executor = ProgExecutor(
        REGISTRY, state.prog_outcomes(), lookup=worldview.lookup, invoke=_invoke
    )
    interface = str(getattr(settings, "STORYTELLER_BRIDGE_INTERFACE", "127.0.0.1"))
    global _factory
    _factory = BridgeFactory(token, executor)
    service = BridgeService(int(port), _factory, interface)
    service.setName("storyteller_bridge")
    service.setServiceParent(server)
    logger.log_info(
        f"storyteller bridge: listening on {interface}:{port}, epoch {events.epoch} "
        f"({'continued' if events.restored else 'new'} at seq {events.last_seq}), "
        f"{len(REGISTRY)} progs"
    )
