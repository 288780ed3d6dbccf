"""What every format shares about where a table lives: opening the fsspec filesystem, an
object's version (S3: its ETag; else its mtime) and the check that it is still the recorded one,
and turning any failure into a `SourceError` that names the object but none of the options.

Options (credentials, endpoints) are passed to fsspec and nowhere else: every message made here
has their values taken out."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from app.store.sources.source_types import SourceError, SourceFile

MESSAGE_CHARS = 300  # of an underlying error's text, after credentials are taken out


def filesystem(protocol: str, options: Mapping[str, Any]) -> Any:
    import fsspec

    try:
        if protocol == "file":
            from fsspec.implementations.local import LocalFileSystem

            return LocalFileSystem()
        return fsspec.filesystem(protocol, **options)
    except Exception as exc:
        raise SourceError(
            f"the {protocol!r} filesystem cannot be opened: {describe(exc, options)}"
        ) from None


def normal_path(fs: Any, path: str) -> str:
    stripped = str(type(fs)._strip_protocol(path))
    return stripped.rstrip("/") or stripped


def path_of(url: str, protocol: str) -> str:
    prefix = f"{protocol}://"
    return url[len(prefix) :] if url.startswith(prefix) else url


def version(info: Mapping[str, Any]) -> str:
    """An object's version as fsspec reports it: S3's ETag, else its modification time."""
    for key in ("ETag", "etag", "mtime", "LastModified", "last_modified", "updated", "created"):
        value = info.get(key)
        if value is not None and value != "":
            return str(value)
    return ""


def listed_files(
    fs: Any, path: str, info: dict[str, Any], is_dir: bool, accept: Callable[[str], bool]
) -> list[tuple[str, dict[str, Any]]]:
    """The files a table is read from, in path order, each with its listing entry: those under
    a directory that ``accept`` takes (all depths), or the one file itself."""
    if not is_dir:
        return [(path, info)]
    listing: dict[str, Any] = fs.find(path, detail=True)
    return sorted((str(p), e) for p, e in listing.items() if accept(str(p)) and e["type"] == "file")


def unchanged(
    known: Mapping[str, SourceFile] | None, url: str, entry: Mapping[str, Any]
) -> SourceFile | None:
    """The earlier record of ``url`` when its listing ``entry`` shows it unchanged (same version
    and size): what a sync need not read again."""
    recorded = (known or {}).get(url)
    if recorded is None or not entry:
        return None
    size = entry.get("size")
    if version(entry) != recorded.version or (size is not None and int(size) != recorded.size):
        return None
    return recorded


def _open_plain(fs: Any, path: str) -> Any:
    # no read-ahead: Arrow reads exactly the footer and the column chunks it needs
    return fs.open(path, "rb", cache_type="none")


@contextmanager
def open_checked(
    fs: Any,
    protocol: str,
    file: SourceFile,
    *,
    opener: Callable[[Any, str], Any] = _open_plain,
) -> Iterator[Any]:
    """The file open for reading (by ``opener``: NPY's has a small read-ahead), once its version
    is the recorded one (S3: from the request that opens it; else one `info`)."""
    path = path_of(file.url, protocol)
    fs.invalidate_cache(path)
    f = opener(fs, path)
    try:
        details = getattr(f, "details", None)
        now = version(details if isinstance(details, Mapping) else fs.info(path))
        if now != file.version:
            raise changed(file.url)
        yield f
    finally:
        f.close()


def changed(url: str) -> SourceError:
    return SourceError(
        f"{url} changed since it was read (its version is not the one recorded); import it "
        "again to read it as it is now"
    )


@contextmanager
def reading(
    url: str, options: Mapping[str, Any], what: str = "read", *, missing_passes: bool = False
) -> Iterator[None]:
    """Any failure inside as a SourceError naming ``url`` (and no option value)."""
    try:
        yield
    except (SourceError, MemoryError):
        raise
    except FileNotFoundError:
        if missing_passes:
            raise
        raise SourceError(f"{url}: no such file or object (missing, or removed)") from None
    except Exception as exc:
        if type(exc).__name__ == "FileExpired":  # s3fs: the object changed while being read
            raise changed(url) from None
        raise SourceError(f"{url} cannot be {what}: {describe(exc, options)}") from None


def describe(exc: BaseException, options: Mapping[str, Any]) -> str:
    text = str(exc) or type(exc).__name__
    for value in option_texts(options):
        text = text.replace(value, "***")
    return short(text)


def short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MESSAGE_CHARS else text[: MESSAGE_CHARS - 3] + "..."


def option_texts(options: Any) -> list[str]:
    """Every text in the options (longest first), to take out of messages."""
    found: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, str | bytes):
            text = value.decode(errors="replace") if isinstance(value, bytes) else value
            if len(text) >= 4:
                found.append(text)
        elif isinstance(value, Mapping):
            for item in value.values():
                walk(item)
        elif isinstance(value, list | tuple | set | frozenset):
            for item in value:
                walk(item)

    walk(options)
    return sorted(set(found), key=len, reverse=True)
