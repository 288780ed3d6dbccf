// The image workspace: paint scribbles on the picture, link strokes, run, see the result as an
// overlay, export masks. Everything goes through the public JSON API. This entry point wires
// the parts together:
//   canvas.js       the visible canvas: layers, zoom / pan, pointer routing, frame scheduling
//   strokes.js      the scribble layer (replayed from the annotations) and stroke geometry
//   tools.js        the tool panel: brush.js (brush, eraser), links.js (link tool, link lines)
//   labels.js       the label palette        annotations.js  server sync, undo / redo
//   overlay.js      result overlay and mask exports;  png.js  exact cluster-mask decoding
//   orientation.js  the picture in the server's pixel layout (EXIF-turned JPEGs)
//   ask.js          "Ask me": the engine's questions ringed on the picture, answered as strokes
//   collection.js   "Apply to other images": the run shown segments a collection, masks as a ZIP
//   tiles.js        a large picture (and its overlay) drawn from Deep Zoom tiles
//   channels.js     measured channels: each one's visibility, colour and range, kept per user
// and from the scatterplot workspace the page-independent run panel, palette, keys and ui.
import { api, apiBinary } from '../workspace/api.js';
import { bindKeys } from '../workspace/keyboard.js';
import { createRunPanel } from '../workspace/run-panel.js';
import { $, bind, report, status } from '../workspace/ui.js';
import { createAnnotations } from './annotations.js';
import { createImageAsker } from './ask.js';
import { createCanvasView } from './canvas.js';
import { createChannelPanel } from './channels.js';
import { createCollectionPanel } from './collection.js';
import { createLabels } from './labels.js';
import { createLinkLayer, strokeLinks } from './links.js';
import { rawPicture } from './orientation.js';
import { createOverlay, downloadClusterMask, downloadLabelMask, labelMaskBlob, loadMask } from './overlay.js';
import { createScribbleLayer, createTiledScribbleLayer } from './strokes.js';
import { createTiles, readDescriptor } from './tiles.js';
import { createTools } from './tools.js';

const root = $('#workspace');
const canvas = $('#image');
const datasetId = Number(root.dataset.datasetId);
const canEdit = root.dataset.canEdit === 'true';
const width = Number(root.dataset.width);
const height = Number(root.dataset.height);
const state = { dataset: null, algorithms: [], readParams: () => ({}), runs: [], shown: null, tool: null, linkKind: 'same' };

// Pictures above TILED_ABOVE pixels are drawn from their Deep Zoom tiles (only what is in sight,
// at the zoom's level) instead of being downloaded and decoded whole; `?tiles=1` or `?tiles=0`
// on the page's address chooses either way for any picture but a whole slide, which the
// server never decodes whole: always tiles.
const TILED_ABOVE = 4096 * 4096;
const VIEW_REST_MS = 400; // a pan or zoom has ended when the view rests this long
const slide = root.dataset.slide === 'true';
const tilesAsked = new URLSearchParams(window.location.search).get('tiles');
const tiled = slide || (tilesAsked === null ? width * height > TILED_ABOVE : tilesAsked === '1');
canvas.dataset.tiled = String(tiled);
// Measured channels are drawn by the server with the expert's display of them: from tiles at
// every size (a small picture's tiles are few), the overlay as `tiled` says.
const measured = root.dataset.measured === 'true';
const channels = measured ? createChannelPanel({
  datasetId,
  onDisplay: (query) => showChannels(query),
  onFeaturize: (dataset) => {
    showDataset(dataset);
    followFeaturization().catch(report);
  },
}) : null;

const view = createCanvasView(canvas, { width, height });
const picture = view.addLayer({
  image: null,
  tiles: null,
  draw(ctx, r, v) {
    if (this.tiles) this.tiles.draw(ctx, r, v);
    else if (this.image) ctx.drawImage(this.image, r.x0, r.y0, r.x1 - r.x0, r.y1 - r.y0, r.x0, r.y0, r.x1 - r.x0, r.y1 - r.y0);
  },
});
const overlay = createOverlay(width, height);
view.addLayer(overlay.layer);
const scribbles = view.addLayer(tiled ? createTiledScribbleLayer(width, height) : createScribbleLayer(width, height));
const linkLayer = view.addLayer(createLinkLayer());

