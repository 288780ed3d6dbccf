// A parameter form generated from an algorithm's JSON Schema (the same schema the server
// validates runs with).

function fieldType(spec) {
  if (spec.enum) return 'enum';
  if (spec.anyOf) {
    const kinds = spec.anyOf.map((s) => s.type || (s.const !== undefined ? 'const' : 'enum'));
    if (kinds.includes('null')) return 'nullable';
    return 'mixed';
  }
  return spec.type;
}

function inputFor(name, spec) {
  const type = fieldType(spec);
  if (type === 'enum' || (spec.anyOf && spec.anyOf.every((s) => s.enum || s.const))) {
    const select = document.createElement('select');
    const values = spec.enum || spec.anyOf.flatMap((s) => s.enum || [s.const]);
    for (const value of values) select.append(new Option(value, value));
    select.value = spec.default;
    return select;
  }
  const input = document.createElement('input');
  if (type === 'boolean') {
    input.type = 'checkbox';
    input.checked = Boolean(spec.default);
    return input;
  }
  if (type === 'integer' || type === 'number') {
    input.type = 'number';
    input.step = type === 'integer' ? '1' : 'any';
    if (spec.minimum !== undefined) input.min = spec.minimum;
    if (spec.maximum !== undefined) input.max = spec.maximum;
  } else {
    input.type = 'text';
  }
  input.value = spec.default ?? '';
  input.placeholder = type === 'nullable' ? 'empty = default' : ''; // the tooltip says which
  return input;
}

function readValue(input, spec) {
  if (input.type === 'checkbox') return input.checked;
  const raw = input.value.trim();
  const type = fieldType(spec);
  if (raw === '' && type === 'nullable') return null;
  if (type === 'integer') return Number.parseInt(raw, 10);
  if (type === 'number') return Number.parseFloat(raw);
  if (type === 'nullable' || type === 'mixed') {
    const number = Number(raw);
    return raw !== '' && Number.isFinite(number) ? number : raw;
  }
  return raw;
}

export function buildForm(container, schema) {
  container.replaceChildren();
  const fields = [];
  for (const [name, spec] of Object.entries(schema.properties || {})) {
    const label = document.createElement('label');
    label.className = 'param';
    label.title = spec.description || '';
    const input = inputFor(name, spec);
    input.name = name;
    input.dataset.param = name;
    label.append(spec.title || name, input);
    container.append(label);
    fields.push({ name, spec, input });
  }
  return () => Object.fromEntries(fields.map(({ name, spec, input }) => [name, readValue(input, spec)]));
}
