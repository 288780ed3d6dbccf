// The Channels panel of an image of measured channels (16-bit fluorescence, multiplexed slides):
// each channel shown or hidden, its colour, and the values drawn black and in full colour (its
// contrast), "Auto" taking the channel's 0.5th..99.5th percentile. It changes what the expert
// sees, never the data or the features. The server draws the tiles (GET .../image_files/...?
// display=...), and keeps each user's display (PUT /datasets/{id}/display), so it is there on
// the next visit, in any browser.
import { api } from '../workspace/api.js';
import { $, report } from '../workspace/ui.js';

const REDRAW_MS = 150; // typing a value redraws once the keys rest this long
const SAVE_MS = 600;

// `onDisplay(query)`: draw the picture's tiles with this display query ('' = the default).
// `onFeaturize(dataset)`: an editor asked for features from other channels; the dataset is
// featurizing again.
export function createChannelPanel({ datasetId, onDisplay, onFeaturize = () => {} }) {
  const box = $('#channels');
  let display = null; // the GET /display answer: channels, defaults, ranges
  let redrawTimer = null;
  let saveTimer = null;

  const same = (a, b) => a.visible === b.visible && a.colour === b.colour && a.low === b.low && a.high === b.high;
  const isDefault = () => display.channels.every((c, k) => same(c, display.defaults[k]));
  const query = () => display.channels.map((c) => (c.visible ? `${c.colour}:${c.low}:${c.high}` : 'off')).join(',');

  function row(channel, k) {
    const range = display.ranges[k];
    const line = document.createElement('div');
    line.className = 'channel';
    line.dataset.channel = channel.name;
    const shown = document.createElement('label');
    shown.className = 'inline-check';
    const visible = document.createElement('input');
    visible.type = 'checkbox';
    visible.checked = channel.visible;
    visible.setAttribute('aria-label', `show ${channel.name}`);
    shown.append(visible, document.createTextNode(` ${channel.name}`));
    const colour = document.createElement('input');
    colour.type = 'color';
    colour.value = `#${channel.colour}`;
    colour.setAttribute('aria-label', `colour of ${channel.name}`);
    const [low, high] = ['low', 'high'].map((end) => {
      const input = document.createElement('input');
      input.type = 'number';
      input.step = 'any';
      input.value = String(channel[end]);
      input.title = `${channel.name} ranges over ${range.minimum} … ${range.maximum}`;
      input.setAttribute('aria-label', `${channel.name} ${end === 'low' ? 'shown black at' : 'shown full at'}`);
      return input;
    });
    const auto = document.createElement('button');
    auto.type = 'button';
    auto.className = 'secondary small';
    auto.textContent = 'Auto';
    auto.title = `${channel.name} from its 0.5th to its 99.5th percentile (${range.low} … ${range.high})`;
    const values = document.createElement('div');
    values.className = 'row tight';
    values.append(colour, low, document.createTextNode('…'), high, auto);
    line.append(shown, values);

    const edit = (change) => {
      const next = { ...display.channels[k], ...change };
      if (!(Number.isFinite(next.low) && Number.isFinite(next.high) && next.high > next.low)) {
        line.dataset.invalid = 'true';
        $('#channels-help').textContent = `${channel.name}: the value shown full must be above the value shown black.`;
        return;
      }
      delete line.dataset.invalid;
      $('#channels-help').textContent = '';
      display.channels[k] = next;
      changed();
    };
    visible.addEventListener('change', () => edit({ visible: visible.checked }));
    colour.addEventListener('input', () => edit({ colour: colour.value.slice(1) }));
    low.addEventListener('input', () => edit({ low: low.valueAsNumber }));
    high.addEventListener('input', () => edit({ high: high.valueAsNumber }));
    auto.addEventListener('click', () => {
      low.value = String(range.low);
      high.value = String(range.high);
      edit({ low: range.low, high: range.high, visible: true });
      visible.checked = true;
    });
    return line;
  }

  function render() {
    $('#channel-rows').replaceChildren(...display.channels.map(row));
    box.dataset.display = isDefault() ? '' : query();
  }

  function changed() {
    box.dataset.display = isDefault() ? '' : query();
    clearTimeout(redrawTimer);
    redrawTimer = setTimeout(() => onDisplay(box.dataset.display), REDRAW_MS);
    clearTimeout(saveTimer);
    box.dataset.saved = 'false';
    saveTimer = setTimeout(save, SAVE_MS);
  }

  async function save() {
    const channels = display.channels.map(({ visible, colour, low, high }) => ({ visible, colour, low, high }));
    try {
      if (isDefault()) await api(`/datasets/${datasetId}/display`, { method: 'DELETE' });
      else await api(`/datasets/${datasetId}/display`, { method: 'PUT', body: { channels } });
      box.dataset.saved = 'true';
    } catch (error) {
      report(error);
    }
  }

  // Which channels the features use (the recipe's `channels`, empty: all), and the button that
  // featurizes again with the ticked ones (editors only: the list is not on a viewer's page).
  let recipe = null;
  function showFeatures(dataset) {
    const list = $('#feature-channels');
    if (!list || !dataset.featurization || !display) return;
    const next = dataset.featurization.recipe || {};
    if (recipe && JSON.stringify(next) === JSON.stringify(recipe)) return; // the expert's ticks stay
    recipe = next;
    const used = recipe.channels && recipe.channels.length ? recipe.channels : display.channels.map((c) => c.name);
    if (list.childElementCount !== display.channels.length) {
      list.replaceChildren(...display.channels.map((c) => {
        const label = document.createElement('label');
        label.className = 'inline-check';
        const box = document.createElement('input');
        box.type = 'checkbox';
        box.value = c.name;
        box.setAttribute('aria-label', `features from ${c.name}`);
        box.addEventListener('change', ticked);
        label.append(box, document.createTextNode(` ${c.name}`));
        return label;
      }));
    }
    for (const box of list.querySelectorAll('input')) box.checked = used.includes(box.value);
    ticked();
  }
  const chosen = () => [...$('#feature-channels').querySelectorAll('input')].filter((b) => b.checked).map((b) => b.value);
  function ticked() {
    const names = chosen();
    const used = recipe.channels && recipe.channels.length ? recipe.channels : display.channels.map((c) => c.name);
    $('#refeaturize').disabled = !names.length || names.join('\n') === used.join('\n');
    $('#channels-help').textContent = names.length ? '' : 'The features need at least one channel.';
  }
  async function featurizeAgain() {
    const names = chosen();
    const all = names.length === display.channels.length;
    $('#refeaturize').disabled = true;
    const dataset = await api(`/datasets/${datasetId}/featurize`, { method: 'POST', body: { ...recipe, channels: all ? [] : names } });
    recipe = dataset.featurization.recipe;
    onFeaturize(dataset);
  }

  return {
    showFeatures,
    // The saved display (or the default): the query the picture's first tiles are drawn with.
    async load() {
      display = await api(`/datasets/${datasetId}/display`);
      render();
      box.hidden = false;
      return box.dataset.display;
    },
    bind() {
      const again = $('#refeaturize');
      if (again) again.addEventListener('click', () => featurizeAgain().catch((error) => { report(error); ticked(); }));
      $('#channels-reset').addEventListener('click', () => {
        display.channels = display.defaults.map((c) => ({ ...c }));
        render();
        changed();
      });
    },
  };
}
