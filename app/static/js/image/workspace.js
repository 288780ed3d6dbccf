// The image workspace: paint scribbles on the picture, link strokes, run, see the result as an
// overlay, export masks. Everything goes through the public JSON API. This entry point wires
// the parts together:
//   canvas.js       the visible canvas: layers, zoom / pan, pointer routing, frame scheduling
//   strokes.js      the scribble layer (replayed from the annotations) and stroke geometry
//   brush.js        brush and eraser         links.js     the link tool and link lines
//   labels.js       the label palette        annotations.js  server sync, undo / redo
//   overlay.js      result overlay and mask exports;  png.js  exact cluster-mask decoding
// and from the scatterplot workspace the page-independent run panel, palette, keys and ui.
import { api } from '../workspace/api.js';
import { bindKeys } from '../workspace/keyboard.js';
import { createRunPanel } from '../workspace/run-panel.js';
import { $, bind, report, status } from '../workspace/ui.js';
import { createAnnotations } from './annotations.js';
import { createBrush } from './brush.js';
import { createCanvasView } from './canvas.js';
import { createLabels } from './labels.js';
import { createLinkLayer, createLinkTool, strokeLinks } from './links.js';
import { createOverlay, downloadClusterMask, downloadLabelMask, labelMaskBlob, loadMask } from './overlay.js';
import { createScribbleLayer } from './strokes.js';

const root = $('#workspace');
const canvas = $('#image');
const datasetId = Number(root.dataset.datasetId);
const canEdit = root.dataset.canEdit === 'true';
const width = Number(root.dataset.width);
const height = Number(root.dataset.height);
const state = { dataset: null, algorithms: [], readParams: () => ({}), runs: [], shown: null, tool: null, linkKind: 'same' };

const view = createCanvasView(canvas, { width, height });
const picture = view.addLayer({
  image: null,
  draw(ctx, r) {
    if (this.image) ctx.drawImage(this.image, r.x0, r.y0, r.x1 - r.x0, r.y1 - r.y0, r.x0, r.y0, r.x1 - r.x0, r.y1 - r.y0);
  },
});
const overlay = createOverlay(width, height);
view.addLayer(overlay.layer);
const scribbles = view.addLayer(createScribbleLayer(width, height));
const linkLayer = view.addLayer(createLinkLayer());

