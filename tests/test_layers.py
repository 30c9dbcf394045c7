"""The three layers stay layers: the core is pure, the adapter never needs the tools, litellm stays lazy."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "litellm_budget"
#: The only core modules that may import litellm, and only inside a function.
LAZY_LITELLM = {"core/budget/_window.py", "core/_errors.py"}


class Import(NamedTuple):
    """One import statement's module, made absolute, the names taken from it, and where it sits."""

    module: str
    #: The names of a from-import (``from . import x`` names modules of the package itself).
    names: tuple[str, ...]
    #: At module level (runs on import), not inside a function or an ``if``.
    top_level: bool
    #: Under ``if TYPE_CHECKING:``: it never runs, so it makes no cycle.
    for_typing: bool


def imports_in(path: Path) -> list[Import]:
    """Every import in ``path``, plain and from-imports, relative ones resolved."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = ".".join(("litellm_budget", *path.relative_to(PACKAGE).parent.parts))
    top_level = {id(node) for node in tree.body}
    for_typing = {id(inner) for node in ast.walk(tree) if _is_type_checking(node) for inner in _walk_body(node)}
    found: list[Import] = []
    for node in ast.walk(tree):
        where = (id(node) in top_level, id(node) in for_typing)
        if isinstance(node, ast.Import):
            found += [Import(alias.name, (), *where) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package.rsplit(".", node.level - 1)[0] if node.level else ""
            module = ".".join(filter(None, (base, node.module or "")))
            found.append(Import(module, tuple(alias.name for alias in node.names), *where))
    return found


def _is_type_checking(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and ast.unparse(node.test).endswith("TYPE_CHECKING")


def _walk_body(node: ast.AST) -> list[ast.AST]:
    return [inner for statement in getattr(node, "body", []) for inner in ast.walk(statement)]


def imports_of(path: Path) -> list[tuple[str, bool]]:
    """
    Every module ``path`` imports, made absolute, and whether the import sits at module level;
    each name of a from-import counts once, as ``module.name`` when it is a module of the package.
    """
    found: list[tuple[str, bool]] = []
    for imported in imports_in(path):
        for name in imported.names or ("",):
            submodule = f"{imported.module}.{name}"
            found.append((submodule if submodule in MODULES else imported.module, imported.top_level))
    return found


def module_name(path: Path) -> str:
    """``litellm_budget/core/formats/__init__.py`` is ``litellm_budget.core.formats``."""
    parts = ("litellm_budget", *path.relative_to(PACKAGE).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(path): path for path in PACKAGE.rglob("*.py")}


def import_graph(*, typing: bool = False) -> dict[str, set[str]]:
    """
    The package's modules each one imports when it runs: lazy imports count, ``TYPE_CHECKING`` ones
    only with ``typing`` (a reader follows those too).
    """
    graph: dict[str, set[str]] = {}
    for name, path in MODULES.items():
        edges: set[str] = set()
        for imported in imports_in(path):
            if imported.for_typing and not typing:
                continue
            for part in imported.names or ("",):
                submodule = f"{imported.module}.{part}"
                edges.add(submodule if submodule in MODULES else imported.module)
        graph[name] = {edge for edge in edges if edge in MODULES and edge != name}
    return graph


def cycles_in(graph: dict[str, set[str]]) -> list[list[str]]:
    """Each import cycle once, as the path that closes it (``[a, b, a]``), found by walking every module's imports."""
    found: list[list[str]] = []
    seen: set[frozenset[str]] = set()
    done: set[str] = set()

    def walk(module: str, path: list[str]) -> None:
        for imported in sorted(graph.get(module, ())):
            if imported in path:
                cycle = [*path[path.index(imported) :], imported]
                if frozenset(cycle) not in seen:
                    seen.add(frozenset(cycle))
                    found.append(cycle)
            elif imported not in done:
                walk(imported, [*path, imported])
        done.add(module)

    for module in sorted(graph):
        if module not in done:
            walk(module, [module])
    return found


def modules_in(layer: str) -> list[Path]:
    return sorted((PACKAGE / layer).rglob("*.py"))


