// The dataset workspace: draw constraints on a scatterplot, run, inspect, correct.
// Everything goes through the public JSON API.
import { api, apiBinary, allPages, parseNpyInt32, ApiError } from './api.js';
import { Plot, PALETTE, UNLABELED } from './plot.js';
import { buildForm } from './schema-form.js';
import { adjustedRandIndex, contingency } from './stats.js';

const $ = (selector) => document.querySelector(selector);
const root = $('#workspace');
const datasetId = Number(root.dataset.datasetId);
const canEdit = root.dataset.canEdit === 'true';
const MAX_DRAWN_LINKS = 3000;

const state = {
  dataset: null,
  views: [],
  selection: [],
  setA: [],
  categories: [], // label names, in the order they got colours
  side: null, // compiled side information
  annotations: [],
  conflicts: [],
  groundTruth: null,
  runs: [],
  shownRun: null, // { run, labels }
  algorithms: [],
  readParams: () => ({}),
  drawing: false,
};

const plot = new Plot($('#plot'), $('#overlay'));
window.workspace = { plot, state }; // for debugging and the browser tests

function status(message, kind = 'info') {
  const box = $('#status');
  box.textContent = message;
  box.dataset.kind = kind;
}

function report(error) {
  status(error instanceof ApiError || error instanceof Error ? error.message : String(error), 'error');
}

function colourOf(name) {
  let index = state.categories.indexOf(name);
  if (index < 0) {
    state.categories.push(name);
    index = state.categories.length - 1;
  }
  return PALETTE[index % PALETTE.length];
}

// ---- colouring -------------------------------------------------------------------------

async function recolour() {
  const mode = $('#color-by').value;
  const n = plot.size;
  const values = new Int32Array(n);
  let colors = [UNLABELED];
  if (mode === 'labels' && state.side) {
    colors = [UNLABELED, ...state.side.label_names.map(colourOf)];
    state.side.label_names.forEach((name, code) => {
      for (const i of state.side.labeled_items[name]) values[i] = code + 1;
    });
  } else if (mode === 'truth' && state.groundTruth) {
    colors = [UNLABELED, ...state.dataset.ground_truth_classes.map((_, k) => PALETTE[k % PALETTE.length])];
    state.groundTruth.forEach((code, i) => { values[i] = code + 1; });
  } else if (mode === 'clusters' && state.shownRun) {
    const { labels } = state.shownRun;
    let k = 0;
    labels.forEach((c, i) => { values[i] = c + 1; k = Math.max(k, c + 1); });
    colors = [UNLABELED, ...Array.from({ length: k }, (_, j) => PALETTE[j % PALETTE.length])];
  }
  await plot.setCategories(values, colors);
  $('#plot').dataset.colorBy = mode;
  renderLegend(mode, colors);
}

function renderLegend(mode, colors) {
  const legend = $('#legend');
  legend.replaceChildren();
  let names = [];
  if (mode === 'labels' && state.side) names = state.side.label_names;
  if (mode === 'truth' && state.dataset.ground_truth_classes) names = state.dataset.ground_truth_classes;
  if (mode === 'clusters' && state.shownRun) names = colors.slice(1).map((_, j) => `cluster ${j}`);
  names.forEach((name, j) => {
    const item = document.createElement('span');
    item.innerHTML = '<i></i>';
    item.firstChild.style.background = colors[j + 1];
    item.append(name);
    legend.append(item);
  });
}

// ---- side information, annotations, conflicts ------------------------------------------

function linksToDraw() {
  const links = [];
  for (const [a, b] of state.side.must_link) links.push({ a, b, kind: 'must' });
  for (const [a, b] of state.side.cannot_link) links.push({ a, b, kind: 'cannot' });
  return links.slice(0, MAX_DRAWN_LINKS);
}

