// A scatterplot the CPU draws into a 2D canvas, for views with hundreds of thousands of points
// and for browsers without WebGL. It offers the part of regl-scatterplot's interface that
// plot.js uses (set / get / draw / select / deselect / subscribe / reset / zoomToPoints /
// destroy, and the events view, select, deselect, pointOver, pointOut), so plot.js can pick either.
//
// Why: without a GPU (software WebGL, remote desktops, many laptops' fallback paths) every WebGL
// frame of a million points costs more than half a second, and regl-scatterplot redraws on every
// selection and camera change. Writing a million 2 x 2 pixel squares into an ImageData costs a
// few tens of milliseconds in JavaScript, on any machine. A lasso is one pass of a
// point-in-polygon test over the points inside the polygon's bounding box.
//
// Coordinates: points come normalised to [-1, 1] (plot.js does that). The camera is a centre
// (cx, cy) in those units and a zoom z; the visible window is [cx - 1/z, cx + 1/z] x
// [cy - 1/z, cy + 1/z], stretched over the canvas. The d3-like scales given with `set` are kept
// in sync with the camera, as regl-scatterplot does, so overlays can use them.

const HOVER_RADIUS = 5; // CSS pixels
const MIN_ZOOM = 0.5;
const MAX_ZOOM = 1e5;
const FADE = 0.75; // how far unselected points fade towards the background while a selection exists
const GRID = 256; // cells per axis of the hover index

function parseColour(colour) {
  if (Array.isArray(colour)) return colour.map((v) => (v <= 1 ? Math.round(v * 255) : v));
  const hex = colour.replace('#', '');
  const full = hex.length === 3 ? [...hex].map((c) => c + c).join('') : hex;
  return [0, 2, 4].map((i) => parseInt(full.slice(i, i + 2), 16)).concat([255]);
}

// ImageData is RGBA bytes; on every platform browsers run on (little-endian) that is ABGR in a
// Uint32.
function pack([r, g, b]) {
  return ((255 << 24) | (b << 16) | (g << 8) | r) >>> 0;
}

function fade(rgb, background, amount) {
  return rgb.map((v, i) => Math.round(v + (background[i] - v) * amount));
}

// Even-odd rule (crossing number) for the point (x, y) and the polygon [x0, y0, x1, y1, ...]:
// edge (i, j) toggles when its y-range [min, max) holds y and the point lies left of it.
function crosses(polygon, i, j, x, y) {
  const yi = polygon[i + 1];
  const yj = polygon[j + 1];
  if ((yi > y) === (yj > y)) return false;
  return x < polygon[i] + ((y - yi) / (yj - yi)) * (polygon[j] - polygon[i]);
}

export function inside(polygon, x, y) {
  let hit = false;
  for (let i = 0, j = polygon.length - 2; i < polygon.length; j = i, i += 2) {
    if (crosses(polygon, i, j, x, y)) hit = !hit;
  }
  return hit;
}

// The polygon's edges bucketed by horizontal bands of its height, as compressed rows: band b's
// edges (the index i of each edge's first vertex; the other is the one before it) are
// edges[starts[b]] .. edges[starts[b + 1] - 1]. An edge goes into every band its y-range
// touches (bandOf is monotone, so none is missed): a point tests the few edges of its own band
// and gets the same answer as testing all of them, which a mouse lasso has hundreds of.
function edgeBands(polygon, yMin, yMax) {
  const vertices = polygon.length / 2;
  const bands = Math.max(1, Math.min(1024, vertices));
  const scale = bands / (yMax - yMin);
  const bandOf = (y) => Math.min(bands - 1, Math.max(0, Math.floor((y - yMin) * scale)));
  const span = (i, j) => {
    const a = polygon[i + 1];
    const b = polygon[j + 1];
    return [bandOf(Math.min(a, b)), bandOf(Math.max(a, b))];
  };
  const starts = new Int32Array(bands + 1);
  for (let i = 0, j = polygon.length - 2; i < polygon.length; j = i, i += 2) {
    const [lo, hi] = span(i, j);
    for (let b = lo; b <= hi; b += 1) starts[b + 1] += 1;
  }
  for (let b = 0; b < bands; b += 1) starts[b + 1] += starts[b];
  const edges = new Int32Array(starts[bands]);
  const next = starts.slice(0, bands);
  for (let i = 0, j = polygon.length - 2; i < polygon.length; j = i, i += 2) {
    const [lo, hi] = span(i, j);
    for (let b = lo; b <= hi; b += 1) edges[next[b]++] = i;
  }
  return { bandOf, starts, edges };
}

