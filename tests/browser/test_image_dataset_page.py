"""An image dataset's page follows its featurization without a reload: progress, then
"Open workspace"; a failed featurization shows its reason."""

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
    expect(page.get_by_role("link", name="Open workspace")).to_be_hidden()
    page.evaluate("() => { window.notReloaded = true; }")
    expect(box).to_have_attribute("data-status", "ready", timeout=120_000)
    expect(page.get_by_role("link", name="Open workspace")).to_be_visible()
    expect(page.locator("#featurization-progress")).to_be_hidden()
    expect(box).to_contain_text("superpixels are the items")
    expect(page.get_by_test_id("status")).to_have_text("ready")
    assert page.evaluate("() => window.notReloaded === true")
    page.get_by_role("link", name="Open workspace").click()
    expect(page.locator("#workspace")).to_have_attribute("data-ready", "true", timeout=30_000)
    expect(page.get_by_test_id("image-canvas")).to_have_attribute("data-strokes", "0")


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
