"""One proxy rule whatever starts the server: run by plain uvicorn (what a deployer behind
their own process manager runs), the app still believes X-Forwarded-For only from
TRUSTED_PROXIES. uvicorn's default believes it from 127.0.0.1, so a local client could name
any address, and sign in past the login throttle's lock on its own."""

import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from benchmarks._server import free_port, wait_until_serving
from tests.conftest import ADMIN_PASSWORD, server_env

SPOOFED = "203.0.113.9"


def _sign_in_address(work: Path, **env: str) -> str:
    """The address `uvicorn app.main:create_app --factory` records for a sign-in sent from
    127.0.0.1 with X-Forwarded-For: SPOOFED."""
    port = free_port()
    log = work / "uvicorn.log"
    with log.open("ab") as out:
        server = subprocess.Popen(
            [sys.executable, "-m", "uvicorn", "app.main:create_app", "--factory",
             "--port", str(port)],
            env=server_env(work, WARM_KERNELS_ON_START="false", **env),
            stdout=out, stderr=subprocess.STDOUT,
        )  # fmt: skip
    base = f"http://127.0.0.1:{port}/api/v1"
    try:
        wait_until_serving(base, server, log=log)
        token = httpx.post(
            f"{base}/auth/token",
            data={"username": "admin", "password": ADMIN_PASSWORD},
            headers={"X-Forwarded-For": SPOOFED},
        )
        assert token.status_code == 200, token.text
        headers = {"Authorization": f"Bearer {token.json()['access_token']}"}
        sessions = httpx.get(f"{base}/auth/sessions", headers=headers).json()
        listed = sessions["items"] if isinstance(sessions, dict) else sessions
        return str(listed[0]["created_from"])
    finally:
        server.terminate()
        server.wait(timeout=30)


@pytest.mark.parametrize(
    ("trusted", "address"),
    [("", "127.0.0.1"), ("127.0.0.1", SPOOFED)],
    ids=["no-trusted-proxy", "loopback-trusted"],
)
def test_plain_uvicorn_believes_forwarded_addresses_only_from_trusted_proxies(
    tmp_path: Path, trusted: str, address: str
) -> None:
    assert _sign_in_address(tmp_path, TRUSTED_PROXIES=trusted) == address
