// Category colours, the label chips and the legend, shared by every workspace page. Kept apart
// from plot.js so that a page without the scatterplot need not load WebGL code for colours.

export const PALETTE = [
  '#4e79a7', '#f28e2b', '#59a14f', '#e15759', '#b07aa1', '#76b7b2', '#edc948', '#ff9da7',
  '#9c755f', '#79706e', '#1f77b4', '#17becf', '#bcbd22', '#8c564b', '#d62728', '#2ca02c',
];
export const UNLABELED = '#9aa5b4';

// Clusters and ground-truth classes are numbered, so their colour follows the number.
export const colourAt = (k) => PALETTE[k % PALETTE.length];

// Labels are named and come and go, so each keeps the colour it got first for as long as the
// page lives. `categories` is the page's list of names in that order; it only grows.
export function createPalette(categories = []) {
  const colour = (name) => {
    let index = categories.indexOf(name);
    if (index < 0) {
      categories.push(name);
      index = categories.length - 1;
    }
    return colourAt(index);
  };
  // The order the chips are shown in and keys 1–9 pick from: coloured names first, then others.
  // (The scatterplot page colours its names in creation order first: tools.js, learnCategoryOrder.)
  const names = (known = []) => [...new Set([...categories, ...known])];
  return { colour, names };
}

// `text(name)` is what a chip shows (a page may display a label under another name than the
// one its annotations store).
export function renderChips(box, names, colour, onPick, text = (name) => name) {
  box.replaceChildren();
  names.forEach((name, k) => {
    const button = document.createElement('button');
    button.type = 'button';
    button.className = 'chip';
    button.dataset.category = name;
    button.style.borderColor = colour(name);
    // The key that applies it, as a key cap beside the name; past nine there is no key.
    if (k < 9) {
      const key = document.createElement('kbd');
      key.textContent = String(k + 1);
      button.append(key, ' ');
    }
    button.append(text(name));
    button.addEventListener('click', () => onPick(name));
    box.append(button);
  });
}

// `colors[j]` is the colour of `names[j]`.
export function renderLegend(box, names, colors) {
  box.replaceChildren();
  names.forEach((name, j) => {
    const item = document.createElement('span');
    item.innerHTML = '<i></i>';
    item.firstChild.style.background = colors[j];
    item.append(name);
    box.append(item);
  });
}
