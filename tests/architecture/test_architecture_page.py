"""docs/architecture.md against the code: every package of app/ and every folder of tests/ is
named on the page, and every folder or file the page names exists."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGE = (ROOT / "docs" / "architecture.md").read_text()
# The folder map: the first text block after "One line per folder".
MAP = PAGE.split("One line per folder", 1)[1].split("```text", 1)[1].split("```", 1)[0]


def _named_paths() -> set[str]:
    """The paths the map names at the start of its lines, relative to the repository (an
    indented `jobs/run/` is app/jobs/run/)."""
    paths = set()
    for line in MAP.splitlines():
        match = re.match(r"\s*([a-z_]+/[\w/.]*)", line)
        if not match:
            continue
        path = match.group(1).rstrip("/")
        top = path.split("/")[0]
        paths.add(path if top in {"app", "tests", "benchmarks"} else f"app/{path}")
    return paths


def _packages() -> set[str]:
    found = {
        str(init.parent.relative_to(ROOT))
        for init in (ROOT / "app").rglob("__init__.py")
        if "migrations" not in init.parts
    }
    return found - {"app"}


def test_every_package_and_test_folder_is_on_the_page() -> None:
    test_folders = {
        f"tests/{p.name}" for p in (ROOT / "tests").iterdir() if (p / "__init__.py").exists()
    }
    missing = (_packages() | test_folders) - _named_paths()
    assert not missing, f"docs/architecture.md does not name: {sorted(missing)}"


def test_every_path_the_page_names_exists() -> None:
    absent = sorted(path for path in _named_paths() if not (ROOT / path).exists())
    assert not absent, f"docs/architecture.md names what is not there: {absent}"


def test_the_check_reads_the_map() -> None:
    assert {"app/jobs/run", "app/engine/cec/chunked", "tests/engine"} <= _named_paths()
