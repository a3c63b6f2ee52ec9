"""Work that can wait at the provider's cheaper tier, and the normal tier when that is refused.

A request may ask for a processing tier (`ModelRequest.service_tier`): ``flex`` costs half at
OpenAI and may be slower, or refused when capacity is short (HTTP 429) or unknown to the
endpoint (HTTP 400, as a local server may answer). `TierFallback` sends such a refused request
once more without the tier, so the work is done at the normal price rather than not at all,
and, after a refusal, asks for no tier for `pause_seconds` (an endpoint that does not offer
it would refuse every request). Requests without a tier pass through untouched.
"""

from __future__ import annotations

import logging
from dataclasses import replace

from storyteller_daemon.agent.models.interface import Model, ModelRequest, ModelResponse
from storyteller_daemon.clock import Clock
from storyteller_daemon.errors import ModelError

log = logging.getLogger(__name__)

PAUSE_SECONDS = 3600.0
"""After a refusal, how long requests go without a tier before one is tried again."""


class TierFallback:
    """Wraps a model; a request whose tier is refused is sent again at the default tier.

    Args:
        model: the endpoint (metered, so both attempts reach the ledger).
        clock: the clock the pause after a refused tier runs on.
        pause_seconds: how long to ask for no tier after a refusal.
    """

    def __init__(self, model: Model, clock: Clock, pause_seconds: float = PAUSE_SECONDS) -> None:
        self._model = model
        self._clock = clock
        self._pause = pause_seconds
        self._refused_at: float | None = None

    @property
    def name(self) -> str:
        """The wrapped endpoint's name."""
        return self._model.name

    async def respond(self, request: ModelRequest) -> ModelResponse:
        """Answer `request`, at its tier if the endpoint takes it, else at the default tier.

        Raises:
            ModelTransientError, ModelFatalError: the request failed at the default tier too
                (or had no tier).
        """
        if request.service_tier is None:
            return await self._model.respond(request)
        paused = (
            self._refused_at is not None
            and self._clock.monotonic() - self._refused_at < self._pause
        )
        if paused:
            return await self._model.respond(replace(request, service_tier=None))
        try:
            return await self._model.respond(request)
        except ModelError as exc:
            self._refused_at = self._clock.monotonic()
            log.info(
                "the %s tier was refused for %s (%s); sending it at the default tier, and no "
                "tier for %g s",
                request.service_tier,
                request.model,
                exc,
                self._pause,
            )
            return await self._model.respond(replace(request, service_tier=None))
