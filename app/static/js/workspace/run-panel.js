// The run panel: choose an algorithm, fill in the parameter form generated from its JSON Schema
// (the one the server validates runs with), run, follow the progress, cancel, and load a result.
//
// It knows the dataset only by its id and hands every result to its caller, so any workspace
// page can have one. It expects these elements: #algorithm, #algorithm-summary, #params,
// #progress, #progress-bar, #progress-text, #run-select, #run-metrics, #run-warnings, and for
// editors #run and #cancel-run.
import { api, apiBinary, parseNpyInt32 } from './api.js';
import { buildForm } from './schema-form.js';
import { $, bind, report, status } from './ui.js';

const FINISHED = ['succeeded', 'failed', 'cancelled'];

// One cluster number per item.
export async function runLabels(runId) {
  return parseNpyInt32(await apiBinary(`/runs/${runId}/result?format=npy`));
}

// Lists the runs with a result, keeping the choice already made.
export function fillRunSelect(select, runs) {
  const current = select.value;
  select.replaceChildren(new Option('—', ''));
  for (const run of runs) {
    if (run.status === 'succeeded') select.append(new Option(`#${run.id} ${run.algorithm}`, run.id));
  }
  select.value = current;
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

function showProgress(run) {
  const bar = $('#progress');
  bar.dataset.status = run.status;
  const done = FINISHED.includes(run.status);
  $('#progress-bar').style.width = done ? '100%' : `${Math.min(95, 10 + 5 * (run.progress_iteration || 0))}%`;
  const cost = run.progress_cost === null ? '–' : run.progress_cost.toFixed(4);
  $('#progress-text').textContent = `run #${run.id} ${run.status} · iteration ${run.progress_iteration ?? 0} · cost ${cost}`
    + (run.error ? ` · ${run.error}` : '');
  $('#cancel-run').disabled = done;
}

function showResultLine(result) {
  $('#run-metrics').textContent = resultSummary(result).join(' · ');
  const warnings = $('#run-warnings');
  warnings.replaceChildren(...(result.metrics.warnings || []).map((text) => {
    const item = document.createElement('li');
    item.textContent = text;
    return item;
  }));
  warnings.hidden = !warnings.children.length;
}

// Options:
//   datasetId, canEdit
//   state       where the panel keeps algorithms, readParams, runs and activeRun; pass the page's
//               own state object to see them in its debugging hook
//   conflicts   () => the current conflicts, or a promise of them; a run is refused while the
//               algorithm uses any
//   onBlocked   (conflicts) => …  a run was not asked for because of these (the check above)
//   onConflicts (conflicts) => …  the server refused a run because of these
//   onRuns      (runs) => …  the list of runs changed
//   onResult    async ({ run, result, labels }) => …  show a result (before its summary line)
//   loadLabels  async (runId) => labels  what `labels` is: by default one cluster per item (NPY);
//               an image page loads the full-resolution mask instead (items may be superpixels)
//   defaultAlgorithm  the algorithm chosen first
export function createRunPanel({
  datasetId,
  canEdit,
  state = { algorithms: [], readParams: () => ({}), runs: [] },
  conflicts = () => [],
  onBlocked = () => {},
  onConflicts = () => {},
  onRuns = () => {},
  onResult = () => {},
  loadLabels = runLabels,
  defaultAlgorithm = 'cec-ib',
}) {
  const chosen = () => state.algorithms.find((a) => a.id === $('#algorithm').value);

  function chooseAlgorithm() {
    const algorithm = chosen();
    $('#algorithm-summary').textContent = `${algorithm.summary} ${algorithm.side_information_mapping}`;
    state.readParams = buildForm($('#params'), algorithm.parameters);
  }

  async function loadAlgorithms() {
    state.algorithms = (await api('/algorithms')).items;
    for (const a of state.algorithms) $('#algorithm').append(new Option(a.name, a.id));
    $('#algorithm').value = state.algorithms.some((a) => a.id === defaultAlgorithm) ? defaultAlgorithm : state.algorithms[0].id;
    chooseAlgorithm();
  }

  async function start() {
    if (!canEdit) return;
    const algorithm = chosen();
    try {
      // Only conflicts between kinds of annotation the algorithm reads can stop it.
      const blocking = (await conflicts()).filter((c) => c.needs.every((kind) => algorithm.uses.includes(kind)));
      if (blocking.length) {
        onBlocked(blocking);
        status(`The annotations contradict each other (${blocking.length} conflict(s) that `
          + `${algorithm.name} would use); resolve them before running.`, 'error');
        return;
      }
      const run = await api('/runs', {
        method: 'POST',
        body: { dataset_id: datasetId, algorithm: $('#algorithm').value, params: state.readParams() },
      });
      state.activeRun = run.id;
      showProgress(run);
      follow(run.id);
    } catch (error) {
      if (error.body && error.body.conflicts) onConflicts(error.body.conflicts);
      report(error);
    }
  }

  function follow(runId) {
    const source = new EventSource(`/api/v1/runs/${runId}/events`);
    source.addEventListener('progress', async (event) => {
      const run = JSON.parse(event.data);
      showProgress(run);
      if (FINISHED.includes(run.status)) {
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
    fillRunSelect($('#run-select'), state.runs);
    onRuns(state.runs);
  }

  async function showRun(runId) {
    try {
      const [run, result, labels] = await Promise.all([
        api(`/runs/${runId}`), api(`/runs/${runId}/result`), loadLabels(runId),
      ]);
      $('#run-select').value = String(runId);
      await onResult({ run, result, labels });
      showResultLine(result);
    } catch (error) {
      report(error);
    }
  }

  function bindControls() {
    bind('#algorithm', 'change', chooseAlgorithm);
    if (canEdit) {
      bind('#run', 'click', start);
      bind('#cancel-run', 'click', () => api(`/runs/${state.activeRun}/cancel`, { method: 'POST' }));
    }
    bind('#run-select', 'change', () => $('#run-select').value && showRun(Number($('#run-select').value)));
  }

  return { state, loadAlgorithms, loadRuns, showRun, start, bindControls };
}
