"""Exponential backoff with full jitter, a cap and a reset window (discord.py's semantics).

The delay before retry number *n* in a row is uniform in ``[0, min(cap, base * 2**n)]``. When the
previous delay was asked for longer than `reset_seconds` ago, the connection had been healthy
in between, and the count starts again. The random generator and the clock are injected so tests
can check the delays without waiting for them.
"""

from __future__ import annotations

import random

from world_adapter.bridge.timing import BridgeClock, SystemBridgeClock

_MAX_EXPONENT = 30  # beyond this, base * 2**n overflows any useful cap


class Backoff:
    """Delays between reconnection attempts.

    Args:
        base: Scale of the delays, in seconds.
        cap: The longest delay, in seconds.
        reset_seconds: A quiet spell after which the count restarts.
        rng: Random generator (default: a private one, so the global one is untouched).
        clock: Monotonic time source.

    Raises:
        ValueError: If a duration is not positive or `cap` is below `base`.
    """

    def __init__(
        self,
        *,
        base: float = 0.5,
        cap: float = 60.0,
        reset_seconds: float = 120.0,
        rng: random.Random | None = None,
        clock: BridgeClock | None = None,
    ) -> None:
        if base <= 0 or cap <= 0 or reset_seconds <= 0:
            raise ValueError("backoff durations must be positive")
        if cap < base:
            raise ValueError(f"the backoff cap ({cap}) must not be below its base ({base})")
        self._base = base
        self._cap = cap
        self._reset = reset_seconds
        self._rng = rng or random.Random()
        self._clock = clock or SystemBridgeClock()
        self._exponent = 0
        self._last: float | None = None

    @property
    def attempts(self) -> int:
        """Delays handed out since the last reset."""
        return self._exponent

    def delay(self) -> float:
        """The delay before the next attempt, in seconds."""
        now = self._clock.monotonic()
        if self._last is not None and now - self._last > self._reset:
            self._exponent = 0
        self._last = now
        self._exponent = min(self._exponent + 1, _MAX_EXPONENT)
        return self._rng.uniform(0, min(self._cap, self._base * 2**self._exponent))

    def reset(self) -> None:
        """Start counting again (a connection proved healthy)."""
        self._exponent = 0
        self._last = None