async function refreshAnnotations() {
  const [side, { items: annotations, page }] = await Promise.all([
    api(`/datasets/${datasetId}/side-information`),
    allPages(`/datasets/${datasetId}/annotations`),
  ]);
  state.canUndo = page.can_undo;
  state.canRedo = page.can_redo;
  state.side = side;
  state.annotations = annotations;
  state.conflicts = side.conflicts;
  state.dataset.revision = side.revision;
  plot.links = linksToDraw();
  plot.boundaries = annotations
    .filter((a) => a.kind === 'boundary')
    .map((a) => ({ points: a.payload.points }));
  renderAnnotations();
  renderStale();
  if ($('#color-by').value === 'labels') await recolour();
  else plot.drawOverlay();
  renderCategories();
}

function describe(annotation) {
  const p = annotation.payload;
  switch (annotation.kind) {
    case 'label': return `label “${p.label}”: ${p.items.length} item(s)`;
    case 'must_link': return `must-link: ${p.items.length} items`;
    case 'cannot_link': return `cannot-link: ${p.items_a.length} vs ${p.items_b.length}`;
    case 'boundary': return `boundary “${p.labels[0]}” | “${p.labels[1]}”`;
    default: return annotation.kind;
  }
}

function renderAnnotations() {
  const inConflict = new Set(state.conflicts.flatMap((c) => c.annotation_ids));
  const list = $('#annotations');
  list.replaceChildren();
  for (const annotation of [...state.annotations].reverse()) {
    const li = document.createElement('li');
    li.dataset.annotationId = annotation.id;
    li.textContent = `#${annotation.id} ${describe(annotation)}`;
    if (annotation.confidence !== null && annotation.confidence < 1) li.textContent += ` (confidence ${annotation.confidence})`;
    if (inConflict.has(annotation.id)) li.classList.add('conflict');
    li.addEventListener('click', () => selectAnnotationItems(annotation));
    list.append(li);
  }
  $('#annotation-count').textContent = `${state.annotations.length} live · revision ${state.side.revision}`;
  const conflicts = $('#conflicts');
  conflicts.replaceChildren();
  for (const conflict of state.conflicts) {
    const li = document.createElement('li');
    li.textContent = conflict.message;
    li.title = `annotations ${conflict.annotation_ids.join(', ')}`;
    li.addEventListener('click', () => {
      plot.select(conflict.items);
      for (const el of document.querySelectorAll('#annotations li')) {
        el.classList.toggle('highlight', conflict.annotation_ids.includes(Number(el.dataset.annotationId)));
      }
    });
    conflicts.append(li);
  }
  $('#conflicts-box').hidden = state.conflicts.length === 0;
}

function selectAnnotationItems(annotation) {
  const p = annotation.payload;
  const items = p.items || [...(p.items_a || []), ...(p.items_b || [])];
  if (items.length) plot.select(items);
}

async function annotate(body) {
  try {
    await api(`/datasets/${datasetId}/annotations`, { method: 'POST', body });
    await refreshAnnotations();
    status(`Saved ${describe({ kind: body.kind, payload: body })}.`);
  } catch (error) {
    report(error);
  }
}

async function undoRedo(which) {
  if (!(which === 'undo' ? state.canUndo : state.canRedo)) {
    status(`Nothing to ${which}.`);
    return;
  }
  try {
    const { annotation } = await api(`/datasets/${datasetId}/annotations/${which}`, { method: 'POST' });
    await refreshAnnotations();
    status(`${which === 'undo' ? 'Undid' : 'Redid'} #${annotation.id} ${describe(annotation)}.`);
  } catch (error) {
    report(error);
  }
}

// ---- tools ------------------------------------------------------------------------------

function setSelection(points) {
  state.selection = Array.from(points);
  $('#selection-count').textContent = String(state.selection.length);
}

function renderCategories() {
  const box = $('#categories');
  box.replaceChildren();
  const names = [...new Set([...state.categories, ...(state.side ? state.side.label_names : [])])];
  names.forEach((name, k) => {
    const button = document.createElement('button');
    button.type = 'button';
    button.className = 'chip';
    button.dataset.category = name;
    button.style.borderColor = colourOf(name);
    button.textContent = k < 9 ? `${k + 1} ${name}` : name;
    button.addEventListener('click', () => labelSelection(name));
    box.append(button);
  });
}

