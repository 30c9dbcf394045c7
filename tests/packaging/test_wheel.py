"""The wheel the README builds works from outside the clone, and its extras bring what the README says.

The wheel is built with the README's own command in a copy of the clone, then installed without
its dependencies into a folder (`pip install --no-deps --target`) and run from another folder with
this interpreter, whose environment already has LiteLLM. Fresh virtual environments with each
extra, dependencies and all, take minutes: CI does them after the tests (`.ci/run`).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from tests.support.paths import README, REPO_ROOT

DEMO_CONFIG = Path("litellm_budget/tools/demo/config.yaml")
#: The research replay's modules (``benchmarks/lab``): a clone's, never the wheel's.
LAB_MODULES = {
    "baselines",
    "cache_model",
    "compress_peer",
    "evidence",
    "langchain_peer",
    "outcome",
    "peers",
    "plot",
    "plot_cost",
    "plot_labels",
    "plot_recall",
    "pricing",
    "replay_summaries",
}
#: What a copy of the clone leaves out: environments, caches and build output.
NOT_CLONED = shutil.ignore_patterns(
    ".git", ".venv", "dist", "build", "*.egg-info", "__pycache__", ".mypy_cache", ".ruff_cache", ".pytest_cache"
)

# Slow (12 s on two cores): `make test-slow` runs it, after `make test`, in CI (which installs the wheel too).
pytestmark = [pytest.mark.subprocess, pytest.mark.slow]


def readme_commands() -> list[str]:
    """Every line of the README's ```sh blocks, comments removed."""
    text = README.read_text(encoding="utf-8")
    blocks = re.findall(r"^```sh\n(.*?)^```$", text, re.MULTILINE | re.DOTALL)
    lines = [line for b in blocks for line in b.replace("\\\n", " ").splitlines()]
    return [" ".join(shlex.split(line, comments=True)) for line in lines if line.strip()]


def pip_install_targets() -> list[str]:
    """What the README's `pip install` commands install: paths, wheels and names with their extras."""
    targets = []
    for command in readme_commands():
        words = shlex.split(command)
        if "pip" in words and "install" in words:
            targets += [word for word in words[words.index("install") + 1 :] if not word.startswith("-")]
    return targets


def extras_table() -> dict[str, str]:
    """The README's Install table of extras: name -> the `brings` cell."""
    section = README.read_text(encoding="utf-8").split("## Install", 1)[1].split("\n## ", 1)[0]
    rows = [line.split("|")[1:3] for line in section.splitlines() if line.startswith("| `")]
    return {name.strip().strip("`"): brings for name, brings in rows}


def child_env(site: Path) -> dict[str, str]:
    """This environment, with the installed wheel first on the path and the model map offline."""
    return {**os.environ, "PYTHONPATH": str(site), "LITELLM_LOCAL_MODEL_COST_MAP": "True"}


@pytest.fixture(name="wheel", scope="module")
def fixture_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel the README's one command builds, in a copy of the clone."""
    clone = tmp_path_factory.mktemp("clone") / "litellm_budget"
    shutil.copytree(REPO_ROOT, clone, ignore=NOT_CLONED)
    (command,) = [c for c in readme_commands() if c.startswith("python3 -m pip wheel")]
    argv = shlex.split(command)
    assert argv[:4] == ["python3", "-m", "pip", "wheel"]
    subprocess.run([sys.executable, *argv[1:]], cwd=clone, capture_output=True, timeout=600, check=True)
    (wheel,) = (clone / "dist").glob("*.whl")
    return wheel


