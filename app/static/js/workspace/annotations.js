// The annotations: the list with its conflicts, adding, undo / redo, and the side information
// the server compiles from them.
import { allPages, api } from './api.js';
import { canEdit, datasetId, plot, state } from './state.js';
import { $, bind, report, status } from './ui.js';

const MAX_DRAWN_LINKS = 3000;

// Other parts of the page follow the side information (stale marker, colours, label chips);
// they subscribe here so that this module need not import them. Called in order, awaited.
const listeners = [];

export function onSideInformation(listener) {
  listeners.push(listener);
}

function centroid(items) {
  let x = 0;
  let y = 0;
  for (const i of items) {
    x += plot.x[i];
    y += plot.y[i];
  }
  return [x / items.length, y / items.length];
}

// Must-links as the chain the server compiles (k - 1 lines join k items); a cannot-link
// between two sets as one line between their centres with its count, never every A x B pair.
function linksToDraw(annotations) {
  const links = [];
  for (const [a, b] of state.side.must_link.slice(0, MAX_DRAWN_LINKS)) {
    links.push({ from: [plot.x[a], plot.y[a]], to: [plot.x[b], plot.y[b]], kind: 'must' });
  }
  for (const annotation of annotations) {
    const { items_a: a, items_b: b } = annotation.payload;
    if (annotation.kind !== 'cannot_link' || !a || !b) continue;
    const count = a.length * b.length;
    links.push({
      from: centroid(a),
      to: centroid(b),
      kind: 'cannot',
      text: count > 1 ? `${a.length}×${b.length}` : '',
    });
  }
  return links;
}

// Boundaries are drawn in the view they were drawn in; other views do not show them.
export function boundariesToDraw() {
  const viewId = Number($('#view-select').value);
  return state.annotations
    .filter((a) => a.kind === 'boundary' && a.payload.view_id === viewId)
    .map((a) => ({ points: a.payload.points }));
}

export function redrawAnnotations() {
  if (!state.side) return;
  plot.links = linksToDraw(state.annotations);
  plot.boundaries = boundariesToDraw();
  plot.drawOverlay();
}

export async function refreshAnnotations() {
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
  renderAnnotations();
  for (const listener of listeners) await listener();
  redrawAnnotations(); // after the listeners: a recolour must not leave an undone line drawn
}

export function describe(annotation) {
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
    if (canEdit) li.append(...editControls(annotation, li));
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

// The server's word on conflicts can be newer than the side information (a refused run).
export function showConflicts(conflicts) {
  state.conflicts = conflicts;
  renderAnnotations();
}

// ---- editing one annotation -----------------------------------------------------------

function iconButton(text, title, onClick) {
  const button = document.createElement('button');
  button.type = 'button';
  button.className = 'link icon';
  button.textContent = text;
  button.title = title;
  button.setAttribute('aria-label', title);
  button.addEventListener('click', (event) => {
    event.stopPropagation(); // not a click on the row (which selects the items)
    onClick();
  });
  return button;
}

function editable(annotation) {
  if (annotation.kind === 'must_link' || annotation.kind === 'cannot_link') return 'confidence';
  return 'label' in annotation.payload ? 'label' : null;
}

function editControls(annotation, li) {
  const controls = [iconButton('×', `delete #${annotation.id}`, () => removeAnnotation(annotation))];
  const field = editable(annotation);
  if (field) controls.unshift(iconButton('✎', `edit #${annotation.id}`, () => startEdit(annotation, li, field)));
  return controls;
}

function startEdit(annotation, li, field) {
  const input = document.createElement('input');
  input.className = 'inline-edit';
  input.setAttribute('aria-label', `new ${field} for #${annotation.id}`);
  input.value = field === 'label' ? annotation.payload.label : String(annotation.confidence ?? 1);
  li.replaceChildren(input);
  input.addEventListener('click', (event) => event.stopPropagation());
  input.addEventListener('keydown', (event) => {
    event.stopPropagation(); // typing is text, not shortcuts
    if (event.key === 'Escape') renderAnnotations();
    if (event.key !== 'Enter') return;
    const value = input.value.trim();
    const body = field === 'label' ? { label: value } : { confidence: Number(value) };
    saveEdit(annotation, body);
  });
  input.focus();
  input.select();
}

async function saveEdit(annotation, body) {
  try {
    const edited = await api(`/datasets/${datasetId}/annotations/${annotation.id}`, { method: 'PATCH', body });
    await refreshAnnotations();
    status(`Edited #${annotation.id}: now #${edited.id} ${describe(edited)}.`);
  } catch (error) {
    report(error);
  }
}

async function removeAnnotation(annotation) {
  try {
    await api(`/datasets/${datasetId}/annotations/${annotation.id}`, { method: 'DELETE' });
    await refreshAnnotations();
    status(`Deleted #${annotation.id} ${describe(annotation)}.`);
  } catch (error) {
    report(error);
  }
}

function selectAnnotationItems(annotation) {
  const p = annotation.payload;
  const items = p.items || [...(p.items_a || []), ...(p.items_b || [])];
  if (items.length) plot.select(items);
}

export async function annotate(body) {
  try {
    await api(`/datasets/${datasetId}/annotations`, { method: 'POST', body });
    await refreshAnnotations();
    status(`Saved ${describe({ kind: body.kind, payload: body })}.`);
  } catch (error) {
    report(error);
  }
}

export async function undoRedo(which) {
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

export function bindAnnotationControls() {
  bind('#undo', 'click', () => undoRedo('undo'));
  bind('#redo', 'click', () => undoRedo('redo'));
}
