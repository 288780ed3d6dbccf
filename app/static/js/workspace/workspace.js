// The dataset workspace: draw constraints on a scatterplot, run, inspect, correct. Everything
// goes through the public JSON API. This entry point wires the parts together:
//   state.js        what they share (dataset id, plot, state, window.workspace)
//   view.js         coordinates, colouring, legend, hover
//   tools.js        selection, label chips, links, boundaries
//   annotations.js  annotation list, undo / redo, conflicts
//   run-panel.js    algorithm form, run, progress, result loading (page-independent)
//   results.js      cluster table, stale marker, comparison, exports
//   ask.js          the engine's next question ("Ask me")
//   palette.js, keyboard.js, ui.js, api.js   page-independent helpers
import { api, apiBinary } from './api.js';
import { afterLabel, askShortcuts, bindAsk, refreshQuestions } from './ask.js';
import { bindAnnotationControls, onSideInformation, refreshAnnotations, showConflicts, undoRedo } from './annotations.js';
import { bindKeys } from './keyboard.js';
import { toggleShortcutHelp } from './shortcut-help.js';
import { acceptSelectedCluster, bindResults, listRuns, renderClusterTable, renderStale } from './results.js';
import { createRunPanel } from './run-panel.js';
import { canEdit, datasetId, plot, root, state } from './state.js';
import {
  bindTools, categoryByKey, finishBoundary, focusFindCategory, labelSelection, learnCategoryOrder, nameCategoryForKey,
  renderCategories, setMode, setSelection, stopBoundary,
} from './tools.js';
import { $, bind, report, status } from './ui.js';
import { bindView, hideHover, loadView, recolour, showHover } from './view.js';

const runPanel = createRunPanel({
  datasetId,
  canEdit,
  state,
  conflicts: () => state.conflicts,
  onConflicts: showConflicts,
  onRuns: listRuns,
  live: true,
  annotationKinds: () => (state.annotations || []).map((annotation) => annotation.kind),
  onResult: async ({ run, result, labels }) => {
    state.shownRun = { run, labels, metrics: result.metrics };
    $('#color-by').value = 'clusters';
    await recolour();
    $('#plot').dataset.run = String(run.id); // the run whose clusters the points now show
    renderClusterTable();
    renderStale();
    refreshQuestions();
  },
});

onSideInformation(learnCategoryOrder); // first: it decides the colours the recolour below uses
onSideInformation(renderStale);
onSideInformation(async () => {
  if ($('#color-by').value === 'labels') await recolour();
});
onSideInformation(renderCategories);
onSideInformation(() => state.shownRun && renderClusterTable()); // label counts per cluster
onSideInformation(() => runPanel.annotationsChanged());

function escape() {
  if ($('#shortcut-help').open) return; // Esc closes the help (the dialog does); keep the selection
  if (state.drawing) stopBoundary();
  else plot.deselect();
}

const shortcuts = {
  'ctrl+z': () => canEdit && undoRedo('undo'),
  'ctrl+shift+z': () => canEdit && undoRedo('redo'),
  'ctrl+enter': () => runPanel.start(),
  f: () => plot.fitAll(),
  z: () => state.selection.length && plot.zoomTo(state.selection),
  escape,
  'ctrl+escape': escape, // Esc has always worked with Ctrl held, too
  enter: () => state.drawing && finishBoundary(),
  '?': () => toggleShortcutHelp(SHORTCUT_HELP),
};

const SHORTCUT_HELP = [
  ['Shift + drag', 'lasso (in any mode)'],
  ['F', 'fit all points in view'],
  ['Z', 'zoom to the selection'],
  ['Esc', 'clear the selection, stop drawing a boundary, close this help'],
  ['Ctrl+Enter', 'run the chosen method'],
  ...(canEdit ? [
    ['1 / 2 / … / 9', 'label the selection with that category (or the asked item); a number without a category asks for its name'],
    ['/', 'find a category by name (past nine categories); Enter labels the selection'],
    ['A', 'label the whole cluster of the selected points (accept the cluster)'],
    ['Enter', 'finish the boundary being drawn'],
    ['S / D', 'answer the asked pair: same / different'],
    ['Space', 'skip the asked question'],
    ['Ctrl+Z', 'undo'],
    ['Ctrl+Shift+Z', 'redo'],
  ] : []),
  ['?', 'show or hide this help'],
];
if (canEdit) {
  for (const key of '123456789') {
    shortcuts[key] = async (event) => {
      const name = categoryByKey(key);
      if (!name) {
        event.preventDefault(); // the digit must not be typed into the name box that opens
        nameCategoryForKey(key, afterLabel);
        return;
      }
      await labelSelection(name);
      await afterLabel();
    };
  }
  shortcuts['/'] = focusFindCategory;
  Object.assign(shortcuts, askShortcuts());
  shortcuts.a = acceptSelectedCluster;
}

async function main() {
  state.dataset = await api(`/datasets/${datasetId}`);
  const [views] = await Promise.all([api(`/datasets/${datasetId}/views`), runPanel.loadAlgorithms()]);
  state.views = views.items;
  for (const view of state.views) $('#view-select').append(new Option(view.name, view.id));
  if (!state.dataset.ground_truth_classes) $('#color-by option[value=truth]').disabled = true;
  else state.groundTruth = new Int32Array(await apiBinary(`/datasets/${datasetId}/ground-truth`));

  plot.subscribe('select', ({ points }) => setSelection(points));
  plot.subscribe('deselect', () => setSelection([]));
  plot.subscribe('pointOver', (index) => showHover(index));
  plot.subscribe('pointOut', () => hideHover());

  await loadView(false);
  await refreshAnnotations(); // draws the points, coloured by label
  await runPanel.resume(); // the newest result is shown, a run still going is followed

  bindView();
  bindTools();
  bindAnnotationControls();
  runPanel.bindControls();
  bindResults();
  if (canEdit) bindAsk();
  bind('#show-shortcuts', 'click', () => toggleShortcutHelp(SHORTCUT_HELP));
  bindKeys(shortcuts);
  setMode('pan');
  root.dataset.ready = 'true';
  const next = canEdit ? '; then press 1 to name a category and label them' : '';
  status(`${plot.size.toLocaleString()} items. Select: hold Shift and drag a lasso (or Lasso mode)${next}.`);
}

main().catch(report);
