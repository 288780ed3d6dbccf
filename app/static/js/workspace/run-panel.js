// The run panel: choose an algorithm, fill in the parameter form generated from its JSON Schema
// (the one the server validates runs with), run, follow the progress, cancel, and load a result.
//
// It knows the dataset only by its id and hands every result to its caller, so any workspace
// page can have one. It expects these elements: #algorithm, #algorithm-summary, #params,
// #progress, #progress-bar, #progress-text, #run-select, #run-metrics, #run-warnings, and for
// editors #run and #cancel-run.
import { api, apiBinary, parseNpyInt32 } from './api.js';
import { buildForm } from './schema-form.js';
import { $, bind, report, reveal, status } from './ui.js';

const FINISHED = ['succeeded', 'failed', 'cancelled'];
// After a `shutdown` event: try again this often (the stream's own retry delay), this long.
const REFOLLOW_DELAY_MS = 3000;
const REFOLLOW_ATTEMPTS = 40;
// What a run uses by default once the expert has drawn links: PPC reads labels, must-links and
// cannot-links, and beats the constrained k-means family on pairs (docs/constraints.md).
const LINKS_ALGORITHM = 'ppc';
const LINK_KINDS = ['must_link', 'cannot_link'];

// The page's list of conflicts (both workspaces have #conflicts-box), which sits far down the
// other panel: scrolled into view and made to pulse (CSS .pointed) so the eye finds it.
function pointAtConflicts() {
  const box = $('#conflicts-box');
  if (!box) return;
  reveal(box, 'center');
  box.classList.remove('pointed');
  void box.offsetWidth; // restarts the pulse when pointed at again
  box.classList.add('pointed');
}

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
  // How the count was chosen (set, one per group told apart, or a guess): experts asked why.
  if (m.cluster_count && m.cluster_count.how) parts.push(`count: ${m.cluster_count.how}`);
  if (m.ari !== undefined) parts.push(`ARI ${m.ari.toFixed(3)}`, `NMI ${m.nmi.toFixed(3)}`);
  if (p.n_neighbors !== undefined) parts.push(`chosen t = ${p.n_neighbors}`);
  if (p.smi !== undefined) parts.push(`LSMI ${p.smi.toFixed(3)}`);
  if (p.energy !== undefined) parts.push(`energy ${p.energy.toFixed(4)}`);
  if (p.n_iter !== undefined) parts.push(`${p.n_iter} sweeps${p.converged === false ? ' (not converged)' : ''}`);
  const warm = m.warm_start;
  if (warm) parts.push(warm.continued ? `continued run #${warm.from_run}` : 'fresh start');
  return parts;
}

// The sweep budget of a run: its own max_iter, else the algorithm's default (per restart).
function sweepBudget(run, algorithms) {
  const algorithm = algorithms.find((a) => a.id === run.algorithm);
  const schema = algorithm && algorithm.parameters.properties.max_iter;
  return (run.params && run.params.max_iter) || (schema && schema.default) || null;
}

