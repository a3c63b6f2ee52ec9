"""The Evennia bridge: serves the storyteller bridge protocol from inside an Evennia Server.

Copy this folder into a game directory (see README.md). `service`, `tap`, `worldview`, `state`
and `commands` (the in-game ``ais``/``aisr``) import Evennia, Django or Twisted and so load only
inside the Evennia Server process; the protocol logic (`session`, `params`, `eventlog`,
`journal`, `replaybuffer`, `executor`, `registry`, `pathing`, `gamecalendar`, `invocations`) is
pure Python.
`replaybuffer` is the project's one replay buffer: the sim world and its bridge server import it
from here, since this folder may import nothing outside itself.
"""
