"""
Every shell command of the README and of docs/ runs in a test, as written.

`RUNS` names, for each command, what runs it: this module itself (`HERE`: `litellm-budget` and
the research replay, `python -m benchmarks.replay`, on small inputs made here, the demo through
the real proxy), another test (`path::name`), or a step of CI (`.ci/run: ` and the line of
`.ci/run` that runs it). A command on a page that `RUNS` does not name fails
`test_every_command_is_run_by_a_test`, and so does a name in `RUNS` that no page has any more: a
new command cannot go in without a test, nor a test stay for a command gone.

The commands run here run as written from the repository's root, as a user runs them in a fresh
clone, on the example files they name (`examples/request.json`, `examples/sessions`: what
`tests/support/made_sessions.py` writes), with `litellm-budget` and `python` on PATH running this
checkout. A command that writes a file (`--plot replay_16k.png`) runs in a temporary copy of the
folders it names, at the same relative paths, so it writes nothing into the repository;
`litellm-budget demo` without `--config` runs from a folder outside the clone, as its page says it may.
"""

from __future__ import annotations

import ast
import contextlib
import io
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from benchmarks.replay import main as lab_replay
from litellm_budget import BudgetSettings
from litellm_budget.adapter.settings.invalid import deployment_settings, deployments_invalid
from litellm_budget.core.budget import apply_valid
from litellm_budget.tools.cli import main
from tests.support import docs
from tests.support.paths import DOCS, REPO_ROOT

#: Run by this module (``test_cheap_commands_run_as_written``, ``test_slow_commands_run_as_written``,
#: ``test_demo_commands_run_as_written``).
HERE = "here"
#: Where `make X` is checked: its recipe runs what the pages say it runs (``make -n``).
MAKE = "tests/packaging/test_doc_commands.py::test_make_targets_run_what_the_pages_say"
QUICK_START = "tests/packaging/test_readme.py::test_proxy_quick_start_runs_as_written"
WHEEL = "tests/packaging/test_wheel.py::test_readme_command_builds_the_wheel_it_installs"

