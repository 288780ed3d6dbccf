"""The layers of docs/architecture.md, checked from the code's own imports: each
package imports only itself and the packages below it, so no import runs back up a layer and
no two packages import each other."""

import ast
from pathlib import Path

import pytest

APP = Path(__file__).resolve().parents[2] / "app"

# Each package with what it may import (besides itself). Order is top to bottom.
ALLOWED: dict[str, set[str]] = {
    "web": {"api", "services", "db", "config"},
    "api": {"services", "jobs", "store", "sideinfo", "db", "config"},
    "services": {"jobs", "store", "sideinfo", "engine", "db", "config"},
    "jobs": {"store", "sideinfo", "engine", "db", "config"},
    "store": {"sideinfo", "db"},
    "db": {"config"},
    "sideinfo": set(),
    "engine": set(),
}


# Inside the engine the same rule, one level down: each method's folder (its data-parallel path
# in its own `chunked/`) imports only the shared numerics below it. Order is top to bottom.
# The modules at the bottom (array types, the progress protocol, warnings, side information's
# routing) may be imported by every folder.
BOTTOM = {"arrays", "progress", "fit_warnings", "side_info"}
ENGINE_ALLOWED: dict[str, set[str]] = {
    "c3l": {"c4s", "core", *BOTTOM},
    "c4s": {"core", *BOTTOM},
    "cec": {"core", *BOTTOM},
    "ppc": {"core", *BOTTOM},
    "smic": {"core", *BOTTOM},
    "image": {"core", *BOTTOM},
    "active": {*BOTTOM},
    "core": {*BOTTOM},
    **{module: set() for module in BOTTOM},
}


def _app_imports(path: Path, depth: int = 1) -> set[str]:
    """The `app.<package>` names a module imports (`app.engine.<part>` names with depth 2)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            modules = [node.module]
        elif isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        else:
            continue
        for module in modules:
            parts = module.split(".")
            if parts[0] == "app" and len(parts) > depth and (depth == 1 or parts[1] == "engine"):
                names.add(parts[depth])
    return names


def _modules(package: str) -> list[Path]:
    return sorted((APP / package).rglob("*.py"))


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_package_imports_only_layers_below(package: str) -> None:
    offences = []
    for module in _modules(package):
        for imported in _app_imports(module) - {package} - ALLOWED[package]:
            offences.append(f"{module.relative_to(APP.parent)} imports app.{imported}")
    assert not offences, "imports that run against the layers:\n" + "\n".join(offences)


def _engine_part(path: Path) -> str:
    return path.relative_to(APP / "engine").parts[0].removesuffix(".py")


@pytest.mark.parametrize("part", sorted(ENGINE_ALLOWED))
def test_engine_part_imports_only_parts_below(part: str) -> None:
    offences = []
    for module in _modules("engine"):
        if _engine_part(module) != part:
            continue
        for imported in _app_imports(module, depth=2) - {part} - ENGINE_ALLOWED[part]:
            offences.append(f"{module.relative_to(APP.parent)} imports app.engine.{imported}")
    assert not offences, "imports that run against the engine's layers:\n" + "\n".join(offences)


def test_every_engine_part_is_placed_in_a_layer() -> None:
    parts = {_engine_part(p) for p in _modules("engine")} - {"__init__"}
    assert parts == set(ENGINE_ALLOWED), "place new engine folders in ENGINE_ALLOWED"


def test_engine_has_no_relative_imports_out_of_a_method() -> None:
    """Engine modules import by absolute path, so the checks above see every import."""
    for module in _modules("engine"):
        for node in ast.walk(ast.parse(module.read_text())):
            if isinstance(node, ast.ImportFrom):
                assert node.level == 0, f"{module}: relative import"


def test_every_app_package_is_placed_in_a_layer() -> None:
    packages = {p.name for p in APP.iterdir() if (p / "__init__.py").exists()}
    assert packages == set(ALLOWED), "place new packages in ALLOWED and docs/architecture.md"


def test_the_engine_face_exports_all_six_estimators() -> None:
    from app import engine

    for name in ("CEC", "CECIB", "PPC", "C4S", "C3L", "SMIC"):
        estimator = getattr(engine, name)
        assert estimator.__name__ == name
        assert hasattr(estimator, "fit")


def _module_name(path: Path) -> str:
    parts = path.relative_to(APP.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imported_modules(path: Path, known: set[str]) -> set[str]:
    """The app modules a module imports: `from app.x import y` names app.x.y when that is a
    module, else app.x (its face)."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                candidate = f"{node.module}.{alias.name}"
                out.add(candidate if candidate in known else node.module)
        elif isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
    return out & known


def test_no_modules_import_each_other_in_a_circle() -> None:
    paths = sorted(APP.rglob("*.py"))
    known = {_module_name(p) for p in paths}
    graph = {_module_name(p): _imported_modules(p, known) - {_module_name(p)} for p in paths}
    done: set[str] = set()

    def visit(module: str, trail: list[str]) -> None:
        if module in trail:
            circle = [*trail[trail.index(module) :], module]
            raise AssertionError("an import circle: " + " -> ".join(circle))
        if module in done:
            return
        for imported in sorted(graph[module]):
            visit(imported, [*trail, module])
        done.add(module)

    for module in sorted(graph):
        visit(module, [])