function categoryByKey(key) {
  const names = [...new Set([...state.categories, ...(state.side ? state.side.label_names : [])])];
  return names[Number(key) - 1];
}

function needSelection(minimum = 1) {
  if (state.selection.length < minimum) {
    status(`Select at least ${minimum} item(s) first (lasso: drag in Lasso mode, or hold Shift).`, 'error');
    return false;
  }
  return true;
}

async function labelSelection(name) {
  const label = (name || $('#new-category').value).trim();
  if (!label) return status('Type a category name first.', 'error');
  if (!needSelection()) return null;
  colourOf(label);
  $('#new-category').value = '';
  return annotate({ kind: 'label', items: state.selection, label });
}

function setMode(mode) {
  plot.setMode(mode);
  for (const button of document.querySelectorAll('[data-mode]')) {
    button.classList.toggle('active', button.dataset.mode === mode);
  }
}

function startBoundary() {
  state.drawing = true;
  plot.draft = [];
  $('#overlay').classList.add('drawing');
  $('#boundary-help').hidden = false;
  status('Click points of the boundary on the plot; double-click or Enter to finish, Esc to cancel.');
}

function stopBoundary() {
  state.drawing = false;
  plot.draft = null;
  $('#overlay').classList.remove('drawing');
  $('#boundary-help').hidden = true;
  plot.drawOverlay();
}

async function finishBoundary() {
  const points = plot.draft || [];
  const labels = [$('#boundary-left').value.trim(), $('#boundary-right').value.trim()];
  stopBoundary();
  if (points.length < 2) return status('A boundary needs at least 2 points.', 'error');
  const view = Number($('#view-select').value);
  return annotate({ kind: 'boundary', view_id: view, points, labels });
}

function overlayClick(event) {
  if (!state.drawing) return;
  const box = $('#overlay').getBoundingClientRect();
  plot.draft.push(plot.toData(event.clientX - box.left, event.clientY - box.top));
  plot.drawOverlay();
}

// ---- runs -------------------------------------------------------------------------------

function renderStale() {
  const run = state.shownRun && state.shownRun.run;
  $('#stale').hidden = !(run && state.side && run.annotation_revision < state.side.revision);
}

function chooseAlgorithm() {
  const algorithm = state.algorithms.find((a) => a.id === $('#algorithm').value);
  $('#algorithm-summary').textContent = `${algorithm.summary} ${algorithm.side_information_mapping}`;
  state.readParams = buildForm($('#params'), algorithm.parameters);
}

function showProgress(run) {
  const bar = $('#progress');
  bar.dataset.status = run.status;
  const done = ['succeeded', 'failed', 'cancelled'].includes(run.status);
  $('#progress-bar').style.width = done ? '100%' : `${Math.min(95, 10 + 5 * (run.progress_iteration || 0))}%`;
  const cost = run.progress_cost === null ? '–' : run.progress_cost.toFixed(4);
  $('#progress-text').textContent = `run #${run.id} ${run.status} · iteration ${run.progress_iteration ?? 0} · cost ${cost}`
    + (run.error ? ` · ${run.error}` : '');
  $('#cancel-run').disabled = done;
}

function blockingConflicts(algorithm) {
  return state.conflicts.filter((c) => c.needs.every((kind) => algorithm.uses.includes(kind)));
}

async function startRun() {
  if (!canEdit) return;
  const algorithm = state.algorithms.find((a) => a.id === $('#algorithm').value);
  const blocking = blockingConflicts(algorithm);
  if (blocking.length) {
    status(`The annotations contradict each other (${blocking.length} conflict(s) that `
      + `${algorithm.name} would use); resolve them before running.`, 'error');
    return;
  }
  try {
    const run = await api('/runs', {
      method: 'POST',
      body: { dataset_id: datasetId, algorithm: $('#algorithm').value, params: state.readParams() },
    });
    state.activeRun = run.id;
    showProgress(run);
    followRun(run.id);
  } catch (error) {
    if (error.body && error.body.conflicts) {
      state.conflicts = error.body.conflicts;
      renderAnnotations();
    }
    report(error);
  }
}

