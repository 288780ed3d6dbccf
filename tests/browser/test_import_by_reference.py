"""A table imported by reference in a real browser: the project page offers the prefixes the
operator opened (this module's own server opens a folder), refuses a URL outside them in place
keeping what was typed, imports a Parquet dataset that its page says is read in place, and when
the source changes the page says so and "Sync with the source" reads it again."""

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from playwright.sync_api import Page, expect

from tests.browser.conftest import serving, sign_in

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("shared")


@pytest.fixture(scope="module")
def live_server(tmp_path_factory: pytest.TempPathFactory, shared: Path) -> Iterator[str]:
    data = tmp_path_factory.mktemp("import-live")
    sources = json.dumps({f"file://{shared}/": {}})
    with serving(data, data, IMPORT_SOURCES=sources) as url:
        yield url


def write_part(path: Path, first: int, values: np.ndarray) -> None:
    rows = len(values)
    pq.write_table(
        pa.table(
            {
                "cell": [f"cell-{first + i}" for i in range(rows)],
                "size": values[:, 0],
                "shape": values[:, 1],
                "kind": ["a" if v < 0 else "b" for v in values[:, 0]],
            }
        ),
        path,
    )


def test_import_a_parquet_dataset_see_it_change_and_sync_it(page: Page, shared: Path) -> None:
    rng = np.random.default_rng(0)
    folder = shared / "cells"
    folder.mkdir()
    write_part(folder / "part-0.parquet", 0, rng.normal(size=(30, 2)))
    write_part(folder / "part-1.parquet", 30, rng.normal(size=(30, 2)))

    sign_in(page)
    page.get_by_role("link", name="Demo").click()
    form = page.get_by_test_id("import-form")
    expect(page.get_by_text(f"file://{shared}/").first).to_be_visible()
    form.locator("input[name=url]").fill("file:///etc/passwd")
    form.get_by_role("button", name="Import").click()
    expect(page.get_by_test_id("import-error")).to_contain_text("no configured source")
    expect(form.locator("input[name=url]")).to_have_value("file:///etc/passwd")

    form.locator("input[name=url]").fill(f"file://{folder}/")
    form.locator("input[name=import_name]").fill("Cells in place")
    form.locator("input[name=import_id_column]").fill("cell")
    form.locator("input[name=import_ground_truth_column]").fill("kind")
    form.get_by_role("button", name="Import").click()
    expect(page.locator("h1")).to_have_text("Cells in place")
    expect(page.get_by_test_id("source")).to_contain_text("2 objects, parquet")
    expect(page.get_by_test_id("n-items")).to_have_text("60")
    # Read in the background: the page follows it and shows the items once it is read.
    expect(page.get_by_test_id("items")).to_contain_text("cell-31")
    expect(page.get_by_test_id("status")).to_have_text("ready")
    expect(page.get_by_test_id("featurization")).to_have_count(0)

    # The source changes: the page says so, and a sync reads it again.
    changed = folder / "part-1.parquet"
    write_part(changed, 30, rng.normal(size=(30, 2)) + 5)
    os.utime(changed, (2_000_000_000, 2_000_000_000))
    page.reload()
    expect(page.get_by_test_id("source-problem")).to_contain_text("part-1.parquet")
    page.get_by_role("button", name="Sync with the source").click()
    # Read again in the background: the page follows it and shows itself again when done.
    expect(page.get_by_test_id("last-sync")).to_contain_text("1 changed")
    expect(page).to_have_url(re.compile(r"/datasets/\d+$"))
    expect(page.get_by_test_id("items")).to_contain_text("cell-31")
    expect(page.get_by_test_id("source-problem")).to_have_count(0)

    # The folder grows: only the added rows are read, and the page says so.
    write_part(folder / "part-2.parquet", 60, rng.normal(size=(15, 2)))
    page.get_by_role("button", name="Sync with the source").click()
    expect(page.get_by_test_id("last-sync")).to_contain_text(
        "1 new, 0 changed and 0 deleted objects; 75 items (were 60); only the 15 added rows "
        "were read"
    )
    expect(page.get_by_test_id("n-items")).to_have_text("75")


def test_import_an_ome_zarr_image_see_it_at_once_and_open_its_workspace(
    page: Page, shared: Path
) -> None:
    """The same form takes an image: its page says where it is read from, shows its preview
    (a tile made from the source's smallest level) while it is featurized, then offers the
    workspace, whose viewer draws tiles read from the source."""
    from tests.api.test_image_imports import write_ome_zarr
    from tests.api.test_slides import slide_planes

    planes, _ = slide_planes()
    write_ome_zarr(shared / "cells.ome.zarr", planes, levels=2)
    sign_in(page)
    page.get_by_role("link", name="Demo").click()
    form = page.get_by_test_id("import-form")
    form.locator("input[name=url]").fill(f"file://{shared}/cells.ome.zarr")
    form.locator("input[name=import_name]").fill("Cells by reference")
    form.get_by_role("button", name="Import").click()
    expect(page.locator("h1")).to_have_text("Cells by reference")
    expect(page.get_by_test_id("source")).to_contain_text("ome-zarr, 2 resolution levels")
    preview = page.get_by_test_id("image-preview")
    expect(preview).to_be_visible()
    page.wait_for_function(
        "() => { const i = document.querySelector('[data-testid=image-preview]');"
        " return i.complete && i.naturalWidth > 0; }"
    )
    workspace = page.locator("#open-workspace")
    expect(workspace).to_be_visible(timeout=60_000)
    workspace.click()
    page.wait_for_function(
        "() => [...document.querySelectorAll('img')].some("
        "i => i.src.includes('image_files') && i.complete && i.naturalWidth > 0)"
        " || performance.getEntriesByType('resource').some(e => e.name.includes('image_files'))",
        timeout=30_000,
    )