RUNS: dict[str, str] = {
    # README: the two commands, Install, the proxy quick start.
    "make demo": MAKE,  # its recipe is `litellm-budget demo --config examples/config.yaml`, run HERE
    "make test": ".ci/run: make test",
    "python3 -m pip install .": '.ci/run: install clone "$clone[proxy,prometheus]"',
    "python3 -m pip install '.[proxy,prometheus]'": '.ci/run: install clone "$clone[proxy,prometheus]"',
    "python3 -m pip wheel --no-deps -w dist .": WHEEL,
    "python3 -m pip install 'dist/litellm_budget-0.1.0-py3-none-any.whl[proxy]'": (
        '.ci/run: install wheel "$wheel[proxy]"'
    ),
    "export LITELLM_LOCAL_MODEL_COST_MAP=True": QUICK_START,
    "export OPENAI_API_KEY=sk-...": QUICK_START,  # then the local fake provider's key
    """export LITELLM_MASTER_KEY="sk-$(python3 -c 'import secrets; print(secrets.token_hex(32))')\"""": QUICK_START,
    "litellm --config config.yaml": QUICK_START,
    # docs/reports.md
    'curl -sL -H "Authorization: Bearer $LITELLM_MASTER_KEY" http://127.0.0.1:4000/metrics/ '
    "| grep '^litellm_budget_.*_total'": "tests/packaging/test_readme.py::test_prometheus_section_runs_as_written",
    # docs/cli.md
    "litellm-budget --help": HERE,
    "litellm-budget replay --help": HERE,
    "litellm-budget inspect examples/request.json --model gpt-4o --window 16000": HERE,
    "litellm-budget inspect examples/request.json --model gpt-4o --window 16k --json": HERE,
    "litellm-budget inspect examples/sessions/made__shell.json --model gpt-4o --window 16k": HERE,
    "litellm-budget replay examples/sessions --model gpt-4o --window 8000,16000,32000 --policy auto,plan,elide": HERE,
    "litellm-budget replay examples/sessions/made__shell.json --model gpt-4o --window 16k --rows": HERE,
    "python -m benchmarks.replay examples/sessions --model gpt-4o --window 8000,16000,32000 "
    "--policy auto,plan,elide --baseline trim_messages,sliding --plot tokens.png": HERE,
    "python -m benchmarks.replay examples/sessions --model gpt-4o --window 16000 --policy auto,plan "
    "--baseline masking,clear_tool_uses,litellm_polyfill,langchain_trim "
    "--watermarks 0.5,0.6,0.75,0.85 --plot-cost cost.png": HERE,
    "litellm-budget replay examples/sessions --model gpt-4o --window 16k --config examples/config.yaml": HERE,
    "litellm-budget replay examples/sessions --model gpt-4o --window 16k --set watermark=0.8 "
    "--set protected_tail=12": HERE,
    "litellm-budget inspect examples/request.json --model gpt-4o --window 16k --config examples/config.yaml "
    "--set policy=plan": HERE,
    "litellm-budget demo": HERE,
    "litellm-budget demo --config examples/config.yaml": HERE,
    # docs/how-it-decides.md, docs/cache.md, docs/summaries.md
    "python -m benchmarks.replay examples/sessions/made__shell.json --model gpt-4o --window 16000 "
    "--policy auto --baseline trim_messages --rows": HERE,
    "python -m benchmarks.replay examples/sessions/made__shell.json --model gpt-4o --window 16000 "
    "--policy auto,plan,elide --baseline trim_messages,sliding --plot replay_16k.png": HERE,
    "litellm-budget replay examples/sessions --model gpt-4o --window 16000 --policy auto --no-progress": HERE,
    "litellm-budget replay examples/sessions --model gpt-4o --window 16000 --policy auto --stateless "
    "--no-progress": HERE,
    "python -m benchmarks.replay examples/sessions --model claude-sonnet-4-5 --format anthropic "
    "--window 16000,32000 --policy auto --client-breakpoints last --cache-breakpoints": HERE,
    "python -m benchmarks.replay examples/sessions --model gpt-4o --window 8000,16000 --policy auto,summarize "
    "--no-progress": HERE,
    # docs/development.md
    "make test-slow": ".ci/run: make test-slow",
    "make lint": ".ci/run: make lint",
    "make test-fast": MAKE,
    "make fuzz": MAKE,
    "make bench": MAKE,
    "make wheel": MAKE,
}

#: What each documented make target's recipe runs (`make -n`, one line of it): the same command a
#: page gives for it, run here or by the test `RUNS` names; the test targets run in CI themselves.
MAKE_RECIPES = {
    "demo": "litellm-budget demo --config examples/config.yaml",
    "test": '-m pytest -m "not slow"',
    "test-slow": "-m pytest -m slow",
    "test-fast": '-m pytest -m "not proxy and not subprocess and not sessions"',
    "fuzz": "HYPOTHESIS_PROFILE=fuzz .venv/bin/python -m pytest tests/core/test_properties.py",
    "lint": "mypy",
    "bench": "python benchmarks/bench_fit.py",
    "wheel": "pip wheel --quiet --no-deps -w dist .",
}

#: The commands this module runs: the package's console script, and the research replay of a clone.
COMMANDS = ("litellm-budget ", "python -m benchmarks.replay ")
#: Each one's entry point, run in this process on the words after it.
ENTRY_POINTS = {"litellm-budget": main, "python -m benchmarks.replay": lab_replay}

#: What makes a command slow: LiteLLM's `trim_messages` recounts the whole history for every message
#: it drops, tens of seconds on the example sessions on two cores; those run with the `slow` cases.
SLOW_BASELINE = "trim_messages"


def mapped() -> dict[str, str]:
    return {docs.normalized(command): runner for command, runner in RUNS.items()}


def kind_of(command: docs.Command) -> str:
    """``demo`` (it starts the proxy), ``slow`` (a `trim_messages` baseline) or ``cheap``."""
    if command.key.startswith("litellm-budget demo"):
        return "demo"
    return "slow" if SLOW_BASELINE in command.key else "cheap"


def run_here(kind: str) -> list[docs.Command]:
    """The commands this module runs, of one kind: ``demo``, ``slow`` or ``cheap``."""
    return [c for c in docs.commands() if mapped().get(c.key) == HERE and kind_of(c) == kind]


