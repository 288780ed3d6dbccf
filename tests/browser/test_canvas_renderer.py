"""The scatterplot's canvas renderer (the CPU draws the points), which the workspace uses above
250,000 points, where WebGL is missing, and above 20,000 where WebGL runs on the CPU (as in this
headless Chromium). `?renderer=canvas` forces it on a small table, so
every act can be checked exactly: the lasso against a point-in-polygon test of the points'
screen positions, the pixels against the palette, pan and zoom against the mouse's travel."""

import numpy as np
import pytest
from playwright.sync_api import Page, expect

from tests.browser.conftest import open_dataset_workspace, sign_in, upload_table

pytestmark = pytest.mark.browser

LABEL_RGB = (0x4E, 0x79, 0xA7)  # the first category's colour (palette.js)
UNLABELED_RGB = (0x9A, 0xA5, 0xB4)


@pytest.fixture(scope="module")
def grid_dataset(live_server: str) -> int:
    # 15 x 12 points on a jittered grid: far enough apart (tens of pixels) that every point's
    # pixels are its own.
    rng = np.random.default_rng(3)
    grid = np.array([(i, j) for i in range(15) for j in range(12)], dtype=float)
    rows = grid + rng.uniform(-0.2, 0.2, size=grid.shape)
    return upload_table(live_server, "canvas-grid", rows.tolist())


def open_canvas(page: Page, dataset_id: int) -> None:
    sign_in(page)
    page.goto(f"/datasets/{dataset_id}/workspace?renderer=canvas")
    expect(page.locator("#workspace")).to_have_attribute("data-ready", "true", timeout=30_000)
    expect(page.get_by_test_id("plot")).to_have_attribute("data-renderer", "canvas")


def screen_positions(page: Page) -> np.ndarray:
    """Every point's position on the page (CSS pixels, page coordinates)."""
    box = page.get_by_test_id("plot").bounding_box()
    assert box is not None
    local = page.evaluate(
        "() => { const p = window.workspace.plot;"
        " return Array.from({ length: p.size }, (_, i) => p.toScreen(i)); }"
    )
    return np.asarray(local) + np.array([box["x"], box["y"]])


def pixel(page: Page, xy: np.ndarray) -> tuple[int, int, int]:
    box = page.get_by_test_id("plot").bounding_box()
    assert box is not None
    rgba = page.evaluate(
        "([x, y]) => { const c = document.querySelector('#plot');"
        " const r = c.width / c.clientWidth; const at = (v) => Math.floor(v * r);"
        " return Array.from(c.getContext('2d').getImageData(at(x), at(y), 1, 1).data); }",
        [float(xy[0] - box["x"]), float(xy[1] - box["y"])],
    )
    return rgba[0], rgba[1], rgba[2]


def selection(page: Page) -> set[int]:
    return set(page.evaluate("() => window.workspace.state.selection"))


def inside_polygon(points: np.ndarray, polygon: np.ndarray) -> np.ndarray:
    """Even-odd rule, brute force."""
    hit = np.zeros(len(points), dtype=bool)
    for (x1, y1), (x2, y2) in zip(polygon, np.roll(polygon, -1, axis=0), strict=True):
        crosses = (y1 > points[:, 1]) != (y2 > points[:, 1])
        with np.errstate(divide="ignore", invalid="ignore"):
            x_cross = x1 + (points[:, 1] - y1) / (y2 - y1) * (x2 - x1)
        hit ^= crosses & (points[:, 0] < x_cross)
    return hit


def test_small_tables_keep_webgl(page: Page, grid_dataset: int) -> None:
    open_dataset_workspace(page, grid_dataset)
    expect(page.get_by_test_id("plot")).to_have_attribute("data-renderer", "webgl")


