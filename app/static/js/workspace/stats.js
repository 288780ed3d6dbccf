// Comparing two clusterings: contingency table and adjusted Rand index.

function maxOf(values) {
  let max = -1;
  for (const v of values) if (v > max) max = v;
  return max;
}

export function contingency(a, b) {
  const rows = maxOf(a) + 1;
  const cols = maxOf(b) + 1;
  const table = Array.from({ length: rows }, () => new Array(cols).fill(0));
  for (let i = 0; i < a.length; i += 1) {
    if (a[i] >= 0 && b[i] >= 0) table[a[i]][b[i]] += 1;
  }
  return table;
}

const pairs = (n) => (n * (n - 1)) / 2;

export function adjustedRandIndex(a, b) {
  const table = contingency(a, b);
  const rowSums = table.map((row) => row.reduce((s, v) => s + v, 0));
  const colSums = table[0] ? table[0].map((_, j) => table.reduce((s, row) => s + row[j], 0)) : [];
  const n = rowSums.reduce((s, v) => s + v, 0);
  const sumCells = table.flat().reduce((s, v) => s + pairs(v), 0);
  const sumRows = rowSums.reduce((s, v) => s + pairs(v), 0);
  const sumCols = colSums.reduce((s, v) => s + pairs(v), 0);
  const expected = (sumRows * sumCols) / pairs(n);
  const max = (sumRows + sumCols) / 2;
  return max === expected ? 1 : (sumCells - expected) / (max - expected);
}