def test_every_command_is_run_by_a_test() -> None:
    """Each command of the pages is in RUNS, each name in RUNS is on a page, and each runner exists."""
    on_pages = {c.key: c for c in docs.commands()}
    named = mapped()

    unmapped = [f"{c.where()}: {c.text.strip()}" for key, c in on_pages.items() if key not in named]
    assert not unmapped, "commands no test runs (run them here, or name their test in RUNS):\n" + "\n".join(unmapped)
    assert sorted(set(named) - set(on_pages)) == [], "RUNS names commands no page has"
    for command, runner in named.items():
        assert runner_exists(runner), f"{command!r}: {runner!r} is not a test or a line of .ci/run"
    assert all(c.key.startswith(COMMANDS) for c in docs.commands() if named[c.key] == HERE)


def runner_exists(runner: str) -> bool:
    """``HERE``; a test function (or fixture) in its file, ``path::name`` or ``path::Class::name``; a line of CI."""
    if runner == HERE:
        return True
    if runner.startswith(".ci/run: "):
        return runner.removeprefix(".ci/run: ") in (REPO_ROOT / ".ci" / "run").read_text(encoding="utf-8")
    path, *names = runner.split("::")
    tree = ast.parse((REPO_ROOT / path).read_text(encoding="utf-8"))
    scope: list[ast.stmt] = tree.body
    for name in names[:-1]:
        scope = next((n.body for n in scope if isinstance(n, ast.ClassDef) and n.name == name), [])
    defined = (ast.FunctionDef, ast.AsyncFunctionDef)
    return bool(names) and any(isinstance(n, defined) and n.name == names[-1] for n in scope)


def test_the_commands_run_here_name_only_files_of_the_clone() -> None:
    """A `litellm-budget` command of the pages reads files a clone has, by paths relative to its root: none
    outside it (a user's clone has no ``../shared``), none it lacks (but the plots a command writes)."""
    outside, missing = [], []
    for command in run_here("cheap") + run_here("slow") + run_here("demo"):
        written = written_files(command.text)
        for word in shlex.split(command.key):
            if "/" not in word and not word.endswith(".json"):
                continue
            if word.startswith(("/", "..", "~")):
                outside.append(f"{command.where()}: {word}")
            elif word not in written and not (REPO_ROOT / word).exists():
                missing.append(f"{command.where()}: {word}")

    assert outside == []
    assert missing == []


def test_every_block_has_a_language() -> None:
    """A fenced block without a language (or with an unknown one) could hide a command from the test above."""
    unlabelled = [f"{docs.page_name(b.page)} '## {b.section}'" for b in docs.blocks() if b.lang not in docs.LANGUAGES]

    assert unlabelled == []


def named_folders(command: str) -> list[str]:
    """The top folders of the repository that ``command`` names paths in: ``examples`` for ``examples/sessions``."""
    words = shlex.split(docs.normalized(command))
    return sorted({Path(w).parts[0] for w in words if "/" in w and (REPO_ROOT / Path(w).parts[0]).is_dir()})


def folder_to_run_in(command: str, tmp_path: Path) -> Path:
    """
    The repository's root, where the pages' commands run; for a command that writes a file, a
    temporary copy of the folders it names, at the same relative paths, so the repository stays as it was.
    """
    if not written_files(command):
        return REPO_ROOT
    copy = tmp_path / "clone"
    for folder in named_folders(command):
        shutil.copytree(REPO_ROOT / folder, copy / folder)
    copy.mkdir(exist_ok=True)
    return copy


