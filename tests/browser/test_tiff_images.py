"""A 16-bit multichannel OME-TIFF in a real browser: uploaded through the project page's form,
its channels named on the dataset page, shown as a composite in the workspace, painted with
the mouse, run, its overlay drawn, then the run applied to the project's other images with
their progress and their masks downloaded as a ZIP."""

import io
import re
import zipfile
from collections.abc import Callable
from pathlib import Path

import httpx
import numpy as np
import pytest
import tifffile
from PIL import Image
from playwright.sync_api import Page, expect

from app.engine.image.channels import Multichannel
from benchmarks.ome import ome_tiff
from tests.browser.conftest import (
    ADMIN_PASSWORD,
    expect_strokes_stored,
    run_until_overlaid,
    sign_in,
)
from tests.browser.test_image_workspace import (
    label_colour,
    layer_pixel,
    near,
    paint,
    screen_pixel,
)

pytestmark = pytest.mark.browser

SIZE = 96
CHANNELS = ["DAPI", "GFP", "RFP"]


def two_halves() -> np.ndarray:
    """(3, H, W) uint16: the left half marked dimly in DAPI (a few hundred levels), the right
    half brightly in GFP; RFP is noise."""
    rng = np.random.default_rng(0)
    right = np.zeros((SIZE, SIZE), dtype=bool)
    right[:, SIZE // 2 :] = True
    planes = np.stack(
        [
            np.where(right, 300, 600) + rng.normal(0, 20, right.shape),
            np.where(right, 40_000, 5_000) + rng.normal(0, 2_000, right.shape),
            1_000 + rng.normal(0, 100, right.shape),
        ]
    )
    return np.clip(planes, 0, 65_535).astype(np.uint16)


def upload_more(live_server: str, names: list[str]) -> None:
    """Other images of the same kind in the demo project, through the API."""
    token = httpx.post(
        f"{live_server}/api/v1/auth/token", data={"username": "admin", "password": ADMIN_PASSWORD}
    ).json()["access_token"]
    for k, name in enumerate(names):
        planes = np.roll(two_halves(), 3 * (k + 1), axis=1)  # the same halves, other noise rows
        response = httpx.post(
            f"{live_server}/api/v1/projects/1/datasets",
            files={"file": (f"{name}.ome.tif", ome_tiff(planes, CHANNELS), "image/tiff")},
            headers={"Authorization": f"Bearer {token}"},
            timeout=60,
        )
        response.raise_for_status()


def test_upload_paint_run_and_apply_a_16_bit_ome_tiff(
    page: Page, tmp_path: Path, live_server: str
) -> None:
    planes = two_halves()
    path = tmp_path / "cells.ome.tif"
    path.write_bytes(ome_tiff(planes, CHANNELS))
    upload_more(live_server, ["well b2", "well b3"])

    sign_in(page)
    page.get_by_role("link", name="Demo").click()
    page.set_input_files("input[type=file]", str(path))
    page.fill("input[name=name]", "cells")
    page.get_by_role("button", name="Upload").click()
    expect(page.locator("h1")).to_have_text("cells")
    expect(page.get_by_test_id("channel-names")).to_have_text("DAPI, GFP, RFP")
    expect(page.locator("main")).to_contain_text("3 x uint16 TIFF")
    page.get_by_role("link", name="Open workspace", exact=True).click(timeout=60_000)
    expect(page.locator("#workspace")).to_have_attribute("data-ready", "true", timeout=30_000)

    # The screen shows the composite the server made (a browser cannot show a TIFF).
    composite = Multichannel.of(planes).composite()
    for x, y in ((10, 40), (80, 40)):
        assert near(screen_pixel(page, x, y)[:3], [int(v) for v in composite[y, x]], 3)

    canvas = page.get_by_test_id("image-canvas")
    paint(page, [(10, 20), (30, 70)])
    page.keyboard.press("2")
    paint(page, [(70, 20), (85, 70)])
    expect_strokes_stored(canvas, 2)
    run_until_overlaid(page, canvas)
    # Away from the scribbles, each half takes its scribble's label.
    assert near(layer_pixel(page, "overlay", 20, 90)[:3], label_colour(page, "foreground"))
    assert near(layer_pixel(page, "overlay", 75, 90)[:3], label_colour(page, "background"))

    # The run shown segments the project's other images (ticked by default; the demo's photos
    # are unticked here), with their progress, then their masks come as one ZIP.
    panel = page.get_by_test_id("collection")
    expect(panel).to_have_attribute("data-source", re.compile(r"^\d+$"))
    images = page.get_by_test_id("collection-images")
    for name in ("well b2.ome.tif", "well b3.ome.tif"):
        expect(images.get_by_label(name)).to_be_checked()
    for box in images.locator("input").all():
        label = box.evaluate("b => b.parentElement.textContent.trim()")
        if not label.startswith("well b"):
            box.uncheck()
    page.get_by_role("button", name="Apply to the ticked images").click()
    expect(panel).to_have_attribute("data-done", "2", timeout=120_000)
    expect(panel).to_have_attribute("data-active", "0")
    progress = page.get_by_test_id("collection-progress").locator("li")
    expect(progress).to_have_text(["well b2.ome.tif: succeeded", "well b3.ome.tif: succeeded"])
    with page.expect_download() as download:
        page.get_by_role("link", name="Masks of these images (ZIP)").click()
    with zipfile.ZipFile(download.value.path()) as zipped:
        names = zipped.namelist()
        assert len(names) == 2 and all(n.endswith(("well_b2.png", "well_b3.png")) for n in names)
        mask = np.asarray(Image.open(io.BytesIO(zipped.read(names[0]))))
    assert mask.shape == (SIZE, SIZE) and mask[50, 10] != mask[50, 85]


def test_a_stack_and_a_photo_upload_as_one_collection(page: Page, tmp_path: Path) -> None:
    stack = tmp_path / "stack.ome.tif"
    buffer = io.BytesIO()
    planes = np.stack([two_halves()[:2] for _ in range(3)])  # Z, C, Y, X
    tifffile.imwrite(buffer, planes, ome=True, metadata={"axes": "ZCYX"})
    stack.write_bytes(buffer.getvalue())
    photo = tmp_path / "photo.png"
    Image.fromarray(np.zeros((20, 30, 3), np.uint8)).save(photo)
    broken = tmp_path / "broken.tif"
    broken.write_bytes(buffer.getvalue()[:-300])

    sign_in(page)
    page.get_by_role("link", name="Demo").click()
    form = page.get_by_test_id("collection-form")
    # One damaged file: the reason, nothing stored, the typed name kept.
    form.locator("input[type=file]").set_input_files([str(photo), str(broken)])
    form.locator("input[name=collection_name]").fill("plate 9")
    form.get_by_role("button", name="Create the collection").click()
    expect(page.get_by_test_id("collection-error")).to_contain_text("'broken.tif'")
    expect(page.get_by_test_id("datasets")).not_to_contain_text("plate 9")
    expect(form.locator("input[name=collection_name]")).to_have_value("plate 9")

    form.locator("input[type=file]").set_input_files([str(stack), str(photo)])
    form.get_by_role("button", name="Create the collection").click()
    table = page.get_by_test_id("datasets")
    for name in ("stack.ome.tif · Z 1", "stack.ome.tif · Z 2", "stack.ome.tif · Z 3", "photo.png"):
        expect(table.get_by_role("row").filter(has_text=name)).to_contain_text("plate 9")

    # A plane's page: its picture appears once taken from the stack (at once, or when the
    # page sees its featurization no longer waiting for it), and the page follows it to ready.
    table.get_by_role("link", name="stack.ome.tif · Z 2").click()
    image = page.get_by_test_id("image-preview")
    expect(image).to_be_visible(timeout=30_000)
    page.wait_for_function("el => el.complete && el.naturalWidth > 0", arg=image.element_handle())
    assert page.evaluate("el => el.naturalWidth", image.element_handle()) == SIZE
    expect(page.get_by_test_id("status")).to_have_text("ready", timeout=60_000)


def _drawn(planes: np.ndarray, shown: list[tuple[int, tuple[int, int, int], float, float]]):  # type: ignore[no-untyped-def]
    """Each (channel, RGB, low, high) stretched, coloured and added, by hand: (H, W, 3)."""
    rgb = np.zeros((*planes.shape[1:], 3))
    for k, colour, low, high in shown:
        level = np.clip((planes[k].astype(np.float64) - low) / (high - low), 0, 1)
        for c in range(3):
            rgb[:, :, c] += colour[c] / 255 * level
    return np.round(np.clip(rgb, 0, 1) * 255).astype(int)


def _eventually(page: Page, check: Callable[[], bool], seconds: float = 10) -> None:
    for _ in range(int(seconds / 0.2)):
        if check():
            return
        page.wait_for_timeout(200)
    assert check()


def test_channels_are_shown_in_the_colour_and_range_the_expert_sets_and_kept(
    page: Page, live_server: str
) -> None:
    upload_more(live_server, ["halves"])  # dataset 4 or later: the demo has three
    planes = np.roll(two_halves(), 3, axis=1)
    sign_in(page)
    page.get_by_role("link", name="Demo").click()
    page.get_by_role("link", name="halves.ome.tif").click()
    page.get_by_role("link", name="Open workspace", exact=True).click(timeout=60_000)
    expect(page.locator("#workspace")).to_have_attribute("data-ready", "true", timeout=30_000)
    panel = page.get_by_test_id("channels")
    expect(panel.locator(".channel")).to_have_count(3)
    composite = Multichannel.of(planes).composite()
    assert near(screen_pixel(page, 70, 40)[:3], [int(v) for v in composite[40, 70]], 3)

    # GFP and RFP hidden with the mouse; DAPI stretched over 250..650 typed with the keys.
    page.get_by_label("show GFP").click()
    page.get_by_label("show RFP").click()
    for end, value in (("shown black at", "250"), ("shown full at", "650")):
        box = page.get_by_label(f"DAPI {end}")
        box.click()
        page.keyboard.press("Control+A")
        page.keyboard.type(value)
    expect(panel).to_have_attribute("data-saved", "true", timeout=10_000)
    dapi = page.evaluate(
        "() => document.querySelector('[data-channel=DAPI] input[type=color]').value"
    )
    colour = tuple(int(dapi[i : i + 2], 16) for i in (1, 3, 5))
    want = _drawn(planes, [(0, colour, 250, 650)])

    def shows(x: int, y: int) -> bool:
        return near(screen_pixel(page, x, y)[:3], want[y, x].tolist(), 3)

    # The tiles of the new display replace the old ones as they arrive.
    _eventually(page, lambda: shows(20, 40) and shows(80, 40))
    assert want[40, 20].max() > want[40, 80].max()  # DAPI marks the left half

    # Kept: the same display after a reload; a wrong range says why and changes nothing.
    page.reload()
    expect(page.locator("#workspace")).to_have_attribute("data-ready", "true", timeout=30_000)
    expect(page.get_by_label("show GFP")).not_to_be_checked()
    expect(page.get_by_label("DAPI shown full at")).to_have_value("650")
    _eventually(page, lambda: shows(20, 40) and shows(80, 40))
    box = page.get_by_label("DAPI shown full at")
    box.click()
    page.keyboard.press("Control+A")
    page.keyboard.type("100")
    expect(page.locator("#channels-help")).to_contain_text("must be above")
    page.wait_for_timeout(800)
    assert shows(20, 40)

    # Auto: DAPI over its 0.5th..99.5th percentile.
    page.locator("[data-channel=DAPI]").get_by_role("button", name="Auto").click()
    low, high = Multichannel.of(planes).ranges()[0]
    assert float(page.get_by_label("DAPI shown full at").input_value()) == pytest.approx(high)
    assert float(page.get_by_label("DAPI shown black at").input_value()) == pytest.approx(low)
    expect(page.locator("#channels-help")).to_have_text("")

    # The default display again, for this user.
    page.get_by_role("button", name="Default display").click()
    expect(panel).to_have_attribute("data-saved", "true", timeout=10_000)
    expect(page.get_by_label("show GFP")).to_be_checked()
    _eventually(
        page, lambda: near(screen_pixel(page, 70, 40)[:3], [int(v) for v in composite[40, 70]], 3)
    )

    # The features from DAPI and GFP only: featurized again, the workspace follows it.
    expect(page.get_by_role("button", name="Featurize again with these")).to_be_disabled()
    page.get_by_label("features from RFP").click()
    page.get_by_role("button", name="Featurize again with these").click()
    expect(page.get_by_test_id("status")).to_contain_text("featurized", timeout=60_000)
    expect(page.locator("#workspace")).to_have_attribute("data-status", "ready")
    recipe = page.evaluate("() => window.imageWorkspace.state.dataset.featurization.recipe")
    assert recipe["channels"] == ["DAPI", "GFP"]
    expect(page.get_by_role("button", name="Featurize again with these")).to_be_disabled()
