"""A table's expert labels given as a column (`label_column`): read block by block as the table
is, kept as one small code per row (int16, -1 where there is no label), never as Python strings
per row; once the dataset is ready they become ordinary `label` annotations, one per distinct
label holding all its rows, recorded as one act by the user who brought the table
(`record_label_annotations`), so the expert sees them and can undo them like any other act.

Each block is dictionary-encoded by Arrow: only its distinct values are looked at in Python.
A label is a value's text, trimmed; an empty cell, a null or a NaN is no label. Numbers are
their string form (3 and 3.0 are "3"); in a CSV (or an AnnData `obs` column, read as text) a
cell that is a number is read as that number. A label longer than an annotation's label may be,
or more than MAX_LABELS distinct labels, is refused naming the first row at fault and its value.
"""

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from numpy.typing import NDArray
from sqlalchemy.orm import Session

from app.db.models import Dataset, User
from app.services.annotations import MAX_LABEL_LENGTH, Batch, NewAnnotation, create_annotations
from app.services.errors import InvalidInput
from app.services.ingest.checks import class_sort_key

# An expert labels a few classes, not every row: more distinct values than this is an id or a
# measurement named by mistake (and one annotation per value would swamp the list).
MAX_LABELS = 1_000
SHOWN_CHARACTERS = 120  # of a refused value, in the message
_DICTIONARY_SLICE = 4_096  # distinct values turned into Python text at a time

Place = Callable[[int], str]
"""Where the k-th row of a block is, said in a refusal ("row 12", or an object and its row)."""


@dataclass(frozen=True)
class LabelGroup:
    label: str
    items: NDArray[np.int64]  # row positions, ascending


class LabelColumn:
    """The label column's rows as they come, block by block, in order."""

    def __init__(self, name: str, *, numbers_in_text: bool) -> None:
        self.name = name
        # A CSV cell (or text read from an AnnData file) has no type: "3.0" there is a number.
        self._numbers_in_text = numbers_in_text
        self._code_of: dict[str, int] = {}  # label -> code, in order of first appearance
        self._codes: list[NDArray[np.int16]] = []
        self._counts = np.zeros(1, dtype=np.int64)  # rows per code + 1 (index 0: no label)
        self.n_rows = 0

    def add(
        self, values: pa.Array | pa.ChunkedArray | list[str], place: Place | None = None
    ) -> None:
        """The next rows' values; ``place(k)`` names the block's k-th row in a refusal (by
        default "row N", counted from 1 over the whole column)."""
        first = self.n_rows
        where = place or (lambda k: f"row {first + k + 1}")
        array = _array(values)
        n = len(array)
        if n == 0:
            return
        if pa.types.is_null(array.type):
            self._codes.append(np.full(n, -1, dtype=np.int16))
            self._counts[0] += n
            self.n_rows += n
            return
        # Distinct values in order of first appearance: the first refused one is the first row.
        encoded = pc.dictionary_encode(array)
        dictionary = encoded.dictionary
        indices = encoded.indices.fill_null(len(dictionary)).to_numpy(zero_copy_only=False)
        local = np.full(len(dictionary) + 1, -1, dtype=np.int16)  # the last: a null
        for start in range(0, len(dictionary), _DICTIONARY_SLICE):
            part = dictionary.slice(start, _DICTIONARY_SLICE)
            for k, text in enumerate(_texts(part, self._numbers_in_text), start=start):
                if text is None:
                    continue
                code = self._code_of.get(text)
                if code is None:
                    problem = self._problem(text)
                    if problem is not None:
                        row = int(np.argmax(indices == k))
                        raise InvalidInput(f"label_column {self.name!r} at {where(row)}: {problem}")
                    code = self._code_of[text] = len(self._code_of)
                local[k] = code
        codes = local[indices]
        self._codes.append(codes)
        counts = np.bincount(codes + 1, minlength=len(self._code_of) + 1)
        counts[: len(self._counts)] += self._counts
        self._counts = counts
        self.n_rows += n

    def _problem(self, text: str) -> str | None:
        """Why a new label is refused, or None."""
        shown = text if len(text) <= SHOWN_CHARACTERS else text[:SHOWN_CHARACTERS] + "..."
        if len(text) > MAX_LABEL_LENGTH:
            return (
                f"the label {shown!r} has {len(text):,} characters; a label has 1 to "
                f"{MAX_LABEL_LENGTH}"
            )
        if len(self._code_of) >= MAX_LABELS:
            return (
                f"{shown!r} would be label number {MAX_LABELS + 1:,}; a label column holds at "
                f"most {MAX_LABELS:,} different labels (is it an id or a measurement?)"
            )
        return None

    def groups(self) -> list[LabelGroup]:
        """One group per label with its rows (ascending), labels in the ground truth's order
        (numbers by value, then text); labels no row kept are left out."""
        if not self._codes or not self._code_of:
            return []
        codes = np.concatenate(self._codes) if len(self._codes) > 1 else self._codes[0]
        self._codes = [codes]
        # Stable: each label's rows stay ascending (int16 codes sort by radix, in linear time).
        order = np.argsort(codes, kind="stable")
        counts = self._counts
        bounds = np.cumsum(counts)  # bounds[c]: where code c's rows start in `order`
        found = [
            LabelGroup(label, order[bounds[code] : bounds[code + 1]].astype(np.int64, copy=False))
            for label, code in self._code_of.items()
            if counts[code + 1]
        ]
        return sorted(found, key=lambda group: class_sort_key(group.label))


