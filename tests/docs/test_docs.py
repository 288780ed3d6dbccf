"""The README and docs/ cannot go stale unnoticed: the README stays a front door, the site builds
with --strict, every Python example runs, every shell line names a make target, module, script,
test file, option or API path that exists, every JSON example parses, and every API path the
prose names is one the app serves."""

import ast
import json
import re
import shlex
import subprocess
import sys
from functools import cache
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import pytest

from tests.docs.code_blocks import DOCUMENTS, ROOT, Block, all_blocks

ANNOTATION_KINDS = {"label", "must_link", "cannot_link", "boundary", "scribble"}


@cache
def _openapi() -> dict[str, Any]:
    from app.config import Settings
    from app.main import create_app

    app = create_app(
        Settings(database_url="sqlite://", migrate_on_start=False, load_demo_data=False)
    )
    return app.openapi()


def _served(method: str, path: str) -> bool:
    """Whether the app has `method` on a path template matching `path` (ids as numbers or
    `{...}` placeholders, a query string ignored)."""
    path = path.split("?", 1)[0].rstrip(".,;:)")
    for template, operations in _openapi()["paths"].items():
        pattern = re.sub(r"\\{[^}]+\\}", r"(\\{[^}]+\\}|[^/]+)", re.escape(template))
        if re.fullmatch(pattern, path) and method.lower() in operations:
            return True
    return False


def test_the_readme_is_a_front_door() -> None:
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) < 250
    for must in ("make run", "make test", "docs/images/workspace.png", "docs/index.md"):
        assert must in readme
    assert (ROOT / "docs" / "images" / "workspace.png").stat().st_size > 10_000


