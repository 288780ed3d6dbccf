"""Every bad upload gets a 4xx that says what is wrong and where, and stores nothing."""

import io
from collections.abc import Callable

import numpy as np
import pytest
import tifffile
from fastapi.testclient import TestClient
from PIL import Image
from sqlalchemy.orm import Session

from tests.conftest import admin_project, post_dataset, row_counts

pytestmark = pytest.mark.db


def _png(size: tuple[int, int] = (40, 30)) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", size, (0, 120, 200)).save(buffer, format="PNG")
    return buffer.getvalue()


def _tiff(array: np.ndarray, **options: object) -> bytes:
    buffer = io.BytesIO()
    tifffile.imwrite(buffer, array, **options)  # type: ignore[arg-type]
    return buffer.getvalue()


def _png_bomb() -> bytes:
    """8,000 x 8,000 grey zeros deflated to tens of kB: a PNG cannot be read in bands as a
    slide's TIFF is, so above IMAGE_WHOLE_PIXELS it is refused from its header, undecoded."""
    buffer = io.BytesIO()
    Image.new("L", (8000, 8000), 0).save(buffer, format="PNG")
    return buffer.getvalue()


def _tiff_palette() -> bytes:
    indices = np.zeros((8, 8), dtype=np.uint8)
    return _tiff(indices, photometric="palette", colormap=np.zeros((3, 256), dtype=np.uint16))


def _sparse_tiff() -> bytes:
    """A tiled TIFF of 2048 x 2048 whose tiles all but one are left out (byte count 0), as a
    few-kB file declaring a large slide is made."""
    data = bytearray(_tiff(np.ones((2048, 2048), dtype=np.uint8), tile=(256, 256)))
    with tifffile.TiffFile(io.BytesIO(bytes(data))) as tif:
        counts = tif.pages[0].tags["TileByteCounts"]
        offset, count = counts.valueoffset, counts.count
        size = counts.valuebytecount // count
    data[offset + size : offset + count * size] = bytes((count - 1) * size)
    return bytes(data)


def _tiff_with_description(n_bytes: int) -> bytes:
    xml = '<?xml version="1.0"?><OME><!--' + "x" * n_bytes + "--></OME>"
    return _tiff(np.zeros((8, 8), dtype=np.uint16), description=xml, metadata=None)


_CYX = {"metadata": {"axes": "CYX"}}
_CHANNELS = np.zeros((3, 20, 30), dtype=np.uint16)


def _npy(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array)
    return buffer.getvalue()


