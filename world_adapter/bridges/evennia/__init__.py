"""The Evennia bridge: serves the storyteller bridge protocol from inside an Evennia Server.

Copy this folder into a game directory (see README.md). The modules that need Evennia, Django
or Twisted import them at module level and so load only inside the Evennia Server process; the
pure ones (`eventlog`, `registry`, `pathing`) have no third-party imports.
"""