@pytest.mark.parametrize("path", modules_in("core"), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_core_never_imports_the_adapter_or_the_tools(path: Path) -> None:
    """A core module imports only the core, the public typing module and libraries."""
    forbidden = [m for m, _ in imports_of(path) if m.startswith(("litellm_budget.adapter", "litellm_budget.tools"))]

    assert forbidden == []


@pytest.mark.parametrize("path", modules_in("core"), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_core_imports_litellm_only_lazily_and_only_where_needed(path: Path) -> None:
    """litellm is imported inside functions, and only by the window lookup and the error builder."""
    litellm_imports = [(m, top) for m, top in imports_of(path) if m == "litellm" or m.startswith("litellm.")]

    assert not any(top for _, top in litellm_imports)
    if str(path.relative_to(PACKAGE)) not in LAZY_LITELLM:
        assert litellm_imports == []


@pytest.mark.parametrize("path", modules_in("adapter"), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_adapter_never_imports_the_tools(path: Path) -> None:
    """The request path never loads the CLI, the replay or the demo."""
    assert [m for m, _ in imports_of(path) if m.startswith("litellm_budget.tools")] == []


@pytest.mark.parametrize("path", sorted(PACKAGE.rglob("*.py")), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_the_wheel_never_imports_the_clones_lab_or_tests(path: Path) -> None:
    """The research replay (``benchmarks/lab``) and the tests are a clone's: the wheel needs neither."""
    assert [m for m, _ in imports_of(path) if m.split(".")[0] in {"benchmarks", "tests"}] == []


@pytest.mark.parametrize("path", modules_in("adapter"), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_adapter_enters_the_core_by_its_front_door(path: Path) -> None:
    """The adapter imports the core's ``api`` module only: what it depends on is one list."""
    entered = {i.module for i in imports_in(path) if i.module.startswith("litellm_budget.core")}

    assert entered <= {"litellm_budget.core.api"}


@pytest.mark.parametrize("path", sorted(PACKAGE.rglob("*.py")), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_nothing_imports_the_proxy(path: Path) -> None:
    """No module imports ``litellm.proxy``: an SDK install has no proxy extras (the proxy's router is
    read from its already loaded server module, ``adapter/callback.py``)."""
    assert [m for m, _ in imports_of(path) if m == "litellm.proxy" or m.startswith("litellm.proxy.")] == []


@pytest.mark.parametrize("path", sorted(PACKAGE.rglob("*.py")), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_modules_stay_small(path: Path) -> None:
    """Every module stays at most 300 lines, with no exemption."""
    assert len(path.read_text(encoding="utf-8").splitlines()) <= 300


def stem(name: str) -> str:
    """
    What a module's name says, for telling names alike: a plural (``-s``, ``-ies``) made singular,
    then an ``-ing``, ``-er`` or ``-ion`` ending taken off. ``summarizer`` and ``summarizing`` are
    alike, so are ``conversation`` and ``conversations``; ``calls`` and ``callback`` are not.
    """
    if name.endswith("ies"):
        name = name[:-3] + "y"
    elif name.endswith("s") and not name.endswith("ss"):
        name = name[:-1]
    for ending in ("ing", "er", "ion"):
        if name.endswith(ending) and len(name) > len(ending) + 2:
            return name[: -len(ending)]
    return name


def test_no_two_modules_named_alike() -> None:
    """No two modules (or packages) anywhere in the package share a name, once plurals and endings are set aside."""
    named: dict[str, list[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        module = path.parent if path.name == "__init__.py" else path.with_suffix("")
        if module != PACKAGE:
            named.setdefault(stem(module.name), []).append(str(module.relative_to(PACKAGE)))

    assert {name: modules for name, modules in named.items() if len(modules) > 1} == {}


def test_the_alike_reader_tells_alike_names() -> None:
    """The names the issue found alike are alike to ``stem``; names that only share letters are not."""
    assert stem("summarizer") == stem("summarizing")
    assert stem("conversation") == stem("conversations")
    assert stem("summary") == stem("summaries")
    assert stem("calls") != stem("callback")
    assert stem("progress") == "progress"


def test_no_noqa_for_too_many_arguments() -> None:
    """
    No function takes more than six arguments (``max-args`` in pyproject.toml) but the public
    ``fit()``, whose keywords are its documented signature: what travels together is a value or an
    object, and no module is exempt.
    """
    tomllib = pytest.importorskip("tomllib")
    found = [
        f"{path.relative_to(PACKAGE)}:{line.split('(')[0].strip()}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for line in path.read_text(encoding="utf-8").splitlines()
        if "noqa" in line and "PLR0913" in line
    ]
    lint = tomllib.loads((PACKAGE.parent / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["ruff"]["lint"]
    exempt = sorted(name for name, rules in lint["per-file-ignores"].items() if "PLR0913" in rules)

    assert found == ["core/_fit.py:def fit"]
    assert exempt == ["tests/**"]
    assert lint["pylint"]["max-args"] == 6


def test_the_call_id_is_read_in_at_most_two_modules() -> None:
    """LiteLLM's ``litellm_call_id`` is read (and minted) by one function of ``adapter/records/calls.py``."""
    readers = sorted(
        str(path.relative_to(PACKAGE))
        for path in PACKAGE.rglob("*.py")
        if any(
            isinstance(node, ast.Constant) and node.value == "litellm_call_id"
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        )
    )

    assert len(readers) <= 2, readers
    assert "adapter/records/calls.py" in readers


def test_the_import_reader_sees_relative_and_lazy_imports(tmp_path: Path) -> None:
    """The reader above resolves relative imports and tells lazy ones apart, so the checks can fail."""
    probe = PACKAGE / "core" / "budget" / "_window.py"

    found = dict(imports_of(probe))

    assert found["litellm_budget.core._checks"] is True
    assert found["litellm"] is False


def mutable_tables_in(path: Path) -> list[str]:
    """The module-level names of ``path`` bound to a dict, list or set display or comprehension."""
    displays = (ast.Dict, ast.List, ast.Set, ast.DictComp, ast.ListComp, ast.SetComp)
    found: list[str] = []
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        targets = (
            node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        )
        if isinstance(getattr(node, "value", None), displays):
            found += [ast.unparse(target) for target in targets]
    return found


def test_constant_tables_are_read_only() -> None:
    """
    No module-level dict, list or set: a table of constants is a ``MappingProxyType``, a tuple or a
    frozenset, so no request can change what the next one reads; what does change lives in ``PROCESS``
    and the memos.
    """
    found = [
        f"{path.relative_to(PACKAGE)}:{name}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for name in mutable_tables_in(path)
    ]

    assert found == []


def test_the_table_reader_sees_every_mutable_display(tmp_path: Path) -> None:
    """The reader above finds displays and comprehensions, annotated or not, and leaves tuples alone."""
    probe = tmp_path / "probe.py"
    probe.write_text("A = {}\nB: list[int] = []\nC = {n for n in ()}\nD = (1,)\nE = frozenset()\n", encoding="utf-8")

    assert mutable_tables_in(probe) == ["A", "B", "C"]


def test_no_import_cycle() -> None:
    """No module of the package imports one that imports it back, lazily, for typing only, or not."""
    cycles = [" -> ".join(cycle) for cycle in cycles_in(import_graph(typing=True))]

    assert cycles == []


def test_no_folder_holds_more_than_twelve_modules() -> None:
    """A folder a reader can take in at a glance: past twelve modules, it splits by role, with a face."""
    folders: dict[str, int] = {}
    for path in PACKAGE.rglob("*.py"):
        if path.name != "__init__.py":
            folders[str(path.parent.relative_to(PACKAGE))] = folders.get(str(path.parent.relative_to(PACKAGE)), 0) + 1

    assert {folder: count for folder, count in folders.items() if count > 12} == {}


def test_the_cycle_reader_counts_lazy_imports_and_not_type_checking_ones() -> None:
    """An import inside a function is an edge, one under ``TYPE_CHECKING`` is not, and a cycle is found as a path."""
    errors = import_graph()["litellm_budget.core._errors"]

    assert "litellm_budget.exceptions" in errors  # imported inside context_window_exceeded
    assert "litellm_budget.core._report" not in errors  # imported for the annotations only
    assert cycles_in({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c", "a"]]
    assert cycles_in({"a": {"b"}, "b": set()}) == []


def test_importing_the_package_does_not_import_litellm() -> None:
    """A fresh interpreter imports litellm_budget and fit() without loading litellm or the adapter."""
    code = (
        "import sys, litellm_budget; from litellm_budget import fit, BudgetSettings; "
        "print(sorted(m for m in sys.modules if m == 'litellm' or m.startswith(('litellm.', "
        "'litellm_budget.adapter', 'litellm_budget.tools'))))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)

    assert result.stdout.strip() == "[]"


def test_the_plugin_at_work_never_loads_the_tools() -> None:
    """
    The CLI and the replay loop live in ``litellm_budget.tools``, which the plugin never imports: a
    request fitted through LiteLLM's SDK with the plugin loads none of it.
    """
    code = """
import asyncio, sys, litellm, litellm_budget
litellm.callbacks = [litellm_budget.handler]
history = [{"role": "user", "content": "word " * 30000}, {"role": "assistant", "content": "ok"}]
messages = [*history, {"role": "user", "content": "go on"}]
reply = asyncio.run(litellm.acompletion(model="gpt-4", messages=messages, mock_response="done"))
assert reply.choices[0].message.content == "done"
print(sorted(m for m in sys.modules if m.startswith("litellm_budget")))
"""
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    command = [sys.executable, "-c", code]
    result = subprocess.run(command, check=False, capture_output=True, text=True, env=env, timeout=180)

    assert result.returncode == 0, result.stderr[-2000:]
    loaded = [name.strip(" '") for name in result.stdout.strip().strip("[]").split(",")]
    assert "litellm_budget.adapter.callback" in loaded
    assert "litellm_budget.core._fit" in loaded
    assert [name for name in loaded if name.startswith("litellm_budget.tools")] == []
