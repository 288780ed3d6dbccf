"""Whether a URL a user names may be read: only what lies under a prefix an operator opened in
IMPORT_SOURCES, decided from the URL's text alone (and, for `file:`, the local filesystem's own
view of its real path) before any request leaves the server.

The rules are strict on purpose. A URL is refused rather than repaired when anything in it could
be read two ways: `.` or `..` segments, empty segments, backslashes, control characters, queries,
fragments and percent-encoding (which could smuggle any of these past a check that reads the raw
text). Local paths are compared by their real paths, so a symlink inside an opened folder cannot
lead outside it. The caller reads `AllowedSource.path`, the path that was checked, not the URL the
user typed.

Refusals say what is wrong and which prefixes are open; they never repeat a prefix's options
(keys, secrets, endpoints), nor the resolved path of a file URL (a symlink's target is not the
user's to learn)."""

import copy
import os
import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

SCHEMES = ("file", "s3")
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*):")
# AWS's rule, a little narrower than "3-63 lowercase letters, digits, dots, hyphens": it must
# also start and end with a letter or digit and have no two dots in a row.
_BUCKET = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]")
_FORBIDDEN = {"%": "percent-encoding", "?": "a query", "#": "a fragment", "\\": "a backslash"}


class SourceRefused(ValueError):
    """A URL no configured source allows; the message says why, never a credential."""


@dataclass(frozen=True)
class AllowedSource:
    """A URL that lies under a configured source, with what fsspec needs to read it."""

    url: str  # the normalized URL (file: "file:///abs/real/path", s3: "s3://bucket/key")
    root: str  # the configured prefix it lies under (as configured)
    protocol: str  # "file" or "s3"
    path: str  # what fsspec takes with these options: the real path (file), "bucket/key" (s3)
    options: dict[str, Any]  # the prefix's fsspec options (copied)


@dataclass(frozen=True)
class _Location:
    """A URL or prefix, parsed: its protocol, normalized URL and fsspec path."""

    protocol: str
    url: str
    path: str


def allowed_source(url: str, sources: Mapping[str, Mapping[str, Any]]) -> AllowedSource:
    """The source `url` names, if it lies under one of `sources` (prefix -> fsspec options);
    when several do, the longest (most specific) prefix's options are the ones used."""
    if not sources:
        raise SourceRefused(
            "Import by reference is off: no source is open until an operator sets IMPORT_SOURCES."
        )
    roots = _valid_roots(sources)
    try:
        target = _parse(url)
    except SourceRefused as refused:
        raise SourceRefused(f"{refused} {_open_prefixes(roots)}") from None
    matches = [(prefix, root) for prefix, root in roots if _lies_under(target, root)]
    if not matches:
        raise SourceRefused(
            f"This {target.protocol} URL lies under no configured source. {_open_prefixes(roots)}"
        )
    prefix, _ = max(matches, key=lambda match: (len(match[1].path), len(match[0])))
    return AllowedSource(
        url=target.url,
        root=prefix,
        protocol=target.protocol,
        path=target.path,
        options=copy.deepcopy(dict(sources[prefix])),
    )


def _valid_roots(sources: Mapping[str, Mapping[str, Any]]) -> list[tuple[str, _Location]]:
    """The configured prefixes that are themselves valid URLs. A malformed prefix opens
    nothing (failing closed), and is never listed back, since it might hold anything."""
    roots = []
    for prefix in sorted(sources):
        try:
            roots.append((prefix, _parse(prefix)))
        except SourceRefused:
            continue
    return roots


def _open_prefixes(roots: list[tuple[str, _Location]]) -> str:
    """The sentence listing the open prefixes: their URLs only, never their options."""
    if not roots:
        return "No configured IMPORT_SOURCES prefix is a valid file:/// or s3:// URL."
    return "Allowed prefixes: " + ", ".join(prefix for prefix, _ in roots) + "."


def _parse(url: str) -> _Location:
    """`url` normalized, or SourceRefused if it is not an unambiguous file or s3 URL."""
    scheme, rest = _split_scheme(url)
    _check_characters(rest)
    if not rest.startswith("//"):
        raise SourceRefused(f"A {scheme} URL must start with {scheme}://.")
    if scheme == "file":
        return _parse_file(rest[2:])
    return _parse_s3(rest[2:])


def _split_scheme(url: str) -> tuple[str, str]:
    """The URL's scheme (lowercased, as schemes are case-insensitive) and what follows it."""
    match = _SCHEME.match(url)
    if match is None:
        raise SourceRefused(
            "The URL has no scheme: name a file:/// or s3:// URL, not a bare or relative path."
        )
    scheme = match.group(1).lower()
    if scheme not in SCHEMES:
        raise SourceRefused(
            f"The scheme {scheme!r} is not supported: only file:/// and s3:// URLs can be imported."
        )
    return scheme, url[match.end() :]


def _check_characters(text: str) -> None:
    """Refuse characters that let one URL mean two things to two readers."""
    for char, what in _FORBIDDEN.items():
        if char in text:
            raise SourceRefused(f"The URL contains {what} ({char!r}), which is not allowed.")
    if any(unicodedata.category(char) == "Cc" for char in text):
        raise SourceRefused("The URL contains a control character, which is not allowed.")


def _check_segments(path: str) -> None:
    """Refuse `.`, `..` and empty segments in a '/'-separated path; one trailing '/' (a folder)
    is the only empty segment allowed."""
    segments = path.split("/")
    if segments[-1] == "":
        segments.pop()
    for segment in segments:
        if segment in ("", ".", ".."):
            shown = repr(segment) if segment else "an empty segment ('//')"
            raise SourceRefused(f"The URL's path contains {shown}, which is not allowed.")


def _parse_file(rest: str) -> _Location:
    """`file:///absolute/path` (or `file://localhost/...`), located by its real path."""
    host, slash, path = rest.partition("/")
    if not slash or host not in ("", "localhost"):
        raise SourceRefused(
            "A file URL must name an absolute local path: file:///absolute/path (no host)."
        )
    _check_segments(path)
    real = os.path.realpath("/" + path)
    return _Location(protocol="file", url="file://" + real, path=real)


def _parse_s3(rest: str) -> _Location:
    """`s3://bucket/key...`, with a valid bucket name; nothing is looked up."""
    bucket, slash, key = rest.partition("/")
    if not _BUCKET.fullmatch(bucket) or ".." in bucket:
        raise SourceRefused(
            "An s3 URL must be s3://bucket/key with a valid bucket name "
            "(3-63 lowercase letters, digits, dots and hyphens)."
        )
    _check_segments(key)
    path = bucket + slash + key
    return _Location(protocol="s3", url="s3://" + path, path=path)


def _lies_under(target: _Location, root: _Location) -> bool:
    """Whether `target` is `root` or inside it: whole real paths for files (so `/a/b` is not
    under `/a/bc`), whole segments of the URL for s3 (so `s3://lab-data/` does not open
    `s3://lab-data-other/`, nor `s3://lab-data/project` open `s3://lab-data/project2`)."""
    if target.protocol != root.protocol:
        return False
    if target.protocol == "file":
        return os.path.commonpath([target.path, root.path]) == root.path
    base = root.url.rstrip("/")
    inside = target.url.rstrip("/")
    return inside == base or inside.startswith(base + "/")
