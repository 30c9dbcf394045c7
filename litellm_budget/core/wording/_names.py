"""
Names: the paths and identifiers a dropped step held (``src/app.py``, ``parse_args``, ``HAT045``), which
an agent reaches back for most; a digest lists those its quotes could not show, a few tokens each. A name
holds no space, quote, colon or bracket, so a list of them can neither read as a turn nor form a template token.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence

MIN_LENGTH = 5
#: How the digest's line of names begins.
NAMES_HEAD = "- names they held, newest first: "
_TOKEN = re.compile(r"[A-Za-z0-9_./-]+")
_EDGES = "./-"
_INNER_CAPITAL = re.compile(r"[a-z][A-Z]")
#: One step's names: those of its call's whole arguments, and those of its output.
StepNames = tuple[tuple[str, ...], tuple[str, ...]]


def is_name(token: str) -> bool:
    """Whether ``token`` is a name: ``MIN_LENGTH`` or longer, with a letter, and a ``/._``, digit or inner capital."""
    if len(token) < MIN_LENGTH or not any(c.isalpha() for c in token):
        return False
    return any(c in "/._" or c.isdigit() for c in token) or _INNER_CAPITAL.search(token) is not None


def names_in(texts: Iterable[str]) -> tuple[str, ...]:
    """The names of ``texts``, each once, in the order they first occur."""
    found: dict[str, None] = {}
    for text in texts:
        for match in _TOKEN.finditer(text):
            token = match.group().strip(_EDGES)
            if token not in found and is_name(token):
                found[token] = None
    return tuple(found)


class InText(dict[str, bool]):
    """Whether each name asked about is in ``text``, each searched for once (``names_line``'s ``also_shown``)."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def __missing__(self, name: str) -> bool:
        found = self[name] = name in self.text
        return found


def names_line(
    steps: Sequence[StepNames],
    shown: str | tuple[str, Mapping[str, bool]],
    *,
    per_step: int,
    cap: int,
    cost: Callable[[str], int],
) -> str | None:
    """
    The digest's line of names, as many as ``cap`` tokens allow, or ``None``: of each step, newest first,
    at most ``per_step`` its call held, then as many its output held, each once and none that ``shown``
    holds (the digest's lines, and a mapping of what else the model reads). Pure: the same steps, the same line.
    """
    if cap <= 0 or per_step <= 0:
        return None
    shown, elsewhere = (shown, InText("")) if isinstance(shown, str) else shown
    spent, picked = cost(NAMES_HEAD), dict[str, None]()
    for side in (0, 1):
        for names in reversed(steps):
            taken = 0
            for name in names[side]:
                if taken >= per_step:
                    break
                if name in picked or name in shown or elsewhere[name]:
                    continue
                price = cost(" " + name)
                if spent + price > cap:
                    return _rendered(picked)
                picked[name] = None
                spent += price
                taken += 1
    return _rendered(picked)


def names_beyond(text: str, shown: str, elsewhere: Mapping[str, bool], most: int) -> str | None:
    """
    At most ``most`` names of ``text`` in order, none that ``shown`` holds or the model reads ``elsewhere``,
    joined by spaces, or ``None``. Pure: the same text always reads the same names.
    """
    if most <= 0:
        return None
    picked = [name for name in names_in((text,)) if name not in shown and not elsewhere[name]][:most]
    return " ".join(picked) or None


def _rendered(picked: dict[str, None]) -> str | None:
    return NAMES_HEAD + " ".join(picked) if picked else None
