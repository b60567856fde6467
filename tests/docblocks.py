"""The console examples of README.md and docs/*.md, for the tests that run them (test_docs.py,
and test_ray.py for the Ray procedure).

A console example is a fenced block marked `console`: each line that starts with `$ ` is a
command, and the lines after it, up to the next command, are what the doc says it prints (a
line of `…` leaves the rest out)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


@dataclass
class Command:
    text: str
    #: What the doc shows it printing, line by line.
    shown: list[str] = field(default_factory=list)

    @property
    def line_only(self) -> str:
        """The command without its trailing `# comment`."""
        return strip_comment(self.text)


@dataclass
class Block:
    doc: Path
    line: int
    commands: list[Command]

    @property
    def id(self) -> str:
        return f"{self.doc.relative_to(ROOT)}:{self.line}"


def strip_comment(text: str) -> str:
    """`cmd ... # comment` → `cmd ...` (a `#` inside quotes is kept)."""
    quote = ""
    for i, c in enumerate(text):
        if quote:
            if c == quote:
                quote = ""
        elif c in "'\"":
            quote = c
        elif c == "#" and (i == 0 or text[i - 1].isspace()):
            return text[:i].rstrip()
    return text.rstrip()


def blocks(docs: list[Path] | None = None) -> list[Block]:
    """Every console block of the docs, in order."""
    out = []
    for doc in docs or DOCS:
        lines = doc.read_text().splitlines()
        i = 0
        while i < len(lines):
            if re.fullmatch(r"\s*```console\s*", lines[i]):
                start, cmds = i + 1, []
                i += 1
                while i < len(lines) and not lines[i].strip().startswith("```"):
                    ln = lines[i]
                    if ln.startswith("$ "):
                        cmds.append(Command(ln[2:]))
                    elif cmds:
                        cmds[-1].shown.append(ln)
                    i += 1
                out.append(Block(doc, start, cmds))
            i += 1
    return out
