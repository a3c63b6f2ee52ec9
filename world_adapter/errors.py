"""Errors raised at the world boundary.

```
WorldAdapterError
├── StreamError
│   ├── TransientStreamError   connection lost / refused: back off and resume
│   │   └── StreamTimeout      nothing received in time
│   ├── FatalStreamError       bad token, unsupported protocol version: stop and alert
│   └── CursorExpired          the game cannot replay from our cursor: gap, then resume live
└── WorldCommandError          a query or prog call failed (unknown prog, bad arguments...)
    └── UnsupportedRequest     the game does not offer this request (an older bridge)
```
"""

from __future__ import annotations


class WorldAdapterError(Exception):
    """Base of every world-side error."""


class StreamError(WorldAdapterError):
    """The event stream broke."""


class TransientStreamError(StreamError, ConnectionError):
    """A connection problem worth retrying with backoff."""


class StreamTimeout(TransientStreamError, TimeoutError):
    """Nothing arrived within the receive timeout."""


class FatalStreamError(StreamError):
    """Retrying cannot help (authentication, protocol version)."""


class CursorExpired(StreamError):
    """The game no longer holds events after the requested cursor."""


class WorldCommandError(WorldAdapterError):
    """A query or a prog execution failed; the message is safe to show to the model."""


class UnsupportedRequest(WorldCommandError):
    """The game answered that it does not know the request; a caller may do without it."""
