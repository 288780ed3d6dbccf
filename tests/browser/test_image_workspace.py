"""The image workspace in a real browser: paint with the mouse, erase, undo / redo, link two
strokes, labels, zoom and pan, run, the overlay, the mask exports."""

import io
import re

import httpx
import numpy as np
import pytest
from PIL import Image
from playwright.sync_api import Page, expect

from benchmarks.bench_image_workspace import screen
from tests.browser.conftest import expect_strokes_stored, screenshot, sign_in

pytestmark = pytest.mark.browser

Point = tuple[float, float]


def upload_image(api: httpx.Client, name: str, size: int = 128) -> int:
    """A picture of its own for a test (the live server is shared): left half dark, right half
    light, so two scribbles segment it."""
    pixels = np.zeros((size, size, 3), np.uint8)
    pixels[:, size // 2 :] = (230, 200, 60)
    pixels[:, : size // 2] = (30, 60, 120)
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, format="PNG")
    response = api.post(
        "/projects/1/datasets", files={"file": (f"{name}.png", buffer.getvalue(), "image/png")}
    )
    response.raise_for_status()
    return int(response.json()["id"])


def open_workspace(page: Page, dataset_id: int) -> None:
    page.goto(f"/datasets/{dataset_id}/workspace")
    expect(page.locator("#workspace")).to_have_attribute("data-ready", "true", timeout=30_000)


def client_point(page: Page, x: float, y: float) -> Point:
    """Where image point (x, y) (pixel centres, as the API names them) is on the screen."""
    return screen(page, x + 0.5, y + 0.5)


def paint(page: Page, points: list[Point], steps: int = 8) -> None:
    """A real mouse drag through image points."""
    page.mouse.move(*client_point(page, *points[0]))
    page.mouse.down()
    for point in points[1:]:
        page.mouse.move(*client_point(page, *point), steps=steps)
    page.mouse.up()


def click_image(page: Page, x: float, y: float) -> None:
    page.mouse.click(*client_point(page, x, y))


def layer_pixel(page: Page, layer: str, x: int, y: int) -> list[int]:
    """RGBA of one pixel of a layer kept at image resolution ('scribbles' or 'overlay')."""
    return list(
        page.evaluate(
            "([name, x, y]) => { const w = window.imageWorkspace;"
            " const c = name === 'overlay' ? w.overlay.layer.canvas : w.scribbles.canvas;"
            " return Array.from(c.getContext('2d').getImageData(x, y, 1, 1).data); }",
            [layer, x, y],
        )
    )


SCREEN_PIXELS = """async ([x0, x1, y]) => {
  // Two frames: the view redraws on requestAnimationFrame.
  for (let i = 0; i < 2; i += 1) await new Promise((r) => requestAnimationFrame(r));
  const c = document.querySelector('#image');
  const k = c.width / c.clientWidth;
  const ctx = c.getContext('2d');
  const out = [];
  for (let x = x0; x <= x1; x += 1) {
    const s = window.imageWorkspace.view.toScreen(x + 0.5, y + 0.5);
    out.push(Array.from(ctx.getImageData(Math.floor(s.x * k), Math.floor(s.y * k), 1, 1).data));
  }
  return out;
}"""


def screen_pixel(page: Page, x: int, y: int) -> list[int]:
    """RGBA of the visible canvas where the centre of image pixel (x, y) is shown."""
    return list(page.evaluate(SCREEN_PIXELS, [x, x, y])[0])


def screen_row(page: Page, x0: int, x1: int, y: int) -> list[list[int]]:
    return [list(p) for p in page.evaluate(SCREEN_PIXELS, [x0, x1, y])]


def hex_rgb(colour: str) -> list[int]:
    return [int(colour[i : i + 2], 16) for i in (1, 3, 5)]


def near(a: list[int], b: list[int], tolerance: int = 2) -> bool:
    """Colours equal up to rounding (premultiplied alpha, antialiased edges)."""
    return len(a) == len(b) and all(abs(x - y) <= tolerance for x, y in zip(a, b, strict=True))


def row_has(row: list[list[int]], colour: list[int]) -> bool:
    return any(near(pixel, colour) for pixel in row)


def label_colour(page: Page, name: str) -> list[int]:
    return hex_rgb(page.evaluate("n => window.imageWorkspace.labels.colour(n)", name))


def live_annotations(api: httpx.Client, dataset_id: int) -> list[dict]:
    items: list[dict] = api.get(f"/datasets/{dataset_id}/annotations?limit=1000").json()["items"]
    return items


def test_coffee_paint_erase_undo_run_overlay_and_export(page: Page, api: httpx.Client) -> None:
    sign_in(page)
    page.get_by_role("link", name="Demo").click()
    page.get_by_role("link", name="coffee").click()
    page.get_by_role("link", name="Open workspace", exact=True).click(timeout=60_000)
    expect(page.locator("#workspace")).to_have_attribute("data-ready", "true", timeout=30_000)
    canvas = page.get_by_test_id("image-canvas")
    dataset_id = int(page.locator("#workspace").get_attribute("data-dataset-id") or 0)
    expect(canvas).to_have_attribute("data-strokes", "0")
    expect(page.locator("#labels .chip")).to_have_text(["1 foreground", "2 background"])
    expect(page.locator("#workspace")).to_have_attribute("data-tool", "brush")

    # Label 1 across the cup's rim, label 2 (key 2) along the table at the top.
    paint(page, [(250, 150), (300, 140), (350, 150)])
    expect(canvas).to_have_attribute("data-strokes", "1")
    page.keyboard.press("2")
    expect(page.locator("#workspace")).to_have_attribute("data-label", "background")
    paint(page, [(40, 20), (150, 25), (260, 20)])
    expect_strokes_stored(canvas, 2)
    assert near(layer_pixel(page, "scribbles", 300, 140)[:3], label_colour(page, "foreground"))
    assert near(layer_pixel(page, "scribbles", 150, 25)[:3], label_colour(page, "background"))
    stored = live_annotations(api, dataset_id)
    assert [a["payload"]["label"] for a in stored] == ["foreground", "background"]
    assert all(len(a["payload"]["strokes"]) == 1 for a in stored)

    # The eraser (E) clears what is under it; undo brings it back, redo clears it again.
    page.keyboard.press("e")
    paint(page, [(140, 10), (160, 40)])
    expect_strokes_stored(canvas, 3)
    assert layer_pixel(page, "scribbles", 150, 25)[3] == 0
    assert live_annotations(api, dataset_id)[-1]["payload"]["erase"] is True
    page.keyboard.press("Control+z")
    expect(canvas).to_have_attribute("data-strokes", "2")
    assert layer_pixel(page, "scribbles", 150, 25)[3] == 255
    page.keyboard.press("Control+Shift+z")
    expect(canvas).to_have_attribute("data-strokes", "3")
    assert layer_pixel(page, "scribbles", 150, 25)[3] == 0
    page.keyboard.press("Control+z")
    expect(canvas).to_have_attribute("data-strokes", "2")

    # Ctrl+Enter runs (PPC by default: one cluster per label); the overlay appears by itself.
    page.keyboard.press("Control+Enter")
    expect(page.get_by_test_id("progress")).to_have_attribute(
        "data-status", "succeeded", timeout=120_000
    )
    expect(canvas).to_have_attribute("data-run", re.compile(r"^\d+$"), timeout=30_000)
    expect(canvas).to_have_attribute("data-overlay", "on")
    expect(page.get_by_test_id("legend")).to_contain_text("foreground")
    # Clusters take their scribble label's colour: the cup's rim is "foreground".
    assert near(layer_pixel(page, "overlay", 300, 140)[:3], label_colour(page, "foreground"))
    assert near(layer_pixel(page, "overlay", 100, 25)[:3], label_colour(page, "background"))
    page.fill("#overlay-opacity", "100")
    # Off the scribbles, a fully opaque overlay is all the screen shows.
    assert near(screen_pixel(page, 60, 380)[:3], layer_pixel(page, "overlay", 60, 380)[:3])
    page.locator("#image").hover()
    page.keyboard.press("o")
    expect(canvas).to_have_attribute("data-overlay", "off")
    assert not near(screen_pixel(page, 60, 380)[:3], layer_pixel(page, "overlay", 60, 380)[:3])
    page.keyboard.press("o")
    expect(canvas).to_have_attribute("data-overlay", "on")
    screenshot(page, "image-workspace")

    run_id = int(canvas.get_attribute("data-run") or 0)
    result = api.get(f"/runs/{run_id}/result").json()
    with page.expect_download() as download:
        page.get_by_role("button", name="Cluster mask (PNG)").click()
    clusters = np.asarray(Image.open(download.value.path()))
    assert clusters.shape == (400, 600)
    with page.expect_download() as download:
        page.get_by_role("button", name="Label mask (PNG)").click()
    label_mask = np.asarray(Image.open(download.value.path()).convert("L"))
    names = ["foreground", "background"]
    expected = np.array([names.index(n) + 1 if n in names else 0 for n in result["cluster_labels"]])
    assert np.array_equal(label_mask, expected[clusters])
    assert label_mask[140, 300] == 1 and label_mask[25, 100] == 2

    # What is drawn comes from the server: a reload shows the same two strokes.
    page.reload()
    expect(page.locator("#workspace")).to_have_attribute("data-ready", "true", timeout=30_000)
    expect(canvas).to_have_attribute("data-strokes", "2")
    assert near(layer_pixel(page, "scribbles", 150, 25)[:3], label_colour(page, "background"))


def test_link_two_strokes_same_and_different(page: Page, api: httpx.Client) -> None:
    dataset_id = upload_image(api, "linking")
    sign_in(page)
    open_workspace(page, dataset_id)
    canvas = page.get_by_test_id("image-canvas")
    paint(page, [(10, 20), (50, 20)])
    paint(page, [(10, 100), (50, 100)])
    page.keyboard.press("2")
    paint(page, [(80, 60), (120, 60)])
    expect_strokes_stored(canvas, 3)

    page.keyboard.press("l")
    click_image(page, 30, 20)
    expect(page.locator("#link-help")).to_contain_text("other stroke")
    click_image(page, 30, 100)
    expect(canvas).to_have_attribute("data-links", "1")
    page.get_by_role("button", name="Different things").click()
    click_image(page, 30, 100)
    click_image(page, 100, 60)
    expect(canvas).to_have_attribute("data-links", "2")
    expect(canvas).to_have_attribute("data-pending", "0")
    kinds = [a["kind"] for a in live_annotations(api, dataset_id)]
    assert kinds == ["scribble", "scribble", "scribble", "must_link", "cannot_link"]
    same, different = live_annotations(api, dataset_id)[3:]
    assert [s["points"][0][1] for s in same["payload"]["strokes"]] == [
        pytest.approx(20, abs=1),
        pytest.approx(100, abs=1),
    ]
    assert different["payload"]["strokes_b"][0]["points"][0] == [
        pytest.approx(80, abs=1),
        pytest.approx(60, abs=1),
    ]
    # The link line is drawn between the strokes (green for "same"), across the row between.
    assert row_has(screen_row(page, 20, 40, 60), [31, 122, 56, 255])
    page.keyboard.press("Control+z")
    expect(canvas).to_have_attribute("data-links", "1")


def test_painting_over_a_label_corrects_it_and_contradicting_links_stop_a_run(
    page: Page, api: httpx.Client
) -> None:
    dataset_id = upload_image(api, "overlap")
    sign_in(page)
    open_workspace(page, dataset_id)
    expect(page.locator("#workspace")).to_have_attribute("data-status", "ready", timeout=60_000)
    canvas = page.get_by_test_id("image-canvas")
    paint(page, [(10, 64), (110, 64)])
    page.keyboard.press("2")
    paint(page, [(60, 10), (60, 110)])
    expect(canvas).to_have_attribute("data-pending", "0")
    # The later stroke wins where they cross: a correction, not a conflict.
    side = api.get(f"/datasets/{dataset_id}/side-information").json()
    assert side["conflicts"] == []
    width = api.get(f"/datasets/{dataset_id}").json()["featurization"]["shape"][1]
    crossing = 64 * width + 60
    second = live_annotations(api, dataset_id)[-1]["payload"]["label"]
    assert crossing in side["labeled_items"][second]
    # "Same thing" between strokes of two labels contradicts them: the run waits.
    page.keyboard.press("l")
    click_image(page, 20, 64)
    click_image(page, 60, 20)
    expect(canvas).to_have_attribute("data-links", "1")
    expect(canvas).to_have_attribute("data-pending", "0")
    page.keyboard.press("Control+Enter")
    expect(canvas).to_have_attribute("data-conflicts", "1")
    expect(page.get_by_test_id("conflicts")).to_be_visible()
    page.keyboard.press("Control+z")
    expect(canvas).to_have_attribute("data-conflicts", "0")
    expect(page.get_by_test_id("conflicts")).to_be_hidden()
    page.keyboard.press("Control+Enter")
    expect(canvas).to_have_attribute("data-run", re.compile(r"^\d+$"), timeout=120_000)
    expect(page.get_by_test_id("stale")).to_be_hidden()
    page.keyboard.press("b")
    paint(page, [(10, 120), (30, 120)])
    expect(page.get_by_test_id("stale")).to_be_visible()


def test_labels_add_rename_recolour_and_keys(page: Page, api: httpx.Client) -> None:
    dataset_id = upload_image(api, "labels")
    sign_in(page)
    open_workspace(page, dataset_id)
    canvas = page.get_by_test_id("image-canvas")
    page.fill("#new-label", "sky")
    page.get_by_role("button", name="Add label").click()
    expect(page.locator("#labels .chip")).to_have_text(["1 foreground", "2 background", "3 sky"])
    # Not painted yet: renaming renames what will be stored.
    page.fill("#label-name", "clouds")
    page.get_by_role("button", name="Rename").click()
    paint(page, [(20, 20), (60, 20)])
    expect(canvas).to_have_attribute("data-pending", "0")
    assert live_annotations(api, dataset_id)[-1]["payload"]["label"] == "clouds"
    # Painted: renaming changes only the name shown; new strokes keep the stored name.
    page.fill("#label-name", "cumulus")
    page.get_by_role("button", name="Rename").click()
    expect(page.locator("#labels .chip").nth(2)).to_have_text("3 cumulus")
    expect(page.locator("#labels .chip").nth(2)).to_have_attribute("title", re.compile("clouds"))
    paint(page, [(20, 40), (60, 40)])
    expect_strokes_stored(canvas, 2)
    assert live_annotations(api, dataset_id)[-1]["payload"]["label"] == "clouds"
    # Recolouring redraws the strokes in the new colour.
    page.locator("#label-colour").fill("#ff00ff")
    assert near(layer_pixel(page, "scribbles", 40, 20)[:3], [255, 0, 255])
    # Keys pick labels; a reload keeps names and colours (this browser's palette).
    page.locator("#image").hover()
    page.keyboard.press("1")
    expect(page.locator("#workspace")).to_have_attribute("data-label", "foreground")
    page.reload()
    expect(page.locator("#workspace")).to_have_attribute("data-ready", "true", timeout=30_000)
    expect(page.locator("#labels .chip").nth(2)).to_have_text("3 cumulus")
    assert near(layer_pixel(page, "scribbles", 40, 40)[:3], [255, 0, 255])


def test_zoom_around_the_cursor_and_pan(page: Page, api: httpx.Client) -> None:
    dataset_id = upload_image(api, "zooming")
    sign_in(page)
    open_workspace(page, dataset_id)
    canvas = page.get_by_test_id("image-canvas")
    before = float(canvas.get_attribute("data-zoom") or 0)
    at = client_point(page, 32, 96)
    page.mouse.move(*at)
    page.mouse.wheel(0, -400)
    expect(canvas).not_to_have_attribute("data-zoom", f"{before:.3f}")
    assert float(canvas.get_attribute("data-zoom") or 0) > before
    # The image point under the cursor stays under it.
    after = client_point(page, 32, 96)
    assert abs(after[0] - at[0]) < 1.5 and abs(after[1] - at[1]) < 1.5

    def offset() -> list[float]:
        view = "window.imageWorkspace.view.view"
        return list(page.evaluate(f"() => [{view}.tx, {view}.ty]"))

    start = offset()
    page.keyboard.down(" ")
    page.mouse.down()
    page.mouse.move(at[0] + 60, at[1] + 30, steps=5)
    page.mouse.up()
    page.keyboard.up(" ")
    moved = offset()
    assert moved[0] - start[0] == pytest.approx(60, abs=1)
    assert moved[1] - start[1] == pytest.approx(30, abs=1)
    page.mouse.move(at[0], at[1])
    page.mouse.down(button="middle")
    page.mouse.move(at[0] - 40, at[1], steps=5)
    page.mouse.up(button="middle")
    assert offset()[0] - moved[0] == pytest.approx(-40, abs=1)
    # Panning painted nothing.
    expect(canvas).to_have_attribute("data-strokes", "0")
    page.keyboard.press("h")
    expect(page.locator("#workspace")).to_have_attribute("data-tool", "pan")
    page.keyboard.press("f")
    expect(canvas).to_have_attribute("data-zoom", f"{before:.3f}")


def test_an_exif_turned_jpeg_is_shown_in_the_servers_pixel_layout(
    page: Page, api: httpx.Client
) -> None:
    """Browsers turn a JPEG by its EXIF orientation; the server's pixels (strokes, masks) are
    the stored ones, unturned, so the workspace turns it back."""
    raw = np.zeros((20, 40, 3), np.uint8)
    raw[:, :20] = (230, 30, 30)  # left half red, right half blue in the stored pixels
    raw[:, 20:] = (30, 30, 230)
    image = Image.fromarray(raw)
    exif = image.getexif()
    exif[0x0112] = 6  # "shown turned 90 degrees clockwise"
    buffer = io.BytesIO()
    image.save(buffer, format="JPEG", quality=100, exif=exif.tobytes())
    response = api.post(
        "/projects/1/datasets", files={"file": ("turned.jpg", buffer.getvalue(), "image/jpeg")}
    )
    response.raise_for_status()
    sign_in(page)
    open_workspace(page, int(response.json()["id"]))
    assert near(screen_pixel(page, 5, 10)[:3], [230, 30, 30], tolerance=12)
    assert near(screen_pixel(page, 35, 10)[:3], [30, 30, 230], tolerance=12)


def test_a_viewer_sees_strokes_and_results_but_cannot_paint(page: Page, api: httpx.Client) -> None:
    dataset_id = upload_image(api, "viewing")
    api.post(
        f"/datasets/{dataset_id}/annotations",
        json={"kind": "scribble", "label": "sky", "strokes": [{"points": [[10, 10]], "radius": 4}]},
    ).raise_for_status()
    api.post("/users", json={"username": "image-viewer", "password": "viewer-password"})
    api.put("/projects/1/members", json={"username": "image-viewer", "role": "viewer"})
    sign_in(page, "image-viewer", "viewer-password")
    open_workspace(page, dataset_id)
    canvas = page.get_by_test_id("image-canvas")
    expect(canvas).to_have_attribute("data-strokes", "1")
    expect(page.locator("#workspace")).to_have_attribute("data-tool", "pan")
    expect(page.get_by_role("button", name="Brush")).to_have_count(0)
    expect(page.get_by_role("button", name="Run", exact=True)).to_have_count(0)
    paint(page, [(60, 60), (100, 60)])  # pans instead
    page.keyboard.press("Control+z")
    expect(canvas).to_have_attribute("data-strokes", "1")
    assert len(live_annotations(api, dataset_id)) == 1


def test_the_image_page_says_why_ppc_is_its_default(page: Page, api: httpx.Client) -> None:
    """Issue 36: CEC-IB's "cup" swallowed the table on the coffee demo where PPC followed the
    scribbles; the image page starts on PPC and says why when CEC-IB is picked."""
    sign_in(page)
    page.get_by_role("link", name="Demo").click()
    page.get_by_role("link", name="coffee").click()
    page.get_by_role("link", name="Open workspace", exact=True).click(timeout=60_000)
    expect(page.locator("#workspace")).to_have_attribute("data-ready", "true", timeout=30_000)
    expect(page.locator("#algorithm")).to_have_value("ppc")
    summary = page.locator("#algorithm-summary")
    expect(summary).not_to_contain_text("the default here")
    page.locator("#algorithm").click()
    page.select_option("#algorithm", "cec-ib")
    expect(summary).to_contain_text("On images PPC (the default here) follows the scribbles")
    page.select_option("#algorithm", "ppc")
    expect(summary).not_to_contain_text("the default here")
