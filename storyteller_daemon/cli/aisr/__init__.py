"""``storyteller aisr``: reference documents, after FutureMUD's ``aisr`` admin command.

Documents are the storytellers' searchable knowledge base. Each is global or restricted to a
list of storytellers. Every command names the document it works on (an id or a
case-insensitive name).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from storyteller_daemon.cli.aisr import set as aisr_set
from storyteller_daemon.cli.support import (
    JsonFlag,
    check_new_name,
    command_group,
    listing,
    open_store,
    print_json,
    register,
    run_async,
    say,
)
from storyteller_daemon.cli.views.documents import (
    DOCUMENT_COLUMNS,
    document_json,
    document_row,
    show_document,
)
from storyteller_daemon.domain.references import ReferenceDocument
from storyteller_daemon.errors import ValidationError

if TYPE_CHECKING:
    from storyteller_daemon.storage.store import Store

app = command_group("Reference documents: list, create, show, edit, restrict, search.")

Ref = Annotated[str, typer.Argument(metavar="REF", help="Document id or name.")]
NewName = Annotated[list[str], typer.Argument(metavar="NAME", help="Unique name (ignoring case).")]

_FIELD_SELECTORS = {
    "folder": "folder",
    "type": "doc_type",
    "keyword": "keywords",
    "keywords": "keywords",
}


async def filter_documents(
    store: Store, docs: list[ReferenceDocument], filters: list[str]
) -> list[ReferenceDocument]:
    """Apply ``aisr list`` filters in order (see the command's help)."""
    for raw in filters:
        word = raw.strip()
        selector, colon, value = word.partition(":")
        selector, value = selector.strip().lower(), value.strip().casefold()
        if word.isdigit():
            docs = [d for d in docs if d.id == int(word)]
        elif word.startswith("-") and len(word) > 1:
            docs = [d for d in docs if word[1:].casefold() not in d.name.casefold()]
        elif word.startswith("+"):
            docs = [d for d in docs if word[1:].casefold() in d.name.casefold()]
        elif colon and selector in _FIELD_SELECTORS:
            field = _FIELD_SELECTORS[selector]
            docs = [d for d in docs if value in str(getattr(d, field)).casefold()]
        elif colon and selector == "storyteller":
            st = await store.storytellers.get(word.partition(":")[2])
            assert st.id is not None
            docs = [d for d in docs if d.is_visible_to(st.id)]
        else:
            docs = [d for d in docs if d.matches(word)]
    return docs


@register(app, "list", lenient=True)
@run_async
async def list_documents(
    ctx: typer.Context,
    filters: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="FILTER",
            help="An id; +word or -word (name has or lacks); folder:x, type:x, keyword:x "
            "(field contains x); storyteller:REF (visible to it); other words search every field.",
        ),
    ] = None,
    json_out: JsonFlag = False,
) -> None:
    """List reference documents, narrowed by filters applied in order."""
    async with open_store(ctx) as store:
        docs = await filter_documents(store, await store.references.list(), filters or [])
    listing(
        docs,
        as_json=json_out,
        data=document_json,
        title="Reference documents",
        columns=DOCUMENT_COLUMNS,
        row=document_row,
    )


@register(app, "create", "new")
@run_async
async def create(ctx: typer.Context, name: NewName) -> None:
    """Create a global document in folder General, type General, with no contents."""
    clean = check_new_name(" ".join(name), "reference document")
    async with open_store(ctx) as store:
        doc = await store.references.create(ReferenceDocument(name=clean))
    say(f"Created reference document #{doc.id} ({doc.name}).")


async def _storyteller_names(store: Store, doc: ReferenceDocument) -> dict[int, str]:
    if doc.is_global:
        return {}
    return {s.id: s.name for s in await store.storytellers.list() if s.id in doc.restricted_to}


@register(app, "show", "view")
@run_async
async def show(ctx: typer.Context, ref: Ref, json_out: JsonFlag = False) -> None:
    """Show a document, who may read it, and its contents."""
    async with open_store(ctx) as store:
        doc = await store.references.get(ref)
        names = await _storyteller_names(store, doc)
    if json_out:
        data = document_json(doc, with_contents=True)
        data["restricted_storytellers"] = [
            {"id": i, "name": names.get(i)} for i in sorted(doc.restricted_to)
        ]
        print_json(data)
    else:
        show_document(doc, names)


@register(app, "delete")
@run_async
async def delete(
    ctx: typer.Context,
    ref: Ref,
    yes: Annotated[bool, typer.Option("--yes", help="Really delete.")] = False,
) -> None:
    """Delete a document (needs --yes)."""
    async with open_store(ctx) as store:
        doc = await store.references.get(ref)
        if not yes:
            raise ValidationError(
                f"Not deleting reference document #{doc.id} ({doc.name}) without --yes."
            )
        await store.references.delete(ref)
    say(f"Deleted reference document #{doc.id} ({doc.name}).")


@register(app, "clone")
@run_async
async def clone(ctx: typer.Context, ref: Ref, name: NewName) -> None:
    """Copy a document, with the same visibility, under a new name."""
    clean = check_new_name(" ".join(name), "reference document")
    async with open_store(ctx) as store:
        source = await store.references.get(ref)
        copy = await store.references.clone(ref, clean)
    say(f"Cloned reference document #{source.id} ({source.name}) as #{copy.id} ({copy.name}).")


@register(app, "search")
@run_async
async def search(
    ctx: typer.Context,
    query: Annotated[list[str], typer.Argument(metavar="QUERY")],
    storyteller: Annotated[
        str | None,
        typer.Option("--storyteller", metavar="REF", help="Only documents it may read."),
    ] = None,
    json_out: JsonFlag = False,
) -> None:
    """Search every field of every document, best match first; all words must match."""
    async with open_store(ctx) as store:
        visible_to = None
        if storyteller is not None:
            visible_to = (await store.storytellers.get(storyteller)).id
        docs = await store.references.search(" ".join(query), visible_to=visible_to)
    listing(
        docs,
        as_json=json_out,
        data=document_json,
        title="Matching reference documents",
        columns=DOCUMENT_COLUMNS,
        row=document_row,
    )


app.add_typer(aisr_set.app, name="set")
