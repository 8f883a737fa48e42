"""The package's shape, read from its imports: layers only look down, no import cycles, lazy imports only for
heavy libraries, and every command in the CLI's table exists.  See ARCHITECTURE.md."""

from __future__ import annotations

import ast
import importlib
from collections.abc import Iterator
from pathlib import Path

import click
import pytest

from statefile.cli import COMMANDS

PACKAGE = Path(__file__).resolve().parents[1] / "statefile"

# Lowest first.  A module may import its own layer and the layers below it, never one above.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "base",
        ("statefile.errors", "statefile.numbers", "statefile.defaults", "statefile.redaction", "statefile.jsontext"),
    ),
    ("model", ("statefile.model",)),
    ("policy", ("statefile.policy",)),
    ("views", ("statefile.views",)),
    ("store", ("statefile.store",)),
    ("integrations", ("statefile.integrations",)),
    ("app", ("statefile.app",)),
    ("cli", ("statefile.cli",)),
)
# The facade (statefile/__init__.py) re-exports from every layer; __main__ starts the CLI.  Neither is imported
# by the package itself.
FACADES = frozenset({"statefile", "statefile.__main__"})

# Function-level imports are allowed only for libraries too heavy to load on every start-up (tempfile: ~6 ms, and
# only a write needs it).
HEAVY = frozenset({"markdown_it", "frontmatter", "yaml", "hashlib", "tempfile", "mcp", "anyio", "pydantic"})


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def layer_of(module: str) -> int:
    for rank, (_, prefixes) in enumerate(LAYERS):
        if any(module == prefix or module.startswith(prefix + ".") for prefix in prefixes):
            return rank
    raise AssertionError(f"{module} belongs to no layer: add it to LAYERS in tests/test_architecture.py")


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imports(module: str) -> Iterator[tuple[str, int, bool, bool]]:
    """``(imported module, line, inside a function, type-checking only)`` for every import in ``module``."""
    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))

    def walk(node: ast.AST, in_function: bool, typing_only: bool) -> Iterator[tuple[str, int, bool, bool]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Import):
                for alias in child.names:
                    yield alias.name, child.lineno, in_function, typing_only
            elif isinstance(child, ast.ImportFrom):
                assert child.level == 0, f"{module}:{child.lineno}: the package uses absolute imports only"
                base = child.module or ""
                for alias in child.names:
                    # "from statefile.model import history" imports the module statefile.model.history.
                    full = f"{base}.{alias.name}"
                    yield (full if full in MODULES else base), child.lineno, in_function, typing_only
            elif isinstance(child, ast.If) and _is_type_checking(child):
                yield from walk(ast.Module(body=child.body, type_ignores=[]), in_function, True)
                yield from walk(ast.Module(body=child.orelse, type_ignores=[]), in_function, typing_only)
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                yield from walk(child, True, typing_only)
            else:
                yield from walk(child, in_function, typing_only)

    yield from walk(tree, False, False)


def internal_edges(*, runtime_only: bool) -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {name: set() for name in MODULES}
    for module in MODULES:
        for target, _, _, typing_only in imports(module):
            if target in MODULES and target != module and not (runtime_only and typing_only):
                graph[module].add(target)
    return graph


def test_every_module_has_a_layer() -> None:
    for module in MODULES:
        if module not in FACADES and module != "statefile.samples":
            layer_of(module)


def test_layers_only_import_downwards() -> None:
    wrong = []
    for module in MODULES:
        if module in FACADES:
            continue
        for target, line, _, _ in imports(module):
            if target in FACADES and target == "statefile":
                continue  # __version__ only
            if target.startswith("statefile.") and target in MODULES and layer_of(target) > layer_of(module):
                wrong.append(f"{module}:{line} imports {target} ({LAYERS[layer_of(target)][0]} is above "
                             f"{LAYERS[layer_of(module)][0]})")  # fmt: skip
    assert not wrong, "\n".join(wrong)


def test_no_import_cycles() -> None:
    """Tarjan's strongly connected components over run-time imports: every component is a single module."""
    graph = internal_edges(runtime_only=True)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    assert not cycles, cycles


def test_function_level_imports_only_for_heavy_libraries() -> None:
    lazy = []
    for module in MODULES:
        for target, line, in_function, typing_only in imports(module):
            if in_function and not typing_only and target.split(".")[0] not in HEAVY:
                lazy.append(f"{module}:{line} imports {target} inside a function")
    assert not lazy, "\n".join(lazy)


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_command_table_entries_are_commands(name: str) -> None:
    module, _, attribute = COMMANDS[name].partition(":")
    command = getattr(importlib.import_module(module), attribute)
    assert isinstance(command, click.Command) and command.name == name


def test_every_command_is_in_the_table() -> None:
    """A command defined in a CLI module but missing from the table would silently never run."""
    found: dict[str, click.Command] = {}
    for module in (name for name in MODULES if name.startswith("statefile.cli.")):
        for attribute, value in vars(importlib.import_module(module)).items():
            if isinstance(value, click.Command):
                found[f"{module}:{attribute}"] = value
    subcommands = {id(sub) for cmd in found.values() if isinstance(cmd, click.Group) for sub in cmd.commands.values()}
    top_level = {target for target, cmd in found.items() if id(cmd) not in subcommands}
    assert top_level == set(COMMANDS.values())
