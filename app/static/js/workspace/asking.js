// "Ask me": the engine's next question, one at a time (GET /datasets/{id}/suggestions), shared by
// the scatterplot and the image workspace. A pair question is answered S = same, D = different;
// an item question with 1-9 (a category); Space skips. The page says how a question is shown
// (`highlight`) and how an answer is stored (`answerPair`, and `answerItem` where 1-9 answer
// through the asker): always as ordinary annotations, so undo works. After every answer the
// next questions are fetched, so they take the answer into account.
import { api } from './api.js';
import { $, bind, report, reveal, status } from './ui.js';

const BATCH = 10; // questions fetched at a time; refetched after every answer anyway

export function createAsker({ datasetId, highlight, answerPair, answerItem = null }) {
  const asking = { active: false, kind: 'pairs', queue: [], skipped: new Set() };
  const key = (question) => question.items.join('-');

  function show(question) {
    const box = $('#ask-question');
    highlight(question || null);
    if (!question) {
      box.textContent = 'No more questions from this run: run the method again to get new ones.';
      $('#ask-answers').hidden = true;
      return;
    }
    // The question in plain words first; the engine's reason (cluster numbers, posteriors) after
    // it, smaller, for whoever wants to know why it asks.
    const [headline, what] = question.kind === 'pair'
      ? ['Same group?', 'Are the two highlighted points in one group?']
      : ['Which category?', 'Press the number of the highlighted point’s category.'];
    const strong = document.createElement('strong');
    strong.textContent = headline;
    const reason = document.createElement('span');
    reason.className = 'ask-reason muted small';
    reason.textContent = `Why asked: ${question.reason}`;
    box.replaceChildren(strong, ` ${what}`, document.createElement('br'), reason);
    box.dataset.items = question.items.join(',');
    $('#ask-answers').hidden = false;
    $('#ask-same').hidden = question.kind !== 'pair';
    $('#ask-different').hidden = question.kind !== 'pair';
    $('#ask-label-help').hidden = question.kind !== 'item';
    // The panel sits low in its column: bring the question and its buttons into sight.
    reveal($('#ask-panel'));
  }

  async function next() {
    try {
      const page = await api(`/datasets/${datasetId}/suggestions?kind=${asking.kind}&n=${BATCH + asking.skipped.size}`);
      asking.queue = page.items.filter((q) => !asking.skipped.has(key(q)));
      const note = page.stale ? ' (from a run older than your latest annotations)' : '';
      $('#ask-source').textContent = `Reasoning from run #${page.run_id}${note}.`;
      show(asking.queue[0]);
    } catch (error) {
      highlight(null);
      if (error.status === 409) {
        $('#ask-question').textContent = 'Run a method first: the questions come from its result.';
        $('#ask-answers').hidden = true;
      } else report(error);
    }
  }

  const current = () => (asking.active ? asking.queue[0] : undefined);

  async function answer(same) {
    const question = current();
    if (!question || question.kind !== 'pair') return;
    await answerPair(question, same);
    await next();
  }

  // 1-9 during an item question, where the page lets the asker store the answer.
  async function label(digit) {
    const question = current();
    if (!answerItem || !question || question.kind !== 'item') return false;
    await answerItem(question, digit);
    await next();
    return true;
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
    else {
      highlight(null);
      status('Stopped asking.');
    }
  }

  return {
    isActive: () => asking.active,
    current,
    label,
    // After a label given by the page's own 1-9 during an item question, move on.
    async afterLabel() {
      if (current()?.kind === 'item') await next();
    },
    // A new result brings new questions.
    refresh() {
      if (asking.active) next();
    },
    shortcuts() {
      const only = (handler) => (event) => {
        if (!asking.active) return;
        event.preventDefault(); // Space would otherwise scroll or press a focused button
        handler();
      };
      return { s: only(() => answer(true).catch(report)), d: only(() => answer(false).catch(report)), ' ': only(skip) };
    },
    bind() {
      bind('#ask-toggle', 'click', () => toggle(!asking.active));
      bind('#ask-same', 'click', () => answer(true).catch(report));
      bind('#ask-different', 'click', () => answer(false).catch(report));
      bind('#ask-skip', 'click', skip);
      bind('#ask-kind', 'change', () => {
        asking.kind = $('#ask-kind').value;
        asking.skipped.clear();
        if (asking.active) next();
      });
    },
  };
}
