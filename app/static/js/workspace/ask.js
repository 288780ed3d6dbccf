// "Ask me": the engine's next question, one at a time (GET /datasets/{id}/suggestions).
// A pair question highlights and zooms to both items: S = same (must-link), D = different
// (cannot-link). An item question selects the item: 1-9 label it. Space skips. Every answer is
// an ordinary annotation, so undo works; after each one the next question takes it into account.
import { api } from './api.js';
import { annotate } from './annotations.js';
import { datasetId, plot } from './state.js';
import { setSelection } from './tools.js';
import { $, bind, report, status } from './ui.js';

const BATCH = 10; // questions fetched at a time; refetched after every answer anyway

const asking = { active: false, kind: 'pairs', queue: [], skipped: new Set() };

export const isAsking = () => asking.active;

function key(question) {
  return question.items.join('-');
}

function show(question) {
  const box = $('#ask-question');
  if (!question) {
    box.textContent = 'No more questions from this run: run the method again to get new ones.';
    $('#ask-answers').hidden = true;
    return;
  }
  box.textContent = question.reason;
  box.dataset.items = question.items.join(',');
  $('#ask-answers').hidden = false;
  $('#ask-same').hidden = question.kind !== 'pair';
  $('#ask-different').hidden = question.kind !== 'pair';
  $('#ask-label-help').hidden = question.kind !== 'item';
  plot.select(question.items);
  setSelection(question.items);
  plot.zoomTo(question.items);
}

async function next() {
  try {
    const page = await api(`/datasets/${datasetId}/suggestions?kind=${asking.kind}&n=${BATCH + asking.skipped.size}`);
    asking.queue = page.items.filter((q) => !asking.skipped.has(key(q)));
    const note = page.stale ? ' (from a run older than your latest annotations)' : '';
    $('#ask-source').textContent = `Reasoning from run #${page.run_id}${note}.`;
    show(asking.queue[0]);
  } catch (error) {
    if (error.status === 409) {
      $('#ask-question').textContent = 'Run a method first: the questions come from its result.';
      $('#ask-answers').hidden = true;
    } else report(error);
  }
}

function current() {
  return asking.active ? asking.queue[0] : undefined;
}

async function answer(same) {
  const question = current();
  if (!question || question.kind !== 'pair') return;
  const [i, j] = question.items;
  await annotate(same
    ? { kind: 'must_link', items: [i, j] }
    : { kind: 'cannot_link', items_a: [i], items_b: [j] });
  await next();
}

function skip() {
  const question = current();
  if (!question) return;
  asking.skipped.add(key(question));
  asking.queue.shift();
  if (asking.queue.length) show(asking.queue[0]);
  else next();
}

function toggle(on) {
  asking.active = on;
  $('#ask-panel').hidden = !on;
  $('#ask-toggle').classList.toggle('active', on);
  if (on) next();
  else status('Stopped asking.');
}

// After a label typed with 1-9 during an item question, move on.
export async function afterLabel() {
  if (current()?.kind === 'item') await next();
}

// A new result brings new questions.
export function refreshQuestions() {
  if (asking.active) next();
}

export function askShortcuts() {
  const only = (handler) => (event) => {
    if (!asking.active) return;
    event.preventDefault(); // Space would otherwise scroll or press a focused button
    handler();
  };
  return { s: only(() => answer(true)), d: only(() => answer(false)), ' ': only(skip) };
}

export function bindAsk() {
  bind('#ask-toggle', 'click', () => toggle(!asking.active));
  bind('#ask-same', 'click', () => answer(true).catch(report));
  bind('#ask-different', 'click', () => answer(false).catch(report));
  bind('#ask-skip', 'click', skip);
  bind('#ask-kind', 'change', () => {
    asking.kind = $('#ask-kind').value;
    asking.skipped.clear();
    if (asking.active) next();
  });
}
