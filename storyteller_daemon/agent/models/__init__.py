"""The model layer: the seam every model is reached through (`interface`), the endpoints behind
it (the OpenAI adapter, the offline stand-in, a recorded run's tape), what wraps them (routing,
the circuit breaker, tier fallback, metering) and what prices and sizes a request."""