def test_import_a_folder_of_images_as_a_collection(page: Page, shared: Path) -> None:
    """Ticked, the form imports every image under the folder as one collection and shows the
    project's datasets with it; a folder with no image is refused in place, the box still
    ticked. A member's page syncs the collection with its folder, saying what changed."""
    from tests.api.test_collection_imports import planes
    from tests.api.test_image_imports import write_pyramid_tiff

    plate = shared / "plate"
    plate.mkdir()
    for name, seed in (("A01.ome.tif", 1), ("A02.ome.tif", 2)):
        write_pyramid_tiff(plate / name, planes(seed), levels=1)
    (shared / "nothing").mkdir()
    sign_in(page)
    page.get_by_role("link", name="Demo").click()
    form = page.get_by_test_id("import-form")
    form.locator("input[name=url]").fill(f"file://{shared}/nothing/")
    form.get_by_label("A folder of images").check()
    form.get_by_role("button", name="Import").click()
    expect(page.get_by_test_id("import-error")).to_contain_text("no TIFF file")
    expect(form.get_by_label("A folder of images")).to_be_checked()
    form.locator("input[name=url]").fill(f"file://{plate}/")
    form.locator("input[name=import_name]").fill("Plate 1")
    form.get_by_role("button", name="Import").click()
    rows = page.locator("tr", has_text="Plate 1")
    expect(rows).to_have_count(2)
    expect(page.get_by_role("link", name="A01.ome.tif")).to_be_visible()
    expect(page.get_by_role("link", name="A02.ome.tif")).to_be_visible()

    # The folder gains an image and loses one: a member's page syncs the whole collection.
    write_pyramid_tiff(plate / "A03.ome.tif", planes(3), levels=1)
    (plate / "A02.ome.tif").unlink()
    page.get_by_role("link", name="A01.ome.tif").click()
    page.get_by_role("button", name="Sync the collection with its folder").click()
    expect(page.get_by_test_id("sync-message")).to_contain_text("1 new, 0 changed, 1 gone")
    page.get_by_role("link", name="Demo").click()
    expect(page.get_by_role("link", name="A03.ome.tif")).to_be_visible()
    expect(page.get_by_role("link", name="A02.ome.tif")).to_have_count(0)


def test_import_a_csv_in_place_and_see_a_bad_cell_named(page: Page, shared: Path) -> None:
    """A CSV by reference: counted at once (its items shown once read); one whose cell deep
    in the file is not a number fails, and its page names the file, the row and the column."""
    rng = np.random.default_rng(3)
    lines = ["cell,size,shape"] + [
        f"c{i},{a:.4f},{b:.4f}" for i, (a, b) in enumerate(rng.normal(size=(2_000, 2)))
    ]
    (shared / "cells.csv").write_text("\n".join(lines) + "\n")
    lines[1_801] = "c1800,1.0,n/a"
    (shared / "broken.csv").write_text("\n".join(lines) + "\n")

    sign_in(page)
    page.get_by_role("link", name="Demo").click()
    form = page.get_by_test_id("import-form")
    form.locator("input[name=url]").fill(f"file://{shared}/cells.csv")
    form.locator("input[name=import_name]").fill("Cells from a CSV")
    form.locator("input[name=import_id_column]").fill("cell")
    form.get_by_role("button", name="Import").click()
    expect(page.locator("h1")).to_have_text("Cells from a CSV")
    expect(page.get_by_test_id("n-items")).to_have_text("2,000")
    expect(page.get_by_test_id("items")).to_contain_text("c1")
    expect(page.get_by_test_id("status")).to_have_text("ready")

    page.get_by_role("link", name="Demo").click()
    form = page.get_by_test_id("import-form")
    form.locator("input[name=url]").fill(f"file://{shared}/broken.csv")
    form.locator("input[name=import_name]").fill("Broken CSV")
    form.get_by_role("button", name="Import").click()
    expect(page.locator("h1")).to_have_text("Broken CSV")
    expect(page.get_by_test_id("featurization-error")).to_contain_text(
        "broken.csv: row 1800, column 'shape' is 'n/a', not a number", timeout=30_000
    )
    expect(page.get_by_test_id("status")).to_have_text("failed")