const annotations = createAnnotations(datasetId, {
  onReload: () => {
    labels.adopt(usedLabels());
    replay();
  },
  onAdded: (annotation) => {
    if (annotation.kind === 'scribble') paintScribble(annotation); // again: a failed save may have replayed
    else linkLayer.links = strokeLinks(annotations.store.items);
    view.invalidate();
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

function usedLabels() {
  return new Set(annotations.live('scribble').map((a) => a.payload.label).filter(Boolean));
}

const strokeColour = (a) => (a.payload.erase ? null : labels.colour(a.payload.label) || '#888888');

function paintScribble(annotation) {
  for (const stroke of annotation.payload.strokes) scribbles.paint(stroke, strokeColour(annotation));
}

// The scribbles and links exactly as the annotation list has them.
function replay() {
  scribbles.replay(annotations.live('scribble').flatMap((a) => a.payload.strokes.map((stroke) => ({ stroke, colour: strokeColour(a) }))));
  brush.repaint();
  linkLayer.links = strokeLinks(annotations.store.items);
  view.invalidate();
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

const radius = () => Number($('#radius') ? $('#radius').value : 6);
let lastPointer = null;
canvas.addEventListener('pointermove', (e) => { lastPointer = view.toImage(e); });

const brush = createBrush({
  view,
  layer: scribbles,
  cursor: $('#brush-cursor'),
  radius,
  colour: () => labels.colour(labels.active),
  onStroke: (stroke, erase) => annotations.save(erase
    ? { kind: 'scribble', erase: true, strokes: [stroke] }
    : { kind: 'scribble', label: labels.active, strokes: [stroke] }),
});

const linkTool = createLinkTool({
  view,
  layer: linkLayer,
  candidates: () => annotations.live('scribble').filter((a) => !a.payload.erase).flatMap((a) => a.payload.strokes),
  kind: () => state.linkKind,
  onPick: (n) => { $('#link-help').textContent = n ? 'Now click the other stroke (Esc lets go).' : 'Link tool (L): click one stroke, then another.'; },
  onLink: (kind, a, b) => annotations.save(kind === 'same'
    ? { kind: 'must_link', strokes: [a, b] }
    : { kind: 'cannot_link', strokes_a: [a], strokes_b: [b] }),
});

function setTool(name) {
  if (!canEdit && name !== 'pan') return;
  if (name === 'pan') view.setMode('pan');
  else {
    view.setMode('paint');
    brush.erase = name === 'eraser';
    view.setTool(name === 'link' ? linkTool : brush);
  }
  if (name !== 'link') linkTool.clear();
  state.tool = name;
  root.dataset.tool = name;
  for (const button of document.querySelectorAll('button[data-tool]')) button.classList.toggle('active', button.dataset.tool === name);
}

function setLinkKind(kind) {
  state.linkKind = kind;
  for (const button of document.querySelectorAll('[data-link-kind]')) button.classList.toggle('active', button.dataset.linkKind === kind);
}

function setRadius(value) {
  const slider = $('#radius');
  if (!slider) return;
  slider.value = String(Math.max(Number(slider.min), Math.min(Number(slider.max), value)));
  $('#radius-value').textContent = slider.value;
  brush.refresh(lastPointer);
}

function pickLabel(key) {
  const name = labels.byKey(key);
  if (!name) return;
  labels.select(name);
  if (state.tool !== 'brush') setTool('brush'); // picking a colour means painting with it
}

function undoRedo(which) {
  if (which === 'undo' && !annotations.store.canUndo && !annotations.store.pending) return status('Nothing to undo.');
  if (which === 'redo' && !annotations.store.canRedo) return status('Nothing to redo.');
  return annotations.undoRedo(which).catch(report);
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

const runPanel = createRunPanel({
  datasetId,
  canEdit,
  state,
  defaultAlgorithm: 'ppc',
  loadLabels: loadMask, // the full-resolution mask: items may be superpixels
  onConflicts: (conflicts) => status(`The annotations contradict each other: ${conflicts.map((c) => c.message).join('; ')}`, 'error'),
  onResult: async ({ run, result, labels: mask }) => {
    state.shown = { run, result, mask };
    const colours = overlay.show(run.id, mask, result.cluster_labels || [], $('#overlay-colour').value, labels.colour);
    overlay.legend($('#legend'), colours, labels.display);
    canvas.dataset.run = String(run.id);
    for (const id of ['#export-clusters', '#export-labels']) $(id).disabled = false;
    setOverlayVisible(true);
    renderStale();
    status(`Run #${run.id}: ${result.n_clusters} clusters shown over the image (O hides them).`);
  },
});

function bindControls() {
  for (const button of document.querySelectorAll('button[data-tool]')) button.addEventListener('click', () => setTool(button.dataset.tool));
  for (const button of document.querySelectorAll('button[data-link-kind]')) button.addEventListener('click', () => setLinkKind(button.dataset.linkKind));
  bind('#radius', 'input', () => setRadius(Number($('#radius').value)));
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
  bind('#export-labels', 'click', () => state.shown && downloadLabelMask(
    state.shown.run.id, state.shown.mask, state.shown.result.cluster_labels || [], labels.names,
  ));
  labels.bindControls();
  runPanel.bindControls();
  const keys = {
    f: () => view.fit(),
    h: () => setTool('pan'),
    o: () => state.shown && setOverlayVisible(!overlay.layer.visible),
    'ctrl+enter': () => runPanel.start(),
  };
  if (canEdit) {
    Object.assign(keys, {
      b: () => setTool('brush'),
      e: () => setTool('eraser'),
      l: () => setTool('link'),
      '[': () => setRadius(radius() - 1),
      ']': () => setRadius(radius() + 1),
      escape: () => linkTool.clear(),
      'ctrl+z': () => undoRedo('undo'),
      'ctrl+shift+z': () => undoRedo('redo'),
    });
    for (const key of '123456789') keys[key] = () => pickLabel(Number(key));
  }
  bindKeys(keys);
}

// An image that is still being featurized can be painted (the API takes scribbles meanwhile);
// runs need the features, so the status line follows the featurization until it ends.
async function followFeaturization() {
  for (;;) {
    const dataset = await api(`/datasets/${datasetId}`);
    state.dataset = dataset;
    root.dataset.status = dataset.status;
    const f = dataset.featurization || {};
    if (dataset.status === 'failed') return status(`Featurization failed: ${f.error || 'unknown reason'}`, 'error');
    if (dataset.status !== 'featurizing') return undefined;
    status(`Featurizing the image (${Math.round(100 * (f.progress || 0))}%): paint now; runs can start once it is ready.`);
    await new Promise((resolve) => { setTimeout(resolve, 1000); });
  }
}

async function main() {
  const image = new Image();
  image.src = `/api/v1/datasets/${datasetId}/image`;
  await image.decode();
  picture.image = await createImageBitmap(image);
  await Promise.all([annotations.load(), runPanel.loadAlgorithms(), runPanel.loadRuns()]);
  setLinkKind('same');
  setTool(canEdit ? 'brush' : 'pan');
  bindControls();
  view.invalidate();
  root.dataset.ready = 'true';
  status(canEdit ? 'Paint with the brush (B); 1–9 pick a label, E erases, Ctrl+Enter runs.' : 'Read-only: you can look at the scribbles and the results of runs.');
  await followFeaturization();
}

window.imageWorkspace = { view, state, overlay, scribbles, labels, annotations, labelMaskBlob }; // debugging, tests
main().catch(report);
