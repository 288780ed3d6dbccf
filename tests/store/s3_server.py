"""A real S3-compatible server for tests: moto in server mode on 127.0.0.1, inside the test
process (a thread), reached over loopback HTTP by s3fs/aiobotocore and boto3 alike."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import boto3
from moto.server import ThreadedMotoServer

# moto accepts any credentials; s3fs and boto3 only need some to sign requests with.
KEY = "testing-key"
SECRET = "testing-secret"
REGION = "us-east-1"
BUCKET = "workbench-arrays"

# Fail fast: one attempt, short timeouts (s3fs's own defaults are 5 retries, 5 s and 15 s).
FAST_CONFIG: dict[str, Any] = {
    "connect_timeout": 1,
    "read_timeout": 5,
    "retries": {"max_attempts": 1, "mode": "standard"},
}


def storage_options(endpoint_url: str) -> dict[str, Any]:
    """fsspec options for s3fs as a deployment would set them (ARRAY_STORE_OPTIONS): the
    credentials, endpoint and region explicit (nothing read from the environment or ~/.aws),
    botocore's timeouts and retries short, and s3fs's caches as they come (on)."""
    return {
        "key": KEY,
        "secret": SECRET,
        "endpoint_url": endpoint_url,
        "client_kwargs": {"region_name": REGION},
        "config_kwargs": dict(FAST_CONFIG),
    }


@dataclass
class S3Server:
    endpoint_url: str
    bucket: str

    def client(self) -> Any:
        return boto3.client(
            "s3",
            endpoint_url=self.endpoint_url,
            aws_access_key_id=KEY,
            aws_secret_access_key=SECRET,
            region_name=REGION,
        )

    def keys(self, prefix: str = "") -> list[str]:
        """Every object key under ``prefix`` in the bucket, listed by boto3 (not s3fs)."""
        found: list[str] = []
        paginator = self.client().get_paginator("list_objects_v2")
        for page in paginator.paginate(Bucket=self.bucket, Prefix=prefix):
            found.extend(obj["Key"] for obj in page.get("Contents", []))
        return found

    def options(self, **extra: Any) -> dict[str, Any]:
        """This server's options, with ``extra`` replacing or adding some."""
        return {**storage_options(self.endpoint_url), **extra}


def start_server() -> tuple[ThreadedMotoServer, S3Server]:
    """Start moto on a free loopback port and create the bucket."""
    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # not a line per request
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    s3 = S3Server(endpoint_url=f"http://{host}:{port}", bucket=BUCKET)
    s3.client().create_bucket(Bucket=BUCKET)
    return server, s3
