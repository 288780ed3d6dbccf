// The WebGL scatterplot (regl-scatterplot) with an SVG overlay for links and boundaries.
import createScatterplot from '../../vendor/regl-scatterplot/regl-scatterplot.js';
import { createRasterScatterplot } from './raster-scatterplot.js';

// A minimal linear scale with the d3 interface regl-scatterplot keeps in sync with the camera.
function linearScale(domain, range = [0, 1]) {
  let d = [...domain];
  let r = [...range];
  const scale = (x) => r[0] + ((x - d[0]) / (d[1] - d[0])) * (r[1] - r[0]);
  scale.domain = (v) => (v === undefined ? [...d] : ((d = [...v]), scale));
  scale.range = (v) => (v === undefined ? [...r] : ((r = [...v]), scale));
  scale.invert = (y) => d[0] + ((y - r[0]) / (r[1] - r[0])) * (d[1] - d[0]);
  scale.copy = () => linearScale(d, r);
  return scale;
}

function extent(values) {
  let min = Infinity;
  let max = -Infinity;
  for (const v of values) {
    if (v < min) min = v;
    if (v > max) max = v;
  }
  if (!(max > min)) return [min - 1, max + 1];
  const pad = (max - min) * 0.05;
  return [min - pad, max + pad];
}

// Above LARGE points the CPU draws the plot (raster-scatterplot.js): without a GPU a WebGL
// frame of a million points takes over half a second and regl-scatterplot redraws on every
// selection, while the CPU writes a million small squares in tens of milliseconds. Below it
// WebGL draws antialiased, outlined points, except where WebGL itself runs on the CPU
// (SwiftShader, llvmpipe: virtual machines, remote desktops, headless browsers): there a frame
// of 100,000 points took 0.3 s, and every act of the expert's loop redraws two or three times,
// so above SOFTWARE_LARGE the canvas renderer draws. `?renderer=canvas` or `?renderer=webgl` in
// the page's address forces one (to compare them, or where WebGL is missing or broken); without
// WebGL the canvas renderer is used at every size.
const LARGE = 250_000;
const SOFTWARE_LARGE = 20_000;
const FORCED = new URLSearchParams(window.location.search).get('renderer');

// 'none', 'software' or 'hardware', asked once.
let webglKind;
function webgl() {
  if (webglKind !== undefined) return webglKind;
  webglKind = 'none';
  try {
    const gl = document.createElement('canvas').getContext('webgl');
    if (gl) {
      const info = gl.getExtension('WEBGL_debug_renderer_info');
      const name = String(gl.getParameter(info ? info.UNMASKED_RENDERER_WEBGL : gl.RENDERER));
      webglKind = /swiftshader|llvmpipe|softpipe|software/i.test(name) ? 'software' : 'hardware';
      gl.getExtension('WEBGL_lose_context')?.loseContext(); // browsers cap live contexts
    }
  } catch {
    webglKind = 'none';
  }
  return webglKind;
}

function rendererFor(n) {
  if (FORCED === 'canvas' || FORCED === 'webgl') return FORCED;
  const kind = webgl();
  if (kind === 'none' || n >= LARGE) return 'canvas';
  return kind === 'software' && n >= SOFTWARE_LARGE ? 'canvas' : 'webgl';
}

export class Plot {
  constructor(canvas, overlay) {
    this.canvas = canvas;
    this.overlay = overlay;
    this.x = new Float32Array(0);
    this.y = new Float32Array(0);
    this.links = []; // { from: [x, y], to: [x, y], kind, text } in data coordinates
    this.boundaries = [];
    this.show = { links: true, boundaries: true };
    this.draft = null;
    this.handlers = []; // [event, handler]: kept to subscribe a rebuilt scatterplot again
    this.mode = 'pan';
    this.scatterplot = null; // built by the first setPoints, once the size is known
    new ResizeObserver(() => {
      if (!this.scatterplot) return;
      const box = this.canvas.getBoundingClientRect();
      this.scatterplot.set({ width: box.width, height: box.height });
      this.drawOverlay();
    }).observe(canvas);
  }

  // The renderer can only be chosen when the scatterplot is created, so it is rebuilt when a
  // view's size crosses the line. A canvas keeps the kind of context it was first asked for, and
  // regl-scatterplot asks for a 2D one (it copies from a shared WebGL canvas), so both
  // renderers can take turns on the page's canvas.
  build(renderer) {
    if (this.scatterplot) this.scatterplot.destroy();
    const { width, height } = this.canvas.getBoundingClientRect();
    const options = {
      canvas: this.canvas,
      width,
      height,
      backgroundColor: '#ffffff',
      lassoColor: [0.18, 0.42, 0.87, 1],
    };
    this.scatterplot = renderer === 'canvas'
      ? createRasterScatterplot({ ...options, pointSize: 2 })
      : createScatterplot({
        ...options,
        pointSize: 6,
        pointSizeSelected: 2,
        pointOutlineWidth: 1,
        lassoClearEvent: 'lassoEnd',
        // The page's own Esc (workspace.js) deselects; the library's would also fire on an Esc
        // that cancels typing a category name or closes the shortcut help, and lose the selection.
        deselectOnEscape: false,
        opacity: 0.85,
      });
    this.renderer = renderer;
    this.canvas.dataset.renderer = renderer;
    this.spatialIndex = null;
    this.scatterplot.subscribe('view', () => this.drawOverlay());
    for (const [event, handler] of this.handlers) this.scatterplot.subscribe(event, handler);
    this.setMode(this.mode);
  }