// While running: the sweep (EM iteration) the engine reports, as a share of the most it may
// take; a method usually converges well before, and the bar then jumps to 100%.
function showProgress(run, algorithms = []) {
  const bar = $('#progress');
  bar.dataset.status = run.status;
  const done = FINISHED.includes(run.status);
  const budget = sweepBudget(run, algorithms);
  const sweep = run.progress_iteration ?? 0;
  const percent = done ? 100 : (budget ? Math.min(99, Math.round((100 * sweep) / budget)) : 0);
  $('#progress-bar').style.width = `${percent}%`;
  bar.setAttribute('aria-valuenow', String(percent));
  bar.dataset.percent = String(percent);
  const parts = [`run #${run.id} ${run.status}`];
  if (run.stage === 'preparing') {
    // The server has not fitted this method yet: its kernels may be compiling (a minute after
    // an install), and "sweep 0" would look stuck.
    parts.push('preparing the engine (first run after install)');
  } else if (!done && run.status !== 'queued') {
    parts.push(budget ? `${percent}% · sweep ${sweep} of at most ${budget}` : `sweep ${sweep}`);
    if (run.progress_cost !== null) parts.push(`cost ${run.progress_cost.toFixed(4)}`);
  }
  if (run.status === 'queued' && run.waiting_for) parts.push(`waiting: ${run.waiting_for}`);
  // A worker died under it and another started it again from the start (Dask).
  if (run.attempt > 1) parts.push(`attempt ${run.attempt}: started again after a worker was lost`);
  if (done) parts.push('100%'); // the sweeps it took are in the result line below
  if (run.error) parts.push(run.error);
  $('#progress-text').textContent = parts.join(' · ');
  const cancel = $('#cancel-run');
  if (cancel) cancel.disabled = done;
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
//   showConflicts () => …  point the user at the page's list of conflicts (the "Show conflicts"
//               button of the note beside Run and Live); by default #conflicts-box is scrolled
//               into view and highlighted
//   onRuns      (runs) => …  the list of runs changed
//   onResult    async ({ run, result, labels }) => …  show a result (before its summary line)
//   loadLabels  async (runId) => labels  what `labels` is: by default one cluster per item (NPY);
//               an image page loads the full-resolution mask instead (items may be superpixels)
//   algorithmNotes  { algorithmId: text } added to that method's summary on this page (why the
//               page's default is another method)
//   defaultAlgorithm  the algorithm chosen first
//   annotationKinds  () => the kinds of the live annotations; until the user picks an algorithm
//               or edits a parameter, the panel follows them: with a must-link or cannot-link
//               it chooses LINKS_ALGORITHM (defaultAlgorithm would ignore the links), without,
//               defaultAlgorithm (see followAnnotations)
//   live        offer the "Live" switch: the page then calls annotationsChanged() after each
//               annotation, and the panel re-runs (debounced, the previous run cancelled)
//   runBody     () => more of the POST /runs body (a slide's page: the region on screen)
export function createRunPanel({
  datasetId,
  canEdit,
  state = { algorithms: [], readParams: () => ({}), runs: [] },
  conflicts = () => [],
  onBlocked = () => {},
  onConflicts = () => {},
  showConflicts = pointAtConflicts,
  onRuns = () => {},
  onResult = () => {},
  loadLabels = runLabels,
  defaultAlgorithm = 'cec-ib',
  annotationKinds = () => [],
  live = false,
  algorithmNotes = {},
  runBody = () => ({}),
}) {
  const chosen = () => state.algorithms.find((a) => a.id === $('#algorithm').value);
  const isLive = () => Boolean(live && canEdit && $('#live') && $('#live').checked);
  let userChose = false; // the user picked an algorithm or edited a parameter: never switch

  // `reason` starts the summary line when the panel chose the algorithm itself.
  function chooseAlgorithm(reason = '') {
    const algorithm = chosen();
    const note = algorithmNotes[algorithm.id] ? ` ${algorithmNotes[algorithm.id]}` : '';
    $('#algorithm-summary').textContent = `${reason}${algorithm.summary} ${algorithm.side_information_mapping}${note}`;
    state.readParams = buildForm($('#params'), algorithm.parameters);
  }

  // The method the annotations call for, while the user has not chosen one: CEC-IB reads labels
  // only, so a page with must-links or cannot-links runs PPC, which reads them too.
  function followAnnotations() {
    if (userChose || !state.algorithms.length) return;
    const links = annotationKinds().some((kind) => LINK_KINDS.includes(kind));
    const wanted = links ? LINKS_ALGORITHM : defaultAlgorithm;
    if (!state.algorithms.some((a) => a.id === wanted) || $('#algorithm').value === wanted) return;
    $('#algorithm').value = wanted;
    $('#algorithm').dataset.chosenBy = 'annotations';
    chooseAlgorithm(links ? `Chosen for your links: ${chosen().name} uses them. ` : '');
  }

  async function loadAlgorithms() {
    state.algorithms = (await api('/algorithms')).items;
    for (const a of state.algorithms) $('#algorithm').append(new Option(a.name, a.id));
    $('#algorithm').value = state.algorithms.some((a) => a.id === defaultAlgorithm) ? defaultAlgorithm : state.algorithms[0].id;
    $('#algorithm').dataset.chosenBy = 'default';
    chooseAlgorithm();
  }

  // `overrides` replace parameters of the form (a live re-run asks for a warm start).
  async function start(overrides = {}) {
    if (!canEdit) return;
    const algorithm = chosen();
    try {
      // Only conflicts between kinds of annotation the algorithm reads can stop it.
      const blocking = (await conflicts()).filter((c) => c.needs.every((kind) => algorithm.uses.includes(kind)));
      if (blocking.length) {
        onBlocked(blocking);
        explainRefusal(`the annotations contradict each other (${blocking.length} conflict(s) that `
          + `${algorithm.name} would use). Undo or fix them${isLive() ? ' and Live runs again' : ''}.`, true);
        status(`The annotations contradict each other (${blocking.length} conflict(s) that `
          + `${algorithm.name} would use); resolve them before running.`, 'error');
        return;
      }
      const run = await api('/runs', {
        method: 'POST',
        body: { ...runBody(), dataset_id: datasetId, algorithm: $('#algorithm').value, params: { ...state.readParams(), ...overrides } },
      });
      explainRefusal(null); // it runs
      state.activeRun = run.id;
      state.activeStatus = run.status;
      showProgress(run, state.algorithms);
      follow(run.id);
    } catch (error) {
      const conflicted = Boolean(error.body && error.body.conflicts);
      if (conflicted) onConflicts(error.body.conflicts);
      explainRefusal(error.message, conflicted);
      report(error);
    }
  }

  // Why the last run did not start, in a note beside Run and Live (made in bindControls): the
  // status line under the plot is easily missed, and with Live on the plot would otherwise just
  // stop following the annotations without a word. `reason` null hides the note.
  function explainRefusal(reason, conflicted = false) {
    const note = $('#run-note');
    if (!note) return;
    note.hidden = reason === null;
    if (reason === null) return;
    const text = document.createElement('span');
    text.textContent = `${isLive() ? 'Live paused' : 'Not run'}: ${reason}`;
    note.replaceChildren(text);
    if (conflicted) {
      const link = document.createElement('button');
      link.type = 'button';
      link.className = 'link';
      link.textContent = 'Show conflicts';
      link.addEventListener('click', showConflicts);
      note.append(' ', link);
    }
  }

  function follow(runId) {
    const source = new EventSource(`/api/v1/runs/${runId}/events`);
    source.addEventListener('progress', async (event) => {
      const run = JSON.parse(event.data);
      if (state.activeRun !== run.id) return source.close(); // superseded (live re-run)
      state.activeStatus = run.status;
      showProgress(run, state.algorithms);
      if (FINISHED.includes(run.status)) {
        source.close();
        await loadRuns();
        if (run.status === 'succeeded') await showRun(run.id);
      }
      return undefined;
    });
    // The server is stopping: say so, and follow the run again once it answers (start-up
    // recovery then says what became of it), trying every few seconds for a while.
    source.addEventListener('shutdown', () => {
      source.close();
      status(`The server is restarting; run #${runId} will be followed again once it is back.`);
      refollow(runId, REFOLLOW_ATTEMPTS);
    });
    source.onerror = () => source.close();
  }

  function refollow(runId, attemptsLeft) {
    setTimeout(async () => {
      if (state.activeRun !== runId) return; // another run was started meanwhile
      try {
        showProgress(await api(`/runs/${runId}`), state.algorithms);
      } catch (error) {
        if (attemptsLeft > 1) refollow(runId, attemptsLeft - 1);
        else status(`The server has not come back; reload the page to follow run #${runId}.`, 'error');
        return;
      }
      status(`The server is back; following run #${runId} again.`);
      follow(runId);
    }, REFOLLOW_DELAY_MS);
  }

  // ---- live: re-run after each annotation -----------------------------------------------
  // The first act after a quiet spell runs at once; acts that follow it within LIVE_DELAY_MS
  // (a burst of quick labels) wait until the burst ends and start one run, which cancels the
  // one the burst's first act started.
  const LIVE_DELAY_MS = 200;
  let liveTimer = null;
  let lastAct = -Infinity;

  async function rerun() {
    const previous = state.activeRun;
    if (previous !== undefined && !FINISHED.includes(state.activeStatus)) {
      await api(`/runs/${previous}/cancel`, { method: 'POST' }).catch(() => {}); // may have ended
    }
    // Live re-runs continue the last result where the algorithm can (PPC's warm_start): a
    // fresh start after each act could redraw the clusters (docs/ppc.md, "Warm starts").
    const offers = chosen().parameters.properties.warm_start !== undefined;
    await start(offers ? { warm_start: true } : {});
  }

  function annotationsChanged() {
    followAnnotations();
    if (!live || !canEdit || !$('#live').checked) return;
    const now = performance.now();
    const quiet = now - lastAct >= LIVE_DELAY_MS && liveTimer === null;
    lastAct = now;
    clearTimeout(liveTimer);
    liveTimer = null;
    if (quiet) {
      rerun().catch(report);
      return;
    }
    liveTimer = setTimeout(() => {
      liveTimer = null;
      rerun().catch(report);
    }, LIVE_DELAY_MS);
  }

  async function loadRuns() {
    const page = await api(`/datasets/${datasetId}/runs?limit=100`);
    state.runs = page.items;
    fillRunSelect($('#run-select'), state.runs);
    onRuns(state.runs);
  }

  // On opening the page: the newest finished run is shown, and a run still going is followed.
  async function resume() {
    await loadRuns();
    const active = state.runs.find((r) => !FINISHED.includes(r.status));
    if (active) {
      state.activeRun = active.id;
      state.activeStatus = active.status;
      showProgress(active, state.algorithms);
      follow(active.id);
    }
    const latest = state.runs.find((r) => r.status === 'succeeded');
    if (latest && !$('#run-select').value) await showRun(latest.id);
  }

  async function showRun(runId) {
    try {
      const [run, result, labels] = await Promise.all([
        api(`/runs/${runId}`), api(`/runs/${runId}/result?labels=false`), loadLabels(runId),
      ]);
      $('#run-select').value = String(runId);
      await onResult({ run, result, labels });
      showResultLine(result);
      if (state.activeRun === undefined || state.activeRun === run.id) showProgress(run, state.algorithms);
    } catch (error) {
      report(error);
    }
  }

  function bindControls() {
    bind('#algorithm', 'change', () => {
      userChose = true;
      $('#algorithm').dataset.chosenBy = 'user';
      chooseAlgorithm();
    });
    bind('#params', 'input', () => { userChose = true; });
    if (live && canEdit) {
      $('#live-box').hidden = false;
      bind('#live', 'change', () => explainRefusal(null)); // a paused Live switched off, or on afresh
    }
    if (canEdit) {
      const note = document.createElement('p'); // the shared template has no place for it
      note.id = 'run-note';
      note.className = 'run-note small';
      note.dataset.testid = 'run-note';
      note.setAttribute('role', 'status');
      note.hidden = true;
      $('#run').closest('.row').after(note);
      bind('#run', 'click', () => start());
      bind('#cancel-run', 'click', () => api(`/runs/${state.activeRun}/cancel`, { method: 'POST' }));
    }
    bind('#run-select', 'change', () => $('#run-select').value && showRun(Number($('#run-select').value)));
  }

  return { state, loadAlgorithms, loadRuns, resume, showRun, start, bindControls, annotationsChanged, isLive };
}
