// Linking two strokes: "same thing" (must_link with both strokes) or "different things"
// (cannot_link, one stroke a side). The tool picks an existing label stroke under the pointer
// (the newest one there); the second pick sends the link. Links are drawn as lines between the
// middles of their strokes: solid green for same, dashed red for different. The same layer
// outlines the picked stroke, and in red the strokes behind a conflict that stopped a run.
import { distanceToStroke, strokeAnchor } from './strokes.js';

const PICK_TOLERANCE = 4; // screen pixels beyond the stroke's edge that still pick it

// Links recorded with strokes, as [{ kind: 'same' | 'different', a, b }] (a, b: strokes).
export function strokeLinks(annotations) {
  const links = [];
  for (const annotation of annotations) {
    const p = annotation.payload;
    if (annotation.kind === 'must_link' && p.strokes) {
      for (let i = 1; i < p.strokes.length; i += 1) links.push({ kind: 'same', a: p.strokes[i - 1], b: p.strokes[i] });
    } else if (annotation.kind === 'cannot_link' && p.strokes_a) {
      links.push({ kind: 'different', a: p.strokes_a[0], b: p.strokes_b[0] });
    }
  }
  return links;
}

// The stroke's centre line drawn with each [colour, width] in turn, widest first.
function outline(ctx, stroke, passes) {
  ctx.lineJoin = 'round';
  ctx.lineCap = 'round';
  for (const [colour, width] of passes) {
    ctx.strokeStyle = colour;
    ctx.lineWidth = width;
    ctx.beginPath();
    stroke.points.forEach(([x, y], i) => (i ? ctx.lineTo(x + 0.5, y + 0.5) : ctx.moveTo(x + 0.5, y + 0.5)));
    if (stroke.points.length === 1) ctx.lineTo(stroke.points[0][0] + 0.5, stroke.points[0][1] + 0.5);
    ctx.stroke();
  }
}

export function createLinkLayer() {
  return {
    links: [],
    picked: [], // strokes picked so far (0 or 1)
    flagged: [], // strokes of annotations in conflict
    draw(ctx, region, view) {
      const px = 1 / view.scale; // one screen pixel in image units
      ctx.lineCap = 'round';
      for (const { kind, a, b } of this.links) {
        const p = strokeAnchor(a);
        const q = strokeAnchor(b);
        ctx.strokeStyle = kind === 'same' ? '#1f7a38' : '#c4352b';
        ctx.lineWidth = 2.5 * px;
        ctx.setLineDash(kind === 'same' ? [] : [7 * px, 5 * px]);
        ctx.beginPath();
        ctx.moveTo(p.x, p.y);
        ctx.lineTo(q.x, q.y);
        ctx.stroke();
        ctx.fillStyle = ctx.strokeStyle;
        for (const end of [p, q]) {
          ctx.beginPath();
          ctx.arc(end.x, end.y, 4 * px, 0, 2 * Math.PI);
          ctx.fill();
        }
      }
      ctx.setLineDash([]);
      // Picked: dark under light so it shows on any colour. Flagged: red on white.
      for (const stroke of this.picked) outline(ctx, stroke, [['#1d232b', 4 * px], ['#ffffff', 2 * px]]);
      for (const stroke of this.flagged) outline(ctx, stroke, [['#ffffff', 5 * px], ['#c4352b', 3 * px]]);
    },
  };
}

// candidates(): label strokes that may be picked, oldest first. kind(): 'same' | 'different'.
export function createLinkTool({ view, layer, candidates, kind, onLink, onPick = () => {} }) {
  function strokeAt(p) {
    const x = p.x - 0.5;
    const y = p.y - 0.5;
    const slack = PICK_TOLERANCE / view.view.scale;
    const strokes = candidates();
    for (let i = strokes.length - 1; i >= 0; i -= 1) {
      if (distanceToStroke(x, y, strokes[i]) <= strokes[i].radius + slack) return strokes[i];
    }
    return null;
  }

  function clear() {
    layer.picked = [];
    onPick(0);
    view.invalidate();
  }

  return {
    clear,
    down(event, p) {
      const stroke = strokeAt(p);
      if (!stroke) return;
      if (layer.picked[0] === stroke) return clear(); // a second click on it lets go
      if (!layer.picked.length) {
        layer.picked = [stroke];
        onPick(1);
        view.invalidate();
        return undefined;
      }
      const [first] = layer.picked;
      clear();
      return onLink(kind(), first, stroke);
    },
    move(event, p) {
      view.canvas.classList.toggle('can-pick', Boolean(strokeAt(p)));
    },
    up() {},
    leave() {},
  };
}
