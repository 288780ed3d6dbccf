// The scribble layer: every live scribble drawn at image resolution, in the order the server
// applies them (a later label wins; an erase scribble removes what was scribbled before it and
// nothing after), plus stroke geometry for picking strokes.
//
// A stroke is { points: [[x, y], ...], radius } in the API's pixel-centre coordinates; it
// covers the pixels whose centre is within `radius` of its polyline, which is what a canvas
// line of width 2 * radius with round caps and joins covers (+0.5: pixel centres).
//
// Strokes are painted opaque into this layer and the layer is shown with one alpha, so the
// segments of a stroke drawn one by one while painting overlap without darkening.
//
// A picture drawn from tiles may be too large for one canvas of its size: its scribbles go to
// square canvases of SCRIBBLE_TILE pixels made the first time a stroke touches them
// (createTiledScribbleLayer), so memory follows the painted area, not the image's.

export const SCRIBBLE_ALPHA = 0.6;

function strokePath(ctx, { points, radius }) {
  ctx.lineWidth = 2 * radius;
  ctx.lineCap = 'round';
  ctx.lineJoin = 'round';
  ctx.beginPath();
  ctx.moveTo(points[0][0] + 0.5, points[0][1] + 0.5);
  // A one-point stroke is a disc: a zero-length line with round caps.
  if (points.length === 1) ctx.lineTo(points[0][0] + 0.5, points[0][1] + 0.5);
  for (let i = 1; i < points.length; i += 1) ctx.lineTo(points[i][0] + 0.5, points[i][1] + 0.5);
  ctx.stroke();
}

// The image rectangle a stroke (or a piece of one) may touch.
export function strokeBounds({ points, radius }) {
  let x0 = Infinity;
  let y0 = Infinity;
  let x1 = -Infinity;
  let y1 = -Infinity;
  for (const [x, y] of points) {
    x0 = Math.min(x0, x); y0 = Math.min(y0, y); x1 = Math.max(x1, x); y1 = Math.max(y1, y);
  }
  const r = radius + 2; // antialiased edge
  return { x0: x0 + 0.5 - r, y0: y0 + 0.5 - r, x1: x1 + 0.5 + r, y1: y1 + 0.5 + r };
}

function distanceToSegment(px, py, [ax, ay], [bx, by]) {
  const dx = bx - ax;
  const dy = by - ay;
  const length2 = dx * dx + dy * dy;
  const t = length2 ? Math.max(0, Math.min(1, ((px - ax) * dx + (py - ay) * dy) / length2)) : 0;
  return Math.hypot(px - (ax + t * dx), py - (ay + t * dy));
}

export function distanceToStroke(x, y, { points }) {
  if (points.length === 1) return Math.hypot(x - points[0][0], y - points[0][1]);
  let best = Infinity;
  for (let i = 1; i < points.length; i += 1) best = Math.min(best, distanceToSegment(x, y, points[i - 1], points[i]));
  return best;
}

// Where a link to this stroke is drawn: its middle point (on the stroke, unlike a centroid).
export function strokeAnchor({ points }) {
  const [x, y] = points[Math.floor(points.length / 2)];
  return { x: x + 0.5, y: y + 0.5 };
}

// An erase stroke clears what is under it; a label stroke covers it with its colour.
function paintOn(ctx, stroke, colour) {
  ctx.globalCompositeOperation = colour ? 'source-over' : 'destination-out';
  ctx.strokeStyle = colour || '#000';
  strokePath(ctx, stroke);
}

export function createScribbleLayer(width, height) {
  const canvas = document.createElement('canvas');
  canvas.width = width;
  canvas.height = height;
  const ctx = canvas.getContext('2d');
  const paint = (stroke, colour) => paintOn(ctx, stroke, colour);

  return {
    canvas,
    alpha: SCRIBBLE_ALPHA,
    // scribbles: [{ stroke, colour }] in the server's order; colour null for an eraser.
    replays: 0, // how many times the layer was redrawn from the list
    replay(scribbles) {
      this.replays += 1;
      ctx.clearRect(0, 0, width, height);
      for (const { stroke, colour } of scribbles) paint(stroke, colour);
    },
    paint,
    bounds: strokeBounds,
    // The canvas-view layer interface: copy the dirty region only.
    draw(target, r) {
      target.drawImage(canvas, r.x0, r.y0, r.x1 - r.x0, r.y1 - r.y0, r.x0, r.y0, r.x1 - r.x0, r.y1 - r.y0);
    },
  };
}

const SCRIBBLE_TILE = 1024;

export function createTiledScribbleLayer(width, height) {
  const tiles = new Map(); // "column,row" -> { canvas, ctx }
  const T = SCRIBBLE_TILE;

  function tile(column, row, create) {
    const key = `${column},${row}`;
    let found = tiles.get(key);
    if (!found && create) {
      const canvas = document.createElement('canvas');
      canvas.width = Math.min(T, width - column * T);
      canvas.height = Math.min(T, height - row * T);
      const ctx = canvas.getContext('2d');
      ctx.translate(-column * T, -row * T); // image coordinates, like the whole-image layer
      found = { canvas, ctx };
      tiles.set(key, found);
    }
    return found;
  }

  // The tiles (columns, rows) an image rectangle overlaps, inside the image.
  function span(r) {
    return {
      c0: Math.max(0, Math.floor(r.x0 / T)), r0: Math.max(0, Math.floor(r.y0 / T)),
      c1: Math.min(Math.ceil(width / T) - 1, Math.floor(r.x1 / T)),
      r1: Math.min(Math.ceil(height / T) - 1, Math.floor(r.y1 / T)),
    };
  }

  function paint(stroke, colour) {
    const { c0, r0, c1, r1 } = span(strokeBounds(stroke));
    for (let row = r0; row <= r1; row += 1) {
      for (let column = c0; column <= c1; column += 1) {
        const found = tile(column, row, Boolean(colour)); // erasing an empty tile makes none
        if (found) paintOn(found.ctx, stroke, colour);
      }
    }
  }

  return {
    tiles,
    alpha: SCRIBBLE_ALPHA,
    replays: 0,
    replay(scribbles) {
      this.replays += 1;
      tiles.clear();
      for (const { stroke, colour } of scribbles) paint(stroke, colour);
    },
    paint,
    bounds: strokeBounds,
    // RGBA of one pixel of the layer (tests; [0, 0, 0, 0] where nothing was painted).
    pixel(x, y) {
      const found = tile(Math.floor(x / T), Math.floor(y / T), false);
      if (!found) return [0, 0, 0, 0];
      return Array.from(found.ctx.getImageData(x % T, y % T, 1, 1).data);
    },
    draw(target, r) {
      const { c0, r0, c1, r1 } = span(r);
      for (let row = r0; row <= r1; row += 1) {
        for (let column = c0; column <= c1; column += 1) {
          const found = tile(column, row, false);
          if (!found) continue;
          const x0 = Math.max(r.x0, column * T);
          const y0 = Math.max(r.y0, row * T);
          const x1 = Math.min(r.x1, column * T + found.canvas.width);
          const y1 = Math.min(r.y1, row * T + found.canvas.height);
          if (x1 <= x0 || y1 <= y0) continue;
          target.drawImage(found.canvas, x0 - column * T, y0 - row * T, x1 - x0, y1 - y0, x0, y0, x1 - x0, y1 - y0);
        }
      }
    },
  };
}
