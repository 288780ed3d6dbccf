"""The wheel is the app: it carries the Alembic chain, templates and static files and declares
the `workbench` command; installed (non-editable) into a fresh venv it migrates into the working
directory's var/, serves, and loads the demo data."""

import json
import os
import shutil
import socket
import subprocess
import sys
import sysconfig
import time
import urllib.parse
import urllib.request
import zipfile
from pathlib import Path

import pytest

from app.db.migrate import MIGRATIONS

ROOT = Path(__file__).resolve().parents[2]
PASSWORD = "wheel-test-password"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`pip wheel . --no-deps` from a copy of the sources (the build writes build/ in-tree)."""
    source = tmp_path_factory.mktemp("source")
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    shutil.copytree(ROOT / "app", source / "app", ignore=shutil.ignore_patterns("__pycache__"))
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(source), "--no-deps", "-q", "-w", str(out)],
        check=True,
    )
    (built,) = out.glob("*.whl")
    return built


def test_the_wheel_carries_migrations_templates_static_files_and_the_command(
    wheel: Path,
) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    revisions = {f"app/db/migrations/versions/{p.name}" for p in MIGRATIONS.glob("versions/*.py")}
    assert len(revisions) >= 5
    expected = revisions | {
        "app/db/alembic.ini",
        "app/db/migrations/env.py",
        "app/db/migrations/script.py.mako",
        "app/templates/base.html",
        "app/templates/workspace.html",
        "app/static/css/app.css",
        "app/static/favicon.svg",
    }
    assert expected <= names, sorted(expected - names)
    assert not [n for n in names if "__pycache__" in n]
    (entry_points,) = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
    text = zipfile.ZipFile(wheel).read(entry_points).decode()
    assert "workbench = app.__main__:main" in text


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _get(url: str, token: str | None = None) -> object:
    request = urllib.request.Request(url)
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())


def _wait_for(url: str, server: subprocess.Popen[bytes], timeout: float = 180) -> object:
    deadline = time.monotonic() + timeout
    while True:
        assert server.poll() is None, "the server exited"
        try:
            return _get(url)
        except OSError:
            assert time.monotonic() < deadline, f"{url} never answered"
            time.sleep(0.5)


def test_an_installed_wheel_migrates_serves_and_loads_the_demo(wheel: Path, tmp_path: Path) -> None:
    # A fresh venv of the base interpreter; the dependencies are this venv's (a .pth line),
    # the app only the wheel's, installed with --no-deps.
    venv = tmp_path / "venv"
    subprocess.run([sys.base_prefix + "/bin/python3", "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    Path(site, "workbench-deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    pip = [str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)]
    subprocess.run(pip, check=True)

    work = tmp_path / "work"
    work.mkdir()
    env = {
        k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "DATA_DIR", "ARRAY_STORE"}
    }
    env.update(ADMIN_PASSWORD=PASSWORD, LOAD_DEMO_DATA="true", PYTHONPATH="")
    where = subprocess.run(
        [str(python), "-c", "import app; print(app.__file__, app.__version__)"],
        cwd=work,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    assert where[0].startswith(site), "the app must come from the wheel, not the checkout"

    workbench = str(venv / "bin" / "workbench")
    subprocess.run([workbench, "migrate"], cwd=work, env=env, check=True)
    assert (work / "var" / "workbench.db").is_file()

    port = _free_port()
    server = subprocess.Popen([workbench, "serve", "--port", str(port)], cwd=work, env=env)
    try:
        base = f"http://127.0.0.1:{port}/api/v1"
        health = _wait_for(f"{base}/health", server)
        assert isinstance(health, dict) and health["version"] == where[1]
        form = urllib.parse.urlencode({"username": "admin", "password": PASSWORD}).encode()
        with urllib.request.urlopen(f"{base}/auth/token", data=form, timeout=10) as response:
            token = json.loads(response.read())["access_token"]
        projects = _get(f"{base}/projects", token)
        assert isinstance(projects, dict)
        (demo,) = [p for p in projects["items"] if p["name"] == "Demo"]
        datasets = _get(f"{base}/projects/{demo['id']}/datasets", token)
        assert isinstance(datasets, dict)
        by_name = {d["name"]: d for d in datasets["items"]}
        assert {"iris", "wine", "digits"} <= set(by_name)
        items = _get(f"{base}/datasets/{by_name['iris']['id']}/items?limit=3", token)
        assert isinstance(items, dict) and len(items["items"]) == 3
    finally:
        server.terminate()
        server.wait(timeout=60)
    assert not list(Path(site).glob("var")), "nothing is written into site-packages"
