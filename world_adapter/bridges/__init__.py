"""Engine bridges: game-side code that serves the bridge protocol from inside a MUD engine.

Each subpackage runs in its engine's own process and imports nothing from this distribution;
it is copied into (or put on the path of) a game, not imported by the daemon.
"""