function followRun(runId) {
  const source = new EventSource(`/api/v1/runs/${runId}/events`);
  source.addEventListener('progress', async (event) => {
    const run = JSON.parse(event.data);
    showProgress(run);
    if (['succeeded', 'failed', 'cancelled'].includes(run.status)) {
      source.close();
      await loadRuns();
      if (run.status === 'succeeded') await showRun(run.id);
    }
  });
  source.onerror = () => source.close();
}

async function loadRuns() {
  const page = await api(`/datasets/${datasetId}/runs?limit=100`);
  state.runs = page.items;
  for (const select of [$('#run-select'), $('#compare-a'), $('#compare-b')]) {
    const current = select.value;
    select.replaceChildren(new Option('—', ''));
    for (const run of state.runs) {
      if (run.status === 'succeeded') select.append(new Option(`#${run.id} ${run.algorithm}`, run.id));
    }
    select.value = current;
  }
}

async function runLabels(runId) {
  return parseNpyInt32(await apiBinary(`/runs/${runId}/result?format=npy`));
}

// One line about a result: clusters, agreement with ground truth, what the engine chose.
function resultSummary(result) {
  const m = result.metrics;
  const p = result.cluster_params || {};
  const parts = [`${m.n_clusters} clusters`];
  if (m.ari !== undefined) parts.push(`ARI ${m.ari.toFixed(3)}`, `NMI ${m.nmi.toFixed(3)}`);
  if (p.n_neighbors !== undefined) parts.push(`chosen t = ${p.n_neighbors}`);
  if (p.smi !== undefined) parts.push(`LSMI ${p.smi.toFixed(3)}`);
  if (p.energy !== undefined) parts.push(`energy ${p.energy.toFixed(4)}`);
  if (p.n_iter !== undefined) parts.push(`${p.n_iter} sweeps${p.converged === false ? ' (not converged)' : ''}`);
  return parts;
}

async function showRun(runId) {
  try {
    const [run, result, labels] = await Promise.all([
      api(`/runs/${runId}`), api(`/runs/${runId}/result`), runLabels(runId),
    ]);
    state.shownRun = { run, labels, metrics: result.metrics };
    $('#run-select').value = String(runId);
    $('#color-by').value = 'clusters';
    await recolour();
    renderClusterTable();
    renderStale();
    $('#run-metrics').textContent = resultSummary(result).join(' · ');
    const warnings = $('#run-warnings');
    warnings.replaceChildren(...(result.metrics.warnings || []).map((text) => {
      const item = document.createElement('li');
      item.textContent = text;
      return item;
    }));
    warnings.hidden = !warnings.children.length;
  } catch (error) {
    report(error);
  }
}

function renderClusterTable() {
  const { labels } = state.shownRun;
  const side = state.side;
  const k = labels.reduce((m, c) => Math.max(m, c + 1), 0);
  const sizes = new Array(k).fill(0);
  labels.forEach((c) => { if (c >= 0) sizes[c] += 1; });
  const composition = Array.from({ length: k }, () => ({}));
  side.label_names.forEach((name) => {
    for (const i of side.labeled_items[name]) {
      const c = labels[i];
      composition[c][name] = (composition[c][name] || 0) + 1;
    }
  });
  const violations = new Array(k).fill(0);
  for (const [a, b] of side.must_link) if (labels[a] !== labels[b]) { violations[labels[a]] += 1; violations[labels[b]] += 1; }
  for (const [a, b] of side.cannot_link) if (labels[a] === labels[b]) violations[labels[a]] += 1;
  const body = $('#clusters tbody');
  body.replaceChildren();
  sizes.forEach((size, c) => {
    const tr = document.createElement('tr');
    const labelsText = Object.entries(composition[c]).map(([n, v]) => `${n}: ${v}`).join(', ') || '—';
    tr.innerHTML = `<td><i class="swatch"></i>${c}</td><td class="num">${size}</td><td></td><td class="num">${violations[c]}</td>`;
    tr.querySelector('.swatch').style.background = PALETTE[c % PALETTE.length];
    tr.children[2].textContent = labelsText;
    tr.addEventListener('click', () => plot.select(labels.reduce((acc, v, i) => (v === c && acc.push(i), acc), [])));
    body.append(tr);
  });
}

