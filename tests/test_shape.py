"""The runtime's shape, checked on its source (pure AST: nothing is imported).

* No class under ``storyteller_daemon/runtime`` inherits from more than one of the project's own
  classes: parts are objects passed in, not mixins (Protocols and exceptions do not count).
* In the pipeline and the daemon, no module writes an attribute that a class of another module
  of the package owns (assigns on ``self``): each piece of state has one writer, its owner, and
  other stages change it only by calling its methods.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OURS = ("storyteller_daemon", "world_adapter", "progs")
NOT_COUNTED = frozenset(
    {
        "typing.Protocol",
        "typing_extensions.Protocol",
        "builtins.Exception",
        "builtins.BaseException",
    }
)
"""Where a chain of bases ends in one of these, the class is a protocol or an error: its bases
are not parts of a mixin."""
STAGE_PACKAGES = ("storyteller_daemon/runtime/pipeline", "storyteller_daemon/runtime/daemon")


# ---------------------------------------------------------------------- resolving names


def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _module_file(module: str, root: Path) -> Path | None:
    base = root.joinpath(*module.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


@dataclass
class _Module:
    name: str
    tree: ast.Module
    imports: dict[str, str]
    """Local name → the qualified name it was imported as."""
    classes: dict[str, ast.ClassDef]


_parsed: dict[tuple[Path, str], _Module | None] = {}


def _parse(module: str, root: Path) -> _Module | None:
    key = (root, module)
    if key not in _parsed:
        path = _module_file(module, root)
        _parsed[key] = None if path is None else _read(path, module, root)
    return _parsed[key]


def _read(path: Path, module: str, root: Path) -> _Module:
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    imports: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    imports[alias.asname] = alias.name
                else:
                    imports[alias.name.split(".")[0]] = alias.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom):
            source = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                source = ".".join([*anchor, *([source] if source else [])])
            for alias in node.names:
                imports[alias.asname or alias.name] = f"{source}.{alias.name}"
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
    return _Module(module, tree, imports, classes)


def _dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        head = _dotted(node.value)
        return None if head is None else f"{head}.{node.attr}"
    if isinstance(node, ast.Subscript):  # Generic[T], Protocol[T]
        return _dotted(node.value)
    return None


def _qualified(base: ast.expr, module: _Module) -> str | None:
    """The qualified name `base` refers to in `module` (builtins when not imported)."""
    dotted = _dotted(base)
    if dotted is None:
        return None
    head, _, rest = dotted.partition(".")
    if head in module.imports:
        found = module.imports[head]
    elif head in module.classes:
        found = f"{module.name}.{head}"
    else:
        found = f"builtins.{head}"
    return f"{found}.{rest}" if rest else found


def _definition(qualified: str, root: Path, seen: int = 0) -> tuple[_Module, ast.ClassDef] | None:
    """The class a qualified name of ours refers to, following re-exports."""
    module_name, _, name = qualified.rpartition(".")
    module = _parse(module_name, root)
    if module is None or seen > 10:
        return None
    if name in module.classes:
        return module, module.classes[name]
    if name in module.imports:  # re-exported from a package's __init__
        return _definition(module.imports[name], root, seen + 1)
    return None


def _is_part(qualified: str, root: Path, depth: int = 0) -> bool:
    """Whether a base is one of the project's own classes that counts as a part: not a
    protocol, not an error (judged by where its own chain of bases ends)."""
    if not qualified.startswith(tuple(f"{p}." for p in OURS)) or depth > 20:
        return False
    found = _definition(qualified, root)
    if found is None:
        return True  # ours, but not found: count it rather than let it through
    module, cls = found
    for base in cls.bases:
        name = _qualified(base, module)
        if name is None:
            continue
        if name in NOT_COUNTED:
            return False
        if name.startswith(tuple(f"{p}." for p in OURS)) and not _is_part(name, root, depth + 1):
            return False
    return True


def mixin_classes(package: Path, root: Path) -> list[str]:
    """Classes under `package` with more than one of the project's own classes as bases."""
    found = []
    for path in sorted(package.rglob("*.py")):
        module = _parse(_module_name(path, root), root)
        assert module is not None
        for node in ast.walk(module.tree):
            if not isinstance(node, ast.ClassDef):
                continue
            parts = [
                name
                for base in node.bases
                if (name := _qualified(base, module)) is not None and _is_part(name, root)
            ]
            if len(parts) > 1:
                found.append(f"{module.name}.{node.name}({', '.join(parts)})")
    return found


# ---------------------------------------------------------------------- attribute writers


def _targets(node: ast.AST) -> Iterator[ast.expr]:
    if isinstance(node, ast.Assign):
        for target in node.targets:
            yield from _unpack(target)
    elif isinstance(node, ast.AugAssign | ast.AnnAssign):
        yield from _unpack(node.target)
    elif isinstance(node, ast.Delete):
        for target in node.targets:
            yield from _unpack(target)
    elif (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ("setattr", "delattr")
        and len(node.args) >= 2
        and isinstance(node.args[1], ast.Constant)
        and isinstance(node.args[1].value, str)
    ):  # setattr(x, "name", ...) is a write too
        yield ast.Attribute(value=node.args[0], attr=node.args[1].value, ctx=ast.Store())