// The indices (ascending) of the points (xs[i], ys[i]) inside the polygon, by the even-odd rule.
export function lassoSelection(xs, ys, polygon) {
  let [xMin, yMin, xMax, yMax] = [Infinity, Infinity, -Infinity, -Infinity];
  for (let i = 0; i < polygon.length; i += 2) {
    xMin = Math.min(xMin, polygon[i]);
    xMax = Math.max(xMax, polygon[i]);
    yMin = Math.min(yMin, polygon[i + 1]);
    yMax = Math.max(yMax, polygon[i + 1]);
  }
  const points = [];
  if (!(yMax > yMin)) return points; // a flat polygon: no edge spans any y
  const { bandOf, starts, edges } = edgeBands(polygon, yMin, yMax);
  const last = polygon.length - 2;
  for (let i = 0; i < xs.length; i += 1) {
    const x = xs[i];
    const y = ys[i];
    if (!(x >= xMin && x <= xMax && y >= yMin && y <= yMax)) continue;
    const band = bandOf(y);
    let hit = false;
    for (let e = starts[band]; e < starts[band + 1]; e += 1) {
      const v = edges[e];
      if (crosses(polygon, v, v === 0 ? last : v - 2, x, y)) hit = !hit;
    }
    if (hit) points.push(i);
  }
  return points;
}

// The indices of the non-zero values, ascending.
function nonZero(values) {
  let count = 0;
  for (let i = 0; i < values.length; i += 1) if (values[i] !== 0) count += 1;
  const out = new Int32Array(count);
  for (let i = 0, k = 0; i < values.length; i += 1) if (values[i] !== 0) out[k++] = i;
  return out;
}

