"""The image workspace drawing its picture and the result overlay from Deep Zoom tiles (what a
picture above 16 megapixels gets; `?tiles=1` asks for it on a small one): zoomed with the
wheel, the screen shows the picture's own pixels; painting and the overlay work on top."""

import io
import math
import time

import httpx
import numpy as np
from PIL import Image
from playwright.sync_api import Page, expect

from tests.browser.conftest import expect_strokes_stored, run_until_overlaid, sign_in
from tests.browser.test_image_workspace import client_point, label_colour, near, paint, screen_pixel

WIDTH, HEIGHT = 1300, 460  # wider than one scribble tile (1,024 px)


def picture() -> np.ndarray:
    """Dark blue left, yellow right, each pixel shifted by its position modulo 7 and 5, so a
    tile drawn one pixel off shows."""
    rows, cols = np.mgrid[:HEIGHT, :WIDTH]
    pixels = np.where((cols < WIDTH // 2)[..., None], [30, 60, 120], [200, 180, 40])
    pixels[..., 0] += (cols % 7) * 6
    pixels[..., 1] += (rows % 5) * 8
    return pixels.astype(np.uint8)


def uploaded(api: httpx.Client, pixels: np.ndarray) -> int:
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, format="PNG")
    response = api.post(
        "/projects/1/datasets", files={"file": ("tiled.png", buffer.getvalue(), "image/png")}
    )
    response.raise_for_status()
    dataset_id = int(response.json()["id"])
    deadline = time.monotonic() + 120
    while api.get(f"/datasets/{dataset_id}").json()["status"] != "ready":
        assert time.monotonic() < deadline, "featurization did not finish"
        time.sleep(0.5)
    return dataset_id


def settles(page: Page, check, seconds: float = 15) -> bool:  # type: ignore[no-untyped-def]
    """Whether ``check()`` holds within ``seconds`` (tiles arrive asynchronously)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return True
        page.wait_for_timeout(200)
    return bool(check())


def requested(page: Page, layer: str) -> list[str]:
    return list(page.evaluate(f"() => window.imageWorkspace.{layer}.tiles.requested"))


def zoom_in_at(page: Page, x: float, y: float, scale: float = 3) -> None:
    """Fit the picture (F), then turn the wheel over image point (x, y) until the zoom is at
    least ``scale``."""
    canvas = page.get_by_test_id("image-canvas")
    page.keyboard.press("f")
    page.mouse.move(*client_point(page, x, y))
    while float(canvas.get_attribute("data-zoom") or 0) < scale:
        page.mouse.wheel(0, -400)
        page.wait_for_timeout(100)


def shows_the_picture(page: Page, pixels: np.ndarray, points: list[tuple[int, int]]) -> None:
    def exact() -> bool:
        return all(near(screen_pixel(page, x, y)[:3], pixels[y, x].tolist()) for x, y in points)

    assert settles(page, exact), [(screen_pixel(page, x, y)[:3], pixels[y, x]) for x, y in points]


def test_zoom_paint_and_run_on_a_tiled_picture(page: Page, api: httpx.Client) -> None:
    pixels = picture()
    dataset_id = uploaded(api, pixels)
    sign_in(page)
    page.goto(f"/datasets/{dataset_id}/workspace?tiles=1")
    expect(page.locator("#workspace")).to_have_attribute("data-ready", "true", timeout=30_000)
    canvas = page.get_by_test_id("image-canvas")
    expect(canvas).to_have_attribute("data-tiled", "true")
    top = math.ceil(math.log2(max(WIDTH, HEIGHT)))  # 11
    overview = top - math.ceil(math.log2(max(WIDTH, HEIGHT) / 254))  # 8: 163 x 58, one tile

    # Zoomed in with the wheel far enough that level `top` is drawn pixel for pixel, also either
    # side of the seams between tiles (x = 254 and 508, y = 254; one pixel of overlap each side).
    zoom_in_at(page, 150, 100)
    shows_the_picture(page, pixels, [(150, 100), (151, 100), (149, 97), (253, 100), (254, 100)])
    paths = requested(page, "picture")
    levels = {int(path.split("/image_files/")[1].split("/")[0]) for path in paths}
    assert {overview, top} <= levels, levels
    zoom_in_at(page, 500, 300)
    shows_the_picture(page, pixels, [(507, 300), (508, 300), (509, 300), (500, 253), (500, 254)])
    zoom_in_at(page, 1250, 400)  # the last column and row of tiles, smaller than the others
    at = client_point(page, 1250, 400)  # dragged with the middle button to bring the corner in
    page.mouse.down(button="middle")
    page.mouse.move(at[0] - 250, at[1] - 150, steps=5)
    page.mouse.up(button="middle")
    shows_the_picture(page, pixels, [(1299, 459), (1270, 420), (1271, 421)])

    # Painting works on top of the tiles, as on any picture; the scribbles go to tiles of
    # their own, made where a stroke passes.
    page.keyboard.press("f")
    paint(page, [(60, 100), (120, 200), (80, 300)])
    expect(canvas).to_have_attribute("data-strokes", "1")
    page.keyboard.press("2")
    paint(page, [(900, 100), (1150, 200), (1000, 350)])  # across two scribble tiles
    expect_strokes_stored(canvas, 2)
    scribbled = "([x, y]) => window.imageWorkspace.scribbles.pixel(x, y)"
    foreground, background = label_colour(page, "foreground"), label_colour(page, "background")
    assert page.evaluate(scribbled, [60, 100]) == [*foreground, 255]
    for x, y in ((900, 100), (1020, 148), (1030, 152), (1150, 200)):
        assert page.evaluate(scribbled, [x, y]) == [*background, 255], (x, y)
    assert page.evaluate(scribbled, [700, 400])[3] == 0
    assert page.evaluate("() => window.imageWorkspace.scribbles.tiles.size") == 2
    # On the screen (zoomed in: no smoothing): the scribble over the picture, at its opacity.
    zoom_in_at(page, 1150, 200)
    over = (0.6 * np.array(background) + 0.4 * pixels[200, 1150]).round().tolist()
    assert settles(page, lambda: near(screen_pixel(page, 1150, 200)[:3], over, 3)), (
        screen_pixel(page, 1150, 200),
        over,
    )
    page.keyboard.press("f")

    # The run's overlay comes as tiles in the labels' colours; no image-sized canvas is made.
    run_until_overlaid(page, canvas)
    page.fill("#overlay-opacity", "100")

    def overlaid() -> bool:
        return near(screen_pixel(page, 200, 400)[:3], foreground) and near(
            screen_pixel(page, 1200, 50)[:3], background
        )

    assert settles(page, overlaid), (screen_pixel(page, 200, 400), screen_pixel(page, 1200, 50))
    overlay_paths = requested(page, "overlay.layer")
    assert overlay_paths and all("/result_files/" in p and "colours=" in p for p in overlay_paths)
    assert page.evaluate("() => window.imageWorkspace.overlay.layer.canvas.width") == 1
    # The label mask export reads the mask it needs (the page holds none of its own).
    assert page.evaluate("() => window.imageWorkspace.state.shown.mask") is None
    with page.expect_download() as download:
        page.get_by_role("button", name="Label mask (PNG)").click()
    label_mask = np.asarray(Image.open(download.value.path()).convert("L"))
    assert label_mask.shape == (HEIGHT, WIDTH)
    assert label_mask[400, 200] == 1 and label_mask[50, 1200] == 2
    # Hidden with O, the picture shows again.
    page.locator("#image").hover()
    page.keyboard.press("o")
    expect(canvas).to_have_attribute("data-overlay", "off")
    shown = pixels[400, 200].tolist()
    assert settles(page, lambda: near(screen_pixel(page, 200, 400)[:3], shown, 12))
