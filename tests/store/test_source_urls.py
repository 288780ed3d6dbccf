"""Which URLs a user may import by reference: only those under a prefix the operator opened,
decided before any request leaves the server."""

import os
from pathlib import Path
from typing import Any

import pytest

from app.store.sources.allowed import AllowedSource, SourceRefused, allowed_source

SECRET = "TOPSECRET-123"
Sources = dict[str, dict[str, Any]]


def _file_url(path: Path) -> str:
    return "file://" + str(path)


def _root(tmp_path: Path) -> Path:
    root = tmp_path / "shared"
    (root / "project").mkdir(parents=True)
    return root


def _refusal(url: str, sources: Sources) -> str:
    with pytest.raises(SourceRefused) as refused:
        allowed_source(url, sources)
    return str(refused.value)


def test_file_inside_the_root_is_allowed(tmp_path: Path) -> None:
    root = _root(tmp_path)
    prefix = _file_url(root) + "/"
    source = allowed_source(_file_url(root / "project" / "data.zarr"), {prefix: {}})
    real = os.path.realpath(root / "project" / "data.zarr")
    assert source == AllowedSource(
        url="file://" + real, root=prefix, protocol="file", path=real, options={}
    )


def test_file_missing_path_inside_the_root_is_allowed(tmp_path: Path) -> None:
    root = _root(tmp_path)
    source = allowed_source(_file_url(root / "not-yet" / "x.csv"), {_file_url(root): {}})
    assert source.path == os.path.realpath(root / "not-yet" / "x.csv")


def test_the_root_itself_is_allowed(tmp_path: Path) -> None:
    root = _root(tmp_path)
    prefix = _file_url(root) + "/"
    assert allowed_source(prefix, {prefix: {}}).path == os.path.realpath(root)
    assert allowed_source(_file_url(root), {prefix: {}}).path == os.path.realpath(root)


def test_file_localhost_is_the_local_host(tmp_path: Path) -> None:
    root = _root(tmp_path)
    source = allowed_source("file://localhost" + str(root / "project"), {_file_url(root): {}})
    assert source.url == "file://" + os.path.realpath(root / "project")


def test_symlink_inside_the_root_to_outside_is_refused(tmp_path: Path) -> None:
    root = _root(tmp_path)
    outside = tmp_path / "private"
    outside.mkdir()
    (outside / "secrets.csv").write_text("x")
    (root / "escape").symlink_to(outside, target_is_directory=True)
    sources: Sources = {_file_url(root) + "/": {}}
    message = _refusal(_file_url(root / "escape"), sources)
    assert "no configured source" in message
    assert str(outside) not in message
    _refusal(_file_url(root / "escape" / "secrets.csv"), sources)


def test_symlink_inside_the_root_to_inside_is_allowed(tmp_path: Path) -> None:
    root = _root(tmp_path)
    (root / "alias").symlink_to(root / "project", target_is_directory=True)
    source = allowed_source(_file_url(root / "alias"), {_file_url(root): {}})
    assert source.path == os.path.realpath(root / "project")


@pytest.mark.parametrize("tail", ["/project/../../etc/passwd", "/..", "/./project", "/a//b"])
def test_dot_and_empty_segments_are_refused(tmp_path: Path, tail: str) -> None:
    root = _root(tmp_path)
    message = _refusal(_file_url(root) + tail, {_file_url(root): {}})
    assert "not allowed" in message


@pytest.mark.parametrize("encoded", ["/%2e%2e/etc", "/project%2Fx", "/%2E", "/a%20b"])
def test_percent_encoding_is_refused(tmp_path: Path, encoded: str) -> None:
    root = _root(tmp_path)
    assert "percent-encoding" in _refusal(_file_url(root) + encoded, {_file_url(root): {}})


@pytest.mark.parametrize("url", ["gs://lab-data/x", "ftp://host/x", "HTTPS://lab-data/x"])
def test_other_schemes_are_refused(url: str) -> None:
    message = _refusal(url, {"s3://lab-data/": {}})
    scheme = url.split(":")[0].lower()
    assert repr(scheme) in message
    assert "s3://lab-data/" in message


def test_metadata_url_is_refused() -> None:
    message = _refusal("http://169.254.169.254/latest/meta-data/", {"s3://lab-data/": {}})
    assert "'http'" in message


@pytest.mark.parametrize("url", ["", "relative/path", "/abs/path", "file:relative", "file:/abs"])
def test_bare_relative_and_malformed_urls_are_refused(url: str) -> None:
    _refusal(url, {"file:///": {}})


@pytest.mark.parametrize(
    "url",
    [
        "file://example.com/mnt/x",
        "file:///mnt/x?y=1",
        "file:///mnt/x#y",
        "file:///mnt\\x",
        "file:///mnt/x\x00y",
        "file:///mnt/x\ny",
        "s3://lab-data/x\x7f",
    ],
)
def test_hosts_queries_fragments_backslashes_and_controls_are_refused(url: str) -> None:
    _refusal(url, {"file:///": {}, "s3://lab-data/": {}})