  get size() {
    return this.x.length;
  }

  async setPoints(coords) {
    const n = coords.length / 2;
    if (rendererFor(n) !== this.renderer) this.build(rendererFor(n));
    this.x = new Float32Array(n);
    this.y = new Float32Array(n);
    for (let i = 0; i < n; i += 1) {
      this.x[i] = coords[2 * i];
      this.y[i] = coords[2 * i + 1];
    }
    this.xScale = linearScale(extent(this.x));
    this.yScale = linearScale(extent(this.y));
    this.scatterplot.set({ xScale: this.xScale, yScale: this.yScale });
    this.normX = this.normalize(this.x, this.xScale.domain());
    this.normY = this.normalize(this.y, this.yScale.domain());
    this.spatialIndex = null; // new positions: the next draw builds a new index
  }

  normalize(values, [lo, hi]) {
    const out = new Float32Array(values.length);
    for (let i = 0; i < values.length; i += 1) out[i] = ((values[i] - lo) / (hi - lo)) * 2 - 1;
    return out;
  }

  // `categories[i]` indexes `colors`; 0 is typically "none". Recolouring reuses the spatial
  // index of the positions, which is most of the cost of a draw at a million points.
  async setCategories(categories, colors) {
    const selected = this.scatterplot.get('selectedPoints');
    this.scatterplot.set({ colorBy: 'valueA', pointColor: colors.length > 1 ? colors : [...colors, colors[0]] });
    const options = { zDataType: 'categorical', preventFilterReset: true };
    if (this.spatialIndex) options.spatialIndex = this.spatialIndex;
    await this.scatterplot.draw({ x: this.normX, y: this.normY, valueA: categories }, options);
    this.spatialIndex = this.scatterplot.get('spatialIndex');
    if (selected.length) this.scatterplot.select(selected, { preventEvent: true });
    this.canvas.dataset.rendered = String(this.size);
    this.drawOverlay();
  }

  setMode(mode) {
    this.mode = mode;
    this.scatterplot?.set({ mouseMode: mode === 'lasso' ? 'lasso' : 'panZoom' });
  }

  // The camera's home position shows every point (the coordinates are normalised to [-1, 1]).
  fitAll() {
    this.scatterplot.reset();
  }

  zoomTo(indices) {
    if (indices.length) this.scatterplot.zoomToPoints(indices, { padding: 0.3, transition: true });
  }

  select(indices) {
    this.scatterplot.select(indices);
  }

  deselect() {
    this.scatterplot.deselect();
  }

  subscribe(event, handler) {
    this.handlers.push([event, handler]);
    this.scatterplot?.subscribe(event, handler);
  }

  toScreen(i) {
    return [this.xScale(this.x[i]), this.yScale(this.y[i])];
  }

  toData(px, py) {
    return [this.xScale.invert(px), this.yScale.invert(py)];
  }

  drawOverlay() {
    if (!this.xScale) return;
    const svg = this.overlay;
    const ns = 'http://www.w3.org/2000/svg';
    svg.replaceChildren();
    for (const { from, to, kind, text } of this.show.links ? this.links : []) {
      const [x1, y1] = [this.xScale(from[0]), this.yScale(from[1])];
      const [x2, y2] = [this.xScale(to[0]), this.yScale(to[1])];
      const line = document.createElementNS(ns, 'line');
      line.setAttribute('x1', x1);
      line.setAttribute('y1', y1);
      line.setAttribute('x2', x2);
      line.setAttribute('y2', y2);
      line.setAttribute('class', `link ${kind}`);
      svg.append(line);
      if (text) {
        const label = document.createElementNS(ns, 'text');
        label.setAttribute('x', (x1 + x2) / 2);
        label.setAttribute('y', (y1 + y2) / 2 - 4);
        label.setAttribute('class', `link-count ${kind}`);
        label.textContent = text;
        svg.append(label);
      }
    }
    const polylines = this.show.boundaries ? [...this.boundaries] : [];
    if (this.draft) polylines.push({ points: this.draft, draft: true });
    for (const { points, draft } of polylines) {
      const path = document.createElementNS(ns, 'polyline');
      path.setAttribute('points', points.map(([x, y]) => `${this.xScale(x)},${this.yScale(y)}`).join(' '));
      path.setAttribute('class', draft ? 'boundary draft' : 'boundary');
      svg.append(path);
    }
  }
}
