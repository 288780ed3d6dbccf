// A Deep Zoom pyramid (GET .../image.dzi, .../image_files/<level>/<column>_<row>.png; a run's
// mask under .../result.dzi and result_files) drawn as one of the canvas view's layers: only
// the tiles in sight, at the level whose pixels are closest above the screen's, fetched the
// first time they are needed and kept (the last CACHE_TILES used). While a tile loads, the
// nearest coarser tile already here stands in for it, so zooming shows a blur, never a hole.
// For pictures too large to decode whole in the browser.
//
// Level L is the image at 1 / 2^(maxLevel - L), sides rounded up (app/engine/image/deep_zoom.py);
// a tile carries `overlap` pixels of each neighbour it has.
import { apiBinary } from '../workspace/api.js';

const CACHE_TILES = 512;
const NS = 'http://schemas.microsoft.com/deepzoom/2008';

// { width, height, tileSize, overlap } from a .dzi descriptor (a path under /api/v1).
export async function readDescriptor(path) {
  const text = new TextDecoder().decode(await apiBinary(path));
  const image = new DOMParser().parseFromString(text, 'application/xml').getElementsByTagNameNS(NS, 'Image')[0];
  const size = image && image.getElementsByTagNameNS(NS, 'Size')[0];
  if (!size) throw new Error(`${path} is not a Deep Zoom descriptor`);
  return {
    width: Number(size.getAttribute('Width')),
    height: Number(size.getAttribute('Height')),
    tileSize: Number(image.getAttribute('TileSize')),
    overlap: Number(image.getAttribute('Overlap')),
  };
}