def test_software_webgl_hands_larger_plots_to_the_canvas(page: Page, live_server: str) -> None:
    """This Chromium's WebGL is SwiftShader (software): from 20,000 points the page draws
    with the canvas renderer, unless the address asks for WebGL."""
    software = page.evaluate(
        "() => { const gl = document.createElement('canvas').getContext('webgl');"
        " const i = gl.getExtension('WEBGL_debug_renderer_info');"
        " return gl.getParameter(i.UNMASKED_RENDERER_WEBGL); }"
    )
    assert "SwiftShader" in software
    rows = np.random.default_rng(0).normal(size=(20_000, 2)).round(4)
    dataset = upload_table(live_server, "software-webgl", rows.tolist())
    open_dataset_workspace(page, dataset)
    expect(page.get_by_test_id("plot")).to_have_attribute("data-renderer", "canvas")
    expect(page.get_by_test_id("plot")).to_have_attribute("data-rendered", "20000")
    page.goto(f"/datasets/{dataset}/workspace?renderer=webgl")
    expect(page.locator("#workspace")).to_have_attribute("data-ready", "true", timeout=30_000)
    expect(page.get_by_test_id("plot")).to_have_attribute("data-renderer", "webgl")


def test_lasso_label_and_pixels(page: Page, grid_dataset: int) -> None:
    open_canvas(page, grid_dataset)
    expect(page.get_by_test_id("plot")).to_have_attribute("data-rendered", "180")
    positions = screen_positions(page)
    assert pixel(page, positions[0]) == UNLABELED_RGB

    # A real lasso, a pentagon around part of the plot.
    box = page.get_by_test_id("plot").bounding_box()
    assert box is not None
    polygon = np.array([(0.2, 0.1), (0.55, 0.15), (0.65, 0.6), (0.4, 0.9), (0.15, 0.55)]) * [
        box["width"],
        box["height"],
    ] + [box["x"], box["y"]]
    page.get_by_role("button", name="Lasso").click()
    page.mouse.move(*polygon[0])
    page.mouse.down()
    for corner in [*polygon[1:], polygon[0]]:
        page.mouse.move(*corner, steps=15)
    page.mouse.up()
    # Points more than 2 px from the polygon's edge are decided; the path is sampled, not exact.
    inner = inside_polygon(positions, polygon)
    assert 10 < inner.sum() < 170
    got = selection(page)
    expect(page.get_by_test_id("selection-count")).to_have_text(str(len(got)))
    shifted = [inside_polygon(positions + d, polygon) for d in [(2, 0), (-2, 0), (0, 2), (0, -2)]]
    sure_in = set(np.flatnonzero(inner & np.all(shifted, axis=0)))
    sure_out = set(np.flatnonzero(~inner & ~np.any(shifted, axis=0)))
    assert sure_in <= got
    assert not (sure_out & got)

    # Label it: the labelled points are drawn in the category's colour, the rest stay grey.
    page.fill("#new-category", "left")
    page.get_by_role("button", name="Label", exact=True).click()
    expect(page.get_by_test_id("annotations").locator("li").first).to_contain_text("label “left”")
    page.locator("body").click(position={"x": 5, "y": 5})
    page.keyboard.press("Escape")
    expect(page.get_by_test_id("selection-count")).to_have_text("0")
    some_in, some_out = min(sure_in), min(sure_out)
    page.wait_for_timeout(100)  # one animation frame
    assert pixel(page, positions[some_in]) == LABEL_RGB
    assert pixel(page, positions[some_out]) == UNLABELED_RGB


