"""A source's blocks read one ahead, on a thread of their own: while a block is summarised (or
multiplied, for a wide table's PCA), the next one is read. Reading a source (a file's pages,
an S3 object's ranges, a Parquet row group's decoding) releases the GIL for most of its time,
as numpy's arithmetic does, so the two overlap; a pass then costs about the longer of the two,
not their sum (a 100,000 x 20,000 AnnData read twice: 58 s before, see docs/benchmarks.md).

At most one block waits beside the one in use. An error while reading is raised to the
consumer at the block where it happened; a consumer that stops early (a refusal, a server
stopping) stops the reader at its next block."""

import queue
import threading
from collections.abc import Iterator
from typing import TypeVar

T = TypeVar("T")

_DONE = object()
_POLL_S = 0.1  # how often a reader with a block in hand looks whether the consumer left


def read_ahead(blocks: Iterator[T]) -> Iterator[T]:
    """``blocks``, each read while the one before it is in use."""
    handoff: queue.Queue[object] = queue.Queue(maxsize=1)
    stopped = threading.Event()

    def give(item: object) -> bool:
        while not stopped.is_set():
            try:
                handoff.put(item, timeout=_POLL_S)
                return True
            except queue.Full:
                continue
        return False

    def reader() -> None:
        try:
            for block in blocks:
                if not give((block,)):
                    return
        except BaseException as exc:  # handed to the consumer, raised there
            give(exc)
            return
        finally:
            close = getattr(blocks, "close", None)
            if close is not None:  # a generator's files and connections, closed here
                close()
        give(_DONE)

    thread = threading.Thread(target=reader, name="source-read-ahead", daemon=True)
    thread.start()
    try:
        while True:
            item = handoff.get()
            if item is _DONE:
                return
            if isinstance(item, BaseException):
                raise item
            assert isinstance(item, tuple)
            yield item[0]
    finally:
        stopped.set()
        thread.join()
