// "Ask me" on the scatterplot (the shared asker: asking.js). A pair question selects, highlights
// and zooms to both points; S / D store a must-link / cannot-link. An item question selects the
// point, and the page's 1-9 label the selection (then `afterLabel` moves on).
import { annotate } from './annotations.js';
import { createAsker } from './asking.js';
import { datasetId, plot } from './state.js';
import { setSelection } from './tools.js';

const asker = createAsker({
  datasetId,
  highlight(question) {
    if (!question) return;
    plot.select(question.items);
    setSelection(question.items);
    plot.zoomTo(question.items);
  },
  answerPair({ items: [i, j] }, same) {
    return annotate(same
      ? { kind: 'must_link', items: [i, j] }
      : { kind: 'cannot_link', items_a: [i], items_b: [j] });
  },
});

export const afterLabel = asker.afterLabel;
export const refreshQuestions = asker.refresh;
export const askShortcuts = asker.shortcuts;
export const bindAsk = asker.bind;