def test_pan_zoom_hover_and_click(page: Page, grid_dataset: int) -> None:
    open_canvas(page, grid_dataset)
    box = page.get_by_test_id("plot").bounding_box()
    assert box is not None
    before = screen_positions(page)

    # Pan: drag the background by (60, -40); every point moves with the mouse.
    start = (box["x"] + box["width"] * 0.5 + 7, box["y"] + box["height"] * 0.5 + 9)
    page.mouse.move(*start)
    page.mouse.down()
    page.mouse.move(start[0] + 60, start[1] - 40, steps=8)
    page.mouse.up()
    moved = screen_positions(page)
    np.testing.assert_allclose(moved - before, np.tile([60, -40], (len(before), 1)), atol=1.0)
    assert pixel(page, moved[5]) == UNLABELED_RGB

    # Zoom in with the wheel: the spot under the cursor stays put, distances grow.
    # (whole pixels: the mouse events carry integer coordinates)
    cursor = (round(box["x"] + box["width"] * 0.3), round(box["y"] + box["height"] * 0.6))
    local = [cursor[0] - box["x"], cursor[1] - box["y"]]
    under = page.evaluate("([x, y]) => window.workspace.plot.toData(x, y)", local)
    page.mouse.move(*cursor)
    page.mouse.wheel(0, -300)
    page.wait_for_timeout(200)
    after = page.evaluate("([x, y]) => window.workspace.plot.toData(x, y)", local)
    np.testing.assert_allclose(after, under, atol=1e-3)
    zoomed = screen_positions(page)
    spread = np.linalg.norm(zoomed[0] - zoomed[-1]) / np.linalg.norm(moved[0] - moved[-1])
    assert spread > 1.5

    # F fits everything again: back where the points started.
    page.keyboard.press("f")
    np.testing.assert_allclose(screen_positions(page), before, atol=1.0)

    # Hovering a point shows its item; a click selects it alone.
    page.mouse.move(*(before[17] + 1))
    expect(page.locator("#tooltip")).to_be_visible()
    expect(page.locator("#tooltip")).to_contain_text("#17 ")
    page.mouse.click(*(before[17] + 1))
    expect(page.get_by_test_id("selection-count")).to_have_text("1")
    assert selection(page) == {17}
    # A double-click on the background clears the selection.
    empty = (before[0] + before[13]) / 2  # between two grid points
    page.mouse.dblclick(*empty)
    expect(page.get_by_test_id("selection-count")).to_have_text("0")


# Random polygons (self-intersecting, 3 to 400 vertices) and points, half of them on a 1/32
# grid that the vertices share, so many points lie exactly at a vertex's height or on an edge.
_BANDED_AGAINST_EVERY_EDGE = """async () => {
  const { inside, lassoSelection } = await import('/static/js/workspace/raster-scatterplot.js');
  let seed = 12345;
  const rand = () => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed / 2147483648; };
  const snap = (v) => Math.round(v * 32) / 32;
  let mismatches = 0;
  let selected = 0;
  for (let trial = 0; trial < 150; trial += 1) {
    const vertices = 3 + Math.floor(rand() * 398);
    const polygon = [];
    for (let v = 0; v < vertices; v += 1) {
      const [x, y] = [rand() * 2 - 1, rand() * 2 - 1];
      polygon.push(trial % 2 ? snap(x) : x, trial % 2 ? snap(y) : y);
    }
    const xs = new Float32Array(3000);
    const ys = new Float32Array(3000);
    for (let i = 0; i < xs.length; i += 1) {
      xs[i] = i % 2 ? snap(rand() * 2.2 - 1.1) : rand() * 2.2 - 1.1;
      ys[i] = i % 2 ? snap(rand() * 2.2 - 1.1) : rand() * 2.2 - 1.1;
    }
    let [xMin, yMin, xMax, yMax] = [Infinity, Infinity, -Infinity, -Infinity];
    for (let v = 0; v < polygon.length; v += 2) {
      xMin = Math.min(xMin, polygon[v]); xMax = Math.max(xMax, polygon[v]);
      yMin = Math.min(yMin, polygon[v + 1]); yMax = Math.max(yMax, polygon[v + 1]);
    }
    const expected = [];
    for (let i = 0; i < xs.length; i += 1) {
      const inBox = xs[i] >= xMin && xs[i] <= xMax && ys[i] >= yMin && ys[i] <= yMax;
      if (inBox && inside(polygon, xs[i], ys[i])) expected.push(i);
    }
    const got = lassoSelection(xs, ys, polygon);
    selected += got.length;
    if (got.length !== expected.length || got.some((v, k) => v !== expected[k])) mismatches += 1;
  }
  return { mismatches, selected };
}"""


def test_banded_lasso_equals_the_even_odd_rule_over_every_edge(page: Page) -> None:
    """The lasso tests each point against the edges of its height band only; the selection
    must be exactly the plain test's over every edge."""
    page.goto("/login")
    result = page.evaluate(_BANDED_AGAINST_EVERY_EDGE)
    assert result["selected"] > 10_000  # the polygons do select points
    assert result["mismatches"] == 0
