// The shown run's result beside the run panel (cluster table, stale marker), comparing two
// runs, and the exports.
import { allPages } from './api.js';
import { colourAt } from './palette.js';
import { fillRunSelect, runLabels } from './run-panel.js';
import { annotate } from './annotations.js';
import { canEdit, datasetId, palette, plot, state } from './state.js';
import { adjustedRandIndex, contingency } from './stats.js';
import { $, bind, report, status } from './ui.js';

export function renderStale() {
  const run = state.shownRun && state.shownRun.run;
  $('#stale').hidden = !(run && state.side && run.annotation_revision < state.side.revision);
}

export function renderClusterTable() {
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
    tr.querySelector('.swatch').style.background = colourAt(c);
    tr.children[2].textContent = labelsText;
    tr.dataset.cluster = String(c);
    tr.addEventListener('click', () => plot.select(members(c)));
    if (canEdit) {
      const accept = document.createElement('button');
      accept.type = 'button';
      accept.className = 'link icon';
      accept.textContent = 'label…';
      accept.title = `label every item of cluster ${c} (A)`;
      accept.addEventListener('click', (event) => {
        event.stopPropagation();
        startAccept(c, composition[c]);
      });
      tr.children[2].append(' ', accept);
    }
    body.append(tr);
  });
}

function members(cluster) {
  const { labels } = state.shownRun;
  const out = [];
  for (let i = 0; i < labels.length; i += 1) if (labels[i] === cluster) out.push(i);
  return out;
}

// ---- accept a cluster as a label ------------------------------------------------------

// Names the cluster in place (its most common label, else "cluster c"); Enter labels all its
// items in one annotation, Esc gives up.
function startAccept(cluster, composition = {}) {
  const cell = $(`#clusters tr[data-cluster="${cluster}"]`).children[2];
  const input = document.createElement('input');
  input.className = 'inline-edit';
  input.setAttribute('aria-label', `label for cluster ${cluster}`);
  const common = Object.entries(composition).sort((a, b) => b[1] - a[1])[0];
  input.value = common ? common[0] : `cluster ${cluster}`;
  cell.replaceChildren(input);
  input.addEventListener('click', (event) => event.stopPropagation());
  input.addEventListener('keydown', async (event) => {
    event.stopPropagation(); // typing is text, not shortcuts
    if (event.key === 'Escape') renderClusterTable();
    if (event.key !== 'Enter') return;
    const label = input.value.trim();
    if (!label) return;
    palette.colour(label);
    await annotate({ kind: 'label', items: members(cluster), label });
  });
  input.focus();
  input.select();
}

// "A": the cluster of the selected points (they must all be in one).
export function acceptSelectedCluster() {
  if (!state.shownRun || !state.selection.length) {
    status('Show a run and select points of one cluster first.', 'error');
    return;
  }
  const { labels } = state.shownRun;
  const cluster = labels[state.selection[0]];
  if (!state.selection.every((i) => labels[i] === cluster)) {
    status('The selection spans several clusters: select points of one cluster.', 'error');
    return;
  }
  startAccept(cluster);
}

// ---- comparison -----------------------------------------------------------------------

export function listRuns(runs) {
  for (const select of [$('#compare-a'), $('#compare-b')]) fillRunSelect(select, runs);
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

// ---- export ---------------------------------------------------------------------------

function download(name, text, type) {
  const link = document.createElement('a');
  link.href = URL.createObjectURL(new Blob([text], { type }));
  link.download = name;
  link.click();
  setTimeout(() => URL.revokeObjectURL(link.href), 1000);
}

// The server writes it (with the id column, as the run's own CSV): a million rows need not
// pass through the page.
function exportCsv() {
  const run = state.shownRun ? `?run_id=${state.shownRun.run.id}` : '';
  const link = document.createElement('a');
  link.href = `/api/v1/datasets/${datasetId}/labels-clusters.csv${run}`;
  link.download = `dataset-${datasetId}-labels-clusters.csv`;
  link.click();
}

async function exportAnnotations() {
  const { items } = await allPages(`/datasets/${datasetId}/annotations?include_deleted=true`);
  download(`dataset-${datasetId}-annotations.json`, JSON.stringify(items, null, 2), 'application/json');
}

export function bindResults() {
  bind('#compare', 'click', compareRuns);
  bind('#export-csv', 'click', exportCsv);
  bind('#export-annotations', 'click', exportAnnotations);
}
