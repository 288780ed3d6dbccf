// The annotations: the list with its conflicts, adding, undo / redo, and the side information
// the server compiles from them.
import { allPages, api } from './api.js';
import { datasetId, plot, state } from './state.js';
import { $, bind, report, status } from './ui.js';

const MAX_DRAWN_LINKS = 3000;

// Other parts of the page follow the side information (stale marker, colours, label chips);
// they subscribe here so that this module need not import them. Called in order, awaited.
const listeners = [];

export function onSideInformation(listener) {
  listeners.push(listener);
}

function linksToDraw() {
  const links = [];
  for (const [a, b] of state.side.must_link) links.push({ a, b, kind: 'must' });
  for (const [a, b] of state.side.cannot_link) links.push({ a, b, kind: 'cannot' });
  return links.slice(0, MAX_DRAWN_LINKS);
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
  plot.links = linksToDraw();
  plot.boundaries = annotations
    .filter((a) => a.kind === 'boundary')
    .map((a) => ({ points: a.payload.points }));
  renderAnnotations();
  for (const listener of listeners) await listener();
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

// The server's word on conflicts can be newer than the side information (a refused run).
export function showConflicts(conflicts) {
  state.conflicts = conflicts;
  renderAnnotations();
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