# (filename, content, form fields, expected status, words the message must contain)
BAD_UPLOADS = {
    "empty file": ("e.csv", b"", {}, 422, ["empty"]),
    "header only, no rows": ("h.csv", b"a,b\n", {}, 422, ["no rows"]),
    "no columns": ("n.csv", b"\n\n", {}, 422, ["empty"]),
    "only text columns": ("t.csv", b"name\nx\ny\n", {}, 422, ["no feature columns"]),
    "ragged row": ("r.csv", b"a,b\n1,2\n3\n", {}, 422, ["row 2", "1 fields", "header has 2"]),
    "too many fields": ("r.csv", b"a,b\n1,2\n3,4,5\n", {}, 422, ["row 2", "3 fields"]),
    "non-numeric value": ("v.csv", b"a,b\n1,2\n3,x7\n", {}, 422, ["'x7'", "'b'", "row 2"]),
    "non-numeric late in a big file": (
        "v.csv",
        b"a,b\n" + b"1,2\n" * 1500 + b"3,oops\n",
        {},
        422,
        ["'oops'", "'b'", "row 1501"],
    ),
    "missing value": ("m.csv", b"a,b\n1,2\n3,\n", {}, 422, ["missing value", "'b'", "row 2"]),
    "NaN in CSV": ("n.csv", b"a,b\n1,2\n3,nan\n", {}, 422, ["NaN", "'b'", "row 2"]),
    "inf in CSV": ("i.csv", b"a,b\n1,inf\n3,4\n", {}, 422, ["inf", "'b'", "row 1"]),
    "duplicate ids": (
        "d.csv",
        b"id,a\nx,1\ny,2\nx,3\n",
        {"id_column": "id"},
        422,
        ["duplicate id 'x'", "rows 1 and 3"],
    ),
    "unknown id column": ("u.csv", b"a\n1\n", {"id_column": "key"}, 422, ["'key'", "not a column"]),
    "unknown ground-truth column": (
        "u.csv",
        b"a\n1\n",
        {"ground_truth_column": "cls"},
        422,
        ["'cls'"],
    ),
    "duplicate header": ("d.csv", b"a,a\n1,2\n", {}, 422, ["'a' appears twice"]),
    "not UTF-8": ("l.csv", "a,b\n1,\u00e9\n".encode("latin-1"), {}, 422, ["not UTF-8"]),
    "NaN in NPY": ("n.npy", _npy(np.array([[1.0, np.nan]])), {}, 422, ["NaN", "'x1'", "row 1"]),
    "NPY with no rows": ("z.npy", _npy(np.zeros((0, 3))), {}, 422, ["no rows"]),
    "NPY with no columns": ("z.npy", _npy(np.zeros((3, 0))), {}, 422, ["no feature columns"]),
    "NPY of strings": ("s.npy", _npy(np.array([["a"]])), {}, 422, ["dtype"]),
    "NPY of objects": ("o.npy", _npy(np.array([[{}]], dtype=object)), {}, 422, ["Python objects"]),
    "3-D NPY": ("c.npy", _npy(np.zeros((2, 2, 2))), {}, 422, ["shape (2, 2, 2)"]),
    "truncated NPY": ("t.npy", _npy(np.zeros((100, 3)))[:500], {}, 422, ["truncated"]),
    "non-image sent as PNG": ("fake.png", b"a,b\n1,2\n", {}, 415, ["not a PNG, JPEG or TIFF"]),
    "text sent as image/jpeg": ("photo", b"hello", {}, 415, ["not a PNG, JPEG or TIFF"]),
    "truncated PNG": ("cut.png", _png()[:-40], {}, 422, ["truncated or corrupt"]),
    # Featurization needs 2 x 2: such images were accepted, then failed in the background.
    "one-row PNG": ("row.png", _png((5, 1)), {}, 422, ["5x1 pixels", "at least 2x2"]),
    "one-column PNG": ("col.png", _png((1, 5)), {}, 422, ["1x5 pixels", "at least 2x2"]),
    "one-pixel PNG": ("dot.png", _png((1, 1)), {}, 422, ["1x1 pixels", "at least 2x2"]),
    "truncated TIFF": ("cut.tif", _tiff(_CHANNELS, **_CYX)[:-500], {}, 422, ["truncated"]),
    "TIFF header only": ("head.tif", _tiff(_CHANNELS, **_CYX)[:40], {}, 422, ["corrupt"]),
    "TIFF stack of planes": (
        "z.tif",
        _tiff(np.zeros((5, 20, 30), dtype=np.uint16), metadata={"axes": "ZYX"}),
        {},
        422,
        ["stack of planes", "5 along Z", "channel axis C"],
    ),
    "TIFF with 17 channels": (
        "c.tif",
        _tiff(np.zeros((17, 8, 8), dtype=np.uint16), **_CYX),
        {},
        422,
        ["17 channels", "at most 16"],
    ),
    "TIFF of complex numbers": (
        "x.tif",
        _tiff(np.zeros((8, 8), dtype=np.complex64)),
        {},
        422,
        ["complex64", "real numbers"],
    ),
    "TIFF with NaN": (
        "n.tif",
        _tiff(np.full((8, 8), np.nan, dtype=np.float32)),
        {},
        422,
        ["NaN"],
    ),
    "sparse TIFF": ("sparse.tif", _sparse_tiff(), {}, 422, ["sparse", "63 of its 64 tiles"]),
    "TIFF with a huge OME-XML": (
        "ome.tif",
        _tiff_with_description(3 * 1024**2),
        {},
        422,
        ["description", "OME-XML", "at most 2,097,152"],
    ),
    "palette TIFF": ("p.tif", _tiff_palette(), {}, 422, ["palette"]),
    "one-row TIFF": (
        "row.tif",
        _tiff(np.zeros((2, 1, 9), dtype=np.uint16), **_CYX),
        {},
        422,
        ["9x1 pixels", "at least 2x2"],
    ),
    "PNG bomb": (
        "bomb.png",
        _png_bomb(),
        {},
        422,
        ["8000x8000", "at most 50,000,000", "IMAGE_WHOLE_PIXELS", "as a slide"],
    ),
}


