// CSV cells that are safe to open in a spreadsheet, as the server's exports write them
// (app/services/csv_export.py): text starting with = + - @ tab or carriage return would be read
// as a formula (CSV injection, OWASP), so it gets a leading single quote; numbers are written as
// they are, so a cluster -1 stays -1.

const FORMULA_START = /^[=+\-@\t\r]/;

export function csvCell(value) {
  if (typeof value === 'number') return String(value);
  let text = value == null ? '' : String(value);
  if (FORMULA_START.test(text)) text = `'${text}`;
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

export function csvLine(cells) {
  return cells.map(csvCell).join(',');
}