def shell(command: str, cwd: Path, tmp_path: Path, timeout: float) -> subprocess.CompletedProcess[str]:
    """Run ``command`` in bash, as written, with `litellm-budget` and `python` running this checkout."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    entry = "import sys; from litellm_budget.tools.cli import main; sys.exit(main())"
    shims = {"litellm-budget": f"-c {shlex.quote(entry)}", "python": ""}
    for name, arguments in shims.items():
        shim = bin_dir / name
        shim.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} {arguments} "$@"\n')
        shim.chmod(0o755)
    no_proxy = ",".join(p for p in (os.environ.get("NO_PROXY"), "127.0.0.1,localhost") if p)
    env = {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
        "PYTHONPATH": os.pathsep.join(p for p in (str(REPO_ROOT), os.environ.get("PYTHONPATH")) if p),
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "MPLBACKEND": "Agg",
        "NO_PROXY": no_proxy,
        "no_proxy": no_proxy,
    }
    return subprocess.run(
        ["bash", "-o", "pipefail", "-c", command],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def written_files(command: str) -> list[str]:
    """The files a command says it writes (``--plot X``, ``--plot-cost X``, ``--plot-recall X``)."""
    return re.findall(r"--plot(?:-cost|-recall)? (\S+)", docs.normalized(command))


#: What only a shell reads right (pipes, variables, globs, quotes' escapes, comments): a command with any of
#: it runs in bash; a plain one is split as bash splits it and runs in this process (in a process of its
#: own, each paid about four seconds of importing LiteLLM: this file took 48 s, now about 22 s).
_SHELL_SYNTAX = re.compile(r"[|&;<>()$`*?\[\]{}~\\#!]")


def run_plain(command: str, cwd: Path, monkeypatch: pytest.MonkeyPatch) -> subprocess.CompletedProcess[str]:
    """Run a plain command of ``COMMANDS`` (no shell syntax) through its entry point's ``main``, in ``cwd``."""
    argv = shlex.split(command)
    name = next(n for n in ENTRY_POINTS if command.startswith(f"{n} "))
    assert not _SHELL_SYNTAX.search(command), f"{command!r} needs a shell: run it with shell()"
    monkeypatch.chdir(cwd)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = ENTRY_POINTS[name](argv[len(name.split()) :])
        except SystemExit as exc:  # argparse's --help and usage errors
            code = exc.code if isinstance(exc.code, int) else 1
    return subprocess.CompletedProcess(argv, code, out.getvalue(), err.getvalue())