@pytest.mark.parametrize("case", list(BAD_UPLOADS))
def test_bad_upload_is_refused_with_a_clear_message_and_writes_nothing(
    client: TestClient,
    project_id: int,
    admin_headers: dict[str, str],
    session: Session,
    case: str,
) -> None:
    filename, content, form, status, words = BAD_UPLOADS[case]
    mime = "image/jpeg" if case == "text sent as image/jpeg" else "application/octet-stream"
    before = row_counts(session)
    response = post_dataset(client, project_id, admin_headers, filename, content, mime, **form)
    assert response.status_code == status, response.text
    body = response.json()
    for word in words:
        assert word in body["detail"], (word, body["detail"])
    assert body["code"]
    assert row_counts(session) == before


def _limited_app(
    client_with: Callable[..., TestClient], **limits: object
) -> tuple[TestClient, dict[str, str], int]:
    """A client of an app with these `limits` among its settings, the admin's headers there
    and a project of theirs."""
    client = client_with(**limits)
    headers, project_id = admin_project(client, "L")
    return client, headers, project_id


def test_a_file_over_the_upload_limit_gets_413_and_writes_nothing(
    client_with: Callable[..., TestClient], session: Session
) -> None:
    client, headers, project_id = _limited_app(client_with, max_upload_bytes=2000)
    before = row_counts(session)
    # Just over the limit, the request gets through the Content-Length guard (which allows for
    # multipart framing), so the service's own size check answers; far over it, it is refused
    # from the Content-Length header, before the body is read.
    for lines, words in ((1200, "limit is 2,000 bytes"), (600_000, "limited to 2,000 bytes")):
        content = b"a\n" + b"1\n" * lines
        response = post_dataset(client, project_id, headers, "big.csv", content, "text/csv")
        assert response.status_code == 413
        assert words in response.json()["detail"]
    assert row_counts(session) == before


def test_unknown_dataset_and_project_ids_get_404(
    client: TestClient, admin_headers: dict[str, str]
) -> None:
    assert client.get("/api/v1/datasets/999999", headers=admin_headers).status_code == 404
    response = client.get("/api/v1/projects/999999/datasets", headers=admin_headers)
    assert response.status_code == 404
    assert response.json() == {"detail": "no project with id 999999", "code": "not_found"}


def test_bad_paging_parameters_get_422(
    client: TestClient, project_id: int, admin_headers: dict[str, str]
) -> None:
    response = client.get(
        f"/api/v1/projects/{project_id}/datasets", params={"limit": 0}, headers=admin_headers
    )
    assert response.status_code == 422
    assert "limit" in response.json()["detail"]


def test_the_image_size_limit_is_a_setting(
    client_with: Callable[..., TestClient], session: Session
) -> None:
    """IMAGE_MAX_PIXELS: over it, single uploads and collections get 422 naming the limit."""
    client, headers, project_id = _limited_app(client_with, image_max_pixels=1000)
    before = row_counts(session)
    single = post_dataset(client, project_id, headers, "big.png", _png((40, 30)), "image/png")
    assert single.status_code == 422 and "at most 1,000" in single.json()["detail"]
    assert "IMAGE_MAX_PIXELS" in single.json()["detail"]
    stack = _tiff(np.zeros((2, 30, 40), np.uint16), metadata={"axes": "ZYX"})
    collection = client.post(
        f"/api/v1/projects/{project_id}/collections",
        files=[("files", ("z.tif", stack, "image/tiff"))],
        data={"name": "c"},
        headers=headers,
    )
    assert collection.status_code == 422 and "at most 1,000" in collection.json()["detail"]
    small = post_dataset(client, project_id, headers, "small.png", _png((20, 30)), "image/png")
    assert small.status_code == 201, small.text
    assert row_counts(session)["datasets"] == before["datasets"] + 1


def test_a_slide_over_the_size_limit_is_refused_for_its_size_even_when_also_cut_short(
    client_with: Callable[..., TestClient], session: Session
) -> None:
    """The size is checked from the header before the file's completeness: a too-large TIFF
    was called "truncated" when its pixels ran past its end."""
    client, headers, project_id = _limited_app(
        client_with, image_whole_pixels=10_000, image_max_pixels=200_000
    )
    big = _tiff(np.ones((700, 620), dtype=np.uint16), tile=(256, 256))
    before = row_counts(session)
    for content in (big, big[: len(big) // 2]):
        response = post_dataset(client, project_id, headers, "big.tif", content, "image/tiff")
        assert response.status_code == 422, response.text
        detail = response.json()["detail"]
        assert "620x700 pixels" in detail and "at most 200,000" in detail, detail
        assert "truncated" not in detail
    assert row_counts(session) == before
