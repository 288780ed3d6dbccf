"""CSV files that are safe to open in a spreadsheet.

A text cell that starts with `=`, `+`, `-`, `@`, a tab or a carriage return is read by
spreadsheet tools as a formula (CSV injection, OWASP); such cells get a leading single quote, which
the tools show as text. Numbers are written as they are, so a cluster -1 stays -1. Every CSV the
app offers (run results, the workspace's labels and clusters) is written here.
"""

import csv
import io
from collections.abc import Iterable, Sequence

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def spreadsheet_safe(cell: object) -> object:
    """The cell as a spreadsheet should see it: text that would start a formula is quoted."""
    if isinstance(cell, str) and cell.startswith(FORMULA_STARTS):
        return "'" + cell
    return cell


def csv_text(header: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    """A CSV document (header row first) with every text cell made spreadsheet-safe."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow([spreadsheet_safe(cell) for cell in header])
    writer.writerows([spreadsheet_safe(cell) for cell in row] for row in rows)
    return out.getvalue()