def _unpack(target: ast.expr) -> Iterator[ast.expr]:
    if isinstance(target, ast.Tuple | ast.List):
        for element in target.elts:
            yield from _unpack(element)
    elif isinstance(target, ast.Starred):
        yield from _unpack(target.value)
    else:
        yield target


def _on_self(target: ast.expr) -> bool:
    return isinstance(target, ast.Attribute) and (
        isinstance(target.value, ast.Name) and target.value.id in ("self", "cls")
    )


def owned_attributes(package: Path) -> dict[str, set[str]]:
    """Attribute name → the modules (file stems) whose classes own it: they assign it on
    ``self`` or declare it as a field in the class body."""
    owners: dict[str, set[str]] = {}
    for path in sorted(package.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
            for stmt in cls.body:  # dataclass fields and class attributes
                if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                    owners.setdefault(stmt.target.id, set()).add(path.stem)
            for node in ast.walk(cls):
                for target in _targets(node):
                    if _on_self(target):
                        assert isinstance(target, ast.Attribute)
                        owners.setdefault(target.attr, set()).add(path.stem)
    return owners


def foreign_writes(package: Path) -> list[str]:
    """Writes, in a module of `package`, to an attribute that a class of another module of
    the package owns, on anything but ``self`` (``lane.pending += 1``, ``self._lanes.x = 1``)."""
    owners = owned_attributes(package)
    found = []
    for path in sorted(package.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for node in ast.walk(tree):
            for target in _targets(node):
                if not isinstance(target, ast.Attribute) or _on_self(target):
                    continue
                others = owners.get(target.attr, set()) - {path.stem}
                if others:
                    owner = ", ".join(sorted(others))
                    line = getattr(node, "lineno", 0)
                    found.append(f"{path.name}:{line}: writes .{target.attr} (owned in {owner})")
    return sorted(found, key=lambda f: (f.split(":")[0], int(f.split(":")[1])))


# ---------------------------------------------------------------------- the checks


def test_no_runtime_class_is_assembled_from_mixins() -> None:
    assert mixin_classes(ROOT / "storyteller_daemon" / "runtime", ROOT) == []


def test_no_stage_writes_another_stages_state() -> None:
    for package in STAGE_PACKAGES:
        assert foreign_writes(ROOT / package) == [], package


def test_the_mixin_check_catches_a_class_built_from_two_of_ours(tmp_path: Path) -> None:
    pkg = tmp_path / "storyteller_daemon" / "runtime"
    pkg.mkdir(parents=True)
    (tmp_path / "storyteller_daemon" / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("from .parts import Intake as Intake\n")
    (pkg / "parts.py").write_text(
        "from typing import Protocol\n"
        "class Port(Protocol): ...\n"
        "class Failure(Exception): ...\n"
        "class Refused(Failure): ...\n"
        "class Intake: ...\n"
        "class Turns: ...\n"
    )
    (pkg / "whole.py").write_text(
        "import storyteller_daemon.runtime.parts as parts\n"
        "from storyteller_daemon.runtime import Intake\n"
        "from storyteller_daemon.runtime.parts import Failure, Port, Refused\n"
        "class Pipeline(Intake, parts.Turns): ...\n"  # two parts of ours: caught
        "class Fine(Intake, Port): ...\n"  # one part and a protocol
        "class Error(Refused, Failure): ...\n"  # errors are not parts
    )
    assert mixin_classes(pkg, tmp_path) == [
        "storyteller_daemon.runtime.whole.Pipeline("
        "storyteller_daemon.runtime.Intake, storyteller_daemon.runtime.parts.Turns)"
    ]


def test_the_writer_check_catches_a_stage_writing_another_stages_field(tmp_path: Path) -> None:
    (tmp_path / "lanes.py").write_text(
        "from dataclasses import dataclass\n"
        "@dataclass\n"
        "class Lane:\n"
        "    pending: int = 0\n"
        "    def arrived(self) -> None:\n"
        "        self.pending += 1\n"
        "class Lanes:\n"
        "    def __init__(self) -> None:\n"
        "        self.stopping = False\n"
    )
    (tmp_path / "intake.py").write_text(
        "class Intake:\n"
        "    def __init__(self, lanes):\n"
        "        self._lanes = lanes\n"
        "    def store(self, lane) -> None:\n"
        "        lane.arrived()\n"  # through the owner's method: fine
        "        lane.pending += 1\n"  # caught
        "        self._lanes.stopping = True\n"  # caught, through a reference
        "        lane.pending, other = 0, 1\n"  # caught, in a tuple
        "        setattr(lane, 'pending', 2)\n"  # caught
        "        self.pending = 3\n"  # its own attribute of that name: not a write to Lane
    )
    assert foreign_writes(tmp_path) == [
        "intake.py:6: writes .pending (owned in lanes)",
        "intake.py:7: writes .stopping (owned in lanes)",
        "intake.py:8: writes .pending (owned in lanes)",
        "intake.py:9: writes .pending (owned in lanes)",
    ]


MAX_MODULE_LINES = 400
"""A module longer than this holds more than one concern: split it by concern."""


def test_every_module_is_at_most_400_lines() -> None:
    root = Path(__file__).resolve().parents[1]
    long = {
        path.relative_to(root).as_posix(): lines
        for package in ("storyteller_daemon", "world_adapter", "progs", "migrations")
        for path in (root / package).rglob("*.py")
        if (lines := len(path.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES
    }
    assert long == {}, f"modules over {MAX_MODULE_LINES} lines"
