// The tool panel of the image workspace: brush, eraser, link and pan, the brush radius, the
// "same / different" choice for links, and label picking (which switches to the brush).
//
// The radius is set in screen pixels, so the brush looks the same at every zoom: zoomed out
// on a slide it covers what it covers on screen (hundreds of image pixels), zoomed in it
// paints single pixels. A stroke stores it in image pixels, at the zoom it was drawn.
import { $ } from '../workspace/ui.js';
import { createBrush } from './brush.js';
import { createLinkTool } from './links.js';

const LINK_HELP = 'Link tool (L): click one stroke, then another.';

export function createTools({ view, root, canEdit, state, scribbles, linkLayer, annotations, labels }) {
  const MAX_IMAGE_RADIUS = 10_000; // the API's limit
  const onScreen = () => Number($('#radius') ? $('#radius').value : 6);
  const inImage = () => Math.min(MAX_IMAGE_RADIUS, Math.round((onScreen() / view.view.scale) * 100) / 100);
  const showRadius = () => {
    if (!$('#radius-value')) return;
    $('#radius-value').textContent = $('#radius').value;
    $('#radius-image').textContent = inImage().toLocaleString('en', { maximumFractionDigits: inImage() < 10 ? 1 : 0 });
  };
  let lastPointer = null; // so the brush outline follows the slider where the pointer is
  view.canvas.addEventListener('pointermove', (e) => { lastPointer = view.toImage(e); });

  const brush = createBrush({
    view,
    layer: scribbles,
    cursor: $('#brush-cursor'),
    radius: inImage,
    colour: () => labels.colour(labels.active),
    onStroke: async (stroke, erase) => {
      const label = labels.active;
      const replays = scribbles.replays;
      const saved = await annotations.save(erase
        ? { kind: 'scribble', erase: true, strokes: [stroke] }
        : { kind: 'scribble', label, strokes: [stroke] });
      // The stroke was painted as it was drawn. If the layer was redrawn from the list while it
      // was being saved (a stroke before it was refused), that wiped it: paint it again.
      if (saved && scribbles.replays !== replays) {
        scribbles.paint(stroke, erase ? null : labels.colour(label));
        view.invalidate(scribbles.bounds(stroke));
      }
    },
  });

  const linkTool = createLinkTool({
    view,
    layer: linkLayer,
    candidates: () => annotations.live('scribble').filter((a) => !a.payload.erase).flatMap((a) => a.payload.strokes),
    kind: () => state.linkKind,
    onPick: (n) => {
      if ($('#link-help')) $('#link-help').textContent = n ? 'Now click the other stroke (Esc lets go).' : LINK_HELP;
    },
    onLink: (kind, a, b) => annotations.save(kind === 'same'
      ? { kind: 'must_link', strokes: [a, b] }
      : { kind: 'cannot_link', strokes_a: [a], strokes_b: [b] }),
  });

  function setTool(name) {
    if (!canEdit && name !== 'pan') return;
    if (name === 'pan') view.setMode('pan');
    else {
      view.setMode('paint');
      brush.erase = name === 'eraser';
      view.setTool(name === 'link' ? linkTool : brush);
    }
    if (name !== 'link') linkTool.clear();
    state.tool = name;
    root.dataset.tool = name;
    for (const button of document.querySelectorAll('button[data-tool]')) button.classList.toggle('active', button.dataset.tool === name);
  }

  function setLinkKind(kind) {
    state.linkKind = kind;
    for (const button of document.querySelectorAll('button[data-link-kind]')) button.classList.toggle('active', button.dataset.linkKind === kind);
  }

  function setRadius(value) {
    const slider = $('#radius');
    if (!slider) return;
    slider.value = String(Math.max(Number(slider.min), Math.min(Number(slider.max), value)));
    showRadius();
    brush.refresh(lastPointer);
  }

  function pickLabel(key) {
    const name = labels.byKey(key);
    if (!name) return;
    labels.select(name);
    if (state.tool !== 'brush') setTool('brush'); // picking a colour means painting with it
  }

  function bindControls() {
    // Buttons by element, not by selector: the workspace root carries data-tool too.
    for (const button of document.querySelectorAll('button[data-tool]')) button.addEventListener('click', () => setTool(button.dataset.tool));
    for (const button of document.querySelectorAll('button[data-link-kind]')) button.addEventListener('click', () => setLinkKind(button.dataset.linkKind));
    if ($('#radius')) $('#radius').addEventListener('input', () => setRadius(onScreen()));
    view.onZoom(showRadius); // the same size on screen is another size in the image
    showRadius();
  }

  return { brush, linkTool, radius: onScreen, setTool, setLinkKind, setRadius, pickLabel, bindControls };
}
