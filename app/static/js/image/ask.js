// "Ask me" on an image (the shared asker: ../workspace/asking.js). The items a question is about
// (pixels, or superpixels of a large image) are ringed on the picture, A and B, and the view is
// zoomed to hold them. An answer is drawn as strokes on the items' anchors, each with the radius
// the server gives, which covers exactly that item: S / D store the two strokes linked as the
// same / different things, 1-9 a scribble of that label. They are ordinary annotations: Ctrl+Z
// takes an answer back.
import { createAsker } from '../workspace/asking.js';
import { status } from '../workspace/ui.js';

const RING = '#ffd400';

function createRingLayer() {
  return {
    regions: [],
    draw(ctx, _region, view) {
      const px = 1 / view.scale; // one screen pixel in image units
      ctx.setLineDash([]);
      this.regions.forEach((region, k) => {
        const [x, y] = region.anchor;
        const radius = Math.max(region.radius, 10 * px);
        for (const [colour, width] of [['#000000', 5 * px], [RING, 3 * px]]) {
          ctx.strokeStyle = colour;
          ctx.lineWidth = width;
          ctx.beginPath();
          ctx.arc(x + 0.5, y + 0.5, radius, 0, 2 * Math.PI);
          ctx.stroke();
        }
        if (this.regions.length > 1) {
          ctx.fillStyle = RING;
          ctx.font = `bold ${16 * px}px sans-serif`;
          ctx.fillText(k ? 'B' : 'A', x + radius + 4 * px, y);
        }
      });
    },
  };
}

const stroke = (region) => ({ points: [region.anchor], radius: region.answer_radius });

export function createImageAsker({ datasetId, view, annotations, labels, onScribbled }) {
  const rings = view.addLayer(createRingLayer());

  function highlight(question) {
    rings.regions = question ? question.regions : [];
    view.canvas.dataset.asked = question ? question.items.join(',') : '';
    if (question) {
      const boxes = question.regions.map((r) => r.bbox);
      view.zoomTo(
        Math.min(...boxes.map((b) => b[0])), Math.min(...boxes.map((b) => b[1])),
        Math.max(...boxes.map((b) => b[2])), Math.max(...boxes.map((b) => b[3])),
      );
    }
    view.invalidate();
  }

  return createAsker({
    datasetId,
    highlight,
    answerPair({ regions: [a, b] }, same) {
      return annotations.save(same
        ? { kind: 'must_link', strokes: [stroke(a), stroke(b)] }
        : { kind: 'cannot_link', strokes_a: [stroke(a)], strokes_b: [stroke(b)] });
    },
    async answerItem({ regions: [region] }, digit) {
      const label = labels.names[digit - 1];
      if (!label) {
        status(`There is no label ${digit} in the palette.`, 'error');
        return;
      }
      await annotations.save({ kind: 'scribble', label, strokes: [stroke(region)] });
      onScribbled();
    },
  });
}
