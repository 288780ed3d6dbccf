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
    status(`Select at least ${minimum} point(s) first: Shift+drag a lasso around them (or use Lasso mode).`, 'error');
    return false;
  }
  return true;
}

// ---- labels ---------------------------------------------------------------------------

const categoryNames = () => palette.names(state.side ? state.side.label_names : []);
const MAX_KEYED = 9; // keys 1-9; past nine categories the find box below the chips takes over

// The server lists label names alphabetically, so numbering by that list would renumber the
// keys whenever a category sorts before older ones, and on every reload. Keys follow the order
// categories were first used instead, which the annotation ids give (they grow with creation):
// teaching the palette that order before anything asks it for a colour keeps keys and colours
// the same across reloads. (Must run before the recolour on side information.)
export function learnCategoryOrder() {
  const labels = state.annotations.filter((a) => a.kind === 'label').sort((a, b) => a.id - b.id);
  for (const annotation of labels) palette.colour(annotation.payload.label);
}

export function renderCategories() {
  const chips = $('#categories'); // editors only
  if (!chips) return;
  const names = categoryNames();
  renderChips(chips, names, palette.colour, labelSelection);
  // A datalist and a filter once the chips outgrow keys 1-9 (see findMatches).
  $('#category-list').replaceChildren(...names.map((name) => new Option(name)));
  $('#find-category-box').hidden = names.length <= MAX_KEYED;
  filterChips();
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

// A key 1-9 with no category yet: ask for its name in place (a prompt() dialog would hide the
// plot and cannot be styled or tested), then label the selection with it in one request, as a
// key with a category does. `then` runs after labelling (Ask me moves on to its next question).
export function nameCategoryForKey(key, then = () => {}) {
  if (!state.selection.length) {
    status(`Select points first (Shift+drag a lasso around them), then press ${key} to name a category and label them.`, 'error');
    return;
  }
  const box = $('#name-category');
  const input = $('#name-category-input');
  const number = categoryNames().length + 1; // where the new category will sit
  $('#name-category-key').textContent = number <= MAX_KEYED ? String(number) : '';
  input.value = '';
  box.hidden = false;
  input.focus();
  status(`Key ${key} has no category yet: type its name and press Enter to label the ${state.selection.length} selected point(s) (Esc cancels).`);
  // One handler per prompt: replaced, not added to, when the prompt is opened again.
  input.onkeydown = async (event) => {
    event.stopPropagation(); // typing is text, not shortcuts
    if (event.key === 'Escape') {
      input.blur(); // the blur handler closes the prompt
      status('No category named.');
      return;
    }
    if (event.key !== 'Enter' || !input.value.trim()) return;
    const name = input.value.trim();
    input.blur();
    await labelSelection(name);
    await then();
  };
  input.onblur = () => { box.hidden = true; };
}

// The find box: typing part of a name filters the chips (the first one shown is what Enter
// picks), and Enter labels the selection with it. The datalist offers the full names.
function findMatches() {
  const query = $('#find-category').value.trim().toLowerCase();
  const names = categoryNames();
  if (!query) return names;
  const exact = names.filter((name) => name.toLowerCase() === query);
  return exact.length ? exact : names.filter((name) => name.toLowerCase().includes(query));
}

function filterChips() {
  const matches = new Set(findMatches());
  const filtering = Boolean($('#find-category').value.trim()) && !$('#find-category-box').hidden;
  let first = true;
  for (const chip of $('#categories').children) {
    const shown = !filtering || matches.has(chip.dataset.category);
    chip.hidden = !shown;
    chip.classList.toggle('match', filtering && shown && first);
    if (shown) first = false;
  }
}

async function findKeydown(event) {
  const input = $('#find-category');
  event.stopPropagation(); // typing is text, not shortcuts
  if (event.key === 'Escape') {
    input.value = '';
    filterChips();
    input.blur();
    return;
  }
  if (event.key !== 'Enter' || !input.value.trim()) return;
  const [name] = findMatches();
  if (!name) {
    status(`No category matches “${input.value.trim()}”.`, 'error');
    return;
  }
  input.value = '';
  filterChips();
  await labelSelection(name);
}

export function focusFindCategory(event) {
  if ($('#find-category-box').hidden) return;
  event.preventDefault(); // the "/" would otherwise be typed into the box
  $('#find-category').focus();
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
  bind('#new-category', 'keydown', (event) => event.key === 'Enter' && labelSelection());
  bind('#find-category', 'input', filterChips);
  bind('#find-category', 'keydown', findKeydown);
  bind('#must-link', 'click', () => needSelection(2) && annotate({ kind: 'must_link', items: state.selection }));
  bind('#set-a', 'click', setA);
  bind('#cannot-link', 'click', cannotLink);
  bind('#draw-boundary', 'click', startBoundary);
  bind('#finish-boundary', 'click', finishBoundary);
  bind('#overlay', 'click', overlayClick);
  bind('#overlay', 'dblclick', (event) => { event.preventDefault(); return finishBoundary(); });
}
