"""``storyteller tools``: the built-in tools, as a pack author reads them."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from storyteller_daemon.cli.support import console

app = typer.Typer(help="The built-in tools every storyteller is offered.", no_args_is_help=True)


@app.command("doc")
def doc(
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", help="Write the Markdown here instead of printing it."),
    ] = None,
) -> None:
    """The Markdown reference of the built-in tools (docs/tools.md), from the tool registry."""
    from storyteller_daemon.agent.tools.reference_doc import builtin_tools_markdown

    text = builtin_tools_markdown()
    if output is None:
        typer.echo(text, nl=False)
        return
    output.write_text(text, encoding="utf-8")
    console.print(f"wrote {output}", markup=False)
