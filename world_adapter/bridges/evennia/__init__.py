"""The Evennia bridge: serves the storyteller bridge protocol from inside an Evennia Server.

Copy this folder into a game directory (see README.md). `service`, `tap`, `worldview`, `state`
and `commands` (the in-game ``ais``/``aisr``) import Evennia, Django or Twisted and so load only
inside the Evennia Server process; the protocol logic (`session`, `admincommands`, `params`,
`eventlog`, `journal`, `replaybuffer`, `executor`, `registry`, `pathing`, `gamecalendar`,
`invocations`) is pure Python.
`replaybuffer` is this folder's standard-library copy of the project's replay buffer
(`world_adapter/replay.py`); a test keeps the two the same text.
"""