def record_label_annotations(
    *, session: Session, dataset: Dataset, user: User | None, labels: LabelColumn
) -> Batch | None:
    """The column's labels as `label` annotations, one per label, all one act authored by
    ``user``: called in the transaction that makes ``dataset`` ready, which it is once that
    commits (the annotations are checked against it as such). None when no row has a label."""
    groups = labels.groups()
    if not groups:
        return None
    if user is None:
        raise InvalidInput(
            f"label_column {labels.name!r}: its labels become annotations by the user who "
            "brought the table, and there is none"
        )
    if labels.n_rows != dataset.n_items:
        raise InvalidInput(
            f"label_column {labels.name!r} has {labels.n_rows:,} rows; the table has "
            f"{dataset.n_items:,}"
        )
    dataset.status = "ready"  # what this transaction makes it: annotations need items
    return create_annotations(
        session=session,
        dataset=dataset,
        user=user,
        annotations=[
            NewAnnotation("label", {"items": group.items, "label": group.label}, None)
            for group in groups
        ],
    )


def _array(values: pa.Array | pa.ChunkedArray | list[str]) -> pa.Array:
    if isinstance(values, list):
        return pa.array(values, type=pa.string())
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if pa.types.is_dictionary(values.type):  # a categorical column: its values, re-encoded
        values = values.dictionary_decode()
    return values


def _texts(dictionary: pa.Array, numbers_in_text: bool) -> list[str | None]:
    """Each distinct value's label (None: no label)."""
    kind = dictionary.type
    single = pa.types.is_float32(kind) or pa.types.is_float16(kind)
    labels: list[str | None] = []
    for value in dictionary.to_pylist():
        if value is None:
            labels.append(None)
        elif isinstance(value, float):
            labels.append(_float_text(value, single))
        elif isinstance(value, bool | int):
            labels.append(str(value))
        else:
            text = value.decode(errors="replace") if isinstance(value, bytes) else str(value)
            text = text.strip()
            if numbers_in_text and text:
                labels.append(_number_text(text))
            else:
                labels.append(text or None)
    return labels


def _float_text(value: float, single: bool = False) -> str | None:
    """A number's label: its shortest text, whole numbers without a decimal point."""
    if math.isnan(value):
        return None
    if value.is_integer() and abs(value) < 2**63:
        return str(int(value))
    return str(np.float32(value)) if single else repr(value)


def _number_text(text: str) -> str | None:
    """A text cell's label: a number's string form when it is one ("3.0" is "3"; "nan" is no
    label), else the text."""
    if "_" in text:  # float() takes "1_000"; a table does not write numbers so
        return text
    try:
        return str(int(text))  # exact, however many digits
    except ValueError:
        pass
    try:
        number = float(text)
    except ValueError:
        return text
    return _float_text(number)
