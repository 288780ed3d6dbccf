// The image's annotations as the server has them: loaded on start and after undo / redo (so
// what is drawn is the server's truth), and new ones saved one after another in the order
// they were made, since a later scribble overrides an earlier one.
import { allPages, api } from '../workspace/api.js';
import { report } from '../workspace/ui.js';

export function createAnnotations(datasetId, { onReload = () => {}, onAdded = () => {}, onState = () => {} } = {}) {
  const store = { items: [], revision: 0, canUndo: false, canRedo: false, pending: 0 };
  let queue = Promise.resolve();

  async function load() {
    const { items, page } = await allPages(`/datasets/${datasetId}/annotations`);
    store.items = items.sort((a, b) => a.id - b.id); // the order the server applies them in
    store.revision = page.revision;
    store.canUndo = page.can_undo;
    store.canRedo = page.can_redo;
    await onReload(store);
    onState(store);
  }

  // Resolves once this annotation (and every one made before it) is stored (to it) or has
  // failed (to null).
  function save(body) {
    store.pending += 1;
    onState(store);
    queue = queue.then(async () => {
      try {
        const annotation = await api(`/datasets/${datasetId}/annotations`, { method: 'POST', body });
        store.items.push(annotation);
        store.revision = annotation.revision;
        store.canUndo = true;
        store.canRedo = false; // a new act forgets what was undone, on the server too
        await onAdded(annotation, store);
        return annotation;
      } catch (error) {
        report(error);
        await load().catch(report); // draw what the server has, without the refused one
        return null;
      } finally {
        store.pending -= 1;
        onState(store);
      }
    });
    return queue;
  }

  async function undoRedo(which) {
    await queue; // undo must remove the newest stroke, including one still being saved
    try {
      await api(`/datasets/${datasetId}/annotations/${which}`, { method: 'POST' });
    } catch (error) {
      report(error);
    }
    await load();
  }

  const live = (kind) => store.items.filter((a) => a.kind === kind);

  return { store, load, save, undoRedo, live, idle: () => queue };
}
