"""
The documentation as the tests read it: README.md and docs/*.md, their fenced blocks, the shell
commands in those blocks, and the links between the pages.

A block is found by its page, its `## ` section and a string it contains, so a test keeps finding
it when text around it moves. A shell command is one line of a shell block (a line ending in a
backslash continues on the next), as written; its key is the same command with the comment and
the extra spaces taken out.
"""

from __future__ import annotations

import dataclasses
import re
import shlex
from pathlib import Path

from tests.support.paths import DOCS, README, REPO_ROOT

FENCE = re.compile(r"^```(\w*)\n(.*?)^```$", re.MULTILINE | re.DOTALL)
#: The languages a block of commands may be labelled with.
SHELL = frozenset({"sh", "bash", "shell", "console", "zsh"})
#: The languages a page's blocks may have: a block with none could hide a command.
LANGUAGES = SHELL | {"python", "yaml", "json", "text", "dockerfile"}
#: `[text](target)` links, images included; the target up to a space or the closing parenthesis.
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")


def pages() -> list[Path]:
    """The README and every page of docs/."""
    return [README, *sorted(DOCS.glob("*.md"))]


def page_name(page: Path) -> str:
    """``README.md`` or ``docs/cli.md``: how a failure names a page."""
    return page.relative_to(REPO_ROOT).as_posix()


@dataclasses.dataclass(frozen=True)
class Block:
    """One fenced block: its page, its language, its text and the `## ` section it is in."""

    page: Path
    lang: str
    text: str
    section: str


def blocks(page: Path | None = None) -> list[Block]:
    """The fenced blocks of ``page``, or of every page."""
    found = []
    for path in [page] if page is not None else pages():
        text = path.read_text(encoding="utf-8")
        for match in FENCE.finditer(text):
            sections = re.findall(r"^## (.+)$", text[: match.start()], re.MULTILINE)
            found.append(Block(path, match.group(1), match.group(2), sections[-1] if sections else ""))
    return found


def block(lang: str, section: str, containing: str = "", page: Path = README) -> str:
    """The text of the one ``lang`` block of ``page``'s ``section`` that contains ``containing``."""
    found = [b.text for b in blocks(page) if b.lang == lang and b.section == section and containing in b.text]
    where = f"{page_name(page)} '## {section}'"
    assert len(found) == 1, f"expected one {lang} block containing {containing!r} under {where}, found {len(found)}"
    return found[0]


@dataclasses.dataclass(frozen=True)
class Command:
    """One shell command of a page, as written (``text``), and where it is."""

    page: Path
    section: str
    text: str

    @property
    def key(self) -> str:
        """The command without its comment and with single spaces: what the map of commands names."""
        return normalized(self.text)

    def where(self) -> str:
        return f"{page_name(self.page)} '## {self.section}'"


def normalized(command: str) -> str:
    """``command`` with continuations joined, its comment taken out and its words single-spaced."""
    return " ".join(shlex.join([word]) for word in shlex.split(command.replace("\\\n", " "), comments=True))


def commands(page: Path | None = None) -> list[Command]:
    """Every shell command of ``page``, or of every page: each line of a shell block that is no comment."""
    found = []
    for b in blocks(page):
        if b.lang not in SHELL:
            continue
        for line in re.sub(r"\\\n", "\\\\\x00", b.text).splitlines():
            text = line.replace("\\\x00", "\\\n")
            if text.strip() and not text.lstrip().startswith("#"):
                found.append(Command(b.page, b.section, text))
    return found


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation but `-` and `_` dropped, spaces to `-`."""
    text = re.sub(r"`|\*\*|\[|\]\([^)]*\)", "", heading).strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """Every anchor of ``page``: its headings' (numbered on repeats, as GitHub does) and explicit ids."""
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    seen: dict[str, int] = {}
    found = set(re.findall(r"<a id=\"([^\"]+)\"", text))
    for heading in re.findall(r"^#{1,6} (.+)$", text, re.MULTILINE):
        base = slug(heading)
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def links(page: Path) -> list[str]:
    """The link targets of ``page``, outside code blocks and inline code."""
    text = re.sub(r"`[^`\n]*`", "", FENCE.sub("", page.read_text(encoding="utf-8")))
    return LINK.findall(text)
