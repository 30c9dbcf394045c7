"""
Every shell command of the README and of docs/ runs in a test, as written.

`RUNS` names, for each command, what runs it: this module itself (`HERE`: `litellm-budget` on
small inputs made here, the demo through the real proxy), another test (`path::name`), or a step
of CI (`.ci/run: ` and the line of `.ci/run` that runs it). A command on a page that `RUNS` does
not name fails `test_every_command_is_run_by_a_test`, and so does a name in `RUNS` that no page
has any more: a new command cannot go in without a test, nor a test stay for a command gone.

The commands run here run in bash, byte for byte, from a folder that holds what they name
(`request.json`, `sessions/`, `../shared/sessions`) made of small synthetic sessions, with
`litellm-budget` on PATH running this checkout.
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

from litellm_budget import BudgetSettings
from litellm_budget.adapter.invalid_settings import deployment_settings, deployments_invalid
from litellm_budget.core.budget._setting_problems import apply_valid
from litellm_budget.tools.cli import main
from tests.support import docs
from tests.support.builders import agent_session
from tests.support.paths import DOCS, REPO_ROOT, SESSIONS_DIR, session_file

#: Run by this module (``test_cheap_commands_run_as_written``, ``test_demo_commands_run_as_written``).
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
    "litellm-budget inspect request.json --model gpt-4o --window 16000": HERE,
    "litellm-budget inspect request.json --model gpt-4o --window 16k --json": HERE,
    "litellm-budget inspect ../shared/sessions/mini__django__django-14351.json --model gpt-4o --window 16k": HERE,
    "litellm-budget replay sessions/ --model gpt-4o --window 8000,16000,32000 "
    "--policy auto,plan,elide --baseline trim_messages,sliding --plot tokens.png": HERE,
    "litellm-budget replay sessions/ --model gpt-4o --window 16000 --policy auto,plan "
    "--baseline masking,clear_tool_uses,litellm_polyfill,langchain_trim "
    "--watermarks 0.5,0.6,0.75,0.85 --plot-cost cost.png": HERE,
    "litellm-budget replay sessions/ --model gpt-4o --window 16k --config examples/config.yaml": HERE,
    "litellm-budget replay sessions/ --model gpt-4o --window 16k --set watermark=0.8 --set protected_tail=12": HERE,
    "litellm-budget inspect request.json --model gpt-4o --window 16k --config examples/config.yaml "
    "--set policy=plan": HERE,
    "litellm-budget demo": HERE,
    "litellm-budget demo --config examples/config.yaml": HERE,
    # docs/how-it-decides.md, docs/cache.md, docs/summaries.md
    "litellm-budget replay ../shared/sessions/mini__django__django-14351.json --model gpt-4o --window 16000 "
    "--policy auto --baseline trim_messages --rows": HERE,
    "litellm-budget replay ../shared/sessions/mini__django__django-14351.json --model gpt-4o --window 16000 "
    "--policy auto,plan,elide --baseline trim_messages,sliding --plot replay_16k.png": HERE,
    "litellm-budget replay ../shared/sessions --model gpt-4o --window 16000 --policy auto --no-progress": HERE,
    "litellm-budget replay ../shared/sessions --model gpt-4o --window 16000 --policy auto --stateless "
    "--no-progress": HERE,
    "litellm-budget replay ../shared/sessions --model claude-sonnet-4-5 --format anthropic "
    "--window 16000,32000 --policy auto --client-breakpoints last --cache-breakpoints": HERE,
    "litellm-budget replay ../shared/sessions --model gpt-4o --window 8000,16000 --policy auto,summarize "
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

#: The sessions the shared-session commands find in ``../shared/sessions``: small and synthetic.
SHARED_NAMES = ("mini__django__django-14351", "tau__airline_task00_trial3")


def mapped() -> dict[str, str]:
    return {docs.normalized(command): runner for command, runner in RUNS.items()}


def run_here(kind: str) -> list[docs.Command]:
    """The commands this module runs: the demo's (they start the proxy) or the rest."""
    ours = [c for c in docs.commands() if mapped().get(c.key) == HERE]
    return [c for c in ours if c.key.startswith("litellm-budget demo") == (kind == "demo")]


def test_every_command_is_run_by_a_test() -> None:
    """Each command of the pages is in RUNS, each name in RUNS is on a page, and each runner exists."""
    on_pages = {c.key: c for c in docs.commands()}
    named = mapped()

    unmapped = [f"{c.where()}: {c.text.strip()}" for key, c in on_pages.items() if key not in named]
    assert not unmapped, "commands no test runs (run them here, or name their test in RUNS):\n" + "\n".join(unmapped)
    assert sorted(set(named) - set(on_pages)) == [], "RUNS names commands no page has"
    for command, runner in named.items():
        assert runner_exists(runner), f"{command!r}: {runner!r} is not a test or a line of .ci/run"
    assert all(c.key.startswith("litellm-budget ") for c in docs.commands() if named[c.key] == HERE)


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


def test_every_block_has_a_language() -> None:
    """A fenced block without a language (or with an unknown one) could hide a command from the test above."""
    unlabelled = [f"{docs.page_name(b.page)} '## {b.section}'" for b in docs.blocks() if b.lang not in docs.LANGUAGES]

    assert unlabelled == []


