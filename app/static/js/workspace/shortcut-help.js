// The "?" overlay: every keyboard shortcut of the page, from the same list that binds them.
import { $ } from './ui.js';

// help: [[keys, what it does], ...]; the page's template has <dialog id="shortcut-help">.
export function toggleShortcutHelp(help) {
  const dialog = $('#shortcut-help');
  if (dialog.open) {
    dialog.close();
    return;
  }
  const rows = help.map(([keys, action]) => {
    const tr = document.createElement('tr');
    const key = document.createElement('td');
    for (const [n, part] of keys.split(' / ').entries()) {
      if (n) key.append(' / ');
      const kbd = document.createElement('kbd');
      kbd.textContent = part;
      key.append(kbd);
    }
    const what = document.createElement('td');
    what.textContent = action;
    tr.append(key, what);
    return tr;
  });
  dialog.querySelector('tbody').replaceChildren(...rows);
  dialog.showModal();
}
