// The brush and the eraser: a canvas-view tool that paints while the button is held and hands
// the finished stroke to `onStroke(stroke, erase)` (one stroke, one annotation).
//
// Smoothness: each pointer event paints only its new segment into the scribble layer and marks
// that segment's box dirty; the view redraws the union of those boxes once per frame. The
// browser's coalesced events give every sampled position, not only one per frame, so fast
// strokes stay continuous.

const MAX_POINTS = 100_000; // the API's limit per stroke
const round = (v) => Math.round(v * 100) / 100;

// `radius()`: the brush's radius in image pixels (the tools set it from its size on screen).
export function createBrush({ view, layer, cursor, radius, colour, onStroke }) {
  let erase = false;
  let current = null; // { points, radius, colour } while painting

  const showCursor = (visible) => { cursor.hidden = !visible; };

  function placeCursor(p) {
    const r = radius() * view.view.scale;
    const at = view.toScreen(p.x, p.y);
    cursor.style.width = `${2 * r}px`;
    cursor.style.height = `${2 * r}px`;
    cursor.style.transform = `translate(${at.x - r}px, ${at.y - r}px)`;
  }

  // Pointer position (image coordinates) -> the API's pixel-centre coordinates. The API refuses
  // points off the image, so a stroke that leaves it runs along its edge; it is drawn where it
  // is stored.
  const clamp = (v, high) => Math.min(high, Math.max(0, v));
  const toPoint = (p) => [clamp(round(p.x - 0.5), view.view.width - 1), clamp(round(p.y - 0.5), view.view.height - 1)];

  function extend(point) {
    const last = current.points[current.points.length - 1];
    // Points closer than a fraction of the brush add nothing visible but weigh on the request.
    if (Math.hypot(point[0] - last[0], point[1] - last[1]) < Math.max(0.5, current.radius * 0.15)) return;
    const piece = { points: [last, point], radius: current.radius };
    layer.paint(piece, current.colour);
    view.invalidate(layer.bounds(piece));
    current.points.push(point);
    if (current.points.length >= MAX_POINTS) {
      finish();
      begin(point);
    }
  }

  function begin(point) {
    current = { points: [point], radius: radius(), colour: erase ? null : colour() };
    const piece = { points: [point], radius: current.radius };
    layer.paint(piece, current.colour);
    view.invalidate(layer.bounds(piece));
  }

  function finish() {
    if (!current) return;
    const stroke = { points: current.points, radius: current.radius };
    current = null;
    onStroke(stroke, erase);
  }

  return {
    get erase() { return erase; },
    set erase(value) { erase = value; cursor.classList.toggle('eraser', value); },
    down(event, p) {
      if (!erase && !colour()) return;
      begin(toPoint(p));
    },
    move(event, p) {
      showCursor(true);
      placeCursor(p);
      if (!current) return;
      const events = event.getCoalescedEvents ? event.getCoalescedEvents() : [];
      for (const e of events.length ? events : [event]) extend(toPoint(view.toImage(e)));
    },
    up() { finish(); },
    // After the layer was replayed from the server mid-stroke, the stroke under way is redrawn.
    repaint() { if (current) layer.paint({ points: current.points, radius: current.radius }, current.colour); },
    leave() { showCursor(false); },
    cursor(visible) { showCursor(visible); },
    // The cursor follows the radius slider at once, not only at the next mouse move.
    refresh(p) { if (p) placeCursor(p); },
  };
}
