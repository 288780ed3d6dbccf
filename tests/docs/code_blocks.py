"""The fenced code blocks of the README and docs/, by language, with the file and line they
start at, so the tests can run or check each one."""

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).parents[2]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```(\S*)\s*$")


@dataclass(frozen=True)
class Block:
    path: Path
    line: int  # of the opening fence, 1-based
    language: str
    text: str

    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def blocks(path: Path) -> list[Block]:
    found: list[Block] = []
    language: str | None = None
    start, lines = 0, []
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        fence = FENCE.match(line)
        if language is None and fence:
            language, start, lines = fence.group(1), number, []
        elif language is not None and line.strip() == "```":
            found.append(Block(path, start, language, "\n".join(lines)))
            language = None
        elif language is not None:
            lines.append(line)
    assert language is None, f"{path.name}: a code block opened at line {start} never closes"
    return found


def all_blocks(language: str | None = None) -> list[Block]:
    every = [b for path in DOCUMENTS for b in blocks(path)]
    return [b for b in every if language is None or b.language == language]
