// The image on one visible canvas, with zoom (wheel, around the cursor) and pan (drag with
// Space held, the middle button, or in pan mode), and the pointer routed to the current tool.
//
// What is drawn lives in layers at image resolution (the picture, the result overlay, the
// scribbles) plus vector layers (links); each frame redraws only the part that changed. While
// painting that is a few brush widths, not the whole 1024 x 1024 image, which is what keeps
// painting smooth when Chromium rasterizes in software. Frames are drawn on
// requestAnimationFrame, so many pointer events between two frames cost one redraw.
//
// Coordinates: "image" coordinates are canvas pixels of the picture, pixel (c, r) covering
// [c, c + 1) x [r, r + 1); the API's stroke points name pixel centres, i.e. image - 0.5.

const MAX_SCALE = 40;
const MIN_WINDOW = 48;
const BACKGROUND = '#e9ecf1';

export function createCanvasView(canvas, { width, height }) {
  const ctx = canvas.getContext('2d', { alpha: false });
  const layers = [];
  const view = { scale: 1, tx: 0, ty: 0, width, height, mode: 'paint' };
  let dpr = window.devicePixelRatio || 1;
  let dirty = null; // null: nothing; 'all'; or { x0, y0, x1, y1 } in image coordinates
  let frame = 0;
  let tool = null;
  let spaceHeld = false;
  let pan = null; // { x, y, pointerId } while a pan drag is under way
  let fitted = false;
  let minScale = 0.05;

  const cssWidth = () => canvas.clientWidth;
  const cssHeight = () => canvas.clientHeight;

  function invalidate(rect) {
    if (!rect || dirty === 'all') dirty = 'all';
    else if (!dirty) dirty = { ...rect };
    else {
      dirty.x0 = Math.min(dirty.x0, rect.x0);
      dirty.y0 = Math.min(dirty.y0, rect.y0);
      dirty.x1 = Math.max(dirty.x1, rect.x1);
      dirty.y1 = Math.max(dirty.y1, rect.y1);
    }
    if (!frame) frame = requestAnimationFrame(draw);
  }

  function draw() {
    frame = 0;
    const area = dirty;
    dirty = null;
    if (!area) return;
    ctx.setTransform(1, 0, 0, 1, 0, 0);
    ctx.save();
    // The image region to draw, whole pixels, inside the picture.
    let region = { x0: 0, y0: 0, x1: width, y1: height };
    if (area !== 'all') {
      region = {
        x0: Math.max(0, Math.floor(area.x0)), y0: Math.max(0, Math.floor(area.y0)),
        x1: Math.min(width, Math.ceil(area.x1)), y1: Math.min(height, Math.ceil(area.y1)),
      };
      if (region.x1 <= region.x0 || region.y1 <= region.y0) { ctx.restore(); return; }
      const k = dpr * view.scale;
      const sx = Math.floor(region.x0 * k + dpr * view.tx);
      const sy = Math.floor(region.y0 * k + dpr * view.ty);
      ctx.beginPath();
      ctx.rect(sx, sy, Math.ceil(region.x1 * k + dpr * view.tx) - sx, Math.ceil(region.y1 * k + dpr * view.ty) - sy);
      ctx.clip();
    }
    ctx.fillStyle = BACKGROUND;
    ctx.fillRect(0, 0, canvas.width, canvas.height);
    ctx.setTransform(dpr * view.scale, 0, 0, dpr * view.scale, dpr * view.tx, dpr * view.ty);
    // Zoomed in, an expert wants to see the pixels they label, not a blur.
    ctx.imageSmoothingEnabled = view.scale < 2;
    for (const layer of layers) {
      if (layer.visible === false) continue;
      ctx.globalAlpha = layer.alpha ?? 1;
      layer.draw(ctx, region, view);
    }
    ctx.restore();
  }

  const zoomListeners = [];
  const moveListeners = [];
  function setTransform(scale, tx, ty) {
    const before = view.scale;
    view.scale = Math.min(MAX_SCALE, Math.max(minScale, scale));
    view.tx = tx;
    view.ty = ty;
    canvas.dataset.zoom = view.scale.toFixed(3);
    invalidate();
    if (view.scale !== before) for (const listener of zoomListeners) listener(view.scale);
    for (const listener of moveListeners) listener();
  }

  // The part of the image on screen: whole pixels, inside the image.
  function visible() {
    const x0 = Math.max(0, Math.floor(-view.tx / view.scale));
    const y0 = Math.max(0, Math.floor(-view.ty / view.scale));
    const x1 = Math.min(width, Math.ceil((cssWidth() - view.tx) / view.scale));
    const y1 = Math.min(height, Math.ceil((cssHeight() - view.ty) / view.scale));
    return x1 > x0 && y1 > y0 ? { x: x0, y: y0, width: x1 - x0, height: y1 - y0 } : null;
  }

  function fit() {
    const s = Math.min(cssWidth() / width, cssHeight() / height) * 0.98;
    minScale = s / 4;
    setTransform(s, (cssWidth() - s * width) / 2, (cssHeight() - s * height) / 2);
  }

  // Show the image box [x0, x1] x [y0, y1] (inclusive pixels) whole and centred, with a margin,
  // but never closer than a window of MIN_WINDOW pixels (one pixel filling the view says nothing).
  function zoomTo(x0, y0, x1, y1) {
    const w = Math.max(x1 - x0 + 1, MIN_WINDOW);
    const h = Math.max(y1 - y0 + 1, MIN_WINDOW);
    const s = Math.min(cssWidth() / w, cssHeight() / h) * 0.8;
    const scale = Math.min(MAX_SCALE, Math.max(minScale, s));
    setTransform(scale, cssWidth() / 2 - (scale * (x0 + x1 + 1)) / 2, cssHeight() / 2 - (scale * (y0 + y1 + 1)) / 2);
  }

  function resize() {
    locate();
    dpr = window.devicePixelRatio || 1;
    canvas.width = Math.max(1, Math.round(cssWidth() * dpr));
    canvas.height = Math.max(1, Math.round(cssHeight() * dpr));
    if (!fitted && cssWidth() > 0) {
      fitted = true;
      fit();
    }
    invalidate();
  }

  // Where the canvas is on the page, read when a gesture starts rather than at every pointer
  // event: reading layout right after the brush cursor moved would force a style pass.
  let box = canvas.getBoundingClientRect();
  const locate = () => { box = canvas.getBoundingClientRect(); };
  for (const type of ['pointerenter', 'pointerdown', 'wheel']) canvas.addEventListener(type, locate, { capture: true, passive: true });
  window.addEventListener('scroll', locate, { passive: true });

  // Client (event) coordinates -> image coordinates.
  function toImage(event) {
    return {
      x: (event.clientX - box.left - view.tx) / view.scale,
      y: (event.clientY - box.top - view.ty) / view.scale,
    };
  }

  // Image coordinates -> CSS pixels inside the canvas.
  function toScreen(x, y) {
    return { x: x * view.scale + view.tx, y: y * view.scale + view.ty };
  }

  function zoomAt(event, factor) {
    const px = event.clientX - box.left;
    const py = event.clientY - box.top;
    const scale = Math.min(MAX_SCALE, Math.max(minScale, view.scale * factor));
    // Keep the image point under the cursor where it is.
    const ix = (px - view.tx) / view.scale;
    const iy = (py - view.ty) / view.scale;
    setTransform(scale, px - ix * scale, py - iy * scale);
  }

  const panning = () => spaceHeld || view.mode === 'pan';
  function updateCursor() {
    canvas.classList.toggle('pan', Boolean(panning() || pan));
    canvas.classList.toggle('grabbing', Boolean(pan));
    if (tool && tool.cursor) tool.cursor(!panning() && !pan);
  }

  canvas.addEventListener('wheel', (event) => {
    event.preventDefault();
    const lines = event.deltaMode === 1 ? 16 : 1;
    zoomAt(event, Math.exp(-event.deltaY * lines * 0.0015));
  }, { passive: false });

  canvas.addEventListener('pointerdown', (event) => {
    if (event.button === 1 || (event.button === 0 && panning())) {
      event.preventDefault();
      pan = { x: event.clientX, y: event.clientY, pointerId: event.pointerId };
      canvas.setPointerCapture(event.pointerId);
      updateCursor();
    } else if (event.button === 0 && tool) {
      canvas.setPointerCapture(event.pointerId);
      tool.down(event, toImage(event));
    }
  });
  canvas.addEventListener('pointermove', (event) => {
    if (pan && event.pointerId === pan.pointerId) {
      setTransform(view.scale, view.tx + event.clientX - pan.x, view.ty + event.clientY - pan.y);
      pan.x = event.clientX;
      pan.y = event.clientY;
    } else if (tool && !panning()) {
      tool.move(event, toImage(event));
    }
  });
  const end = (event) => {
    if (pan && event.pointerId === pan.pointerId) {
      pan = null;
      updateCursor();
    } else if (tool) {
      tool.up(event, toImage(event));
    }
  };
  canvas.addEventListener('pointerup', end);
  canvas.addEventListener('pointercancel', end);
  canvas.addEventListener('pointerleave', () => tool && tool.leave && tool.leave());
  // The middle button would otherwise start the browser's autoscroll.
  canvas.addEventListener('mousedown', (event) => { if (event.button === 1) event.preventDefault(); });

  // Space held means "pan", as in most image editors. Its default (scrolling, or pressing the
  // focused button) is suppressed unless the focus is in a text field.
  const typing = (event) => event.target.matches('input:not([type=range], [type=color], [type=checkbox]), textarea, select');
  document.addEventListener('keydown', (event) => {
    if (event.code !== 'Space' || typing(event)) return;
    event.preventDefault();
    if (!spaceHeld) {
      spaceHeld = true;
      updateCursor();
    }
  });
  document.addEventListener('keyup', (event) => {
    if (event.code !== 'Space' || typing(event)) return;
    event.preventDefault();
    spaceHeld = false;
    updateCursor();
  });

  new ResizeObserver(resize).observe(canvas);

  return {
    view,
    invalidate,
    fit,
    toImage,
    toScreen,
    zoomAt,
    zoomTo,
    addLayer(layer) {
      layers.push(layer);
      invalidate();
      return layer;
    },
    setTool(next) {
      if (tool && tool.leave) tool.leave();
      tool = next;
      updateCursor();
    },
    setMode(mode) {
      view.mode = mode;
      updateCursor();
    },
    onZoom(listener) { zoomListeners.push(listener); },
    onMove(listener) { moveListeners.push(listener); }, // any pan or zoom
    visible,
    get canvas() { return canvas; },
  };
}
