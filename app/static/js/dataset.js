// An image dataset's page follows its featurization without a reload: while the status is
// `featurizing` it reads the dataset from the API every second and shows the progress (or, for
// a collection's image still in its uploaded file, that it waits, and the picture once taken);
// "Open workspace" shows as soon as the picture can be (painting does not wait for the
// features), when failed the reason. A table imported by reference
// is followed the same way while its source is read, and the page is shown again once ready
// (its statistics and items are drawn by the server).
import { api } from './workspace/api.js';

const box = document.querySelector('#featurization');
const POLL_MS = 1000;

function show(dataset) {
  const f = dataset.featurization || {};
  box.dataset.status = dataset.status;
  document.querySelector('[data-testid=status]').textContent = dataset.status.replace('_', ' ');
  const bar = document.querySelector('#featurization-progress');
  const text = document.querySelector('#featurization-text');
  const error = document.querySelector('#featurization-error');
  bar.hidden = dataset.status !== 'featurizing';
  bar.value = f.progress || 0;
  error.hidden = dataset.status !== 'failed';
  const open = document.querySelector('#open-workspace');
  if (box.dataset.kind === 'table') {
    open.hidden = dataset.status !== 'ready';
    // Not reload(): after the sync form's redirect a reload is a GET of this page anyway,
    // but the page may also have been answered to a POST.
    if (dataset.status === 'ready') window.location.assign(`/datasets/${dataset.id}`);
    else if (dataset.status === 'featurizing') {
      const what = f.syncing ? 'Reading its source again after a sync' : 'Reading its source for the statistics and the view';
      text.textContent = `${what}… ${Math.round(100 * (f.progress || 0))}%`;
    }
    else if (dataset.status === 'failed') {
      text.textContent = 'Reading the source failed.';
      error.textContent = f.error || 'unknown reason';
    }
    return;
  }
  const preview = document.querySelector('[data-testid=image-preview]');
  if (preview && preview.dataset.src && !f.image_pending) {
    preview.src = preview.dataset.src; // taken from its collection's file: it can be shown
    delete preview.dataset.src;
    preview.hidden = false;
  }
  // An image is painted while it is featurized: its workspace opens once the picture exists.
  open.hidden = !(dataset.status === 'ready' || (dataset.status === 'featurizing' && !f.image_pending));
  open.textContent = dataset.status === 'ready' ? 'Open workspace' : 'Open workspace and paint';
  if (dataset.status === 'featurizing' && f.image_pending) {
    text.textContent = `Waiting for its image to be taken from ${dataset.source_filename}…`;
  } else if (dataset.status === 'featurizing') {
    text.textContent = `Featurizing… ${Math.round(100 * (f.progress || 0))}%: you can paint meanwhile; runs start once it is done.`;
  } else if (dataset.status === 'ready') {
    const items = f.superpixels ? 'superpixels' : 'pixels';
    text.textContent = `Featurized: ${dataset.n_items.toLocaleString('en')} ${items} are the items.`;
    document.querySelector('[data-testid=n-items]').textContent = dataset.n_items.toLocaleString('en');
    document.querySelector('[data-testid=n-features]').textContent = String(dataset.n_features);
  } else if (dataset.status === 'failed') {
    text.textContent = 'Featurization failed.';
    error.textContent = f.error || 'unknown reason';
  }
}

async function poll() {
  const id = Number(box.dataset.datasetId);
  for (;;) {
    let dataset;
    try {
      dataset = await api(`/datasets/${id}`);
    } catch (error) {
      // A dropped request is retried at the next tick; the page keeps what it showed.
      dataset = null;
    }
    if (dataset) {
      show(dataset);
      if (dataset.status !== 'featurizing' && dataset.status !== 'awaiting_featurization') return;
    }
    await new Promise((resolve) => { setTimeout(resolve, POLL_MS); });
  }
}

if (box && box.dataset.status !== 'ready' && box.dataset.status !== 'failed') poll();
