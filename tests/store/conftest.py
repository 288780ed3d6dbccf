"""Fixtures for the array store on S3: one moto server for the session."""

from collections.abc import Iterator

import pytest

from tests.store.s3_server import S3Server, start_server


@pytest.fixture(scope="session")
def s3_server() -> Iterator[S3Server]:
    """A real S3 endpoint (moto, HTTP on 127.0.0.1) with an empty bucket; stopped at the end."""
    server, s3 = start_server()
    try:
        yield s3
    finally:
        server.stop()


@pytest.fixture
def s3_endpoint(s3_server: S3Server) -> str:
    return s3_server.endpoint_url
