"""Upload bodies the server must not read are stopped while they arrive, through a real server
(Starlette's test client hands the app a body already read): a chunked body (no
Content-Length) is cut at the upload limit, and a multipart body without any credentials is
refused before it is read."""

import contextlib
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from benchmarks._server import free_port, start_server, wait_until_serving
from tests.conftest import ADMIN_PASSWORD, server_env, token_headers

MIB = 1024 * 1024
BOUNDARY = "limitboundary"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, int]]:
    work = tmp_path_factory.mktemp("limits")
    env = server_env(work, WARM_KERNELS_ON_START="false", MAX_UPLOAD_BYTES=str(2 * MIB))
    port = free_port()
    process = start_server(port, env, work / "server.log")
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until_serving(f"{base}/api/v1", process, log=work / "server.log")
        yield base, process.pid
    finally:
        process.terminate()
        process.wait(timeout=30)


class _Body:
    """A multipart CSV body of `megabytes`, sent chunked (no Content-Length)."""

    def __init__(self, megabytes: int) -> None:
        self.megabytes = megabytes

    def __iter__(self) -> Iterator[bytes]:
        head = (
            f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="big.csv"\r\n'
            "Content-Type: text/csv\r\n\r\na,b\r\n"
        ).encode()
        yield head
        for _ in range(self.megabytes):
            yield b"1,2\r\n" * (MIB // 5)
        yield f"\r\n--{BOUNDARY}--\r\n".encode()


def _written(pid: int) -> int:
    """Bytes the server process has written so far (to files, a spooled upload's included)."""
    for line in Path(f"/proc/{pid}/io").read_text().splitlines():
        if line.startswith("wchar:"):
            return int(line.split()[1])
    raise AssertionError("no wchar in /proc/<pid>/io")


def _post(base: str, path: str, body: _Body, headers: dict[str, str]) -> httpx.Response | None:
    """The answer, or None when the server closed the connection before the body was sent."""
    content_type = {"Content-Type": f"multipart/form-data; boundary={BOUNDARY}"}
    with contextlib.suppress(httpx.TransportError):
        return httpx.post(
            f"{base}{path}", content=iter(body), headers={**headers, **content_type}, timeout=60
        )
    return None


def test_a_chunked_body_past_the_limit_is_cut_off_as_it_arrives(
    served: tuple[str, int],
) -> None:
    server, pid = served
    headers = token_headers(httpx.Client(base_url=server), "admin", ADMIN_PASSWORD)
    project = httpx.post(f"{server}/api/v1/projects", json={"name": "P"}, headers=headers).json()
    before = _written(pid)
    answer = _post(server, f"/api/v1/projects/{project['id']}/datasets", _Body(256), headers)
    assert answer is not None and answer.status_code == 413, answer and answer.text
    assert "limited to 2,097,152 bytes" in answer.json()["detail"]
    assert _written(pid) - before < 16 * MIB  # not the 256 MiB offered, spooled to disk
    listed = httpx.get(f"{server}/api/v1/projects/{project['id']}/datasets", headers=headers)
    assert listed.json()["total"] == 0


def test_a_multipart_body_without_credentials_is_refused_before_it_is_read(
    served: tuple[str, int],
) -> None:
    server, pid = served
    before = _written(pid)
    answer = _post(server, "/api/v1/projects/1/datasets", _Body(256), {})
    assert answer is not None and answer.status_code == 401, answer and answer.text
    assert answer.json()["code"] == "not_authenticated"
    assert _written(pid) - before < 16 * MIB


def test_a_body_within_the_limit_is_still_taken(served: tuple[str, int]) -> None:
    server, _ = served
    headers = token_headers(httpx.Client(base_url=server), "admin", ADMIN_PASSWORD)
    project = httpx.post(f"{server}/api/v1/projects", json={"name": "Q"}, headers=headers).json()
    answer = _post(server, f"/api/v1/projects/{project['id']}/datasets", _Body(1), headers)
    assert answer is not None and answer.status_code == 201, answer and answer.text