async function compareRuns() {
  const a = Number($('#compare-a').value);
  const b = Number($('#compare-b').value);
  if (!a || !b) return status('Choose two finished runs to compare.', 'error');
  try {
    const [la, lb] = await Promise.all([runLabels(a), runLabels(b)]);
    const table = contingency(la, lb);
    const ari = adjustedRandIndex(la, lb);
    const out = $('#comparison');
    const header = table[0].map((_, j) => `<th>${j}</th>`).join('');
    const rows = table.map((row, i) => `<tr><th>${i}</th>${row.map((v) => `<td class="num">${v}</td>`).join('')}</tr>`).join('');
    out.innerHTML = `<p>ARI between #${a} and #${b}: <strong data-testid="compare-ari">${ari.toFixed(3)}</strong></p>`
      + `<table class="grid compact"><thead><tr><th>#${a} \\ #${b}</th>${header}</tr></thead><tbody>${rows}</tbody></table>`;
  } catch (error) {
    report(error);
  }
}

// ---- export -----------------------------------------------------------------------------

function download(name, text, type) {
  const link = document.createElement('a');
  link.href = URL.createObjectURL(new Blob([text], { type }));
  link.download = name;
  link.click();
  setTimeout(() => URL.revokeObjectURL(link.href), 1000);
}

