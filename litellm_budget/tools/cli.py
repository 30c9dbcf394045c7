"""``litellm-budget``: inspect a request, replay sessions, run the demo. Parsing and printing only."""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import sys
from collections.abc import Iterator, Sequence
from importlib import resources
from pathlib import Path
from types import MappingProxyType

from litellm_budget.core.api import POLICIES
from litellm_budget.tools.sessions import FORMATS

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

#: The demo's proxy config, shipped as package data next to this module.
BUILTIN_CONFIG = "config.yaml"
#: The research replay's options (peers, prices, the provider's cache, watermark sweeps, plots): not the wheel's.
LAB_OPTIONS = tuple(
    "--baseline --price-per-mtok --cached-share --cache-write-share --watermarks --cache --client-breakpoints "
    "--cache-breakpoints --cache-min-tokens --plot --plot-cost --plot-recall".split()
)
#: Where they are, as an error says it.
LAB_REPLAY = "python -m benchmarks.replay, from a clone of the repository, with the same arguments"


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script; returns the exit status."""
    return run_command(_parser(), argv)


def run_command(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> int:
    """Parse ``argv`` and run its command: a file or setting it cannot use is one line and exit status 2."""
    args = parser.parse_args(argv)
    from .sessions import SessionFileError

    try:
        return int(args.run(args))
    except (SessionFileError, ValueError, RuntimeError) as exc:
        print(f"{parser.prog}: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `litellm-budget inspect ... | head`: the reader has all it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="litellm-budget", description="Fit chat requests into context windows.")
    commands = parser.add_subparsers(required=True, metavar="COMMAND")

    inspect = commands.add_parser("inspect", help="the ledger of one request and what fit() would do")
    inspect.add_argument("file", type=Path, help="a JSON list of messages, a request body, or a session file")
    inspect.add_argument("--model", help="the model (default: the request body's)")
    inspect.add_argument(
        "--window", type=_tokens, help="context window in tokens, 16000 or 16k (default: LiteLLM's model map)"
    )
    inspect.add_argument("--policy", choices=sorted(POLICIES), help="the policy (default: --config's, else auto)")
    _settings_arguments(inspect)
    inspect.add_argument("--json", action="store_true", help="machine-readable output")
    inspect.set_defaults(run=_inspect)

    replay = commands.add_parser(
        "replay",
        help="replay every request of recorded sessions through the policies and count what each sent",
        epilog=f"Peers, evidence recall, prices, the provider's cache and plots: {LAB_REPLAY}.",
    )
    replay_arguments(replay, policies="auto,plan,elide")
    for option in LAB_OPTIONS:
        replay.add_argument(option, nargs="?", action=_LabOption, help=argparse.SUPPRESS)
    replay.set_defaults(run=_replay)

    demo = commands.add_parser("demo", help="start the LiteLLM proxy and replay a built-in agent session")
    demo.add_argument(
        "--config", type=Path, help="a LiteLLM proxy config (default: the built-in one, examples/config.yaml's twin)"
    )
    demo.add_argument("--model", default="agent-model", help="a model_name of the config")
    demo.add_argument("--steps", type=positive, default=40, help="agent steps in the built-in session")
    demo.set_defaults(run=_demo)
    return parser


def replay_arguments(command: argparse.ArgumentParser, *, policies: str) -> None:
    """The arguments of every replay, this one and the research replay of a clone (which adds its own)."""
    command.add_argument("paths", nargs="+", type=Path, help="session files, or folders of them")
    command.add_argument("--model", required=True, help="the model whose tokenizer applies")
    command.add_argument("--window", required=True, type=_window_list, help="windows, comma-separated: 8000,16k")
    command.add_argument(
        "--format",
        choices=FORMATS,
        default="chat",
        help="replay the sessions as chat completions, Anthropic Messages or Responses input items",
    )
    command.add_argument("--policy", type=name_list, help=f"policies: {policies} (default: --config's, else auto)")
    command.add_argument(
        "--stateless",
        action="store_true",
        help="fit every request afresh, as the plugin does with conversation_state: false",
    )
    command.add_argument("--rows", action="store_true", help="also print every request")
    command.add_argument("--json", action="store_true", help="machine-readable output")
    command.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    _settings_arguments(command)


class _LabOption(argparse.Action):
    """An option of the research replay given to this one: refused, saying where it is."""

    def __call__(
        self, parser: argparse.ArgumentParser, _namespace: object, _values: object, option_string: str | None = None
    ) -> None:
        parser.error(f"{option_string} is an option of the research replay: run {LAB_REPLAY}")


def _settings_arguments(command: argparse.ArgumentParser) -> None:
    """``--config`` and ``--set``: the settings to run with, as ``settings_args.settings_from`` reads them."""
    command.add_argument(
        "--config",
        type=Path,
        help="a LiteLLM proxy config: run with its callback_settings.litellm_budget (--policy still picks the policy)",
    )
    command.add_argument(
        "--set",
        dest="assignments",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a setting to run with, over --config's (repeat it): --set watermark=0.8 --set elide_min_tokens=null",
    )


def _inspect(args: argparse.Namespace) -> int:
    import dataclasses

    from .inspect import inspect_conversation, render_inspection
    from .sessions import load_conversation
    from .settings_args import settings_from

    settings = settings_from(args.config, args.assignments)
    settings = dataclasses.replace(settings, policy=args.policy or settings.policy)
    conversation = load_conversation(args.file)
    model = args.model or conversation.model
    if not model:
        msg = "no --model given and the file names none"
        raise ValueError(msg)
    data = inspect_conversation(conversation, model=model, window=args.window, settings=settings)
    print(json.dumps(data, indent=2) if args.json else render_inspection(data))
    return 0


def _replay(args: argparse.Namespace) -> int:
    from .replay_cli import run_replay

    return run_replay(args)


#: What the demo's proxy imports that a plain ``pip install litellm`` leaves out, by the package that brings it.
DEMO_MODULES = MappingProxyType(
    {"yaml": "pyyaml", "fastapi": "litellm[proxy]", "uvicorn": "litellm[proxy]", "websockets": "litellm[proxy]"}
)


def _demo(args: argparse.Namespace) -> int:
    missing = sorted({package for module, package in DEMO_MODULES.items() if not _importable(module)})
    if missing:
        # The proxy would start, then die on its first missing import with a long traceback.
        quoted = " ".join(f"'{package}'" for package in missing)
        msg = (
            f"the demo runs the LiteLLM proxy, which needs {' and '.join(missing)}: pip install {quoted}, "
            "or this package with its demo extra (in a clone: pip install '.[demo]')"
        )
        raise RuntimeError(msg)
    from .demo.run import run_demo

    with demo_config(args.config) as config:
        return run_demo(config, model=args.model, steps=args.steps, out=sys.stdout)


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a module set to None in sys.modules, or a broken one
        return False


@contextlib.contextmanager
def demo_config(path: Path | None) -> Iterator[Path]:
    """The demo's proxy config: ``path``, or the one shipped in the package (a real file while open)."""
    if path is None:
        with resources.as_file(resources.files("litellm_budget.tools.demo").joinpath(BUILTIN_CONFIG)) as builtin:
            yield builtin
        return
    if not path.is_file():
        msg = f"{path}: no such config file (leave out --config for the built-in one)"
        raise ValueError(msg)
    yield path


