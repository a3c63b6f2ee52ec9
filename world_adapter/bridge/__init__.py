"""The bridge protocol (docs/bridge-protocol.md): a game's world over one WebSocket.

Daemon side: `client.BridgeWorldClient` (a `WorldClient`), built from `stream.BridgeSubscription`
(the supervisor that owns the cursor) and `connection.BridgeConnection` (one disposable socket).
Game side: `world_server.WorldServer` serves any in-process `WorldClient` from an `EventBuffer`.
Both speak `messages` (frames, codes, limits) and `codec`/`methods` (values and requests, read
from the `WorldClient` protocol). `conformance` (with `probe` and the groups of checks in
`checks`) checks any game-side implementation; `schema` generates the JSON Schema of every
frame. A game's ``invoke`` frames reach whoever `BridgeWorldClient.serve_invocations` names.

Importing this package imports nothing else: the storage layer reads `codec` without aiohttp.
"""