const annotations = createAnnotations(datasetId, {
  onReload: () => {
    labels.adopt(usedLabels());
    replay();
  },
  onAdded: (annotation) => {
    // A scribble is on the layer already: the brush painted it as it was drawn.
    if (annotation.kind !== 'scribble') {
      linkLayer.links = strokeLinks(annotations.store.items);
      view.invalidate();
    }
    showConflicts([]); // they may be resolved now; the next run checks again
    runPanel.annotationsChanged(); // Live: run again
  },
  onState: renderCounts,
});

const labels = createLabels(datasetId, {
  used: usedLabels,
  onChange: () => {
    replay();
    showOverlayColours();
  },
});

// Editors can be asked (S / D / 1-9 / Space); the answers are strokes like any other.
const asker = canEdit ? createImageAsker({ datasetId, view, annotations, labels, onScribbled: () => replay() }) : null;
const collection = canEdit ? createCollectionPanel({ datasetId, projectId: Number($('#collection').dataset.projectId) }) : null;

function usedLabels() {
  return new Set(annotations.live('scribble').map((a) => a.payload.label).filter(Boolean));
}

const strokeColour = (a) => (a.payload.erase ? null : labels.colour(a.payload.label) || '#888888');

// The scribbles and links exactly as the annotation list has them.
function replay() {
  scribbles.replay(annotations.live('scribble').flatMap((a) => a.payload.strokes.map((stroke) => ({ stroke, colour: strokeColour(a) }))));
  brush.repaint();
  linkLayer.links = strokeLinks(annotations.store.items);
  showConflicts([]);
  view.invalidate();
}

// Conflicts that stopped a run: listed, and their strokes outlined until the annotations change.
function showConflicts(conflicts) {
  const ids = new Set(conflicts.flatMap((c) => c.annotation_ids));
  const outlined = linkLayer.flagged.length;
  linkLayer.flagged = annotations.store.items.filter((a) => ids.has(a.id) && a.kind === 'scribble').flatMap((a) => a.payload.strokes);
  canvas.dataset.conflicts = String(conflicts.length);
  $('#conflicts').replaceChildren(...conflicts.map((c) => {
    const item = document.createElement('li');
    item.textContent = c.message;
    return item;
  }));
  $('#conflicts-box').hidden = !conflicts.length;
  if (outlined || linkLayer.flagged.length) view.invalidate();
}

function renderCounts(store) {
  const scribbled = annotations.live('scribble');
  const erasing = scribbled.filter((a) => a.payload.erase).length;
  const links = strokeLinks(store.items).length;
  canvas.dataset.strokes = String(scribbled.length);
  canvas.dataset.links = String(links);
  canvas.dataset.pending = String(store.pending);
  $('#annotation-count').textContent = `${scribbled.length} stroke(s)${erasing ? `, ${erasing} erasing` : ''}, ${links} link(s)`
    + (store.pending ? ` · saving ${store.pending}…` : '');
  if (canEdit) {
    $('#undo').disabled = !store.canUndo && !store.pending;
    $('#redo').disabled = !store.canRedo;
  }
  renderStale();
}

function renderStale() {
  const run = state.shown && state.shown.run;
  $('#stale').hidden = !(run && run.annotation_revision < annotations.store.revision);
}

// ---- tools ------------------------------------------------------------------------------

const tools = createTools({ view, root, canEdit, state, scribbles, linkLayer, annotations, labels });
const { brush, linkTool } = tools;

function undoRedo(which) {
  if (which === 'undo' && !annotations.store.canUndo && !annotations.store.pending) return status('Nothing to undo.');
  if (which === 'redo' && !annotations.store.canRedo) return status('Nothing to redo.');
  return annotations.undoRedo(which).then(() => runPanel.annotationsChanged()).catch(report);
}

// ---- results ----------------------------------------------------------------------------

function showOverlayColours() {
  const colours = overlay.recolour($('#overlay-colour').value, labels.colour);
  if (colours) overlay.legend($('#legend'), colours, labels.display);
  view.invalidate();
}

