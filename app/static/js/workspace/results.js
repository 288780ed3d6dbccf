// The shown run's result beside the run panel (cluster table, stale marker), comparing two
// runs, and the exports.
import { allPages } from './api.js';
import { csvLine } from './csv.js';
import { colourAt } from './palette.js';
import { fillRunSelect, runLabels } from './run-panel.js';
import { datasetId, plot, state } from './state.js';
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
    tr.addEventListener('click', () => plot.select(labels.reduce((acc, v, i) => (v === c && acc.push(i), acc), [])));
    body.append(tr);
  });
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

function exportCsv() {
  const n = plot.size;
  const label = new Array(n).fill('');
  if (state.side) {
    for (const name of state.side.label_names) for (const i of state.side.labeled_items[name]) label[i] = name;
  }
  const clusters = state.shownRun ? state.shownRun.labels : null;
  const lines = [csvLine(['item', 'label', 'cluster'])];
  for (let i = 0; i < n; i += 1) lines.push(csvLine([i, label[i], clusters ? clusters[i] : '']));
  download(`dataset-${datasetId}-labels-clusters.csv`, `${lines.join('\n')}\n`, 'text/csv');
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
