"""A circuit breaker in front of the model endpoint: stop calling a model the endpoint refused.

A request refused for the key (HTTP 401, 403) or an unknown model (404) will be refused again
until an admin fixes the configuration; sending every turn and attention batch anyway only fills
the log. After such a refusal the breaker answers requests for that model itself, with the same
`ModelFatalError`, for `pause_seconds`; then it lets one request through, which closes it on
success or opens it for another pause. Refusals of one request (400: too long, bad schema) are
about that request, not the endpoint, and pass through without opening it. Opening is logged
as an error once (which reaches the admins as an alert), and closing again as a warning.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from storyteller_daemon.agent.models.interface import Model, ModelRequest, ModelResponse
from storyteller_daemon.clock import Clock
from storyteller_daemon.errors import REQUEST_NOT_SENT, ModelFatalError

log = logging.getLogger(__name__)

BREAKING_STATUSES = frozenset({401, 403, 404})
"""Refusals about the endpoint or the model, not one request."""


@dataclass(frozen=True)
class _Open:
    until: float
    reason: str
    status: int | None


class CircuitBreaker:
    """Wraps a `Model`; see the module.

    Args:
        inner: the endpoint.
        pause_seconds: how long a refused model is not called (0: never paused).
        clock: the daemon's clock, which pauses run on.
    """

    def __init__(self, inner: Model, *, pause_seconds: float, clock: Clock) -> None:
        self._inner = inner
        self._pause = pause_seconds
        self._clock = clock
        self._open: dict[str, _Open] = {}

    @property
    def name(self) -> str:
        """The wrapped endpoint's name."""
        return self._inner.name

    def paused(self, model: str) -> float:
        """Seconds until requests for `model` go out again (0: they go out now)."""
        opened = self._open.get(model)
        return max(0.0, opened.until - self._clock.monotonic()) if opened else 0.0

    async def respond(self, request: ModelRequest) -> ModelResponse:
        """The endpoint's answer, or the refusal it gave, repeated while the pause lasts.

        Raises:
            ModelFatalError: the endpoint refused, now or within the pause.
            ModelTransientError: as the endpoint raised it.
        """
        left = self.paused(request.model)
        if left > 0:
            opened = self._open[request.model]
            raise ModelFatalError(
                f"{opened.reason} (not sent: requests for {request.model} are paused for "
                f"{left:.0f} s more)",
                status=opened.status,
                request_status=REQUEST_NOT_SENT,
            )
        try:
            response = await self._inner.respond(request)
        except ModelFatalError as exc:
            if self._pause > 0 and exc.status in BREAKING_STATUSES:
                self._open[request.model] = _Open(
                    self._clock.monotonic() + self._pause, str(exc), exc.status
                )
                log.error(
                    "the model endpoint refused %s (%s); requests for it are paused for %g s, "
                    "then tried again. Fix the key, the model name or [model] base_url; "
                    "`storyteller doctor` checks them",
                    request.model,
                    exc,
                    self._pause,
                )
            raise
        if self._open.pop(request.model, None) is not None:
            log.warning("the model endpoint accepts requests for %s again", request.model)
        return response

    async def close(self) -> None:
        """Close the wrapped endpoint's client, if it has one."""
        close = getattr(self._inner, "close", None)
        if close is not None:
            await close()
