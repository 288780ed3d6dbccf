"""Several images as one collection over REST: files and the planes of a TIFF stack become one
image dataset each, with `meta.collection`; one bad file stores nothing."""

import io

import numpy as np
import pytest
import tifffile
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from app.engine.image import parsed_image
from app.services.ingest import image_file
from tests.api.test_image_featurization import png, wait_ready
from tests.api.test_tiff_uploads import NAMES, cells, ome_tiff
from tests.conftest import row_counts

pytestmark = pytest.mark.db


def z_stack(n_planes: int = 3) -> tuple[bytes, np.ndarray]:
    """An OME-TIFF of `n_planes` Z planes of 2 named 16-bit channels: (Z, C, Y, X)."""
    planes = np.stack([cells(seed=20 + z)[0][:2] for z in range(n_planes)])
    return ome_tiff(planes, NAMES[:2], axes="ZCYX"), planes


def post(client: TestClient, project_id: int, headers: dict[str, str], files: list, name: str):  # type: ignore[no-untyped-def, type-arg]
    return client.post(
        f"/api/v1/projects/{project_id}/collections",
        files=[("files", f) for f in files],
        data={"name": name},
        headers=headers,
    )


def test_files_and_stack_planes_become_a_collection(
    client: TestClient,
    project_id: int,
    admin_headers: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    held: list[int] = []  # the featurizations, which take each image from its file, wait
    monkeypatch.setattr(client.app.state.executor, "submit_featurizations", held.extend)
    single, _ = cells(seed=1)
    stack, planes = z_stack()
    response = post(
        client,
        project_id,
        admin_headers,
        [
            ("a.ome.tif", ome_tiff(single, NAMES), "image/tiff"),
            ("stack.ome.tif", stack, "image/tiff"),
            ("photo.png", png(np.zeros((20, 30, 3), np.uint8)), "image/png"),
        ],
        "plate 7",
    )
    assert response.status_code == 201, response.text
    body = response.json()
    assert body["name"] == "plate 7"
    made = body["items"]
    assert [d["name"] for d in made] == [
        "a.ome.tif",
        "stack.ome.tif · Z 1",
        "stack.ome.tif · Z 2",
        "stack.ome.tif · Z 3",
        "photo.png",
    ]
    assert all(d["meta"]["collection"] == "plate 7" for d in made)
    assert made[0]["meta"]["image"]["channels"] == NAMES
    assert made[1]["meta"]["image"]["channels"] == NAMES[:2]
    # Answered before any image is taken from its file: the pictures say so.
    assert all(d["featurization"]["image_pending"] for d in made)
    for path in ("image/original", "image", "image.dzi", "image_files/0/0_0.png"):
        waiting = client.get(f"/api/v1/datasets/{made[1]['id']}/{path}", headers=admin_headers)
        assert waiting.status_code == 409 and "still being taken" in waiting.text
    monkeypatch.undo()
    for dataset_id in held:
        client.app.state.executor.submit_featurization(dataset_id)
    made = [wait_ready(client, admin_headers, d["id"]) for d in made]
    assert all(d["status"] == "ready" for d in made)
    assert not any(d["featurization"]["image_pending"] for d in made)
    # A plane is kept losslessly as its own TIFF, its channels named.
    for z in range(3):
        original = client.get(
            f"/api/v1/datasets/{made[1 + z]['id']}/image/original", headers=admin_headers
        )
        with tifffile.TiffFile(io.BytesIO(original.content)) as tif:
            np.testing.assert_array_equal(tif.asarray(), planes[z])
        assert made[1 + z]["meta"]["image"]["bytes"] == len(original.content)
        # Its Deep Zoom pyramid is made when it is first viewed.
        plane = made[1 + z]["id"]
        descriptor = client.get(f"/api/v1/datasets/{plane}/image.dzi", headers=admin_headers)
        assert descriptor.status_code == 200 and "<Image" in descriptor.text
        tile = client.get(f"/api/v1/datasets/{plane}/image_files/0/0_0.png", headers=admin_headers)
        assert tile.status_code == 200 and tile.content.startswith(b"\x89PNG")
    photo = client.get(f"/api/v1/datasets/{made[4]['id']}/image/original", headers=admin_headers)
    assert photo.content == png(np.zeros((20, 30, 3), np.uint8))  # a file of one image: as is


def test_a_file_of_several_images_gives_each_its_own_dataset(
    client: TestClient, project_id: int, admin_headers: dict[str, str]
) -> None:
    buffer = io.BytesIO()
    with tifffile.TiffWriter(buffer) as writer:
        writer.write(np.full((8, 8), 7, np.uint16))
        writer.write(np.full((6, 9), 9, np.uint16))
    response = post(
        client, project_id, admin_headers, [("two.tif", buffer.getvalue(), "image/tiff")], "two"
    )
    assert response.status_code == 201, response.text
    made = response.json()["items"]
    assert [d["name"] for d in made] == ["two.tif · image 1", "two.tif · image 2"]
    assert [(d["meta"]["image"]["width"], d["meta"]["image"]["height"]) for d in made] == [
        (8, 8),
        (9, 6),
    ]


def test_one_bad_file_stores_nothing(
    client: TestClient, project_id: int, admin_headers: dict[str, str], session: Session
) -> None:
    good, _ = cells()
    before = row_counts(session)
    cut = ome_tiff(good, NAMES)[:-400]
    for files, name, status, words in (
        (
            [("a.tif", ome_tiff(good, NAMES), "image/tiff"), ("cut.tif", cut, "image/tiff")],
            "x",
            422,
            "'cut.tif'",
        ),
        ([("t.csv", b"a,b\n1,2\n", "text/csv")], "x", 415, "not a PNG, JPEG or TIFF"),
        ([("e.png", b"", "image/png")], "x", 422, "empty"),
        ([("a.tif", ome_tiff(good, NAMES), "image/tiff")], "", 422, ""),
    ):
        response = post(client, project_id, admin_headers, files, name)
        assert response.status_code == status, response.text
        assert words in response.text
    assert row_counts(session) == before


def test_the_images_of_a_collection_share_one_decoded_budget_checked_before_decoding(
    client: TestClient,
    project_id: int,
    admin_headers: dict[str, str],
    session: Session,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each plane is within the per-image limits; together they are not. The refusal comes
    from the headers: nothing is decoded (a 10 MB stack asked for 9 GiB)."""
    stack, planes = z_stack(3)  # 3 planes x 2 channels x uint16
    one_plane = planes[0].nbytes
    monkeypatch.setattr(image_file, "MAX_DECODED_BYTES", 4 * one_plane)

    def never(*_: object) -> None:
        raise AssertionError("a plane was decoded")

    monkeypatch.setattr(parsed_image, "decode_planes", never)
    monkeypatch.setattr(parsed_image, "decode", never)
    before = row_counts(session)
    response = post(
        client,
        project_id,
        admin_headers,
        [("a.ome.tif", stack, "image/tiff"), ("b.ome.tif", stack, "image/tiff")],
        "too much",
    )
    assert response.status_code == 422, response.text
    assert "more than" in response.text and "'b.ome.tif'" in response.text
    assert "several collections" in response.text
    assert row_counts(session) == before
