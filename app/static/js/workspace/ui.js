// DOM helpers and the status line, shared by every workspace page.
import { ApiError } from './api.js';

export const $ = (selector) => document.querySelector(selector);

export function status(message, kind = 'info') {
  const box = $('#status');
  box.textContent = message;
  box.dataset.kind = kind;
}

export function report(error) {
  status(error instanceof ApiError || error instanceof Error ? error.message : String(error), 'error');
}

// Handlers are often async: their failures belong in the status line, not only in the console.
// Pages render only the controls the user's role allows (a viewer gets no editing tools), so a
// control that is not on the page is simply not bound.
export function bind(selector, event, handler) {
  const element = $(selector);
  if (element) element.addEventListener(event, (e) => Promise.resolve(handler(e)).catch(report));
}