@pytest.fixture(name="site", scope="module")
def fixture_site(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel installed, without dependencies, into a folder of its own."""
    site = tmp_path_factory.mktemp("site")
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(site), str(wheel)],
        capture_output=True,
        timeout=300,
        check=True,
    )
    return site


def metadata(wheel: Path) -> dict[str, list[Requirement]]:
    """The wheel's requirements per extra ("" for the base)."""
    with zipfile.ZipFile(wheel) as archive:
        (name,) = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
        message = Parser().parsestr(archive.read(name).decode())
    extras: dict[str, list[Requirement]] = {extra: [] for extra in message.get_all("Provides-Extra") or []}
    extras[""] = []
    for line in message.get_all("Requires-Dist") or []:
        requirement = Requirement(line)
        marker = re.search(r"extra == \"([\w-]+)\"", str(requirement.marker or ""))
        extras[marker.group(1) if marker else ""].append(requirement)
    return extras


def spelled(requirement: Requirement) -> str:
    """A requirement's normalised name and extras, without its versions: `litellm[proxy]`."""
    name = re.sub(r"[-_.]+", "-", requirement.name).lower()
    return name + (f"[{','.join(sorted(requirement.extras))}]" if requirement.extras else "")


def test_readme_command_builds_the_wheel_it_installs(wheel: Path) -> None:
    """The README's wheel command builds exactly the file its install command names, with the CLI and the data."""
    named = {Path(t.split("[")[0]).name for t in pip_install_targets() if t.split("[")[0].endswith(".whl")}

    with zipfile.ZipFile(wheel) as archive:
        files = set(archive.namelist())
        entry_points = next(archive.read(n).decode() for n in files if n.endswith(".dist-info/entry_points.txt"))

    assert named == {wheel.name}
    assert {"litellm_budget/__init__.py", "litellm_budget/py.typed", "litellm_budget/tools/cli.py"} <= files
    assert "litellm-budget = litellm_budget.tools.cli:main" in entry_points
    assert [name for name in files if Path(name).stem in LAB_MODULES or not name.startswith("litellm_budget")] == []
    if (REPO_ROOT / DEMO_CONFIG).is_file():
        assert DEMO_CONFIG.as_posix() in files


def test_extras_bring_what_the_readme_says(wheel: Path) -> None:
    """Each extra of the README's table is declared, and brings the packages its row names."""
    declared = metadata(wheel)
    table = extras_table()

    assert set(table) == set(declared) - {""}
    for extra, brings in table.items():
        if extra != "dev":
            assert {spelled(Requirement(name)) for name in re.findall(r"`([^`]+)`", brings)} == {
                spelled(r) for r in declared[extra]
            }, extra
    litellm = [(extra, r) for extra, requirements in declared.items() for r in requirements if r.name == "litellm"]
    assert {extra for extra, _ in litellm} >= {"", "proxy", "demo"}
    assert all(r.specifier.contains("1.108.5") and not r.specifier.contains("1.107.0") for _, r in litellm)


def test_readme_installs_only_declared_extras(wheel: Path) -> None:
    """Every `pip install` of this package in the README asks only for extras it declares."""
    declared = set(metadata(wheel))
    ours = [t for t in pip_install_targets() if not t.startswith("litellm[")]

    asked = {extra for t in ours if "[" in t for extra in Requirement("x" + t[t.index("[") :]).extras}

    assert ours
    assert asked
    assert asked <= declared


def test_installed_wheel_runs_outside_the_clone(site: Path, wheel: Path, tmp_path: Path) -> None:
    """From another folder, the installed console script answers --help and the package reports its version."""
    version = wheel.name.split("-")[1]
    script = "import litellm_budget; print(litellm_budget.__version__); print(litellm_budget.__file__)"

    helped = subprocess.run(
        [str(site / "bin" / "litellm-budget"), "--help"],
        cwd=tmp_path,
        env=child_env(site),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    imported = subprocess.run(
        [sys.executable, "-c", script], cwd=tmp_path, env=child_env(site), capture_output=True, text=True, check=False
    )

    assert helped.returncode == 0, helped.stderr
    assert {"inspect", "replay", "demo"} <= set(re.findall(r"\w+", helped.stdout))
    assert imported.returncode == 0, imported.stderr
    printed_version, location = imported.stdout.split()
    assert printed_version == version
    assert Path(location).is_relative_to(site)


def test_installed_wheel_replays_sessions(site: Path, tmp_path: Path) -> None:
    """`litellm-budget replay` runs from the installed wheel; a research option names the clone's replay."""
    session = REPO_ROOT / "examples" / "sessions" / "made__shell.json"
    replay = [str(site / "bin" / "litellm-budget"), "replay", str(session), "--model", "gpt-4o", "--window", "8k"]

    def run(*extra: str) -> subprocess.CompletedProcess[str]:
        command = [*replay, "--no-progress", *extra]
        return subprocess.run(
            command, cwd=tmp_path, env=child_env(site), capture_output=True, text=True, timeout=180, check=False
        )

    replayed, refused = run("--json"), run("--baseline", "sliding")

    assert replayed.returncode == 0, replayed.stderr[-2000:]
    (result,) = json.loads(replayed.stdout)["results"]
    assert (result["policy"], result["window"], result["fitted"]) == ("auto", 8000, result["requests"])
    assert refused.returncode == 2
    assert "python -m benchmarks.replay" in refused.stderr


def test_installed_wheel_loads_the_proxy_callback(site: Path, tmp_path: Path) -> None:
    """`litellm_budget.handler`, the name the proxy config gives, resolves from the installed wheel."""
    script = "import litellm_budget; print(type(litellm_budget.handler).__name__)"

    done = subprocess.run(
        [sys.executable, "-c", script], cwd=tmp_path, env=child_env(site), capture_output=True, text=True, check=False
    )

    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["ContextBudget"]


@pytest.mark.proxy
@pytest.mark.skipif(not (REPO_ROOT / DEMO_CONFIG).is_file(), reason=f"{DEMO_CONFIG} has not landed yet")
def test_installed_demo_runs_with_its_built_in_config(site: Path, tmp_path: Path) -> None:
    """`litellm-budget demo` without --config, from outside the clone, finds the config inside the package."""
    done = subprocess.run(
        [str(site / "bin" / "litellm-budget"), "demo", "--steps", "3"],
        cwd=tmp_path,
        env=child_env(site),
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )

    # A relative default like examples/config.yaml does not exist here: success means the packaged one was found.
    assert not (tmp_path / "examples").exists()
    assert done.returncode == 0, done.stderr[-3000:]


def test_the_deploy_pages_dockerfile_loads_the_plugin_from_the_wheel(site: Path) -> None:
    """The check docs/deploy.md's image runs at build, against the wheel installed without its dependencies."""
    from tests.packaging.test_deploy_doc import instructions

    (check,) = [part for part in instructions("RUN")[0].split("&&") if "python3 -c" in part]
    code = shlex.split(check)[2]
    probe = f"{code}\nimport litellm_budget; print(litellm_budget.__file__)"
    command = [sys.executable, "-c", probe]
    done = subprocess.run(
        command, cwd=site, env=child_env(site), capture_output=True, text=True, timeout=120, check=True
    )
    name, where = done.stdout.split()[-2:]

    assert name == "ContextBudget"
    assert where.startswith(str(site))
