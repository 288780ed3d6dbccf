// A small keyboard shortcut registry:
//
//   bindKeys({ 'ctrl+z': undo, 'ctrl+shift+z': redo, f: fitAll, escape: cancel });
//
// 'ctrl' also matches Cmd, so one binding serves macOS too. Alt is ignored.

const TEXT_FIELDS = 'select, textarea, input:not([type=range], [type=checkbox], [type=radio], [type=color], [type=button])';

function chord(ctrl, shift, key) {
  return `${ctrl ? 'ctrl+' : ''}${shift ? 'shift+' : ''}${key.toLowerCase()}`;
}

function normalize(name) {
  const parts = name.toLowerCase().split('+');
  const key = parts.pop();
  return chord(parts.some((p) => ['ctrl', 'cmd', 'meta'].includes(p)), parts.includes('shift'), key);
}

// Returns a function that removes the bindings again.
export function bindKeys(bindings, target = document) {
  const table = new Map(Object.entries(bindings).map(([name, handler]) => [normalize(name), handler]));
  const listener = (event) => {
    // Keys typed into a field are text, not commands. A slider, checkbox or colour well takes
    // no text, so shortcuts still work after using one (e.g. the brush radius).
    if (event.target.matches(TEXT_FIELDS)) return;
    const ctrl = event.ctrlKey || event.metaKey;
    // Shift only counts for chords that name it: Shift+F is still F.
    const handler = table.get(chord(ctrl, event.shiftKey, event.key))
      || (event.shiftKey ? table.get(chord(ctrl, false, event.key)) : undefined);
    if (!handler) return;
    // Ctrl chords would also reach the browser (its own undo, ...); plain keys keep their
    // default so that Enter still presses a focused button.
    if (ctrl) event.preventDefault();
    handler(event);
  };
  target.addEventListener('keydown', listener);
  return () => target.removeEventListener('keydown', listener);
}