@pytest.fixture(name="workspace")
def fixture_workspace(tmp_path: Path) -> Path:
    """A folder with what the commands name, and ``../shared/sessions`` beside it; small sessions only."""
    work = tmp_path / "work"
    (work / "sessions").mkdir(parents=True)
    for number in range(2):
        session = {"source": "test", "messages": agent_session(12, 700)}
        (work / "sessions" / f"s{number}.json").write_text(json.dumps(session), encoding="utf-8")
    (work / "request.json").write_text(json.dumps({"model": "gpt-4o", "messages": agent_session(30, 700)}))
    (work / "examples").mkdir()
    (work / "examples" / "config.yaml").write_text((REPO_ROOT / "examples" / "config.yaml").read_text())
    shared = tmp_path / "shared" / "sessions"
    shared.mkdir(parents=True)
    for number, name in enumerate(SHARED_NAMES):
        session = {"source": "test", "messages": agent_session(20 + number, 700)}
        (shared / f"{name}.json").write_text(json.dumps(session), encoding="utf-8")
    return work


def shell(command: str, cwd: Path, tmp_path: Path, timeout: float) -> subprocess.CompletedProcess[str]:
    """Run ``command`` in bash, as written, with `litellm-budget` running this checkout."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    shim = bin_dir / "litellm-budget"
    entry = "import sys; from litellm_budget.tools.cli import main; sys.exit(main())"
    shim.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -c {shlex.quote(entry)} "$@"\n')
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
    """Run a plain ``litellm-budget`` command (no shell syntax) through the console script's ``main``, in ``cwd``."""
    argv = shlex.split(command)
    assert argv[0] == "litellm-budget", command
    assert not _SHELL_SYNTAX.search(command), f"{command!r} needs a shell: run it with shell()"
    monkeypatch.chdir(cwd)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv[1:])
        except SystemExit as exc:  # argparse's --help and usage errors
            code = exc.code if isinstance(exc.code, int) else 1
    return subprocess.CompletedProcess(argv, code, out.getvalue(), err.getvalue())


@pytest.mark.subprocess
@pytest.mark.parametrize("command", run_here("cheap"), ids=lambda c: c.key)
def test_cheap_commands_run_as_written(
    command: docs.Command, workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """
    Each `litellm-budget` command of the pages exits 0 on small inputs, and writes what it says it writes:
    in bash through the console script where it is `--help` or uses shell syntax, else as bash would split it.
    """
    plain = "--help" not in command.key.split() and not _SHELL_SYNTAX.search(command.text.strip())
    if plain:
        done = run_plain(command.text.strip(), workspace, monkeypatch)
    else:
        done = shell(command.text, workspace, tmp_path, timeout=300)

    assert done.returncode == 0, f"{command.where()}: {command.text}\n{done.stderr[-3000:]}"
    assert "Traceback" not in done.stderr
    assert done.stdout.strip()
    for name in written_files(command.text):
        assert (workspace / name).stat().st_size > 0, name
    if "--json" in command.key.split():
        json.loads(done.stdout)


@pytest.mark.slow  # tests/tools/test_cli.py runs the demo through the real proxy in the default run
@pytest.mark.proxy
@pytest.mark.subprocess
@pytest.mark.parametrize("command", run_here("demo"), ids=lambda c: c.key)
def test_demo_commands_run_as_written(command: docs.Command, workspace: Path, tmp_path: Path) -> None:
    """The demo commands start the real proxy, replay the built-in session and stop it: from the clone with
    `--config examples/config.yaml`, from any folder without."""
    cwd = REPO_ROOT if "examples/" in command.text else workspace

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
    """The options `litellm-budget COMMAND --help` lists."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit):
        main([command, "--help"])
    return set(re.findall(r"(?<![\w-])--[a-z][\w-]*", out.getvalue()))


def test_flags_in_the_text_exist() -> None:
    """Every `--flag` the pages' prose gives a `litellm-budget` subcommand is one of its options."""
    inline = re.compile(r"`(litellm-budget (inspect|replay|demo)\b[^`]*)`")
    unknown = []
    for page in docs.pages():
        for span, command in inline.findall(page.read_text(encoding="utf-8")):
            missing = set(re.findall(r"(?<![\w-])--[a-z][\w-]*", span)) - help_flags(command)
            unknown += [f"{docs.page_name(page)}: `{span}`: {flag}" for flag in sorted(missing)]

    assert unknown == []


@pytest.mark.sessions
def test_the_inspect_example_is_what_inspect_prints() -> None:
    """
    docs/cli.md's example output is what its command prints on the real shared session. Without
    ../shared/sessions, the command runs as written on the made shell agent's session (the longest,
    as the page's is of the shared ones), and prints the page's layout: its sections, headers, parts
    and window line, its figures in their places, and a row per role and change in the last table.
    """
    session = session_file(SHARED_NAMES[0], "made__shell")
    shown = docs.block("text", "inspect", "indices  role", page=DOCS / "cli.md")
    command = next(c for c in docs.commands(DOCS / "cli.md") if SHARED_NAMES[0] in c.text)
    argv = shlex.split(command.text.replace(f"../shared/sessions/{SHARED_NAMES[0]}.json", str(session)), comments=True)
    out = io.StringIO()

    with contextlib.redirect_stdout(out):
        assert main(argv[1:]) == 0

    if session.parent == SESSIONS_DIR:
        assert out.getvalue() == shown
        return
    (printed, printed_rows), (page, page_rows) = layout(out.getvalue()), layout(shown)
    assert printed == page
    assert printed_rows
    assert printed_rows <= page_rows


def layout(text: str) -> tuple[list[str], set[str]]:
    """
    ``inspect``'s lines with every figure a ``#`` and spaces single, but the window line as it is
    (the model and window make it); and apart, the rows of the last table, as many as the session has.
    """
    lines = [
        line if line.startswith("window ") else re.sub(r"\s+", " ", re.sub(r"\d[\d,.]*(-\d+)?", "#", line))
        for line in text.strip().splitlines()
    ]
    rows = lines.index("indices role messages tokens change") + 2
    return lines[:rows], set(lines[rows:])
