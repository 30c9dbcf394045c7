"""The three layers stay layers: the core is pure, the adapter never needs the tools, litellm stays lazy."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "litellm_budget"
#: The only core modules that may import litellm, and only inside a function.
LAZY_LITELLM = {"core/window.py", "core/errors.py"}


def imports_of(path: Path) -> list[tuple[str, bool]]:
    """Every module ``path`` imports, made absolute, and whether the import sits at module level."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = ".".join(("litellm_budget", *path.relative_to(PACKAGE).parent.parts))
    top_level = {id(node) for node in tree.body}
    found: list[tuple[str, bool]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(alias.name, id(node) in top_level) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package.rsplit(".", node.level - 1)[0] if node.level else ""
            module = ".".join(filter(None, (base, node.module or "")))
            found += [
                (f"{module}.{alias.name}" if not node.module else module, id(node) in top_level) for alias in node.names
            ]
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
def test_nothing_imports_the_proxy(path: Path) -> None:
    """No module imports ``litellm.proxy``: an SDK install has no proxy extras (the proxy's router is
    read from its already loaded server module, ``adapter/callback.py``)."""
    assert [m for m, _ in imports_of(path) if m == "litellm.proxy" or m.startswith("litellm.proxy.")] == []


@pytest.mark.parametrize("path", sorted(PACKAGE.rglob("*.py")), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_modules_stay_small(path: Path) -> None:
    """Every module stays under 300 lines."""
    assert len(path.read_text(encoding="utf-8").splitlines()) < 300


def test_the_import_reader_sees_relative_and_lazy_imports(tmp_path: Path) -> None:
    """The reader above resolves relative imports and tells lazy ones apart, so the checks can fail."""
    probe = PACKAGE / "core" / "window.py"

    found = dict(imports_of(probe))

    assert found["litellm_budget.core.checks"] is True
    assert found["litellm"] is False


def test_importing_the_package_does_not_import_litellm() -> None:
    """A fresh interpreter imports litellm_budget and fit() without loading litellm or the adapter."""
    code = (
        "import sys, litellm_budget; from litellm_budget import fit, BudgetSettings; "
        "print(sorted(m for m in sys.modules if m == 'litellm' or m.startswith(('litellm.', "
        "'litellm_budget.adapter', 'litellm_budget.tools'))))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)

    assert result.stdout.strip() == "[]"
