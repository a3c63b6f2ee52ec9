"""The Evennia bridge: serves the storyteller bridge protocol from inside an Evennia Server.

Copy this folder into a game directory (see README.md). `service`, `tap`, `worldview` and `state`
import Evennia, Django or Twisted and so load only inside the Evennia Server process; the protocol
logic (`session`, `eventlog`, `executor`, `registry`, `pathing`, `gamecalendar`) is pure Python.
"""