// `tilePath(level, column, row)`: the tile's path under /api/v1; `onTile(rect)`: a tile
// arrived, redraw that image rectangle.
export function createTiles({ width, height, tileSize, overlap }, tilePath, onTile) {
  const maxLevel = Math.ceil(Math.log2(Math.max(width, height)));
  let cache = new Map(); // "level/column/row" -> ImageBitmap, oldest use first
  // The tiles of the path before (another display of the channels, a mask in other colours):
  // each is drawn until its successor arrives, so a change redraws without a blank.
  let stale = new Map();
  const loading = new Set();
  const failed = new Set();
  let pathOf = tilePath;
  let generation = 0; // tiles of an older path (a recoloured mask) are dropped on arrival
  const requested = []; // the last tiles asked for, newest last (tests read it)

  const downscale = (level) => 2 ** (maxLevel - level); // image pixels per level pixel
  const levelSize = (level) => [Math.ceil(width / downscale(level)), Math.ceil(height / downscale(level))];

  // The tile's rectangle in image coordinates, its overlap included.
  function rect(level, column, row) {
    const [w, h] = levelSize(level);
    const k = downscale(level);
    const x0 = column * tileSize - (column > 0 ? overlap : 0);
    const y0 = row * tileSize - (row > 0 ? overlap : 0);
    const x1 = Math.min((column + 1) * tileSize + overlap, w);
    const y1 = Math.min((row + 1) * tileSize + overlap, h);
    return { x0: x0 * k, y0: y0 * k, x1: x1 * k, y1: y1 * k };
  }

  function cached(key) {
    const bitmap = cache.get(key);
    if (bitmap) { // most recently used goes last
      cache.delete(key);
      cache.set(key, bitmap);
    }
    return bitmap;
  }

  function keep(key, bitmap) {
    const old = stale.get(key);
    if (old) {
      stale.delete(key);
      old.close();
    }
    cache.set(key, bitmap);
    while (cache.size > CACHE_TILES) {
      const [oldest, old] = cache.entries().next().value;
      cache.delete(oldest);
      old.close();
    }
  }

  async function fetchTile(level, column, row, key) {
    loading.add(key);
    const asked = generation;
    const path = pathOf(level, column, row);
    requested.push(path);
    if (requested.length > 200) requested.shift();
    try {
      const bytes = await apiBinary(path);
      const bitmap = await createImageBitmap(new Blob([bytes], { type: 'image/png' }));
      if (asked !== generation) return bitmap.close();
      keep(key, bitmap);
      onTile(rect(level, column, row));
    } catch (error) {
      failed.add(key); // not asked again until the path changes: no storm of failing requests
      throw error;
    } finally {
      loading.delete(key);
    }
    return undefined;
  }

  // The tile's own part (its overlap left out) in its bitmap and in image coordinates. Tiles
  // are drawn without their overlap: drawn twice, a seam of a translucent layer (the overlay
  // at 50%) showed as a darker grid line.
  function core(level, column, row) {
    const [w, h] = levelSize(level);
    const k = downscale(level);
    const x0 = column * tileSize;
    const y0 = row * tileSize;
    const x1 = Math.min(x0 + tileSize, w);
    const y1 = Math.min(y0 + tileSize, h);
    return {
      sx: column > 0 ? overlap : 0,
      sy: row > 0 ? overlap : 0,
      sw: x1 - x0,
      sh: y1 - y0,
      x0: x0 * k,
      y0: y0 * k,
      x1: x1 * k,
      y1: y1 * k,
    };
  }

  function draw(ctx, bitmap, level, column, row) {
    const c = core(level, column, row);
    ctx.drawImage(bitmap, c.sx, c.sy, c.sw, c.sh, c.x0, c.y0, c.x1 - c.x0, c.y1 - c.y0);
  }

  // The nearest coarser tile already here, clipped to where the missing tile goes.
  function standIn(ctx, level, column, row) {
    for (let d = 1; d <= level; d += 1) {
      const bitmap = cache.get(`${level - d}/${column >> d}/${row >> d}`);
      if (!bitmap) continue;
      const target = core(level, column, row);
      ctx.save();
      ctx.beginPath();
      ctx.rect(target.x0, target.y0, target.x1 - target.x0, target.y1 - target.y0);
      ctx.clip();
      draw(ctx, bitmap, level - d, column >> d, row >> d);
      ctx.restore();
      return;
    }
  }

  // The finest level whose one tile holds the whole image: fetched first, the stand-in of last
  // resort for every other tile.
  let overview = maxLevel;
  while (overview > 0 && Math.max(...levelSize(overview)) > tileSize) overview -= 1;

  return {
    requested,
    get loading() { return loading.size; }, // tiles asked for and not here yet (benchmarks)
    // The level drawn at this zoom: its pixels no smaller than the screen's.
    levelFor(view) {
      const screen = (window.devicePixelRatio || 1) * view.scale; // screen pixels per image pixel
      return Math.max(0, Math.min(maxLevel, maxLevel + Math.ceil(Math.log2(screen) - 1e-9)));
    },
    // A layer's draw: the tiles over `region` (image coordinates) at the view's level, and only
    // those in sight: a whole-canvas redraw names the whole image as its region.
    draw(ctx, whole, view) {
      const dpr = window.devicePixelRatio || 1;
      const region = {
        x0: Math.max(whole.x0, -view.tx / view.scale),
        y0: Math.max(whole.y0, -view.ty / view.scale),
        x1: Math.min(whole.x1, (ctx.canvas.width / dpr - view.tx) / view.scale),
        y1: Math.min(whole.y1, (ctx.canvas.height / dpr - view.ty) / view.scale),
      };
      if (region.x1 <= region.x0 || region.y1 <= region.y0) return;
      const level = this.levelFor(view);
      const first = `${overview}/0/0`;
      if (!cache.has(first) && !loading.has(first) && !failed.has(first)) fetchTile(overview, 0, 0, first).catch(() => {});
      const k = downscale(level);
      const [w, h] = levelSize(level);
      const c0 = Math.max(0, Math.floor(region.x0 / k / tileSize));
      const r0 = Math.max(0, Math.floor(region.y0 / k / tileSize));
      const c1 = Math.min(Math.ceil(w / tileSize) - 1, Math.floor((region.x1 / k - 1e-9) / tileSize));
      const r1 = Math.min(Math.ceil(h / tileSize) - 1, Math.floor((region.y1 / k - 1e-9) / tileSize));
      for (let row = r0; row <= r1; row += 1) {
        for (let column = c0; column <= c1; column += 1) {
          const key = `${level}/${column}/${row}`;
          const bitmap = cached(key);
          if (bitmap) {
            draw(ctx, bitmap, level, column, row);
            continue;
          }
          const old = stale.get(key);
          if (old) draw(ctx, old, level, column, row);
          else standIn(ctx, level, column, row);
          if (!loading.has(key) && !failed.has(key)) fetchTile(level, column, row, key).catch(() => {});
        }
      }
    },
    // Tiles from now on come from another path (a mask in other colours, another display of
    // the channels): the old ones stand in until theirs arrive.
    setPath(next) {
      pathOf = next;
      generation += 1;
      for (const bitmap of stale.values()) bitmap.close();
      stale = cache;
      cache = new Map();
      failed.clear();
    },
  };
}