def run_as_written(command: docs.Command, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """
    ``command`` exits 0 from the repository's root (or a copy of what it names, when it writes a
    file), prints something, and writes what it says it writes: in bash through the console script
    where it is `--help` or uses shell syntax, else as bash would split it.
    """
    cwd = folder_to_run_in(command.text, tmp_path)
    plain = "--help" not in command.key.split() and not _SHELL_SYNTAX.search(command.text.strip())
    if plain:
        done = run_plain(command.text.strip(), cwd, monkeypatch)
    else:
        done = shell(command.text, cwd, tmp_path, timeout=300)

    assert done.returncode == 0, f"{command.where()}: {command.text}\n{done.stderr[-3000:]}"
    assert "Traceback" not in done.stderr
    assert done.stdout.strip()
    for name in written_files(command.text):
        assert cwd != REPO_ROOT
        assert (cwd / name).stat().st_size > 0, name
    if "--json" in command.key.split():
        json.loads(done.stdout)


@pytest.mark.subprocess
@pytest.mark.parametrize("command", run_here("cheap"), ids=lambda c: c.key)
def test_cheap_commands_run_as_written(command: docs.Command, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each `litellm-budget` command of the pages, but the demo's and the slow ones, runs as written."""
    run_as_written(command, tmp_path, monkeypatch)


@pytest.mark.slow  # tens of seconds each: `trim_messages` on every request of the example sessions
@pytest.mark.subprocess
@pytest.mark.parametrize("command", run_here("slow"), ids=lambda c: c.key)
def test_slow_commands_run_as_written(command: docs.Command, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each `litellm-budget replay` command of the pages with a `trim_messages` baseline runs as written."""
    run_as_written(command, tmp_path, monkeypatch)


@pytest.mark.slow  # tests/tools/test_cli.py runs the demo through the real proxy in the default run
@pytest.mark.proxy
@pytest.mark.subprocess
@pytest.mark.parametrize("command", run_here("demo"), ids=lambda c: c.key)
def test_demo_commands_run_as_written(command: docs.Command, tmp_path: Path) -> None:
    """The demo commands start the real proxy, replay the built-in session and shut the proxy down: from
    the clone's root with `--config examples/config.yaml`, from a folder outside the clone without."""
    cwd = REPO_ROOT if "examples/" in command.text else tmp_path

    done = shell(command.text, cwd, tmp_path, timeout=300)

    assert done.returncode == 0, f"{command.where()}: {command.text}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
    assert re.fullmatch(r"42 requests, \d+ trimmed, all answered; proxy stopped\.", done.stdout.splitlines()[-1])


@pytest.mark.subprocess
def test_make_targets_run_what_the_pages_say() -> None:
    """`make -n` of each documented target shows the recipe the pages give for it (nothing is run)."""
    if shutil.which("make") is None:
        pytest.skip("no make on this machine")
    targets = {c.key.split()[1] for c in docs.commands() if c.key.startswith("make ")}

    assert targets == set(MAKE_RECIPES)
    for target, recipe in MAKE_RECIPES.items():
        dry = subprocess.run(
            ["make", "-n", target], cwd=REPO_ROOT, capture_output=True, text=True, timeout=60, check=True
        )
        assert recipe in dry.stdout, f"make {target}: expected {recipe!r} in\n{dry.stdout}"


def test_the_demo_target_runs_a_command_run_here() -> None:
    """`make demo` runs `.venv/bin/litellm-budget demo --config examples/config.yaml`, which the pages give and
    `test_demo_commands_run_as_written` runs."""
    assert docs.normalized(MAKE_RECIPES["demo"]) in {c.key for c in run_here("demo")}


def test_every_config_block_is_valid() -> None:
    """Each YAML block of the pages parses, and the proxy would start with its settings: none invalid."""
    checked = 0
    for b in docs.blocks():
        if b.lang != "yaml":
            continue
        documents = list(yaml.safe_load_all(b.text))
        if all(isinstance(d, dict) and "kind" in d for d in documents):
            continue  # Kubernetes objects (docs/deploy.md): test_deploy_doc.py reads their config
        config = documents[0] if len(documents) == 1 else None
        assert isinstance(config, dict), docs.page_name(b.page)
        written = (config.get("callback_settings") or {}).get("litellm_budget") or {}
        settings, problems = apply_valid(BudgetSettings(), written)
        assert problems == (), f"{docs.page_name(b.page)} '## {b.section}': {problems}"
        invalid = deployments_invalid(config.get("model_list") or [], settings)
        if "model_info" in config:
            invalid += deployment_settings(config["model_info"], settings, group="documented")[1]
        assert invalid == [], f"{docs.page_name(b.page)} '## {b.section}': {[i.describe() for i in invalid]}"
        checked += 1

    assert checked >= 4


def help_flags(command: str) -> set[str]:
    """The options `litellm-budget COMMAND --help` lists (`python -m benchmarks.replay --help` for ``lab``)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit):
        lab_replay(["--help"]) if command == "lab" else main([command, "--help"])
    return set(re.findall(r"(?<![\w-])--[a-z][\w-]*", out.getvalue()))


def test_flags_in_the_text_exist() -> None:
    """Every `--flag` the pages' prose gives a `litellm-budget` subcommand or the research replay is one of its own."""
    inline = re.compile(r"`((?:litellm-budget (inspect|replay|demo)|python -m benchmarks\.replay)\b[^`]*)`")
    unknown = []
    for page in docs.pages():
        for span, command in inline.findall(page.read_text(encoding="utf-8")):
            missing = set(re.findall(r"(?<![\w-])--[a-z][\w-]*", span)) - help_flags(command or "lab")
            unknown += [f"{docs.page_name(page)}: `{span}`: {flag}" for flag in sorted(missing)]

    assert unknown == []


def test_the_inspect_example_is_what_inspect_prints(monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/cli.md's example output is what the first command of its section prints, from the clone's root."""
    shown = docs.block("text", "inspect", "indices  role", page=DOCS / "cli.md")
    command = next(c for c in docs.commands(DOCS / "cli.md") if c.section == "inspect")
    monkeypatch.chdir(REPO_ROOT)
    out = io.StringIO()

    with contextlib.redirect_stdout(out):
        assert main(shlex.split(command.text, comments=True)[1:]) == 0

    assert "examples/request.json" in command.key
    assert out.getvalue() == shown
