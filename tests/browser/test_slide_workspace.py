"""A whole slide in the browser: a 16-bit 4-channel TIFF above IMAGE_WHOLE_PIXELS (set low on
this module's own server, so the slide stays small enough to featurize in seconds) opens in
tiles without asking, is painted at two zoom levels with the real mouse, segmented with
Ctrl+Enter, and its overlay comes as tiles coloured by the labels; its dataset page shows an
overview tile, never the file."""

import time
from collections.abc import Iterator

import httpx
import numpy as np
import pytest
from playwright.sync_api import Page, expect

from benchmarks.ome import ome_tiff
from tests.browser.conftest import expect_strokes_stored, run_until_overlaid, serving, sign_in
from tests.browser.test_image_workspace import label_colour, near, paint, screen_pixel
from tests.browser.test_tiled_picture import requested, settles, zoom_in_at

WIDTH, HEIGHT = 1500, 900  # 1.35 MP, a slide above this module's IMAGE_WHOLE_PIXELS
NAMES = ["DAPI", "GFP", "RFP", "Cy5"]


@pytest.fixture(scope="module")
def live_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    data = tmp_path_factory.mktemp("slide-live")
    with serving(data, data, IMAGE_WHOLE_PIXELS="1000000") as url:
        yield url


def slide() -> tuple[bytes, np.ndarray]:
    """Left half a tissue bright in GFP, right half background bright in Cy5; truth per
    pixel (1 = tissue)."""
    rng = np.random.default_rng(0)
    cols = np.arange(WIDTH)[None, :].repeat(HEIGHT, axis=0)
    tissue = (cols < WIDTH // 2).astype(float)
    planes = np.stack(
        [
            500 + 300 * tissue + rng.normal(0, 40, tissue.shape),
            2_000 + 25_000 * tissue + rng.normal(0, 1_500, tissue.shape),
            900 + rng.normal(0, 100, tissue.shape),
            15_000 - 12_000 * tissue + rng.normal(0, 1_000, tissue.shape),
        ]
    )
    data = ome_tiff(np.clip(planes, 0, 65_535).astype(np.uint16), NAMES, tile=(256, 256))
    return data, tissue.astype(np.uint8)


def uploaded_slide(api: httpx.Client, data: bytes) -> int:
    response = api.post(
        "/projects/1/datasets", files={"file": ("slide.ome.tif", data, "image/tiff")}
    )
    response.raise_for_status()
    created = response.json()
    assert created["meta"]["image"]["tiled"] is True
    deadline = time.monotonic() + 180
    while api.get(f"/datasets/{created['id']}").json()["status"] != "ready":
        assert time.monotonic() < deadline, "featurization did not finish"
        time.sleep(0.5)
    return int(created["id"])


def test_paint_a_slide_at_two_zoom_levels_run_and_see_the_overlay_tiles(
    page: Page, api: httpx.Client
) -> None:
    data, _ = slide()
    dataset_id = uploaded_slide(api, data)
    sign_in(page)

    # Its page shows the one overview tile (the whole slide at the largest level in a tile).
    page.goto(f"/datasets/{dataset_id}")
    preview = page.get_by_test_id("image-preview")
    assert "/image_files/" in (preview.get_attribute("src") or "")
    page.wait_for_function(
        "() => { const i = document.querySelector('[data-testid=image-preview]');"
        " return i.complete && i.naturalWidth > 0; }"
    )

    page.goto(f"/datasets/{dataset_id}/workspace")
    expect(page.locator("#workspace")).to_have_attribute("data-ready", "true", timeout=30_000)
    canvas = page.get_by_test_id("image-canvas")
    expect(canvas).to_have_attribute("data-tiled", "true")  # not asked: a slide always is

    # Painted fitted (the overview's level), then zoomed in with the wheel (full resolution).
    page.keyboard.press("f")
    paint(page, [(200, 200), (400, 500), (300, 800)])
    expect(canvas).to_have_attribute("data-strokes", "1")
    zoom_in_at(page, 1200, 450, scale=2)
    levels = {
        int(path.split("/image_files/")[1].split("/")[0]) for path in requested(page, "picture")
    }
    assert len(levels) >= 2, levels
    page.keyboard.press("2")
    paint(page, [(1150, 420), (1250, 480)])
    expect_strokes_stored(canvas, 2)
    annotations = api.get(f"/datasets/{dataset_id}/annotations").json()["items"]
    points = [a["payload"]["strokes"][0]["points"] for a in annotations]
    assert any(abs(p[0][0] - 200) <= 1 and abs(p[0][1] - 200) <= 1 for p in points), points
    assert any(abs(p[0][0] - 1150) <= 1 and abs(p[0][1] - 420) <= 1 for p in points), points

    page.keyboard.press("f")
    run_until_overlaid(page, canvas)
    page.fill("#overlay-opacity", "100")
    foreground = label_colour(page, "foreground")
    background = label_colour(page, "background")

    def overlaid() -> bool:
        return near(screen_pixel(page, 300, 450)[:3], foreground) and near(
            screen_pixel(page, 1200, 450)[:3], background
        )

    assert settles(page, overlaid), (screen_pixel(page, 300, 450), screen_pixel(page, 1200, 450))
    overlay_paths = requested(page, "overlay.layer")
    assert overlay_paths and all("/result_files/" in p for p in overlay_paths)
    # Zoomed in on the boundary, full-resolution overlay tiles show it.
    zoom_in_at(page, WIDTH // 2, 450, scale=3)
    assert settles(
        page,
        lambda: (
            near(screen_pixel(page, WIDTH // 2 - 30, 450)[:3], foreground)
            and near(screen_pixel(page, WIDTH // 2 + 30, 450)[:3], background)
        ),
    )


def test_live_on_a_slide_segments_what_is_on_screen_and_follows_a_pan(
    page: Page, api: httpx.Client
) -> None:
    """Zoomed in, a run segments the region on screen (seconds where the whole slide takes
    minutes); with Live on, panning runs again for what then is on screen."""
    data, _ = slide()
    dataset_id = uploaded_slide(api, data)
    sign_in(page)
    page.goto(f"/datasets/{dataset_id}/workspace")
    expect(page.locator("#workspace")).to_have_attribute("data-ready", "true", timeout=30_000)
    canvas = page.get_by_test_id("image-canvas")
    page.keyboard.press("f")
    paint(page, [(200, 200), (400, 500)])
    expect(canvas).to_have_attribute("data-strokes", "1")
    page.keyboard.press("2")
    paint(page, [(1200, 300), (1300, 600)])
    expect_strokes_stored(canvas, 2)

    zoom_in_at(page, WIDTH // 2, 450, scale=3)
    expect(page.locator("#on-screen")).to_be_checked()
    page.locator("#live").check()
    run_until_overlaid(page, canvas)
    first_run = canvas.get_attribute("data-run") or ""
    x, y, width, height = (
        int(v) for v in (canvas.get_attribute("data-run-region") or "").split(",")
    )
    assert 0 < width < WIDTH and 0 < height <= HEIGHT and x < WIDTH // 2 < x + width
    run = api.get(f"/runs/{first_run}").json()
    assert run["region"] == {"x": x, "y": y, "width": width, "height": height}
    expect(page.get_by_test_id("status")).to_contain_text("the region on screen")
    page.fill("#overlay-opacity", "100")
    foreground = label_colour(page, "foreground")
    background = label_colour(page, "background")
    assert settles(
        page,
        lambda: (
            near(screen_pixel(page, WIDTH // 2 - 30, 450)[:3], foreground)
            and near(screen_pixel(page, WIDTH // 2 + 30, 450)[:3], background)
        ),
    )

    # At 50% the overlay's tiles meet without a seam: the pixels where tile columns 2 and 3
    # overlap (x 761, 762) are blended once, like their neighbours, not drawn twice.
    seam = range(758, 766)
    page.fill("#overlay-opacity", "50")
    page.locator("#overlay-on").uncheck()
    picture = {x: screen_pixel(page, x, 450)[:3] for x in seam}
    page.locator("#overlay-on").check()

    def blended_once() -> bool:
        return all(
            near(
                screen_pixel(page, x, 450)[:3],
                [(c + p) / 2 for c, p in zip(background, picture[x], strict=True)],
                4,
            )
            for x in seam
        )

    assert settles(page, blended_once), [screen_pixel(page, x, 450)[:3] for x in seam]
    page.fill("#overlay-opacity", "100")

    # Pan left by 300 screen pixels (Space held, real mouse): Live segments the new view.
    box = canvas.bounding_box()
    assert box is not None
    centre = (box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.mouse.move(*centre)
    page.keyboard.down("Space")
    page.mouse.down()
    page.mouse.move(centre[0] - 300, centre[1], steps=10)
    page.mouse.up()
    page.keyboard.up("Space")
    expect(canvas).not_to_have_attribute("data-run", first_run, timeout=60_000)
    expect(page.get_by_test_id("progress")).to_have_attribute(
        "data-status", "succeeded", timeout=120_000
    )
    moved = canvas.get_attribute("data-run-region") or ""
    assert moved and int(moved.split(",")[0]) > x, (moved, x)
    assert settles(page, lambda: near(screen_pixel(page, WIDTH // 2 + 60, 450)[:3], background))
