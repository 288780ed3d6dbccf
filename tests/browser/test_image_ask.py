""" "Ask me" in the image workspace, with a real mouse and keys: the asked items are ringed on
the picture, S / D / 1-9 store strokes on them, Ctrl+Z takes an answer back."""

import re
import time
from collections.abc import Callable

import httpx
import pytest
from playwright.sync_api import Page, expect

from tests.browser.conftest import expect_strokes_stored, sign_in
from tests.browser.test_image_workspace import open_workspace, upload_image

pytestmark = pytest.mark.browser

RING = [255, 212, 0]

RING_PIXEL = """async ([x, y]) => {
  for (let i = 0; i < 2; i += 1) await new Promise((r) => requestAnimationFrame(r));
  const c = document.querySelector('#image');
  const k = c.width / c.clientWidth;
  const s = window.imageWorkspace.view.toScreen(x + 0.5, y + 0.5);
  // The ring is at least 10 screen pixels from the anchor's centre.
  const at = [Math.round((s.x + 10) * k), Math.round(s.y * k)];
  return Array.from(c.getContext('2d').getImageData(at[0], at[1], 1, 1).data).slice(0, 3);
}"""


def ringed(page: Page, item: int, width: int) -> bool:
    """The ring's yellow (up to anti-aliasing) beside the item; the picture has no such pixel."""
    r, g, b = page.evaluate(RING_PIXEL, [item % width, item // width])
    return abs(r - RING[0]) <= 24 and abs(g - RING[1]) <= 24 and b <= 16


def until(condition: Callable[[], bool], timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.2)


def asked(page: Page) -> list[int]:
    items = page.get_by_test_id("image-canvas").get_attribute("data-asked") or ""
    return [int(i) for i in items.split(",") if i]


def live(client: httpx.Client, dataset_id: int) -> list[dict]:  # type: ignore[type-arg]
    return client.get(f"/datasets/{dataset_id}/annotations").json()["items"]  # type: ignore[no-any-return]


def test_ask_me_on_an_image_rings_the_items_and_answers_become_strokes(
    page: Page,
    api: httpx.Client,
) -> None:
    # Set up over the API: two scribbles and a finished PPC run, which the page shows on opening.
    dataset_id = upload_image(api, "asked")
    width = 128
    for label, x0 in (("foreground", 10), ("background", 90)):
        stroke = {"points": [[x0, 30], [x0 + 30, 30]], "radius": 4}
        body = {"kind": "scribble", "label": label, "strokes": [stroke]}
        api.post(f"/datasets/{dataset_id}/annotations", json=body).raise_for_status()
    until(lambda: api.get(f"/datasets/{dataset_id}").json()["status"] == "ready")
    run = api.post("/runs", json={"dataset_id": dataset_id, "algorithm": "ppc"}).json()
    until(lambda: api.get(f"/runs/{run['id']}").json()["status"] == "succeeded")
    sign_in(page)
    open_workspace(page, dataset_id)
    canvas = page.get_by_test_id("image-canvas")
    expect(canvas).to_have_attribute("data-run", str(run["id"]))

    page.get_by_role("button", name="Ask me").click()
    expect(canvas).to_have_attribute("data-asked", re.compile(r"^\d+,\d+$"), timeout=30_000)
    i, j = asked(page)
    question = page.get_by_test_id("ask-question")
    assert question.get_attribute("data-items") == f"{i},{j}"
    for item in (i, j):  # both ringed, and in view
        assert ringed(page, item, width)

    before = len(live(api, dataset_id))
    page.keyboard.press("d")
    expect(canvas).to_have_attribute("data-links", "1")
    newest = live(api, dataset_id)[-1]
    assert newest["kind"] == "cannot_link" and "strokes_a" in newest["payload"]
    side = api.get(f"/datasets/{dataset_id}/side-information").json()
    assert [sorted(p) for p in side["cannot_link"]] == [sorted([i, j])]
    page.keyboard.press("Control+z")
    expect(canvas).to_have_attribute("data-links", "0")
    assert len(live(api, dataset_id)) == before

    page.get_by_label("question kind").select_option("items")
    expect(page.locator("#ask-label-help")).to_be_visible()
    expect(canvas).to_have_attribute("data-asked", re.compile(r"^\d+$"))
    (item,) = asked(page)
    assert ringed(page, item, width)
    page.keyboard.press("1")
    expect_strokes_stored(canvas, 3)
    side = api.get(f"/datasets/{dataset_id}/side-information").json()
    assert item in side["labeled_items"]["foreground"]

    page.keyboard.press(" ")  # skip: another question, or none left
    expect(canvas).not_to_have_attribute("data-asked", str(item))
