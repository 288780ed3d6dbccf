// The label palette: the labels a brush paints with, their colours and names; keys 1–9 pick.
//
// Each scribble stores its label's name on the server, and annotations cannot be edited. So a
// label has a stored `name` (what its scribbles carry and what the engine and `cluster_labels`
// see) and a `display` name:
//   * renaming a label no live scribble uses yet renames it for real (nothing is stored yet);
//   * renaming a label that scribbles already use changes only how it is shown, in this
//     browser; its new strokes keep the stored name, so it stays one category for the engine,
//     and the chip's tooltip names what is stored.
// Colours and display names are kept in this browser's localStorage, per dataset. Labels found
// in the annotations (made elsewhere, or brought back by redo) join the palette on load.
import { colourAt, renderChips } from '../workspace/palette.js';
import { $, bind, status } from '../workspace/ui.js';

const DEFAULTS = ['foreground', 'background'];

export function createLabels(datasetId, { used = () => new Set(), onChange = () => {} } = {}) {
  const key = `image-workspace:${datasetId}:labels`;
  let entries = [];
  let active = null;

  try {
    entries = JSON.parse(localStorage.getItem(key) || '[]').filter((e) => e && e.name && e.colour);
  } catch {
    entries = [];
  }
  if (!entries.length) entries = DEFAULTS.map((name, k) => ({ name, display: name, colour: colourAt(k) }));

  const find = (name) => entries.find((e) => e.name === name);
  const save = () => localStorage.setItem(key, JSON.stringify(entries));
  const freeColour = () => colourAt(entries.length);

  function render() {
    const box = $('#labels');
    renderChips(box, entries.map((e) => e.name), colour, select, display);
    for (const chip of box.children) {
      const entry = find(chip.dataset.category);
      chip.classList.toggle('active', entry.name === active);
      chip.title = entry.display === entry.name ? entry.name : `${entry.display} (stored as “${entry.name}”)`;
    }
    const entry = find(active);
    if (entry && document.activeElement !== $('#label-name')) $('#label-name').value = entry.display;
    if (entry) $('#label-colour').value = entry.colour;
    document.querySelector('[data-image-root]').dataset.label = active || '';
  }

  function changed() {
    save();
    render();
    onChange();
  }

  // Stored name -> colour; a label not in the palette (e.g. in an old run's result) gets none.
  function colour(name) {
    const entry = find(name);
    return entry ? entry.colour : null;
  }

  function display(name) {
    const entry = find(name);
    return entry ? entry.display : name;
  }

  function select(name) {
    if (!find(name)) return;
    active = name;
    render();
  }

  // Labels the annotations use join the palette (their colour is the next free one).
  function adopt(names) {
    let added = false;
    for (const name of names) {
      if (name && !find(name)) {
        entries.push({ name, display: name, colour: freeColour() });
        added = true;
      }
    }
    if (!active && entries.length) active = entries[0].name;
    if (added) save();
    render();
  }

  const taken = (text, except) => entries.some((e) => e !== except && (e.name === text || e.display === text));

  function add(text) {
    const name = text.trim();
    if (!name) return status('Give the new label a name.', 'error');
    if (taken(name)) return status(`There is a label “${name}” already.`, 'error');
    entries.push({ name, display: name, colour: freeColour() });
    active = name;
    return changed();
  }

  function rename(text) {
    const entry = find(active);
    const name = text.trim();
    if (!entry || name === entry.display) return undefined;
    if (!name) return status('A label needs a name.', 'error');
    if (taken(name, entry)) return status(`There is a label “${name}” already.`, 'error');
    if (used().has(entry.name)) {
      entry.display = name;
      status(`Shown as “${name}” in this browser; its strokes stay stored as “${entry.name}”, `
        + 'and new strokes with it too, so it remains one label for the engine.');
    } else {
      entry.name = name;
      entry.display = name;
      active = name;
    }
    return changed();
  }

  function recolour(value) {
    const entry = find(active);
    if (!entry || entry.colour === value) return;
    entry.colour = value;
    changed();
  }

  function bindControls() {
    bind('#add-label', 'click', () => {
      add($('#new-label').value);
      $('#new-label').value = '';
    });
    bind('#new-label', 'keydown', (e) => e.key === 'Enter' && $('#add-label').click());
    bind('#rename-label', 'click', () => rename($('#label-name').value));
    bind('#label-name', 'keydown', (e) => e.key === 'Enter' && rename($('#label-name').value));
    bind('#label-colour', 'input', () => recolour($('#label-colour').value));
  }

  return {
    get active() { return active; },
    get names() { return entries.map((e) => e.name); },
    byKey: (k) => (entries[k - 1] ? entries[k - 1].name : null),
    colour,
    display,
    select,
    adopt,
    add,
    rename,
    recolour,
    render,
    bindControls,
  };
}
