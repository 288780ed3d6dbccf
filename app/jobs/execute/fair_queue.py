"""The inline executor's queue: users take turns, and one user's jobs never hold every worker.

A plain FIFO lets one user's burst (twenty image uploads, each a featurization) run to the
end before anyone else's run starts. Here each owner (a user id; None for jobs nobody owns,
such as demo data) has a FIFO of their own; a free worker takes the next job of the owner
served longest ago among those below `per_owner` running jobs. With `per_owner` below the
number of workers, a worker is always left for somebody else: another user's job starts at
once, not behind the burst.
"""

import threading
from collections import OrderedDict, deque
from typing import Generic, TypeVar

Job = TypeVar("Job")
Owner = int | None


class FairQueue(Generic[Job]):
    def __init__(self, per_owner: int) -> None:
        if per_owner < 1:
            raise ValueError(f"per_owner must be at least 1, got {per_owner}")
        self.per_owner = per_owner
        # Owners with jobs waiting, the one served longest ago first.
        self._waiting: OrderedDict[Owner, deque[Job]] = OrderedDict()
        self._running: dict[Owner, int] = {}
        self._closed = False
        self._changed = threading.Condition()

    def put(self, owner: Owner, job: Job) -> None:
        with self._changed:
            self._waiting.setdefault(owner, deque()).append(job)
            self._changed.notify_all()

    def get(self) -> tuple[Owner, Job] | None:
        """The next job and its owner (who holds a worker until `done`), blocking while none
        may start; None once the queue is closed."""
        with self._changed:
            while not self._closed:
                for owner in self._waiting:
                    if self._running.get(owner, 0) < self.per_owner:
                        jobs = self._waiting.pop(owner)
                        job = jobs.popleft()
                        if jobs:
                            self._waiting[owner] = jobs  # to the back: the others go first
                        self._running[owner] = self._running.get(owner, 0) + 1
                        return owner, job
                self._changed.wait()
            return None

    def done(self, owner: Owner) -> None:
        """A job of `owner` ended: its worker is free."""
        with self._changed:
            left = self._running.get(owner, 0) - 1
            if left > 0:
                self._running[owner] = left
            else:
                self._running.pop(owner, None)
            self._changed.notify_all()

    def close(self) -> None:
        """Wake every waiting worker with None. Jobs still waiting stay queued in the database
        (start-up takes them up again)."""
        with self._changed:
            self._closed = True
            self._changed.notify_all()

    def waiting(self) -> int:
        with self._changed:
            return sum(len(jobs) for jobs in self._waiting.values())
