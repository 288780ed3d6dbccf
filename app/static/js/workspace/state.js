// What the parts of the dataset workspace share. There is one workspace per page, so they
// import it instead of passing it around.
import { createPalette } from './palette.js';
import { Plot } from './plot.js';
import { $ } from './ui.js';

export const root = $('#workspace');
export const datasetId = Number(root.dataset.datasetId);
export const canEdit = root.dataset.canEdit === 'true';

export const state = {
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

export const plot = new Plot($('#plot'), $('#overlay'));
export const palette = createPalette(state.categories);
window.workspace = { plot, state }; // for debugging and the browser tests