function setOverlayVisible(visible) {
  $('#overlay-on').checked = visible;
  overlay.layer.visible = visible && Boolean(state.shown);
  canvas.dataset.overlay = overlay.layer.visible ? 'on' : 'off';
  $('#legend').hidden = !overlay.layer.visible;
  view.invalidate();
}

// On a slide a run segments what is on screen (its region) unless the expert asks for the
// whole slide: seconds instead of minutes. Zoomed out to the whole slide, it is the whole run.
const onScreen = () => Boolean(slide && $('#on-screen') && $('#on-screen').checked);
function runRegion() {
  const shown = view.visible();
  if (!onScreen() || !shown || (shown.width === width && shown.height === height)) return null;
  return shown;
}

const runPanel = createRunPanel({
  datasetId,
  canEdit,
  state,
  live: true,
  runBody: () => {
    const region = runRegion();
    return region ? { region } : {};
  },
  defaultAlgorithm: 'ppc',
  // PPC is the default here because it follows the scribbles closest (docs/cec-ib.md,
  // "Scribbled images"); CEC-IB fits Gaussians to the whole picture and may not.
  algorithmNotes: {
    'cec-ib': 'On images PPC (the default here) follows the scribbles more closely: CEC-IB '
      + 'fits Gaussian clusters to the whole picture, and a cluster may spread over similar '
      + 'colour and texture the scribbles did not cover (a cup taking in the table).',
  },
  // The full-resolution mask (items may be superpixels); drawn from tiles, none is needed.
  loadLabels: (runId) => (tiled ? Promise.resolve(null) : loadMask(runId)),
  // Asked once per run, not after every stroke: the answer lists the scribbled items.
  conflicts: async () => (await api(`/datasets/${datasetId}/side-information`)).conflicts,
  onBlocked: showConflicts,
  onConflicts: showConflicts,
  onResult: async ({ run, result, labels: mask }) => {
    state.shown = { run, result, mask };
    const colours = overlay.show(run.id, mask, result.cluster_labels || [], $('#overlay-colour').value, labels.colour);
    overlay.legend($('#legend'), colours, labels.display);
    canvas.dataset.run = String(run.id);
    canvas.dataset.runRegion = run.region ? `${run.region.x},${run.region.y},${run.region.width},${run.region.height}` : '';
    for (const id of ['#export-clusters', '#export-labels']) $(id).disabled = false;
    setOverlayVisible(true);
    renderStale();
    const where = run.region
      ? `the region on screen (x ${run.region.x}, y ${run.region.y}, ${run.region.width} x ${run.region.height} pixels)`
      : 'the image';
    status(`Run #${run.id}: ${result.n_clusters} clusters shown over ${where} (O hides them).`);
    asker?.refresh();
    collection?.show(run.id);
  },
});

function bindControls() {
  tools.bindControls();
  bind('#fit', 'click', () => view.fit());
  bind('#undo', 'click', () => undoRedo('undo'));
  bind('#redo', 'click', () => undoRedo('redo'));
  bind('#overlay-on', 'change', () => setOverlayVisible($('#overlay-on').checked));
  bind('#overlay-opacity', 'input', () => {
    overlay.layer.alpha = Number($('#overlay-opacity').value) / 100;
    view.invalidate();
  });
  bind('#overlay-colour', 'change', showOverlayColours);
  bind('#export-clusters', 'click', () => state.shown && downloadClusterMask(state.shown.run.id));
  bind('#export-labels', 'click', async () => {
    if (!state.shown) return;
    const { run, result } = state.shown;
    // Drawn from tiles, the page holds no mask of its own: it is read for the export.
    const mask = state.shown.mask || await loadMask(run.id).catch(report);
    if (mask) await downloadLabelMask(run.id, mask, result.cluster_labels || [], labels.names);
  });
  labels.bindControls();
  runPanel.bindControls();
  // Live on a slide: what comes on screen is segmented once the view rests (the run for the
  // region left is cancelled by the next one).
  let moved = null;
  view.onMove(() => {
    if (!onScreen() || !runPanel.isLive() || !ready()) return;
    clearTimeout(moved);
    moved = setTimeout(() => {
      const shown = state.shown && state.shown.run.region;
      const now = runRegion();
      const same = shown && now && ['x', 'y', 'width', 'height'].every((k) => shown[k] === now[k]);
      if (!same) runPanel.annotationsChanged();
    }, VIEW_REST_MS);
  });
  asker?.bind();
  collection?.bind();
  channels?.bind();
  const keys = {
    f: () => view.fit(),
    h: () => tools.setTool('pan'),
    o: () => state.shown && setOverlayVisible(!overlay.layer.visible),
    'ctrl+enter': () => (ready() ? runPanel.start() : status('Runs can start once the image is featurized.', 'error')),
  };
  if (canEdit) {
    Object.assign(keys, {
      b: () => tools.setTool('brush'),
      e: () => tools.setTool('eraser'),
      l: () => tools.setTool('link'),
      '[': () => tools.setRadius(tools.radius() - 1),
      ']': () => tools.setRadius(tools.radius() + 1),
      escape: () => linkTool.clear(),
      'ctrl+z': () => undoRedo('undo'),
      'ctrl+shift+z': () => undoRedo('redo'),
    });
    // 1-9 answer an asked item question, and otherwise pick the brush's label.
    for (const key of '123456789') {
      keys[key] = async () => {
        if (!(await asker.label(Number(key)))) tools.pickLabel(Number(key));
      };
    }
    Object.assign(keys, asker.shortcuts());
  }
  bindKeys(keys);
}

