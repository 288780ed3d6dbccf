// The public JSON API, used with the browser's session cookie.

export class ApiError extends Error {
  constructor(status, body) {
    super(body && body.detail ? body.detail : `HTTP ${status}`);
    this.status = status;
    this.body = body || {};
  }
}

async function fail(response) {
  let body = null;
  try {
    body = await response.json();
  } catch {
    body = null;
  }
  return new ApiError(response.status, body);
}

export async function api(path, { method = 'GET', body } = {}) {
  const options = { method, headers: {}, credentials: 'same-origin' };
  if (body !== undefined) {
    options.headers['Content-Type'] = 'application/json';
    options.body = JSON.stringify(body);
  }
  const response = await fetch(`/api/v1${path}`, options);
  if (!response.ok) throw await fail(response);
  if (response.status === 204) return null;
  return response.json();
}

export async function apiBinary(path) {
  const response = await fetch(`/api/v1${path}`, { credentials: 'same-origin' });
  if (!response.ok) throw await fail(response);
  return response.arrayBuffer();
}

// Every item of a paged list, and the last page (for fields a page carries beside its items).
export async function allPages(path, pageSize = 1000) {
  const items = [];
  for (let offset = 0; ; offset += pageSize) {
    const sep = path.includes('?') ? '&' : '?';
    const page = await api(`${path}${sep}${new URLSearchParams({ limit: pageSize, offset })}`);
    items.push(...page.items);
    if (items.length >= page.total || page.items.length === 0) return { items, page };
  }
}

export function parseNpyInt32(buffer) {
  // NPY v1: magic (6) + version (2) + header length (2, little-endian) + header + data.
  const view = new DataView(buffer);
  const headerLength = view.getUint16(8, true);
  return new Int32Array(buffer, 10 + headerLength);
}
