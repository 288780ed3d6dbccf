// The editing tools: pan / lasso mode and the selection, labelling it by category, links
// between items, and boundaries drawn on the overlay.
import { annotate } from './annotations.js';
import { renderChips } from './palette.js';
import { palette, plot, state } from './state.js';
import { $, bind, status } from './ui.js';

export function setMode(mode) {
  plot.setMode(mode);
  for (const button of document.querySelectorAll('[data-mode]')) {
    button.classList.toggle('active', button.dataset.mode === mode);
  }
}

export function setSelection(points) {
  state.selection = Array.from(points);
  $('#selection-count').textContent = String(state.selection.length);
}

function needSelection(minimum = 1) {
  if (state.selection.length < minimum) {
    status(`Select at least ${minimum} item(s) first (lasso: drag in Lasso mode, or hold Shift).`, 'error');
    return false;
  }
  return true;
}

// ---- labels ---------------------------------------------------------------------------

const categoryNames = () => palette.names(state.side ? state.side.label_names : []);

export function renderCategories() {
  const chips = $('#categories'); // editors only
  if (chips) renderChips(chips, categoryNames(), palette.colour, labelSelection);
}

export function categoryByKey(key) {
  return categoryNames()[Number(key) - 1];
}

export async function labelSelection(name) {
  const label = (name || $('#new-category').value).trim();
  if (!label) return status('Type a category name first.', 'error');
  if (!needSelection()) return null;
  palette.colour(label);
  $('#new-category').value = '';
  return annotate({ kind: 'label', items: state.selection, label });
}

// ---- links ----------------------------------------------------------------------------

function setA() {
  if (!needSelection()) return;
  state.setA = [...state.selection];
  $('#set-a-count').textContent = String(state.setA.length);
}

function cannotLink() {
  if (!state.setA.length) return status('First select items and press “Set selection as A”.', 'error');
  if (!needSelection()) return null;
  const b = state.selection.filter((i) => !state.setA.includes(i));
  return annotate({ kind: 'cannot_link', items_a: state.setA, items_b: b });
}

// ---- boundary -------------------------------------------------------------------------

function startBoundary() {
  state.drawing = true;
  plot.draft = [];
  $('#overlay').classList.add('drawing');
  $('#boundary-help').hidden = false;
  status('Click points of the boundary on the plot; double-click or Enter to finish, Esc to cancel.');
}

export function stopBoundary() {
  state.drawing = false;
  plot.draft = null;
  $('#overlay').classList.remove('drawing');
  $('#boundary-help').hidden = true;
  plot.drawOverlay();
}

export async function finishBoundary() {
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

export function bindTools() {
  for (const button of document.querySelectorAll('[data-mode]')) bind(`[data-mode=${button.dataset.mode}]`, 'click', () => setMode(button.dataset.mode));
  bind('#clear-selection', 'click', () => plot.deselect());
  bind('#zoom-selection', 'click', () => needSelection() && plot.zoomTo(state.selection));
  bind('#label-selection', 'click', () => labelSelection());
  bind('#must-link', 'click', () => needSelection(2) && annotate({ kind: 'must_link', items: state.selection }));
  bind('#set-a', 'click', setA);
  bind('#cannot-link', 'click', cannotLink);
  bind('#draw-boundary', 'click', startBoundary);
  bind('#finish-boundary', 'click', finishBoundary);
  bind('#overlay', 'click', overlayClick);
  bind('#overlay', 'dblclick', (event) => { event.preventDefault(); return finishBoundary(); });
}
