"""Reading storyteller packs: a pack directory becomes validated domain objects.

A pack is a directory (``seed/README.md`` is the format reference)::

    <pack>/pack.toml          [pack] description, one [[storyteller]] table per storyteller
    <pack>/prompts/*.md       prompt texts, named from pack.toml
    <pack>/references/*.md    reference documents: +++ TOML front matter +++, then the contents

Reading only touches the pack's files and checks everything before any database work: an
unknown key, a bad value or a missing file is a `ConfigError` naming the file and the key.
A storyteller's table is read by `storytellers`, on the typed tables of `tables`; what a read
pack holds is `contents`.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import replace
from pathlib import Path

from storyteller_daemon.bundled import bundled_dir
from storyteller_daemon.domain.names import name_key
from storyteller_daemon.domain.references import DEFAULT_FOLDER, DEFAULT_TYPE, ReferenceDocument
from storyteller_daemon.domain.storytellers import Storyteller
from storyteller_daemon.errors import ConfigError
from storyteller_daemon.interchange.packs.contents import Pack, PackDocument
from storyteller_daemon.interchange.packs.storytellers import read_storyteller
from storyteller_daemon.interchange.packs.tables import PackTable, display_path

SEED_DIR = bundled_dir("seed")
"""Where `storyteller seed` looks for packs by name."""
PACK_FILE = "pack.toml"
REFERENCES_DIR = "references"
FRONT_MATTER_FENCE = "+++"


# --------------------------------------------------------------------------- reference documents


def _split_front_matter(file: Path) -> tuple[str, str]:
    """The TOML between the two ``+++`` lines, and the Markdown after them."""
    try:
        text = file.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ConfigError(display_path(file), "is not UTF-8 text") from None
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].strip() != FRONT_MATTER_FENCE:
        raise ConfigError(
            display_path(file),
            f"must start with a '{FRONT_MATTER_FENCE}' line opening its front matter",
        )
    for end in range(1, len(lines)):
        if lines[end].strip() == FRONT_MATTER_FENCE:
            return "".join(lines[1:end]), "".join(lines[end + 1 :])
    raise ConfigError(
        display_path(file), f"front matter has no closing '{FRONT_MATTER_FENCE}' line"
    )


def _read_document(file: Path) -> PackDocument:
    front, body = _split_front_matter(file)
    try:
        data = tomllib.loads(front)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(display_path(file), f"front matter is not valid TOML: {exc}") from None
    table = PackTable(data, file)
    document = ReferenceDocument(
        name=table.text("name"),
        description=table.text("description"),
        folder=table.text("folder", DEFAULT_FOLDER),
        doc_type=table.text("type", DEFAULT_TYPE),
        keywords=", ".join(table.texts("keywords")),
        contents=body.strip(),
    )
    restricted = table.texts("restricted_to")
    table.finish()
    if not document.contents:
        raise ConfigError(display_path(file), "has no contents after its front matter")
    return PackDocument(document=document, restricted_to=tuple(restricted), source=file)


# --------------------------------------------------------------------------- the whole pack


def find_pack(ref: str | Path, seed_dir: Path = SEED_DIR) -> Path:
    """The directory of a pack given by name (under `seed_dir`) or by path.

    Raises:
        ConfigError: nothing with a ``pack.toml`` is found; the message lists the known packs.
    """
    path = Path(ref)
    # A bare name is looked up under seed_dir first; "./x", "a/b" or a Path is always a path.
    is_bare_name = isinstance(ref, str) and "/" not in ref and os.sep not in ref
    candidates = [seed_dir / ref, path] if is_bare_name and ref not in {".", ".."} else [path]
    for candidate in candidates:
        try:
            if candidate.name == PACK_FILE and candidate.is_file():
                return candidate.parent
            if (candidate / PACK_FILE).is_file():
                return candidate
        except OSError:  # a name too long for the file system, for one: not a pack
            continue
    known = ", ".join(p.name for p in list_packs(seed_dir)) or "none"
    raise ConfigError(
        str(ref), f"no pack of that name under {display_path(seed_dir)} and no {PACK_FILE} at that "
        f"path (packs available: {known})"
    )  # fmt: skip


def list_packs(seed_dir: Path = SEED_DIR) -> list[Path]:
    """Every pack directory directly under `seed_dir`, by name."""
    if not seed_dir.is_dir():
        return []
    return sorted(p for p in seed_dir.iterdir() if (p / PACK_FILE).is_file())


def read_pack(ref: str | Path, seed_dir: Path = SEED_DIR) -> Pack:
    """Read and validate a whole pack without touching any database.

    Args:
        ref: a pack name under `seed_dir`, a pack directory, or its ``pack.toml``.
        seed_dir: where pack names are looked up.

    Raises:
        ConfigError: naming the file and key of the first problem found.
    """
    pack_dir = find_pack(ref, seed_dir)
    pack_file = pack_dir / PACK_FILE
    try:
        data = tomllib.loads(pack_file.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(display_path(pack_file), f"not valid TOML: {exc}") from None
    root = PackTable(data, pack_file)
    header = root.table("pack", required=True)
    description = header.text("description")
    world = header.optional_text("world")
    header.finish()
    storytellers: list[Storyteller] = []
    by_key: dict[str, Storyteller] = {}
    for table in root.tables("storyteller"):
        st = replace(read_storyteller(table, pack_dir), written_for=world)
        if name_key(st.name) in by_key:
            raise table.error("name", f"a second storyteller named '{st.name}'")
        by_key[name_key(st.name)] = st
        storytellers.append(st)
    root.finish()

    documents: list[PackDocument] = []
    seen: dict[str, Path] = {}
    reference_dir = pack_dir / REFERENCES_DIR
    files = sorted(reference_dir.glob("*.md")) if reference_dir.is_dir() else []
    for file in files:
        doc = _read_document(file)
        key = name_key(doc.document.name)
        if key in seen:
            raise ConfigError(
                display_path(file),
                f"'{doc.document.name}' is also the name of {seen[key].name}",
                "name",
            )
        seen[key] = file
        names = []
        for wanted in doc.restricted_to:
            if name_key(wanted) not in by_key:
                known = ", ".join(st.name for st in storytellers) or "none"
                raise ConfigError(
                    display_path(file),
                    f"'{wanted}' is not a storyteller of this pack (storytellers: {known})",
                    "restricted_to",
                )
            names.append(by_key[name_key(wanted)].name)
        documents.append(replace(doc, restricted_to=tuple(names)))

    return Pack(
        name=pack_dir.name,
        path=pack_dir,
        description=description,
        world=world,
        storytellers=tuple(storytellers),
        documents=tuple(documents),
    )
