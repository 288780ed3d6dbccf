// Decodes the server's cluster masks: greyscale PNGs, 8-bit (ids < 256) or 16-bit, not
// interlaced. Decoding here rather than through <img>/canvas keeps every id exact: a canvas
// would reduce 16-bit ids to 8 bits, and colour management could in principle nudge values.
// The browser's DecompressionStream inflates the zlib data, so no library is needed.

const SIGNATURE = [137, 80, 78, 71, 13, 10, 26, 10];

async function inflate(bytes) {
  const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream('deflate'));
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

function paeth(a, b, c) {
  const p = a + b - c;
  const pa = Math.abs(p - a);
  const pb = Math.abs(p - b);
  const pc = Math.abs(p - c);
  if (pa <= pb && pa <= pc) return a;
  return pb <= pc ? b : c;
}

// Undoes the per-row filters in place; `bpp` is bytes per pixel (1 or 2 for grey).
function unfilter(raw, width, height, bpp) {
  const stride = width * bpp;
  const out = new Uint8Array(stride * height);
  for (let y = 0; y < height; y += 1) {
    const filter = raw[y * (stride + 1)];
    const src = y * (stride + 1) + 1;
    const row = y * stride;
    const up = row - stride;
    for (let i = 0; i < stride; i += 1) {
      const a = i >= bpp ? out[row + i - bpp] : 0;
      const b = y > 0 ? out[up + i] : 0;
      const c = i >= bpp && y > 0 ? out[up + i - bpp] : 0;
      let value = raw[src + i];
      if (filter === 1) value += a;
      else if (filter === 2) value += b;
      else if (filter === 3) value += (a + b) >> 1;
      else if (filter === 4) value += paeth(a, b, c);
      else if (filter !== 0) throw new Error(`PNG: unknown filter ${filter}`);
      out[row + i] = value & 255;
    }
  }
  return out;
}

// -> { width, height, ids } where ids[r * width + c] is the value of pixel (r, c).
export async function decodeGreyPng(buffer) {
  const bytes = new Uint8Array(buffer);
  const view = new DataView(buffer);
  if (!SIGNATURE.every((b, i) => bytes[i] === b)) throw new Error('not a PNG');
  let width = 0;
  let height = 0;
  let depth = 0;
  const parts = [];
  for (let at = 8; at < bytes.length;) {
    const length = view.getUint32(at);
    const type = String.fromCharCode(...bytes.subarray(at + 4, at + 8));
    const data = bytes.subarray(at + 8, at + 8 + length);
    if (type === 'IHDR') {
      width = view.getUint32(at + 8);
      height = view.getUint32(at + 12);
      depth = data[8];
      const colourType = data[9];
      const interlaced = data[12];
      if (colourType !== 0 || ![8, 16].includes(depth) || interlaced) {
        throw new Error('PNG: expected a non-interlaced 8- or 16-bit greyscale mask');
      }
    } else if (type === 'IDAT') {
      parts.push(data);
    } else if (type === 'IEND') {
      break;
    }
    at += 12 + length;
  }
  const bpp = depth / 8;
  const raw = await inflate(await new Blob(parts).arrayBuffer());
  const pixels = unfilter(raw, width, height, bpp);
  if (bpp === 1) return { width, height, ids: pixels };
  const ids = new Uint16Array(width * height);
  for (let i = 0; i < ids.length; i += 1) ids[i] = (pixels[2 * i] << 8) | pixels[2 * i + 1];
  return { width, height, ids };
}
