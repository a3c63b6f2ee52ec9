"""`python -m storyteller_daemon` runs the admin CLI."""

from storyteller_daemon.cli import main

main()
