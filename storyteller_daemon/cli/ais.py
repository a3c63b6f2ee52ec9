"""``storyteller ais``."""

from __future__ import annotations

import typer

app = typer.Typer(help="Storytellers: list, create, show, configure, pause, delete, clone.", no_args_is_help=True)
