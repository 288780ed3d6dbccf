// The picture as the server sees it. Browsers turn a JPEG by its EXIF orientation when they
// decode it (Chromium does so even with imageOrientation: 'none'), but the server reads the
// stored pixels unturned: featurization, stroke coordinates and the cluster mask are all in
// that raw layout. So a turned picture is turned back here, or every stroke and the overlay
// would land on the wrong pixels.

// The EXIF orientation (1..8) of a JPEG, 1 when it has none or is no JPEG.
export function jpegOrientation(buffer) {
  const bytes = new Uint8Array(buffer);
  const view = new DataView(buffer);
  if (bytes[0] !== 0xff || bytes[1] !== 0xd8) return 1;
  for (let at = 2; at + 4 <= bytes.length && bytes[at] === 0xff;) {
    const marker = bytes[at + 1];
    const size = view.getUint16(at + 2);
    if (marker === 0xda) break; // image data: no metadata after this
    const exif = marker === 0xe1 && String.fromCharCode(...bytes.subarray(at + 4, at + 8)) === 'Exif';
    if (exif) {
      const tiff = at + 10;
      const little = bytes[tiff] === 0x49; // "II"
      const ifd = tiff + view.getUint32(tiff + 4, little);
      const entries = view.getUint16(ifd, little);
      for (let k = 0; k < entries; k += 1) {
        const entry = ifd + 2 + 12 * k;
        if (view.getUint16(entry, little) === 0x0112) {
          const value = view.getUint16(entry + 8, little);
          return value >= 1 && value <= 8 ? value : 1;
        }
      }
      return 1;
    }
    at += 2 + size;
  }
  return 1;
}

// Per orientation, the canvas transform taking the browser's turned picture back to the raw
// W x H layout (w, h: the raw width and height).
const UNDO = {
  2: (w) => [-1, 0, 0, 1, w, 0], // mirrored left-right
  3: (w, h) => [-1, 0, 0, -1, w, h], // turned 180 degrees
  4: (w, h) => [1, 0, 0, -1, 0, h], // mirrored top-bottom
  5: () => [0, 1, 1, 0, 0, 0], // transposed
  6: (w, h) => [0, -1, 1, 0, 0, h], // turned 90 degrees clockwise
  7: (w, h) => [0, -1, -1, 0, w, h], // transversed
  8: (w) => [0, 1, -1, 0, w, 0], // turned 90 degrees anticlockwise
};

// The stored image bytes -> something to draw in the raw width x height layout.
export async function rawPicture(buffer, width, height) {
  const bitmap = await createImageBitmap(new Blob([buffer]));
  const orientation = jpegOrientation(buffer);
  // A quarter turn swaps the sides; if they are not swapped, this browser did not turn it.
  const unturned = orientation >= 5 && width !== height && bitmap.width === width;
  if (orientation === 1 || unturned) return bitmap;
  const canvas = new OffscreenCanvas(width, height);
  const ctx = canvas.getContext('2d');
  ctx.setTransform(...UNDO[orientation](width, height));
  ctx.drawImage(bitmap, 0, 0);
  return canvas;
}