def test_the_documentation_site_builds_strictly(tmp_path: Path) -> None:
    mkdocs = Path(sys.executable).with_name("mkdocs")
    if not mkdocs.exists():
        pytest.fail("mkdocs is missing: it is a dev dependency (make setup installs it)")
    done = subprocess.run(
        [str(mkdocs), "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "WARNING" not in done.stderr, done.stderr
    assert (tmp_path / "site" / "index.html").exists()
    nav = (ROOT / "mkdocs.yml").read_text()
    for page in (ROOT / "docs").glob("*.md"):
        assert f": {page.name}" in nav, f"{page.name} is in no menu of mkdocs.yml"


# ---- Python: every example runs, one process per document, its blocks in order -----------

PYTHON_DOCUMENTS = sorted({b.path for b in all_blocks("python")}, key=str)


@pytest.mark.parametrize("path", PYTHON_DOCUMENTS, ids=[p.name for p in PYTHON_DOCUMENTS])
def test_every_python_example_runs(path: Path) -> None:
    examples = [b for b in all_blocks("python") if b.path == path]
    script = "\n\n".join(f"# {b.where()}\n{b.text}" for b in examples)
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert done.returncode == 0, f"{path.name}:\n{done.stderr[-3000:]}"


# ---- shell: every line names things that exist -------------------------------------------


@cache
def _make_targets() -> set[str]:
    text = (ROOT / "Makefile").read_text()
    return set(re.findall(r"^([a-z][\w-]*):", text, flags=re.MULTILINE))


@cache
def _workbench_commands() -> set[str]:
    from app.__main__ import _parser

    parser = _parser()
    (sub,) = [a for a in parser._actions if a.dest == "command"]
    return set(sub.choices)  # type: ignore[arg-type]


def _logical_lines(text: str) -> list[str]:
    joined = re.sub(r"\\\n\s*", " ", text)
    return [line for line in joined.splitlines() if line.strip()]


def _words(line: str) -> list[str]:
    lexer = shlex.shlex(line, posix=True, punctuation_chars=False)
    lexer.whitespace_split = True
    lexer.commenters = "#"
    return list(lexer)


def _check_python_module(module: str, args: list[str], where: str) -> None:
    if module == "pytest":
        for arg in args:
            if arg.startswith("tests/"):
                assert (ROOT / arg.split("::")[0]).exists(), (where, arg)
        return
    if module == "app":
        assert args and args[0] in _workbench_commands(), (where, args)
        return
    assert module.startswith("benchmarks."), (where, module)
    spec = find_spec(module)
    assert spec is not None and spec.origin is not None, (where, module)
    source = _with_shared_options(Path(spec.origin).read_text())
    for arg in args:
        option = arg.split("=", 1)[0]
        if option.startswith("--"):
            assert f'"{option}"' in source, f"{where}: {module} has no option {option}"


def _with_shared_options(source: str) -> str:
    """A benchmark's source and that of the benchmark modules it imports, where options
    several benchmarks take are defined once (benchmarks/_server.py)."""
    imported = [
        node.module
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("benchmarks.")
    ]
    for module in imported:
        spec = find_spec(str(module))
        if spec is not None and spec.origin is not None:
            source += Path(spec.origin).read_text()
    return source


def _check_curl(words: list[str], where: str) -> None:
    method = "GET"
    if "-X" in words:
        method = words[words.index("-X") + 1]
    elif any(w in ("-d", "-F", "--data", "--form") for w in words):
        method = "POST"
    urls = [w for w in words if "/api/v1/" in w]
    assert urls, f"{where}: a curl line without an API address"
    for url in urls:
        path = "/api/v1/" + url.split("/api/v1/", 1)[1]
        assert _served(method, path), f"{where}: the app does not serve {method} {path}"


def _check_command(line: str, where: str) -> None:
    inner = re.findall(r"\$\((.*)\)", line)
    for command in inner:  # TOKEN=$(curl ...): the command inside
        _check_command(command, where)
    words = _words(re.sub(r"\$\(.*\)", "x", line))
    while words and re.fullmatch(r"[A-Z_]+=.*", words[0]):
        words = words[1:]  # environment assignments
    if words[:1] == ["nice"]:
        words = words[3:]
    if not words:
        return
    head, rest = words[0], words[1:]
    if head == "make":
        targets = [w for w in rest if "=" not in w]
        assert targets and set(targets) <= _make_targets(), (where, line)
    elif head in (".venv/bin/python", "python") and rest[:1] == ["-m"]:
        _check_python_module(rest[1], rest[2:], where)
    elif head in (".venv/bin/python", "python"):
        assert (ROOT / rest[0]).exists(), (where, rest[0])
    elif head == "workbench":
        assert rest[0] in _workbench_commands(), (where, line)
    elif head == "curl":
        _check_curl(words, where)
    elif head == "pip":
        assert rest[0] in ("install", "wheel"), (where, line)
    else:
        pytest.fail(f"{where}: no rule checks `{head}`; add one to tests/docs/test_docs.py")


SHELL = all_blocks("bash")


@pytest.mark.parametrize("block", SHELL, ids=[b.where() for b in SHELL])
def test_every_shell_line_names_what_exists(block: Block) -> None:
    for line in _logical_lines(block.text):
        _check_command(line, block.where())


JSON = all_blocks("json")


@pytest.mark.parametrize("block", JSON, ids=[b.where() for b in JSON])
def test_every_json_example_parses_and_every_annotation_is_accepted(block: Block) -> None:
    """A block is one JSON document or one per line; an annotation body (it has a `kind` the
    annotation endpoint takes) must pass the server's own validation."""
    from pydantic import TypeAdapter

    from app.api.schemas.annotations import AnnotationCreate

    try:
        documents = [json.loads(block.text)]
    except json.JSONDecodeError:
        documents = [json.loads(line) for line in block.text.splitlines() if line.strip()]
    accepts: TypeAdapter[Any] = TypeAdapter(AnnotationCreate)
    for document in documents:
        if isinstance(document, dict) and document.get("kind") in ANNOTATION_KINDS:
            accepts.validate_python(document)


def test_every_code_block_says_its_language() -> None:
    languages = {b.language for b in all_blocks()}
    assert languages <= {"python", "bash", "json", "text"}, languages


# ---- prose: every API path named is served ---------------------------------------------

MENTION = re.compile(
    r"`((?:GET|POST|PUT|PATCH|DELETE)(?:/(?:GET|POST|PUT|PATCH|DELETE))*) (/[^`\s]*)"
)


def test_every_api_path_the_documents_name_is_served() -> None:
    unknown = []
    for path in DOCUMENTS:
        for methods, url in MENTION.findall(path.read_text()):
            if not url.startswith("/api/v1/"):
                unknown.append(f"{path.name}: {methods} {url} (not under /api/v1)")
                continue
            for method in methods.split("/"):
                if not _served(method, url):
                    unknown.append(f"{path.name}: {method} {url}")
    assert unknown == []


# ---- benchmark tables: the benchmark's own output, synced, never edited by hand ----------


def test_benchmark_outputs_in_the_documents_are_verbatim() -> None:
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import bench_to_docs
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    used = set()
    for path in DOCUMENTS:
        for module, body in bench_to_docs.regions(path.read_text()):
            saved = bench_to_docs.output_file(module)
            assert saved.exists(), f"{path.name}: no saved output of {module}"
            assert body.strip() == saved.read_text().strip(), (
                f"{path.name}: the {module} table differs from its saved output "
                "(run scripts/bench_to_docs.py sync, or run the benchmark again)"
            )
            used.add(saved.name)
    for saved in bench_to_docs.OUTPUTS.glob("*.md"):
        assert saved.name in used, f"{saved.name} is shown nowhere"
        command = saved.read_text().split("`")[1]
        _check_command(command, saved.name)


# Tables that are not measurements (a layout, a decision, a setting) say so on the line above.
REFERENCE = "<!-- reference -->"
HISTORY = "history.md"  # measurements pasted on their dates, kept for the reasons they give


def _hand_tables(text: str) -> list[int]:
    """Line numbers of tables outside benchmark output regions with no reference marker."""
    found, inside, previous = [], False, ""
    lines = text.splitlines()
    for number, line in enumerate(lines, start=1):
        if line.startswith("<!-- output:"):
            inside = True
        elif line.startswith("<!-- /output"):
            inside = False
        elif (
            line.startswith("|")
            and not (number > 1 and lines[number - 2].startswith("|"))  # a table's first row
            and not inside
            and previous != REFERENCE
        ):
            found.append(number)
        if line.strip():
            previous = line.strip()
    return found


def test_every_table_of_measurements_is_a_benchmarks_own_output() -> None:
    """A measured figure goes stale when pasted: the documents show benchmark output (synced by
    scripts/bench_to_docs.py); superseded measurements live in docs/history.md, dated."""
    pasted = {
        path.name: lines
        for path in DOCUMENTS
        if path.name != HISTORY and (lines := _hand_tables(path.read_text()))
    }
    assert pasted == {}, (
        f"tables outside benchmark output (mark a table that is no measurement {REFERENCE}): "
        f"{pasted}"
    )


def test_the_check_for_pasted_tables_finds_them() -> None:
    table = "| a | b |\n|---|---|\n| 1 | 2 |\n"
    assert _hand_tables(f"text\n\n{table}") == [3]
    assert _hand_tables(f"{REFERENCE}\n\n{table}") == []
    assert _hand_tables(f"<!-- output: m -->\n{table}<!-- /output -->\n") == []


# ---- the documents stand on their own ----------------------------------------------------

# A page that sends readers to files outside the repository (the design notes and method specs
# kept beside it) or to a numbered issue cannot be read on its own: it says what the target or
# the formula is instead. The measurement history keeps its dated headings as they were.
OUTSIDE = re.compile(r"\.\./shared|shared/(?:specs|papers|DESIGN)|[Ii]ssue\s+[0-9]+")


def _pointers_outside(text: str, name: str) -> list[str]:
    """`name:line: text` of every pointer outside the repository or to an issue in `text`."""
    hits = []  # a pointer may wrap: "issue" ends one line and "36" opens the next
    for hit in OUTSIDE.finditer(text):
        line = text.count("\n", 0, hit.start()) + 1
        hits.append(f"{name}:{line}: {hit.group(0)!r}")
    return hits


def test_no_page_points_outside_the_repository_or_to_an_issue() -> None:
    found = [
        hit
        for path in DOCUMENTS
        if path.name != HISTORY
        for hit in _pointers_outside(path.read_text(), str(path.relative_to(ROOT)))
    ]
    assert found == [], "say what is meant instead of pointing to it:\n" + "\n".join(found)


def test_the_check_for_pointers_outside_finds_them() -> None:
    page = "The formulas are in `../shared/specs/ppc.md`.\nSince issue\n36 the default.\n"
    found = _pointers_outside(page, "page.md")
    assert found == ["page.md:1: '../shared'", "page.md:2: 'issue\\n36'"]
    assert _pointers_outside("An issue of 36 pages; shared three lines.", "page.md") == []


def test_a_benchmark_run_never_overwrites_another_commands_output(
    tmp_path: Path, monkeypatch: Any
) -> None:
    """A block that holds the output of the same module run with other arguments is kept:
    the run is refused before the benchmark starts (`--as` names it apart)."""
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import bench_to_docs
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    monkeypatch.setattr(bench_to_docs, "OUTPUTS", tmp_path)
    kept = "`.venv/bin/python -m benchmarks.nothing --rows 5` (2026-01-01 00:00 UTC) printed:\n"
    (tmp_path / "benchmarks.nothing.md").write_text(kept)
    started = []
    monkeypatch.setattr(bench_to_docs.subprocess, "run", lambda *a, **k: started.append(a))
    try:
        bench_to_docs.run("benchmarks.nothing", ["--app"])
    except SystemExit as refused:
        assert "run --as NAME" in str(refused.code)
    else:
        raise AssertionError("the run was not refused")
    assert started == [] and (tmp_path / "benchmarks.nothing.md").read_text() == kept
