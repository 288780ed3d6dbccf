"""A 16-bit multichannel OME-TIFF in a real browser: uploaded through the project page's form,
its channels named on the dataset page, shown as a composite in the workspace, painted with
the mouse, run, and its overlay drawn."""

import io
from pathlib import Path

import numpy as np
import pytest
import tifffile
from playwright.sync_api import Page, expect

from app.engine.image.channels import Multichannel
from tests.browser.conftest import sign_in
from tests.browser.test_image_workspace import (
    label_colour,
    layer_pixel,
    near,
    paint,
    screen_pixel,
)

pytestmark = pytest.mark.browser

SIZE = 96


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


def test_upload_paint_and_run_a_16_bit_ome_tiff(page: Page, tmp_path: Path) -> None:
    planes = two_halves()
    path = tmp_path / "cells.ome.tif"
    buffer = io.BytesIO()
    tifffile.imwrite(
        buffer,
        planes,
        ome=True,
        compression="zlib",
        metadata={"axes": "CYX", "Channel": {"Name": ["DAPI", "GFP", "RFP"]}},
    )
    path.write_bytes(buffer.getvalue())

    sign_in(page)
    page.get_by_role("link", name="Demo").click()
    page.set_input_files("input[type=file]", str(path))
    page.fill("input[name=name]", "cells")
    page.get_by_role("button", name="Upload").click()
    expect(page.locator("h1")).to_have_text("cells")
    expect(page.get_by_test_id("channel-names")).to_have_text("DAPI, GFP, RFP")
    expect(page.locator("main")).to_contain_text("3 x uint16 TIFF")
    page.get_by_role("link", name="Open workspace").click(timeout=60_000)
    expect(page.locator("#workspace")).to_have_attribute("data-ready", "true", timeout=30_000)

    # The screen shows the composite the server made (a browser cannot show a TIFF).
    composite = Multichannel.of(planes).composite()
    for x, y in ((10, 40), (80, 40)):
        assert near(screen_pixel(page, x, y)[:3], [int(v) for v in composite[y, x]], 3)

    canvas = page.get_by_test_id("image-canvas")
    paint(page, [(10, 20), (30, 70)])
    page.keyboard.press("2")
    paint(page, [(70, 20), (85, 70)])
    expect(canvas).to_have_attribute("data-strokes", "2")
    expect(canvas).to_have_attribute("data-pending", "0")
    page.keyboard.press("Control+Enter")
    expect(page.get_by_test_id("progress")).to_have_attribute(
        "data-status", "succeeded", timeout=120_000
    )
    expect(canvas).to_have_attribute("data-overlay", "on", timeout=30_000)
    # Away from the scribbles, each half takes its scribble's label.
    assert near(layer_pixel(page, "overlay", 20, 90)[:3], label_colour(page, "foreground"))
    assert near(layer_pixel(page, "overlay", 75, 90)[:3], label_colour(page, "background"))