function exportCsv() {
  const n = plot.size;
  const label = new Array(n).fill('');
  if (state.side) {
    for (const name of state.side.label_names) for (const i of state.side.labeled_items[name]) label[i] = name;
  }
  const clusters = state.shownRun ? state.shownRun.labels : null;
  const quote = (v) => (/[",\n]/.test(v) ? `"${v.replaceAll('"', '""')}"` : v);
  const lines = ['item,label,cluster'];
  for (let i = 0; i < n; i += 1) lines.push(`${i},${quote(label[i])},${clusters ? clusters[i] : ''}`);
  download(`dataset-${datasetId}-labels-clusters.csv`, `${lines.join('\n')}\n`, 'text/csv');
}

async function exportAnnotations() {
  const { items } = await allPages(`/datasets/${datasetId}/annotations?include_deleted=true`);
  download(`dataset-${datasetId}-annotations.json`, JSON.stringify(items, null, 2), 'application/json');
}

// ---- hover ------------------------------------------------------------------------------

let hoverToken = 0;
async function showHover(index) {
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

// ---- wiring -----------------------------------------------------------------------------

async function loadView(draw = true) {
  const viewId = $('#view-select').value;
  const coords = new Float32Array(await apiBinary(`/datasets/${datasetId}/views/${viewId}/coordinates`));
  await plot.setPoints(coords);
  if (draw) await recolour();
}

function bind(selector, event, handler) {
  $(selector).addEventListener(event, (e) => Promise.resolve(handler(e)).catch(report));
}

function bindKeys() {
  document.addEventListener('keydown', (event) => {
    if (event.target.matches('input, select, textarea')) return;
    const ctrl = event.ctrlKey || event.metaKey;
    if (ctrl && event.key.toLowerCase() === 'z') {
      event.preventDefault();
      if (canEdit) undoRedo(event.shiftKey ? 'redo' : 'undo');
    } else if (ctrl && event.key === 'Enter') {
      event.preventDefault();
      startRun();
    } else if (!ctrl && /^[1-9]$/.test(event.key) && canEdit) {
      const name = categoryByKey(event.key);
      if (name) labelSelection(name);
    } else if (!ctrl && event.key.toLowerCase() === 'f') {
      plot.fitAll();
    } else if (!ctrl && event.key.toLowerCase() === 'z' && state.selection.length) {
      plot.zoomTo(state.selection);
    } else if (event.key === 'Escape') {
      if (state.drawing) stopBoundary();
      else plot.deselect();
    } else if (event.key === 'Enter' && state.drawing) {
      finishBoundary();
    }
  });
}

async function main() {
  state.dataset = await api(`/datasets/${datasetId}`);
  const [views, algorithms] = await Promise.all([api(`/datasets/${datasetId}/views`), api('/algorithms')]);
  state.views = views.items;
  for (const view of state.views) $('#view-select').append(new Option(view.name, view.id));
  state.algorithms = algorithms.items;
  for (const a of state.algorithms) $('#algorithm').append(new Option(a.name, a.id));
  $('#algorithm').value = state.algorithms.some((a) => a.id === 'cec-ib') ? 'cec-ib' : state.algorithms[0].id;
  chooseAlgorithm();
  if (!state.dataset.ground_truth_classes) $('#color-by option[value=truth]').disabled = true;
  else state.groundTruth = new Int32Array(await apiBinary(`/datasets/${datasetId}/ground-truth`));

  plot.subscribe('select', ({ points }) => setSelection(points));
  plot.subscribe('deselect', () => setSelection([]));
  plot.subscribe('pointOver', (index) => showHover(index));
  plot.subscribe('pointOut', () => { hoverToken += 1; $('#tooltip').hidden = true; });

  await loadView(false);
  await refreshAnnotations(); // draws the points, coloured by label
  await loadRuns();

  bind('#view-select', 'change', () => loadView());
  bind('#color-by', 'change', recolour);
  for (const button of document.querySelectorAll('[data-mode]')) bind(`[data-mode=${button.dataset.mode}]`, 'click', () => setMode(button.dataset.mode));
  bind('#clear-selection', 'click', () => plot.deselect());
  bind('#fit-view', 'click', () => plot.fitAll());
  bind('#zoom-selection', 'click', () => needSelection() && plot.zoomTo(state.selection));
  bind('#label-selection', 'click', () => labelSelection());
  bind('#must-link', 'click', () => needSelection(2) && annotate({ kind: 'must_link', items: state.selection }));
  bind('#set-a', 'click', () => {
    if (!needSelection()) return;
    state.setA = [...state.selection];
    $('#set-a-count').textContent = String(state.setA.length);
  });
  bind('#cannot-link', 'click', () => {
    if (!state.setA.length) return status('First select items and press “Set selection as A”.', 'error');
    if (!needSelection()) return null;
    const b = state.selection.filter((i) => !state.setA.includes(i));
    return annotate({ kind: 'cannot_link', items_a: state.setA, items_b: b });
  });
  bind('#draw-boundary', 'click', startBoundary);
  bind('#finish-boundary', 'click', finishBoundary);
  bind('#overlay', 'click', overlayClick);
  bind('#overlay', 'dblclick', (event) => { event.preventDefault(); return finishBoundary(); });
  bind('#undo', 'click', () => undoRedo('undo'));
  bind('#redo', 'click', () => undoRedo('redo'));
  bind('#algorithm', 'change', chooseAlgorithm);
  bind('#run', 'click', startRun);
  bind('#cancel-run', 'click', () => api(`/runs/${state.activeRun}/cancel`, { method: 'POST' }));
  bind('#run-select', 'change', () => $('#run-select').value && showRun(Number($('#run-select').value)));
  bind('#compare', 'click', compareRuns);
  bind('#export-csv', 'click', exportCsv);
  bind('#export-annotations', 'click', exportAnnotations);
  bindKeys();
  setMode('pan');
  root.dataset.ready = 'true';
  status(`${plot.size.toLocaleString()} items. Lasso: switch to Lasso mode or hold Shift and drag.`);
}

main().catch(report);