export function createRasterScatterplot({
  canvas, width, height, pointSize = 2, backgroundColor = '#ffffff', lassoColor = [0.18, 0.42, 0.87, 1],
}) {
  const context = canvas.getContext('2d');
  const listeners = new Map(); // lower-cased event name -> Set of handlers
  const background = parseColour(backgroundColor);
  const lassoRgb = parseColour(lassoColor);
  const lassoStroke = `rgb(${lassoRgb[0]}, ${lassoRgb[1]}, ${lassoRgb[2]})`;
  let size = { width, height };
  let ratio = 1;
  let image = null;
  let pixels = null;
  let xs = new Float32Array(0);
  let ys = new Float32Array(0);
  let categories = new Int32Array(0);
  let labeledPoints = new Int32Array(0); // the points whose category is not 0
  let colours = [[0, 0, 0, 255]];
  let selected = [];
  let isSelected = new Uint8Array(0);
  let camera = { cx: 0, cy: 0, z: 1 };
  let scales = { x: null, y: null, xDomain: null, yDomain: null };
  let mouseMode = 'panZoom';
  let hoverIndex = null; // the grid of points per cell, built on the first hover
  let hovered = -1;
  let lasso = null; // CSS-pixel polygon while a lasso is drawn
  let drag = null;
  let pointsDirty = true;
  let frame = 0;

  const publish = (event, payload) => {
    for (const handler of listeners.get(event.toLowerCase()) || []) handler(payload);
  };

  // ---- camera and scales ----------------------------------------------------------------

  const toCss = (nx, ny) => [
    ((nx - camera.cx) * camera.z + 1) * (size.width / 2),
    (1 - (ny - camera.cy) * camera.z) * (size.height / 2),
  ];
  const toNormalised = (px, py) => [
    camera.cx + ((px / size.width) * 2 - 1) / camera.z,
    camera.cy + (1 - (py / size.height) * 2) / camera.z,
  ];

  function syncScales() {
    const { x, y, xDomain, yDomain } = scales;
    if (!x || !y) return;
    const data = (domain, n) => domain[0] + ((n + 1) / 2) * (domain[1] - domain[0]);
    x.domain([data(xDomain, camera.cx - 1 / camera.z), data(xDomain, camera.cx + 1 / camera.z)]);
    x.range([0, size.width]);
    y.domain([data(yDomain, camera.cy - 1 / camera.z), data(yDomain, camera.cy + 1 / camera.z)]);
    y.range([size.height, 0]);
  }

  function setCamera(next) {
    camera = { ...next, z: Math.min(MAX_ZOOM, Math.max(MIN_ZOOM, next.z)) };
    syncScales();
    pointsDirty = true;
    requestFrame();
    publish('view', { camera });
  }

  // ---- drawing --------------------------------------------------------------------------

  function resize() {
    ratio = window.devicePixelRatio || 1;
    canvas.width = Math.max(1, Math.round(size.width * ratio));
    canvas.height = Math.max(1, Math.round(size.height * ratio));
    image = context.createImageData(canvas.width, canvas.height);
    pixels = new Uint32Array(image.data.buffer);
    syncScales();
    pointsDirty = true;
    requestFrame();
  }

  // Unlabeled points (category 0) under the rest, selected points on top.
  function drawPoints() {
    const W = canvas.width;
    const H = canvas.height;
    pixels.fill(pack(background));
    const anySelected = selected.length > 0;
    const solid = colours.map(pack);
    const faded = colours.map((c) => pack(fade(c, background, FADE)));
    const kx = (camera.z * W) / 2;
    const ky = (camera.z * H) / 2;
    const ox = W / 2 - camera.cx * kx;
    const oy = H / 2 + camera.cy * ky;
    const s = Math.max(1, Math.round(pointSize * ratio));
    // The unlabeled points (category 0) first, then the labeled ones over them (from their own
    // list: a second full pass would cost as much as the first), then the selected points, from
    // the selection's own list. These loops are the frame's cost.
    const square = (i, colour, side) => {
      const px = Math.floor(xs[i] * kx + ox);
      const py = Math.floor(oy - ys[i] * ky);
      if (px < -side || py < -side || px >= W || py >= H) return;
      for (let dy = Math.max(0, -py); dy < side && py + dy < H; dy += 1) {
        const row = (py + dy) * W;
        for (let dx = Math.max(0, -px); dx < side && px + dx < W; dx += 1) pixels[row + px + dx] = colour;
      }
    };
    const palette = Uint32Array.from(anySelected ? faded : solid);
    const strong = Uint32Array.from(solid);
    const colourOf = (table, c) => (c >= 0 && c < table.length ? table[c] : table[0]);
    const put = (i, colour, side) => {
      const px = Math.floor(xs[i] * kx + ox);
      const py = Math.floor(oy - ys[i] * ky);
      if (px >= 0 && py >= 0 && px + side <= W && py + side <= H) {
        // Wholly on the canvas, as nearly every point is: no clipping per pixel.
        for (let dy = 0, row = py * W + px; dy < side; dy += 1, row += W) {
          for (let dx = 0; dx < side; dx += 1) pixels[row + dx] = colour;
        }
      } else {
        square(i, colour, side);
      }
    };
    for (let i = 0; i < xs.length; i += 1) {
      if (categories[i] === 0 && !isSelected[i]) put(i, palette[0], s);
    }
    for (let i = 0; i < labeledPoints.length; i += 1) {
      const p = labeledPoints[i];
      if (!isSelected[p]) put(p, colourOf(palette, categories[p]), s);
    }
    for (let i = 0; i < selected.length; i += 1) {
      const p = selected[i];
      put(p, colourOf(strong, categories[p]), s + 1);
    }
    pointsDirty = false;
  }

  function render() {
    frame = 0;
    if (!image) return;
    if (pointsDirty) drawPoints();
    context.putImageData(image, 0, 0);
    if (lasso && lasso.length >= 4) {
      context.save();
      context.scale(ratio, ratio);
      context.strokeStyle = lassoStroke;
      context.lineWidth = 2;
      context.beginPath();
      context.moveTo(lasso[0], lasso[1]);
      for (let i = 2; i < lasso.length; i += 2) context.lineTo(lasso[i], lasso[i + 1]);
      context.stroke();
      context.restore();
    }
  }

  function requestFrame() {
    if (!frame) frame = requestAnimationFrame(render);
  }

  // ---- selection ------------------------------------------------------------------------

  function select(points, { preventEvent = false } = {}) {
    const list = Array.from(points).filter((i) => Number.isInteger(i) && i >= 0 && i < xs.length);
    return selectValid(list, preventEvent);
  }

  // `list`: indices known to be valid (a lasso's own), kept as they are: no copy, no check.
  function selectValid(list, preventEvent = false) {
    if (!list.length) return deselect({ preventEvent });
    isSelected.fill(0);
    for (let k = 0; k < list.length; k += 1) isSelected[list[k]] = 1;
    selected = list;
    pointsDirty = true;
    requestFrame();
    if (!preventEvent) publish('select', { points: selected });
    return undefined;
  }

  function deselect({ preventEvent = false } = {}) {
    if (!selected.length) return;
    selected = [];
    isSelected.fill(0);
    pointsDirty = true;
    requestFrame();
    if (!preventEvent) publish('deselect');
  }

  function finishLasso() {
    const polygon = [];
    for (let i = 0; i < lasso.length; i += 2) polygon.push(...toNormalised(lasso[i], lasso[i + 1]));
    lasso = null;
    requestFrame();
    if (polygon.length < 6) return;
    selectValid(lassoSelection(xs, ys, polygon));
    publish('lassoEnd', { coordinates: polygon });
  }

  // ---- hover ----------------------------------------------------------------------------

  const cellOf = (v) => Math.min(GRID - 1, Math.max(0, Math.floor(((v + 1) / 2) * GRID)));

  function buildHoverIndex() {
    const cells = new Int32Array(xs.length);
    const starts = new Int32Array(GRID * GRID + 1);
    for (let i = 0; i < xs.length; i += 1) {
      cells[i] = cellOf(ys[i]) * GRID + cellOf(xs[i]);
      starts[cells[i] + 1] += 1;
    }
    for (let c = 0; c < GRID * GRID; c += 1) starts[c + 1] += starts[c];
    const order = new Int32Array(xs.length);
    const next = starts.slice(0, GRID * GRID);
    for (let i = 0; i < xs.length; i += 1) order[next[cells[i]]++] = i;
    return { starts, order };
  }

  // The nearest point within HOVER_RADIUS CSS pixels of (px, py), or -1.
  function nearest(px, py) {
    if (!xs.length) return -1;
    hoverIndex = hoverIndex || buildHoverIndex();
    const [nx, ny] = toNormalised(px, py);
    const rx = (2 * HOVER_RADIUS) / (size.width * camera.z);
    const ry = (2 * HOVER_RADIUS) / (size.height * camera.z);
    let best = -1;
    let bestDistance = HOVER_RADIUS * HOVER_RADIUS;
    for (let gy = cellOf(ny - ry); gy <= cellOf(ny + ry); gy += 1) {
      for (let gx = cellOf(nx - rx); gx <= cellOf(nx + rx); gx += 1) {
        const cell = gy * GRID + gx;
        for (let k = hoverIndex.starts[cell]; k < hoverIndex.starts[cell + 1]; k += 1) {
          const i = hoverIndex.order[k];
          const [sx, sy] = toCss(xs[i], ys[i]);
          const distance = (sx - px) ** 2 + (sy - py) ** 2;
          if (distance <= bestDistance) {
            best = i;
            bestDistance = distance;
          }
        }
      }
    }
    return best;
  }

  function hover(px, py) {
    const index = nearest(px, py);
    if (index === hovered) return;
    if (hovered >= 0) publish('pointOut', hovered);
    hovered = index;
    if (index >= 0) publish('pointOver', index);
  }

  // ---- mouse ----------------------------------------------------------------------------

  const position = (event) => {
    const box = canvas.getBoundingClientRect();
    return [event.clientX - box.left, event.clientY - box.top];
  };

  function onPointerDown(event) {
    if (event.button !== 0) return;
    const [px, py] = position(event);
    canvas.setPointerCapture?.(event.pointerId);
    if (mouseMode === 'lasso' || event.shiftKey) {
      lasso = [px, py];
    } else {
      drag = { px, py, camera: { ...camera }, moved: false };
    }
  }

  function onPointerMove(event) {
    const [px, py] = position(event);
    if (lasso) {
      const [lx, ly] = [lasso[lasso.length - 2], lasso[lasso.length - 1]];
      if (Math.abs(px - lx) + Math.abs(py - ly) >= 2) {
        lasso.push(px, py);
        requestFrame();
      }
    } else if (drag) {
      const dx = px - drag.px;
      const dy = py - drag.py;
      if (Math.abs(dx) + Math.abs(dy) > 2) drag.moved = true;
      if (drag.moved) {
        setCamera({
          cx: drag.camera.cx - (2 * dx) / (size.width * drag.camera.z),
          cy: drag.camera.cy + (2 * dy) / (size.height * drag.camera.z),
          z: drag.camera.z,
        });
      }
    } else {
      hover(px, py);
    }
  }

  function onPointerUp(event) {
    if (lasso) {
      finishLasso();
    } else if (drag) {
      const wasClick = !drag.moved;
      drag = null;
      if (wasClick) {
        const index = nearest(...position(event));
        if (index >= 0) select([index]);
      }
    }
  }

  function onDoubleClick(event) {
    if (nearest(...position(event)) < 0) deselect();
  }

  function onWheel(event) {
    event.preventDefault();
    const [px, py] = position(event);
    const [nx, ny] = toNormalised(px, py);
    const z = Math.min(MAX_ZOOM, Math.max(MIN_ZOOM, camera.z * Math.exp(-event.deltaY * 0.002)));
    // keep the point under the cursor where it is
    setCamera({
      cx: nx - ((px / size.width) * 2 - 1) / z,
      cy: ny - (1 - (py / size.height) * 2) / z,
      z,
    });
  }

  function onLeave() {
    if (hovered >= 0) publish('pointOut', hovered);
    hovered = -1;
  }

  const handlers = [
    ['pointerdown', onPointerDown], ['pointermove', onPointerMove], ['pointerup', onPointerUp],
    ['dblclick', onDoubleClick], ['pointerleave', onLeave],
  ];
  for (const [event, handler] of handlers) canvas.addEventListener(event, handler);
  canvas.addEventListener('wheel', onWheel, { passive: false });

  resize();

  return {
    renderer: 'canvas',
    set(options) {
      if (options.width !== undefined || options.height !== undefined) {
        size = { width: options.width ?? size.width, height: options.height ?? size.height };
        resize();
      }
      if (options.xScale) scales = { ...scales, x: options.xScale, xDomain: options.xScale.domain() };
      if (options.yScale) scales = { ...scales, y: options.yScale, yDomain: options.yScale.domain() };
      if (options.xScale || options.yScale) setCamera({ cx: 0, cy: 0, z: 1 }); // new points: show them all
      if (options.mouseMode) mouseMode = options.mouseMode;
      if (options.pointColor) {
        colours = options.pointColor.map(parseColour);
        pointsDirty = true;
        requestFrame();
      }
    },
    get(name) {
      if (name === 'selectedPoints') return [...selected];
      if (name === 'camera') return { ...camera };
      return undefined;
    },
    async draw({ x, y, valueA }) {
      if (x !== xs) hoverIndex = null; // new positions
      if (x.length !== xs.length) {
        isSelected = new Uint8Array(x.length);
        selected = [];
      }
      xs = x;
      ys = y;
      categories = valueA ? Int32Array.from(valueA) : new Int32Array(x.length);
      labeledPoints = nonZero(categories);
      pointsDirty = true;
      render(); // at once: the caller awaits the drawn points
    },
    select,
    deselect,
    subscribe(event, handler) {
      const key = event.toLowerCase();
      if (!listeners.has(key)) listeners.set(key, new Set());
      listeners.get(key).add(handler);
    },
    reset() {
      setCamera({ cx: 0, cy: 0, z: 1 });
    },
    zoomToPoints(indices, { padding = 0 } = {}) {
      if (!indices.length) return;
      let [x0, y0, x1, y1] = [Infinity, Infinity, -Infinity, -Infinity];
      for (const i of indices) {
        x0 = Math.min(x0, xs[i]);
        x1 = Math.max(x1, xs[i]);
        y0 = Math.min(y0, ys[i]);
        y1 = Math.max(y1, ys[i]);
      }
      const extent = Math.max(x1 - x0, y1 - y0, 0.02) * (1 + padding);
      setCamera({ cx: (x0 + x1) / 2, cy: (y0 + y1) / 2, z: 2 / extent });
    },
    destroy() {
      for (const [event, handler] of handlers) canvas.removeEventListener(event, handler);
      canvas.removeEventListener('wheel', onWheel);
      if (frame) cancelAnimationFrame(frame);
      listeners.clear();
    },
  };
}
