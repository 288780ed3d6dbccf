"""Blocks of a source read one ahead on a thread of their own: in order, the next read while
the current block is in use, a reading error raised at its block, and a consumer that stops
early stopping (and closing) the reader."""

import threading
from collections.abc import Iterator

import pytest

from app.store.sources.read_ahead import read_ahead


def test_blocks_come_in_order_and_the_next_is_read_while_one_is_in_use() -> None:
    reading = [threading.Event() for _ in range(4)]

    def source() -> Iterator[int]:
        for k in range(4):
            reading[k].set()
            yield k

    seen = []
    for block in read_ahead(source()):
        if block < 3:  # without reading ahead, block + 1 is not asked for before this returns
            assert reading[block + 1].wait(10), f"block {block + 1} was not read ahead"
        seen.append(block)
    assert seen == [0, 1, 2, 3]


def test_an_error_while_reading_is_raised_at_its_block() -> None:
    def source() -> Iterator[int]:
        yield 0
        yield 1
        raise ValueError("row 9,000,000 of part-57 is not a number")

    seen = []
    with pytest.raises(ValueError, match="part-57"):
        for block in read_ahead(source()):
            seen.append(block)
    assert seen == [0, 1]


def test_a_consumer_that_stops_early_stops_and_closes_the_reader() -> None:
    asked = []
    closed = threading.Event()

    def source() -> Iterator[int]:
        try:
            for k in range(1_000):
                asked.append(k)
                yield k
        finally:
            closed.set()

    blocks = read_ahead(source())
    assert next(blocks) == 0
    blocks.close()  # what a refusal or a stopping server does to the loop
    assert closed.wait(10)
    assert len(asked) <= 3, asked  # the block in use, the one ahead, at most one in hand


def test_an_empty_source_gives_nothing() -> None:
    assert list(read_ahead(iter([]))) == []
