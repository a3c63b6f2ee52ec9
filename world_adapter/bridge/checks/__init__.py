"""The conformance checks of ``storyteller bridge check``, in groups, over a shared context.

`context.CheckContext` holds what the checks share (the game's address and token, the welcome,
the rooms found, connections past the handshake); `connecting` checks the connection itself
(handshake, refusals, pings, the frame size limit and bad frames), `queries` the request
methods and their errors, and `replay` subscriptions, resuming and gaps. `conformance.Checker`
composes the groups and runs them in order.
"""
