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

// Scrolls the panel (the nearest scrolling ancestor) that holds `element` so that it is in
// sight: 'nearest' moves as little as needed, 'center' centres it. Unlike scrollIntoView it
// never scrolls the page itself, which would push the workspace's top out of the window.
export function reveal(element, block = 'nearest') {
  let box = element.parentElement;
  while (box && !(box.scrollHeight > box.clientHeight && /auto|scroll/.test(getComputedStyle(box).overflowY))) {
    box = box.parentElement;
  }
  if (!box || box === document.body || box === document.documentElement) return;
  const inner = element.getBoundingClientRect();
  const outer = box.getBoundingClientRect();
  let delta = 0;
  if (block === 'center') delta = (inner.top + inner.height / 2) - (outer.top + outer.height / 2);
  else if (inner.top < outer.top) delta = inner.top - outer.top;
  else if (inner.bottom > outer.bottom) delta = Math.min(inner.bottom - outer.bottom, inner.top - outer.top);
  box.scrollTop += delta;
}
