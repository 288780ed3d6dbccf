"""Benchmark tables in the docs come from the benchmark's own output, never by hand.

    .venv/bin/python scripts/bench_to_docs.py run benchmarks.bench_fair_share [args...]
    .venv/bin/python scripts/bench_to_docs.py run --as benchmarks.bench_smic.selection \
        benchmarks.bench_smic --part selection
    .venv/bin/python scripts/bench_to_docs.py sync

`run` runs the benchmark and keeps what it printed, verbatim, in
docs/benchmark-output/<module>.md (or <name>.md with `--as <name>`, for a benchmark shown with
several sets of arguments), headed by the command, the date and the commit; a file that holds
another command's output is refused (`run --replace ...` overwrites it); then `sync` copies
every such file into the documents between its markers:

    <!-- output: benchmarks.bench_fair_share -->
    ...replaced by the file's text...
    <!-- /output -->

tests/docs/test_docs.py fails when a region differs from its file (an edit by hand, or a run
not synced).
"""

import datetime
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parents[1]
OUTPUTS = ROOT / "docs" / "benchmark-output"
REGION = re.compile(
    r"(<!-- output: (?P<module>[\w.]+) -->\n)(?P<body>.*?)(<!-- /output -->)", re.DOTALL
)


def output_file(module: str) -> Path:
    return OUTPUTS / f"{module}.md"


def regions(text: str) -> list[tuple[str, str]]:
    """(module, body) of every marked region."""
    return [(m.group("module"), m.group("body")) for m in REGION.finditer(text)]


def synced(text: str) -> str:
    def replace(match: re.Match[str]) -> str:
        saved = output_file(match.group("module"))
        if not saved.exists():  # a region placed before its benchmark ran: the docs test fails
            return match.group(0)
        body = saved.read_text().strip()
        return f"{match.group(1)}\n{body}\n\n{match.group(4)}"  # blank lines: blocks apart

    return REGION.sub(replace, text)


def run(module: str, args: list[str], name: str | None = None, replace: bool = False) -> None:
    shown = " ".join([".venv/bin/python -m", module, shlex.join(args)]).rstrip()
    target = output_file(name or module)
    if target.exists() and not replace:
        recorded = target.read_text().split("` (", 1)[0].lstrip("`")
        if recorded != shown:  # another set of arguments: its block would be overwritten
            sys.exit(
                f"{target.name} holds the output of `{recorded}`, not `{shown}`: name this run "
                "apart (run --as NAME ...) or overwrite it (run --replace ...)"
            )
    command = [sys.executable, "-m", module, *args]
    # Unbuffered: a child the benchmark forks cannot flush a copy of half-written output.
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=True, env=env)
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    OUTPUTS.mkdir(parents=True, exist_ok=True)
    target.write_text(f"`{shown}` ({stamp}, commit {commit}) printed:\n\n{done.stdout.rstrip()}\n")


def sync() -> None:
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        text = path.read_text()
        if REGION.search(text):
            path.write_text(synced(text))


def main() -> None:
    argv = sys.argv[1:]
    replace = argv[1:2] == ["--replace"]
    if replace:
        argv = argv[:1] + argv[2:]
    if argv[:2] == ["run", "--as"] and len(argv) > 3:
        run(argv[3], argv[4:], name=argv[2], replace=replace)
        sync()
    elif argv[:1] == ["run"] and len(argv) > 1:
        run(argv[1], argv[2:], replace=replace)
        sync()
    elif sys.argv[1:] == ["sync"]:
        sync()
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
