"""An image dataset's page follows its featurization without a reload: progress, the
workspace open for painting meanwhile, then ready; a failed featurization shows its reason."""

import io
import shutil
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from playwright.sync_api import Page, expect

from tests.browser.conftest import sign_in

pytestmark = pytest.mark.browser


def write_png(path: Path, height: int, width: int) -> Path:
    rng = np.random.default_rng(0)
    pixels = rng.integers(0, 256, (height, width, 3), dtype=np.uint8)
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, format="PNG")
    path.write_bytes(buffer.getvalue())
    return path


def upload(page: Page, path: Path, name: str) -> None:
    sign_in(page)
    page.get_by_role("link", name="Demo").click()
    page.set_input_files("input[type=file]", str(path))
    page.fill("input[name=name]", name)
    page.get_by_role("button", name="Upload").click()
    expect(page.locator("h1")).to_have_text(name)


def test_progress_then_open_workspace_without_a_reload(page: Page, tmp_path: Path) -> None:
    # 1024 x 1024 takes a few seconds to featurize: long enough to see it under way.
    upload(page, write_png(tmp_path / "big.png", 1024, 1024), "big picture")
    box = page.get_by_test_id("featurization")
    expect(box).to_have_attribute("data-status", "featurizing")
    expect(page.locator("#featurization-progress")).to_be_visible()
    # The picture can be painted before its features exist: the workspace opens at once.
    expect(page.get_by_role("link", name="Open workspace and paint")).to_be_visible()
    expect(box).to_contain_text("you can paint meanwhile")
    page.evaluate("() => { window.notReloaded = true; }")
    expect(box).to_have_attribute("data-status", "ready", timeout=120_000)
    expect(page.get_by_role("link", name="Open workspace", exact=True)).to_be_visible()
    expect(page.locator("#featurization-progress")).to_be_hidden()
    expect(box).to_contain_text("superpixels are the items")
    expect(page.get_by_test_id("status")).to_have_text("ready")
    assert page.evaluate("() => window.notReloaded === true")
    page.get_by_role("link", name="Open workspace", exact=True).click()
    expect(page.locator("#workspace")).to_have_attribute("data-ready", "true", timeout=30_000)
    expect(page.get_by_test_id("image-canvas")).to_have_attribute("data-strokes", "0")


def test_a_picture_is_painted_while_it_is_featurized(page: Page, tmp_path: Path) -> None:
    """The workspace opened from the page at once: a stroke is saved while the features are
    computed, Run waits for them and is offered when they are there."""
    upload(page, write_png(tmp_path / "big.png", 1024, 1024), "paint early")
    page.get_by_role("link", name="Open workspace and paint").click()
    workspace = page.locator("#workspace")
    expect(workspace).to_have_attribute("data-ready", "true", timeout=30_000)
    expect(workspace).to_have_attribute("data-status", "featurizing")
    expect(page.locator("#run")).to_be_disabled()
    expect(page.get_by_test_id("status")).to_contain_text("paint now")
    canvas = page.get_by_test_id("image-canvas")
    box = canvas.bounding_box()
    assert box is not None
    page.mouse.move(box["x"] + 100, box["y"] + 100)
    page.mouse.down()
    page.mouse.move(box["x"] + 200, box["y"] + 120, steps=8)
    page.mouse.up()
    expect(canvas).to_have_attribute("data-strokes", "1")
    expect(canvas).to_have_attribute("data-pending", "0")
    # The brush's radius is set on screen (6 px): the stroke holds it in image pixels.
    zoom = float(canvas.get_attribute("data-zoom") or 0)
    stored = page.evaluate(
        "() => window.imageWorkspace.annotations.store.items[0].payload.strokes[0].radius"
    )
    assert stored == pytest.approx(6 / zoom, abs=0.01)
    # Zoomed in 4 times, the same brush on screen is a quarter of that in the image.
    for _ in range(4):
        page.mouse.wheel(0, -240)
    page.wait_for_function(
        "z => Number(document.querySelector('[data-testid=image-canvas]').dataset.zoom) > z",
        arg=2 * zoom,
    )
    zoomed = float(canvas.get_attribute("data-zoom") or 0)
    shown = float(page.locator("#radius-image").inner_text())
    assert shown == pytest.approx(6 / zoomed, abs=0.06)
    expect(workspace).to_have_attribute("data-status", "ready", timeout=120_000)
    expect(page.locator("#run")).to_be_enabled()


def test_an_image_too_small_to_segment_is_refused_with_its_reason(
    page: Page, tmp_path: Path
) -> None:
    sign_in(page)
    page.get_by_role("link", name="Demo").click()
    page.set_input_files("input[type=file]", str(write_png(tmp_path / "dot.png", 1, 1)))
    page.fill("input[name=name]", "one pixel")
    page.get_by_role("button", name="Upload").click()
    expect(page.get_by_test_id("error")).to_contain_text("at least 2x2 are needed")
    expect(page.get_by_role("link", name="one pixel")).to_have_count(0)  # no dataset made
    expect(page.locator("input[name=name]")).to_have_value("one pixel")  # typed, kept


def test_a_failed_featurization_shows_its_reason(
    page: Page, tmp_path: Path, live_dir: Path
) -> None:
    """The store fails under a featurization (its dataset's directory replaced by a file, which
    stops even root): the page shows the failure and its reason without a reload."""
    upload(page, write_png(tmp_path / "big.png", 1024, 1024), "store fails")
    dataset_id = page.url.rstrip("/").rsplit("/", 1)[-1]
    # The preview is read from the store too: break the store only once it is shown.
    expect(page.get_by_test_id("image-preview")).to_have_js_property("complete", True)
    assert page.get_by_test_id("image-preview").evaluate("img => img.naturalWidth") == 1024
    (directory,) = (live_dir / "arrays" / "datasets").glob(f"{dataset_id}-*")
    shutil.rmtree(directory)
    directory.write_bytes(b"not a directory")
    box = page.get_by_test_id("featurization")
    expect(box).to_have_attribute("data-status", "failed", timeout=60_000)
    expect(page.get_by_test_id("featurization-error")).to_contain_text("array store")
    expect(page.get_by_role("link", name="Open workspace")).to_be_hidden()
