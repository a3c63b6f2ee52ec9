"""Pure rules of the storyteller: no asyncio, no I/O, no third-party clients."""
