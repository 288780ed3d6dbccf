// A run's result over the image: the full-resolution cluster mask coloured per cluster (by the
// colour of the scribble label the cluster carries, `cluster_labels`, or by cluster number),
// shown with an opacity and a toggle; and the two mask downloads. A large picture's overlay is
// drawn from the run's Deep Zoom tiles instead (coloured by the server in the same colours),
// so no canvas of the image's full size is made.
import { apiBinary } from '../workspace/api.js';
import { colourAt, renderLegend } from '../workspace/palette.js';
import { decodeGreyPng } from './png.js';
import { createTiles } from './tiles.js';

// The mask of a run: { width, height, ids } with one cluster id per pixel.
export async function loadMask(runId) {
  return decodeGreyPng(await apiBinary(`/runs/${runId}/result?format=png`));
}

function rgba(hex) {
  const v = parseInt(hex.slice(1), 16);
  // ImageData is RGBA in memory; a little-endian Uint32 view reads it as ABGR.
  return (255 << 24) | ((v & 255) << 16) | (v & 0xff00) | (v >> 16);
}

export function createOverlay(width, height) {
  const canvas = document.createElement('canvas');
  canvas.width = width;
  canvas.height = height;
  const ctx = canvas.getContext('2d');
  let tiles = null; // drawing from the runs' Deep Zoom tiles (useTiles)
  const layer = {
    canvas,
    alpha: 0.5,
    visible: false,
    shown: null, // { runId, mask, clusterLabels }
    draw(target, r, view) {
      if (tiles) tiles.draw(target, r, view);
      else target.drawImage(canvas, r.x0, r.y0, r.x1 - r.x0, r.y1 - r.y0, r.x0, r.y0, r.x1 - r.x0, r.y1 - r.y0);
    },
  };

  // colourBy: 'labels' (a cluster with a label in the palette takes its colour) or 'clusters'.
  // labelColour(name) -> '#rrggbb' or null.
  function clusterColours(colourBy, labelColour) {
    const { clusterLabels } = layer.shown;
    const k = Math.max(clusterLabels.length, 1);
    return Array.from({ length: k }, (_, c) => {
      const named = colourBy === 'labels' && clusterLabels[c] ? labelColour(clusterLabels[c]) : null;
      return named || colourAt(c);
    });
  }

  function paint(colourBy, labelColour) {
    const { mask, runId } = layer.shown;
    const colours = clusterColours(colourBy, labelColour);
    if (tiles) {
      const query = colours.map((c) => c.slice(1)).join(',');
      tiles.setPath((level, column, row) => `/runs/${runId}/result_files/${level}/${column}_${row}.png?colours=${query}`);
      return colours;
    }
    const lut = new Uint32Array(65536);
    for (let c = 0; c < lut.length; c += 1) lut[c] = rgba(colours[c] || colourAt(c));
    const image = ctx.createImageData(mask.width, mask.height);
    const out = new Uint32Array(image.data.buffer);
    const { ids } = mask;
    for (let i = 0; i < ids.length; i += 1) out[i] = lut[ids[i]];
    if (mask.width === width && mask.height === height) ctx.putImageData(image, 0, 0);
    else {
      // Not expected (the mask is the image's size), but a wrong size must not misplace it.
      ctx.clearRect(0, 0, width, height);
      const tmp = new OffscreenCanvas(mask.width, mask.height);
      tmp.getContext('2d').putImageData(image, 0, 0);
      ctx.drawImage(tmp, 0, 0, width, height);
    }
    return colours;
  }

  return {
    layer,
    // From now on, draw from the runs' tiles (`descriptor`: the image's, tiles.js) instead of
    // a canvas of the image's size; `onTile(rect)` redraws where a tile arrived.
    useTiles(descriptor, onTile) {
      tiles = createTiles(descriptor, () => '', onTile);
      layer.tiles = tiles;
      canvas.width = 1;
      canvas.height = 1;
    },
    show(runId, mask, clusterLabels, colourBy, labelColour) {
      layer.shown = { runId, mask, clusterLabels };
      layer.visible = true;
      return paint(colourBy, labelColour);
    },
    recolour(colourBy, labelColour) {
      return layer.shown ? paint(colourBy, labelColour) : null;
    },
    legend(box, colours, display) {
      if (!layer.shown) return box.replaceChildren();
      const names = colours.map((_, c) => {
        const label = layer.shown.clusterLabels[c];
        return label ? `${c}: ${display(label)}` : `${c}`;
      });
      return renderLegend(box, names, colours);
    },
  };
}

function download(name, blob) {
  const link = document.createElement('a');
  link.href = URL.createObjectURL(blob);
  link.download = name;
  link.click();
  setTimeout(() => URL.revokeObjectURL(link.href), 1000);
}

// The cluster mask as the server makes it (pixel value = cluster id).
export async function downloadClusterMask(runId) {
  const bytes = await apiBinary(`/runs/${runId}/result?format=png`);
  download(`run-${runId}-clusters.png`, new Blob([bytes], { type: 'image/png' }));
}

// A label mask made here: pixel value = the 1-based position in `labelNames` (the palette) of
// the label its cluster carries, 0 where the cluster carries none. Grey, in an RGBA PNG (R = G
// = B = value, opaque), since a canvas only writes RGBA. Returns the blob (tests read it back).
export async function labelMaskBlob(mask, clusterLabels, labelNames) {
  const value = clusterLabels.map((name) => (name && labelNames.includes(name) ? labelNames.indexOf(name) + 1 : 0));
  const canvas = new OffscreenCanvas(mask.width, mask.height);
  const ctx = canvas.getContext('2d');
  const image = ctx.createImageData(mask.width, mask.height);
  const out = new Uint32Array(image.data.buffer);
  const { ids } = mask;
  for (let i = 0; i < ids.length; i += 1) {
    const v = Math.min(value[ids[i]] || 0, 255); // a PNG from a canvas has 8 bits a channel
    out[i] = (255 << 24) | (v << 16) | (v << 8) | v;
  }
  ctx.putImageData(image, 0, 0);
  return canvas.convertToBlob({ type: 'image/png' });
}

export async function downloadLabelMask(runId, mask, clusterLabels, labelNames) {
  download(`run-${runId}-labels.png`, await labelMaskBlob(mask, clusterLabels, labelNames));
}
