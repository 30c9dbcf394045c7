"""
Names: the paths and identifiers a dropped step's call and output held (``src/app.py``,
``parse_args``, ``QuerySet``, ``HAT045``), which an agent reaches back for more than any other
words. A digest lists those its quoted lines could not show, so a cut quote or a step past the
digest's cap leaves them known, at a few tokens each.

A name is a run of letters, digits, ``_``, ``.``, ``/`` and ``-`` (those three not at its ends) of
at least ``MIN_LENGTH`` characters, with a letter, and with a ``/``, ``.``, ``_`` or digit, or a
capital after a small letter. It can hold no space, quote, colon or bracket, so a list of names
can neither read as a role's turn nor form a chat template's token.
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


def is_name(token: str) -> bool:
    """Whether ``token`` is a path or an identifier (see the module's docstring)."""
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
        super().__init__()
        self.text = text

    def __missing__(self, name: str) -> bool:
        found = self[name] = name in self.text
        return found


#: One step's names: those of its call's whole arguments, and those of its output.
StepNames = tuple[tuple[str, ...], tuple[str, ...]]


def names_line(
    steps: Sequence[StepNames],
    shown: str | tuple[str, Mapping[str, bool]],
    *,
    per_step: int,
    cap: int,
    cost: Callable[[str], int],
) -> str | None:
    """
    The digest's line of names: of each step (newest first) at most ``per_step`` names its call
    held, then of each at most ``per_step`` its output held, each once and none that ``shown``
    holds (the digest's own lines, and what else the model reads as a mapping name -> whether it
    is there), as many as ``cap`` tokens allow; ``None``: none. A pure function of its arguments,
    so the same dropped steps always read the same line.
    """
    if cap <= 0 or per_step <= 0:
        return None
    head = NAMES_HEAD
    shown, elsewhere = (shown, InText("")) if isinstance(shown, str) else shown
    spent, picked = cost(head), dict[str, None]()
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
                    return _rendered(head, picked)
                picked[name] = None
                spent += price
                taken += 1
    return _rendered(head, picked)


def names_beyond(text: str, shown: str, elsewhere: Mapping[str, bool], most: int) -> str | None:
    """
    At most ``most`` names of ``text`` in the order they first occur, none that ``shown`` holds or
    ``elsewhere`` says the model reads anyway, joined by spaces; ``None``: none. A pure function
    of its arguments, so the same text always reads the same names.
    """
    if most <= 0:
        return None
    picked = [name for name in names_in((text,)) if name not in shown and not elsewhere[name]][:most]
    return " ".join(picked) or None


def _rendered(head: str, picked: dict[str, None]) -> str | None:
    return head + " ".join(picked) if picked else None
