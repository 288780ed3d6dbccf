// What the scatterplot shows: a view's coordinates, the colouring (labels, clusters of the
// shown run or ground truth) with its legend, and the hover tooltip.
import { redrawAnnotations } from './annotations.js';
import { api, apiBinary } from './api.js';
import { UNLABELED, colourAt, renderLegend } from './palette.js';
import { datasetId, palette, plot, state } from './state.js';
import { $, bind, report } from './ui.js';

export async function loadView(draw = true) {
  const viewId = $('#view-select').value;
  const coords = new Float32Array(await apiBinary(`/datasets/${datasetId}/views/${viewId}/coordinates`));
  await plot.setPoints(coords);
  if (draw) {
    await recolour();
    redrawAnnotations(); // links move with the points; boundaries belong to their view
  }
}

export async function recolour() {
  const mode = $('#color-by').value;
  const n = plot.size;
  const values = new Int32Array(n);
  let colors = [UNLABELED];
  if (mode === 'labels' && state.side && $('#show-labels').checked) {
    colors = [UNLABELED, ...state.side.label_names.map(palette.colour)];
    state.side.label_names.forEach((name, code) => {
      for (const i of state.side.labeled_items[name]) values[i] = code + 1;
    });
  } else if (mode === 'truth' && state.groundTruth) {
    colors = [UNLABELED, ...state.dataset.ground_truth_classes.map((_, k) => colourAt(k))];
    state.groundTruth.forEach((code, i) => { values[i] = code + 1; });
  } else if (mode === 'clusters' && state.shownRun) {
    const { labels } = state.shownRun;
    let k = 0;
    labels.forEach((c, i) => { values[i] = c + 1; k = Math.max(k, c + 1); });
    colors = [UNLABELED, ...Array.from({ length: k }, (_, j) => colourAt(j))];
  }
  await plot.setCategories(values, colors);
  $('#plot').dataset.colorBy = mode;
  renderLegend($('#legend'), legendNames(mode, colors), colors.slice(1));
}

function legendNames(mode, colors) {
  let names = [];
  if (mode === 'labels' && state.side && $('#show-labels').checked) names = state.side.label_names;
  if (mode === 'truth' && state.dataset.ground_truth_classes) names = state.dataset.ground_truth_classes;
  if (mode === 'clusters' && state.shownRun) names = colors.slice(1).map((_, j) => `cluster ${j}`);
  return names;
}

// Hovering fetches the item; a later hover (or leaving the point) makes an earlier answer moot.
let hoverToken = 0;

export async function showHover(index) {
  const token = ++hoverToken;
  const tip = $('#tooltip');
  try {
    const page = await api(`/datasets/${datasetId}/items?limit=1&offset=${index}`);
    if (token !== hoverToken || !page.items.length) return;
    const item = page.items[0];
    const rows = state.dataset.feature_names.slice(0, 12).map((name, j) => `${name}: ${Number(item.values[j]).toPrecision(4)}`);
    tip.textContent = [`#${item.index} ${item.id}`, item.ground_truth ? `truth: ${item.ground_truth}` : null, ...rows]
      .filter(Boolean).join('\n');
    const [x, y] = plot.toScreen(index);
    tip.style.left = `${x + 12}px`;
    tip.style.top = `${y + 12}px`;
    tip.hidden = false;
  } catch (error) {
    report(error);
  }
}

export function hideHover() {
  hoverToken += 1;
  $('#tooltip').hidden = true;
}

export function bindView() {
  bind('#view-select', 'change', () => loadView());
  bind('#color-by', 'change', recolour);
  bind('#show-labels', 'change', recolour);
  for (const layer of ['links', 'boundaries']) {
    bind(`#show-${layer}`, 'change', (event) => {
      plot.show[layer] = event.target.checked;
      plot.drawOverlay();
    });
  }
  bind('#fit-view', 'click', () => plot.fitAll());
}