def positive(text: str) -> int:
    """A positive integer; argparse names the flag in front of the message."""
    if not text.strip().isdigit() or int(text) <= 0:
        msg = f"{text!r} is not a positive integer, e.g. 40"
        raise argparse.ArgumentTypeError(msg)
    return int(text)


def _tokens(text: str) -> int:
    value = _thousands(text)
    if value is None:
        msg = f"{text!r} is not a number of tokens; give a positive integer, e.g. 16000 or 16k"
        raise argparse.ArgumentTypeError(msg)
    return value


def _window_list(text: str) -> list[int]:
    values = [_thousands(part) for part in text.split(",") if part.strip()]
    if not values or None in values:
        msg = f"{text!r} is not a comma-separated list of windows in tokens, e.g. 8000,16k,32000"
        raise argparse.ArgumentTypeError(msg)
    return [value for value in values if value is not None]


def _thousands(text: str) -> int | None:
    """``16000`` or ``16k`` / ``16K`` as 16000 (as windows are quoted); ``None`` for anything else."""
    text = text.strip()
    digits, scale = (text[:-1], 1000) if text[-1:] in {"k", "K"} else (text, 1)
    return int(digits) * scale if digits.isdigit() and int(digits) > 0 else None


def name_list(text: str) -> list[str]:
    """Names, comma-separated: ``auto,plan``."""
    return [part.strip() for part in text.split(",") if part.strip()]
