"""``storyteller aisr set REF …``: change one field of a reference document.

Subcommands and aliases follow FutureMUD's ``aisr set``. Each change is saved in one transaction;
a rejected value changes nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Annotated

import typer

from storyteller_daemon.cli.support import (
    FileOption,
    check_new_name,
    command_group,
    open_store,
    read_text,
    register,
    run_async,
    say,
)
from storyteller_daemon.domain.references import ReferenceDocument
from storyteller_daemon.errors import ValidationError

if TYPE_CHECKING:
    from storyteller_daemon.storage.store import Store

Change = Callable[[ReferenceDocument], tuple[ReferenceDocument, str]]
"""Builds the changed document and the confirmation line, or raises to change nothing."""

_REF_KEY = "storyteller_daemon.aisr.set.ref"

app = command_group("Change one field of a reference document; each prints one confirmation line.")

Words = Annotated[list[str], typer.Argument(metavar="TEXT")]


@app.callback()
def select(
    ctx: typer.Context,
    ref: Annotated[str, typer.Argument(metavar="REF", help="Document id or name.")],
) -> None:
    """Change one field of a reference document; each prints one confirmation line."""
    ctx.meta[_REF_KEY] = ref


async def _save(ctx: typer.Context, store: Store, change: Change) -> None:
    current = await store.references.get(str(ctx.meta[_REF_KEY]))
    changed, message = change(current)
    await store.references.save(changed)
    say(message)


async def _apply(ctx: typer.Context, change: Change) -> None:
    """Load the selected document, apply `change`, save, and print its confirmation."""
    async with open_store(ctx) as store:
        await _save(ctx, store, change)


def _text_field(
    label: str, words: list[str], put: Callable[[ReferenceDocument, str], ReferenceDocument]
) -> Change:
    value = " ".join(words).strip()
    return lambda doc: (put(doc, value), f"Document #{doc.id} {label} is now: {value}")


@register(app, "name")
@run_async
async def set_name(ctx: typer.Context, name: Words) -> None:
    """Rename the document (names are unique, ignoring case)."""
    new = check_new_name(" ".join(name), "reference document")
    await _apply(
        ctx, lambda doc: (replace(doc, name=new), f"Document #{doc.id} is now named {new}.")
    )


@register(app, "description", "desc")
@run_async
async def set_description(ctx: typer.Context, text: Words) -> None:
    """Set the one-line description."""
    await _apply(ctx, _text_field("description", text, lambda d, v: replace(d, description=v)))


@register(app, "folder")
@run_async
async def set_folder(ctx: typer.Context, text: Words) -> None:
    """Set the folder the document is filed under."""
    await _apply(ctx, _text_field("folder", text, lambda d, v: replace(d, folder=v)))


@register(app, "type")
@run_async
async def set_type(ctx: typer.Context, text: Words) -> None:
    """Set the document type (e.g. Guide, Skill, FactionBrief)."""
    await _apply(ctx, _text_field("type", text, lambda d, v: replace(d, doc_type=v)))


@register(app, "keywords", "keyword")
@run_async
async def set_keywords(ctx: typer.Context, text: Words) -> None:
    """Set the keywords (free text, conventionally comma-separated)."""
    await _apply(ctx, _text_field("keywords", text, lambda d, v: replace(d, keywords=v)))


@register(app, "contents", "content", "text")
@run_async
async def set_contents(
    ctx: typer.Context,
    text: Annotated[list[str] | None, typer.Argument(metavar="TEXT", show_default=False)] = None,
    file: FileOption = None,
) -> None:
    """Set the contents (TEXT, '-' for stdin, or --file)."""
    value = read_text(text, file, "contents")
    await _apply(
        ctx,
        lambda doc: (
            replace(doc, contents=value),
            f"Document #{doc.id} has new contents ({len(value)} characters).",
        ),
    )


@register(app, "storyteller", "restriction", "restrict")
@run_async
async def toggle_storyteller(
    ctx: typer.Context,
    storyteller: Annotated[str, typer.Argument(metavar="ST_REF", help="Storyteller id or name.")],
) -> None:
    """Toggle a storyteller in the document's allow-list (an empty list means global)."""
    async with open_store(ctx) as store:
        st = await store.storytellers.get(storyteller)
        assert st.id is not None
        ident = st.id

        def change(doc: ReferenceDocument) -> tuple[ReferenceDocument, str]:
            if ident in doc.restricted_to:
                allowed = doc.restricted_to - {ident}
                tail = " It is global again." if not allowed else ""
                return replace(doc, restricted_to=allowed), (
                    f"Storyteller {st.name} is no longer in document #{doc.id}'s allow-list.{tail}"
                )
            return replace(doc, restricted_to=doc.restricted_to | {ident}), (
                f"Document #{doc.id} is now visible to storyteller {st.name}."
            )

        await _save(ctx, store, change)


@register(app, "storytellers", "restrictions")
@run_async
async def clear_storytellers(
    ctx: typer.Context,
    action: Annotated[str, typer.Argument(metavar="clear", help="The word 'clear'.")],
) -> None:
    """Make the document global again: 'storytellers clear'."""
    if action.strip().lower() != "clear":
        raise ValidationError(f"'{action}' is not an action; use: storytellers clear.")

    def change(doc: ReferenceDocument) -> tuple[ReferenceDocument, str]:
        if doc.is_global:
            raise ValidationError(f"Document #{doc.id} is already visible to every storyteller.")
        return replace(doc, restricted_to=frozenset()), (
            f"Document #{doc.id} is now visible to every storyteller."
        )

    await _apply(ctx, change)
