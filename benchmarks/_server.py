"""Start the real `python -m app serve` on a throwaway database for a benchmark."""

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

PASSWORD = "benchmark-password"


@dataclass
class LiveServer:
    base: str  # .../api/v1
    pid: int
    headers: dict[str, str]
    workdir: Path
    process: subprocess.Popen[bytes]
    seconds_to_health: float  # from starting the process to /health answering
    log: Path  # the server's stdout and stderr
    port: int = 0


def free_port() -> int:
    """A loopback port nobody listens on (now)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_server(port: int, env: Mapping[str, str], log: Path) -> subprocess.Popen[bytes]:
    """`python -m app serve` on `port` with the environment `env`, its output added to `log`
    (ready once `wait_until_serving` returns)."""
    with log.open("ab") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "app", "serve", "--port", str(port)],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )


def wait_until_serving(
    base: str, server: subprocess.Popen[bytes], timeout: float = 120, log: Path | None = None
) -> None:
    """Until `{base}/health` answers 200; RuntimeError (with the log) if the server exits or
    takes longer than `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            if httpx.get(f"{base}/health", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        if server.poll() is not None or time.monotonic() > deadline:
            detail = log.read_text() if log is not None else ""
            raise RuntimeError(f"the server did not start\n{detail}")
        time.sleep(0.2)


def add_database_option(parser: argparse.ArgumentParser) -> None:
    """`--database-url`: the server's database (without it, a throwaway SQLite file)."""
    parser.add_argument("--database-url", default=None, help="the server's database URL")


def run_request(dataset_id: int, algorithm: str, **params: object) -> dict[str, Any]:
    """The body of `POST /runs`: `algorithm` with `params` on the dataset."""
    return {"dataset_id": dataset_id, "algorithm": algorithm, "params": params}


@contextmanager
def live_server_from_command_line(
    parser: argparse.ArgumentParser,
) -> Iterator[tuple[argparse.Namespace, LiveServer]]:
    """The command line's arguments (`parser`'s options and `--database-url`) and the server
    on that database."""
    add_database_option(parser)
    args = parser.parse_args()
    with live_server(args.database_url) as server:
        yield args, server


@contextmanager
def live_server(database_url: str | None = None, **env: str) -> Iterator[LiveServer]:
    """The server on a throwaway database and array store."""
    with _serving(Path(tempfile.mkdtemp(prefix="bench-")), free_port(), database_url, env) as live:
        yield live


@contextmanager
def restarted_server(previous: LiveServer, **env: str) -> Iterator[LiveServer]:
    """The server again on `previous`'s port, database and array store (a restart)."""
    with _serving(previous.workdir, previous.port, None, env) as live:
        yield live


@contextmanager
def _serving(
    workdir: Path, port: int, database_url: str | None, env: dict[str, str]
) -> Iterator[LiveServer]:
    environment = {
        **os.environ,
        "DATABASE_URL": database_url or f"sqlite:///{workdir / 'bench.db'}",
        "ADMIN_PASSWORD": PASSWORD,
        "LOAD_DEMO_DATA": "false",
        "DATA_DIR": str(workdir / "var"),  # the array store too: never the checkout's var/
        "MAX_UPLOAD_BYTES": str(4 * 1024**3),
        **env,
    }
    log = workdir / f"server-{time.time_ns()}.log"
    started = time.perf_counter()
    server = start_server(port, environment, log)
    base = f"http://127.0.0.1:{port}/api/v1"
    try:
        wait_until_serving(base, server, log=log)
        seconds_to_health = time.perf_counter() - started
        token = httpx.post(
            f"{base}/auth/token", data={"username": "admin", "password": PASSWORD}
        ).json()["access_token"]
        headers = {"Authorization": f"Bearer {token}"}
        yield LiveServer(base, server.pid, headers, workdir, server, seconds_to_health, log, port)
    finally:
        server.terminate()
        server.wait(timeout=60)


CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def signed_in_page(server: LiveServer, playwright: Any) -> tuple[Any, Any, str]:
    """Debian's Chromium, a page signed in as the admin, and the server's origin."""
    browser = playwright.chromium.launch(
        executable_path="/usr/bin/chromium", headless=True, args=CHROMIUM_ARGS
    )
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    origin = server.base.removesuffix("/api/v1")
    page.goto(f"{origin}/login")
    page.fill("input[name=username]", "admin")
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(f"{origin}/projects")
    return browser, page, origin