def test_file_outside_any_root_is_refused(tmp_path: Path) -> None:
    root = _root(tmp_path)
    neighbour = tmp_path / "shared-other"
    neighbour.mkdir()
    sources: Sources = {_file_url(root): {}}
    _refusal(_file_url(neighbour / "x"), sources)
    _refusal("file:///etc/passwd", sources)


def test_s3_key_under_the_prefix_is_allowed() -> None:
    options = {"endpoint_url": "http://minio:9000", "key": "k", "secret": SECRET}
    source = allowed_source("s3://lab-data/project/features.parquet", {"s3://lab-data/": options})
    assert source == AllowedSource(
        url="s3://lab-data/project/features.parquet",
        root="s3://lab-data/",
        protocol="s3",
        path="lab-data/project/features.parquet",
        options=options,
    )
    assert source.options is not options


def test_s3_folder_with_trailing_slash_is_allowed() -> None:
    source = allowed_source("s3://lab-data/project/", {"s3://lab-data": {}})
    assert source.path == "lab-data/project/"


def test_s3_neighbour_bucket_sharing_the_prefix_is_refused() -> None:
    for prefix in ("s3://lab-data/", "s3://lab-data"):
        message = _refusal("s3://lab-data-other/x", {prefix: {}})
        assert "no configured source" in message


def test_s3_prefix_without_slash_stops_at_a_segment_boundary() -> None:
    sources: Sources = {"s3://lab-data/project": {}}
    assert allowed_source("s3://lab-data/project/x", sources).path == "lab-data/project/x"
    assert allowed_source("s3://lab-data/project", sources).path == "lab-data/project"
    _refusal("s3://lab-data/project2/x", sources)
    _refusal("s3://lab-data/other", sources)


@pytest.mark.parametrize("bucket", ["ab", "Lab-Data", "lab_data", "-lab", "a..b", "k:s@lab"])
def test_s3_invalid_buckets_are_refused(bucket: str) -> None:
    assert "bucket" in _refusal(f"s3://{bucket}/x", {"s3://lab-data/": {}})


def test_longest_prefix_wins(tmp_path: Path) -> None:
    s3 = {"s3://lab-data/": {"key": "short"}, "s3://lab-data/project/": {"key": "long"}}
    source = allowed_source("s3://lab-data/project/x", s3)
    assert (source.root, source.options) == ("s3://lab-data/project/", {"key": "long"})
    assert allowed_source("s3://lab-data/other", s3).options == {"key": "short"}

    root = _root(tmp_path)
    files = {_file_url(root): {"n": 1}, _file_url(root / "project") + "/": {"n": 2}}
    assert allowed_source(_file_url(root / "project" / "x"), files).options == {"n": 2}
    assert allowed_source(_file_url(root / "x"), files).options == {"n": 1}


def test_empty_sources_means_import_is_off(tmp_path: Path) -> None:
    for url in ("s3://lab-data/x", _file_url(tmp_path), "http://169.254.169.254/"):
        assert "IMPORT_SOURCES" in _refusal(url, {})


def test_malformed_prefixes_open_nothing() -> None:
    sources: Sources = {
        "s3://": {},
        "file:relative": {},
        "http://lab/": {},
        "s3://k:s@lab-data/": {},
    }
    message = _refusal("s3://lab-data/x", sources)
    assert "No configured IMPORT_SOURCES prefix is a valid" in message
    assert "k:s" not in message


def test_credentials_never_appear_in_refusals(tmp_path: Path) -> None:
    root = _root(tmp_path)
    (root / "escape").symlink_to(tmp_path, target_is_directory=True)
    secret_options = {"endpoint_url": f"http://{SECRET}:9000", "key": SECRET, "secret": SECRET}
    sources = {
        "s3://lab-data/project/": secret_options,
        _file_url(root) + "/": {"auto_mkdir": SECRET},
    }
    bad_urls = [
        "",
        "relative/x",
        "http://169.254.169.254/latest/meta-data/iam/security-credentials/",
        "gs://lab-data/project/x",
        "s3://lab-data-other/project/x",
        "s3://lab-data/project2/x",
        "s3://lab-data/project/../x",
        "s3://lab-data/project/%2e%2e/x",
        "s3://lab-data/project/x?versionId=1",
        "s3://Lab-Data/project/x",
        _file_url(root / "escape" / "x"),
        _file_url(root) + "/a\\..\\b",
        "file:///etc/passwd",
        "file://evil.example/x",
    ]
    for url in bad_urls:
        message = _refusal(url, sources)
        assert SECRET not in message, url
        assert "minio" not in message and "9000" not in message, url
        assert "s3://lab-data/project/" in message, url
