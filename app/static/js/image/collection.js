// "Apply to other images": the run shown segments other images of the project (a collection),
// one run per image with the same cluster ids; its progress per image, cancel, and the masks
// as one ZIP. Everything goes through the public API (POST /runs/{id}/apply {dataset_ids},
// GET /runs/{id}/applied, POST /runs/{id}/applied/cancel, GET /runs/{id}/applied/masks.zip).
import { allPages, api } from '../workspace/api.js';
import { $, bind, report, status } from '../workspace/ui.js';

const ACTIVE = new Set(['queued', 'running']);
const POLL_MS = 1000;

export function createCollectionPanel({ datasetId, projectId }) {
  const panel = $('#collection');
  let source = null; // the run whose model is applied
  let images = []; // the project's other images
  let following = false;

  function row(image) {
    const label = document.createElement('label');
    label.className = 'inline-check';
    const box = document.createElement('input');
    box.type = 'checkbox';
    box.value = String(image.id);
    box.checked = true;
    box.addEventListener('change', renderButtons);
    label.append(box, ` ${image.name}`);
    return label;
  }

  async function loadImages() {
    const { items: datasets } = await allPages(`/projects/${projectId}/datasets`);
    images = datasets.filter((d) => d.kind === 'image' && d.id !== datasetId);
    $('#collection-images').replaceChildren(...images.map(row));
    $('#collection-help').textContent = images.length
      ? 'Segment these images with the run shown: one run each, the same clusters and labels.'
      : 'Upload more images to this project to segment them with the run shown.';
    renderButtons();
  }

  const chosen = () => [...panel.querySelectorAll('#collection-images input:checked')].map((box) => Number(box.value));

  function renderButtons() {
    $('#collection-apply').disabled = !source || !chosen().length || following;
  }

  function renderProgress(runs) {
    const names = new Map(images.map((image) => [image.id, image.name]));
    $('#collection-progress').replaceChildren(...runs.map((run) => {
      const item = document.createElement('li');
      item.dataset.status = run.status;
      item.textContent = `${names.get(run.dataset_id) || `dataset ${run.dataset_id}`}: ${run.status}`
        + (run.error ? ` (${run.error})` : '');
      return item;
    }));
    const done = runs.filter((run) => run.status === 'succeeded').length;
    const active = runs.filter((run) => ACTIVE.has(run.status)).length;
    panel.dataset.done = String(done);
    panel.dataset.active = String(active);
    $('#collection-cancel').hidden = !active;
    const masks = $('#collection-masks');
    masks.hidden = !done;
    masks.href = `/api/v1/runs/${source}/applied/masks.zip`;
    masks.download = `run-${source}-applied-masks.zip`;
    return active;
  }

  // Poll the applied runs until none is queued or running.
  async function follow() {
    if (following || source === null) return;
    following = true;
    renderButtons();
    try {
      for (;;) {
        const followed = source;
        const { items } = await api(`/runs/${followed}/applied`);
        if (followed !== source) break; // another run is shown now
        const active = renderProgress(items);
        if (!active) {
          if (items.length) status(`Applied to ${items.length} image(s): ${panel.dataset.done} segmented.`);
          break;
        }
        await new Promise((resolve) => { setTimeout(resolve, POLL_MS); });
      }
    } finally {
      following = false;
      renderButtons();
    }
  }

  async function apply() {
    const ids = chosen();
    if (!source || !ids.length) return;
    await api(`/runs/${source}/apply`, { method: 'POST', body: { dataset_ids: ids } });
    status(`Segmenting ${ids.length} image(s) with run #${source}…`);
    await follow();
  }

  async function cancel() {
    const { items } = await api(`/runs/${source}/applied/cancel`, { method: 'POST' });
    status(`Cancelled ${items.length} image(s) not yet segmented.`);
  }

  return {
    bind() {
      if (!panel) return;
      bind('#collection-apply', 'click', () => apply().catch(report));
      bind('#collection-cancel', 'click', () => cancel().catch(report));
      loadImages().catch(report);
    },
    // A run is shown: its model is what gets applied; earlier applies of it are listed.
    show(runId) {
      if (!panel || source === runId) return;
      source = runId;
      panel.dataset.source = String(runId);
      $('#collection-progress').replaceChildren();
      renderButtons();
      follow().catch(report);
    },
  };
}
