"""``storyteller init DIR``: start from your own world.

Probes the game over the bridge, then writes into DIR a ``storyteller.toml`` for that game and
a starter pack made from what the game answered (see `init.files`), plus a README of the next
steps. Given ``--config`` (an installed daemon's configuration), it uses that file's game and
database and writes only the pack and the README. On a terminal it asks for what the flags
leave out; elsewhere the flags (or their defaults) are all it uses. It writes nothing when the
game cannot be reached, and never overwrites a file.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Annotated

import typer

from storyteller_daemon.cli.support import DEFAULT_TOKEN_ENV, console, fail, run_async, state
from storyteller_daemon.errors import EX_CONFIG, EX_USAGE, ConflictError, NotFoundError


def _interactive() -> bool:
    return sys.stdin.isatty() and sys.stdout.isatty()


def _choose_zones(given: list[int], zones: dict[int, frozenset[int]], ask: bool) -> tuple[int, ...]:
    if not zones:
        raise NotFoundError("the game lists no zones, so there is nothing a storyteller can watch")
    known = ", ".join(str(z) for z in sorted(zones))
    if not given and ask:
        for zone in sorted(zones):
            console.print(f"zone {zone}: {len(zones[zone])} room(s)")
        answer = typer.prompt("Zones to watch (comma-separated)", default=known)
        try:
            given = [int(word) for word in answer.replace(",", " ").split()]
        except ValueError:
            raise typer.BadParameter(f"'{answer}' is not a list of zone ids") from None
    chosen = tuple(sorted(set(given))) if given else tuple(sorted(zones))
    for zone in chosen:
        if zone not in zones:
            raise NotFoundError(f"the game has no zone {zone} (zones: {known})")
    return chosen


def _write_pack(pack_dir: Path, files: dict[str, str]) -> None:
    """Write the pack beside its final place, read it as ``seed load`` will, then move it there:
    a pack that would not load (a name the rules refuse, say) leaves nothing behind."""
    from storyteller_daemon.interchange.packs.files import read_pack

    pack_dir.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".init-", dir=pack_dir.parent))
    try:
        for name, text in files.items():
            (staging / name).parent.mkdir(parents=True, exist_ok=True)
            (staging / name).write_text(text, encoding="utf-8")
        read_pack(staging)
        staging.rename(pack_dir)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _config_file(configured: str | None, root: Path) -> Path:
    return Path(configured).resolve() if configured else root / "storyteller.toml"


@run_async
async def init(
    ctx: typer.Context,
    directory: Annotated[
        Path, typer.Argument(help="Where to write the configuration and the pack.", metavar="DIR")
    ],
    game_url: Annotated[
        str | None, typer.Option(help="The game's bridge URL, ws://host:port/path.")
    ] = None,
    token_env: Annotated[
        str | None, typer.Option(help="Environment variable holding the bridge's shared secret.")
    ] = None,
    pack: Annotated[
        str | None, typer.Option(help="The pack's directory name (default: from the game's name).")
    ] = None,
    zone: Annotated[
        list[int] | None,
        typer.Option("--zone", help="A zone to watch; repeat for more (default: every zone)."),
    ] = None,
    name: Annotated[
        str | None, typer.Option(help="The storyteller's name (default: from the game's name).")
    ] = None,
    model: Annotated[str, typer.Option(help="The model of event turns.")] = "gpt-5-mini",
    attention_model: Annotated[
        str, typer.Option(help="The model of the attention gate.")
    ] = "gpt-5-nano",
    model_url: Annotated[
        str, typer.Option(help="A Responses-API endpoint (default: OpenAI).")
    ] = "",
    api_key_env: Annotated[
        str, typer.Option(help="Environment variable holding the model endpoint's key.")
    ] = "OPENAI_API_KEY",
    database: Annotated[
        str | None,
        typer.Option(help="Database URL (default: a SQLite file in DIR).", show_default=False),
    ] = None,
    seconds: Annotated[
        float, typer.Option("--timeout", help="Seconds the game may take to answer.", min=0.1)
    ] = 10.0,
) -> None:
    """Probe your game over the bridge and write a configuration and a starter pack for it."""
    from storyteller_daemon.app.world_access import reach_world, world_facts
    from storyteller_daemon.cli.init.files import (
        InitChoices,
        pack_slug,
        render_attention_prompt,
        render_config,
        render_pack,
        render_readme,
        render_system_prompt,
        usable_progs,
        zones_phrase,
    )
    from storyteller_daemon.config import parse_config
    from world_adapter.bridge.client import check_bridge_url

    interactive = _interactive()
    root = directory.expanduser().resolve()
    configured = state(ctx).config_path
    if configured is not None:  # an installed daemon's config: its world, its database
        if game_url is not None or token_env is not None or database is not None:
            raise fail(
                "--game-url, --token-env and --database come from the configuration given with "
                "--config; leave them out",
                EX_USAGE,
            )
        cfg = state(ctx).config()
        if cfg.world.kind != "bridge":
            raise fail(
                f'{configured}: [world] kind is "{cfg.world.kind}"; init writes a pack for a game '
                'over the bridge (kind = "bridge", url, token_env)',
                EX_CONFIG,
            )
        game_url, token_env, database = cfg.world.url, cfg.world.token_env, cfg.database.url
    config_file = _config_file(configured, root)
    if configured is None and config_file.exists():
        raise ConflictError(f"{config_file} exists already; init never overwrites")
    if game_url is None:
        if not interactive:
            raise fail("--game-url is required off a terminal (the game's bridge URL)", EX_USAGE)
        game_url = typer.prompt("The game's bridge URL", default="ws://127.0.0.1:4010/storyteller")
    try:
        check_bridge_url(game_url)
    except ValueError as exc:
        raise fail(str(exc), EX_USAGE) from None
    if token_env is None:
        token_env = (
            typer.prompt("Variable holding the bridge token", default=DEFAULT_TOKEN_ENV)
            if interactive
            else DEFAULT_TOKEN_ENV
        )
    if not os.environ.get(token_env, "").strip():
        raise fail(f"environment variable {token_env} is not set (the bridge token)", EX_CONFIG)
    database_url = database or f"sqlite+aiosqlite:///{root / 'storyteller.db'}"
    probe = parse_config(
        {
            "database": {"url": database_url},
            "world": {"kind": "bridge", "url": game_url, "token_env": token_env},
        },
        "storyteller init",
    )
    async with reach_world(probe, os.environ, seconds=seconds) as world:
        zones = await world.ask(world.client.zones())
        facts = await world_facts(world, ())
    chosen = _choose_zones(list(zone or ()), zones, interactive)
    default_pack = pack_slug(facts.identity)
    if pack is None:
        pack = typer.prompt("Pack name", default=default_pack) if interactive else default_pack
    if name is None:
        default_name = f"{facts.identity} Storyteller"
        name = (
            typer.prompt("Storyteller name", default=default_name) if interactive else default_name
        )
    if Path(pack).name != pack or pack in ("", ".", ".."):
        raise fail(f"--pack '{pack}' must be a directory name, not a path", EX_USAGE)
    pack_dir = root / pack
    if pack_dir.exists():
        raise ConflictError(f"{pack_dir} exists already; init never overwrites")
    choices = InitChoices(
        directory=root,
        game_url=game_url,
        token_env=token_env,
        pack=pack,
        storyteller=name,
        zones=chosen,
        database_url=database_url,
        model=model,
        attention_model=attention_model,
        model_url=model_url,
        api_key_env=api_key_env,
        config_file=config_file,
    )
    tools, left_out = usable_progs(facts.progs)
    pack_files = {
        "pack.toml": render_pack(choices, facts, tools),
        "prompts/system.md": render_system_prompt(choices, facts),
        "prompts/attention.md": render_attention_prompt(choices, facts),
    }
    others = {root / "README.md": render_readme(choices, facts, left_out)}
    if configured is None:
        others[config_file] = render_config(choices, facts)
    for path in others:
        if path.exists():
            raise ConflictError(f"{path} exists already; init never overwrites")
    _write_pack(pack_dir, pack_files)
    for path, text in others.items():
        path.write_text(text, encoding="utf-8")
    files = [*(pack_dir / name for name in pack_files), *others]
    console.print(f"{facts.identity}: {len(zones)} zone(s), {len(facts.progs)} prog(s)")
    for path in files:
        console.print(f"wrote {path}", markup=False)
    console.print(
        f'storyteller "{name}" (paused) watches {zones_phrase(chosen)} with '
        f"{len(tools)} prog tool(s); next steps: {root / 'README.md'}",
        markup=False,
    )