const ready = () => Boolean(state.dataset && state.dataset.status === 'ready');

function showDataset(dataset) {
  state.dataset = dataset;
  root.dataset.status = dataset.status;
  if (canEdit) $('#run').disabled = !ready();
  channels?.showFeatures(dataset);
}

// An image that is still being featurized can be painted (the API takes scribbles meanwhile);
// runs need the features, so the status line follows the featurization until it ends.
let following = false;
async function followFeaturization() {
  if (following) return;
  following = true;
  try {
    await followUntilDone();
  } finally {
    following = false;
  }
}

async function followUntilDone() {
  while (state.dataset.status === 'featurizing') {
    const f = state.dataset.featurization || {};
    status(`Featurizing the image (${Math.round(100 * (f.progress || 0))}%): paint now; runs can start once it is ready.`);
    await new Promise((resolve) => { setTimeout(resolve, 1000); });
    showDataset(await api(`/datasets/${datasetId}`));
    if (ready()) status('The image is featurized: runs can start.');
  }
  if (state.dataset.status === 'failed') {
    status(`Featurization failed: ${(state.dataset.featurization || {}).error || 'unknown reason'}`, 'error');
  }
}

const picturePath = (query) => (level, column, row) => `/datasets/${datasetId}/image_files/${level}/${column}_${row}.png${query ? `?display=${query}` : ''}`;

async function showPicture() {
  if (!tiled && !measured) {
    picture.image = await rawPicture(await apiBinary(`/datasets/${datasetId}/image`), width, height);
    return;
  }
  const [descriptor, query] = await Promise.all([readDescriptor(`/datasets/${datasetId}/image.dzi`), channels ? channels.load() : '']);
  const redraw = (r) => view.invalidate(r);
  picture.tiles = createTiles(descriptor, picturePath(query), redraw);
  if (tiled) overlay.useTiles(descriptor, redraw);
}

function showChannels(query) {
  picture.tiles.setPath(picturePath(query));
  view.invalidate();
}

async function main() {
  await showPicture();
  const [dataset] = await Promise.all([
    api(`/datasets/${datasetId}`), annotations.load(), runPanel.loadAlgorithms(),
  ]);
  showDataset(dataset);
  tools.setLinkKind('same');
  tools.setTool(canEdit ? 'brush' : 'pan');
  bindControls();
  await runPanel.resume(); // the newest result is shown, a run still going is followed
  view.invalidate();
  root.dataset.ready = 'true';
  status(canEdit ? 'Paint with the brush (B); 1–9 pick a label, E erases, Ctrl+Enter runs.' : 'Read-only: you can look at the scribbles and the results of runs.');
  await followFeaturization();
}

window.imageWorkspace = { view, state, picture, overlay, scribbles, labels, annotations, labelMaskBlob }; // debugging, tests
main().catch(report);
