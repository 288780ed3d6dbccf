"""Login throttling as OWASP's authentication guidance has it, kept in the database.

Two keys count each failed sign-in: the (username, client address) pair, locked after
`max_failures`, and the client address, with its own, higher budget `max_failures_per_address`
(password spraying across many accounts from one place). A locked key's attempts get 429 with
Retry-After, without the password being checked, for `backoff` seconds, doubling with each
further failure up to `max_backoff`. Nothing locks a username everywhere: then anyone who knows
it could lock its owner (admin included) out, and keep them out with one request per lock
period; the right password from an address that has not failed goes through. The count is
forgotten after `window` seconds with no failure and no lock; a successful sign-in clears the
pair's count (not the address's, or one valid account would let its owner spray guesses at
others). Rows are locked while they are updated, so concurrent failures (threads, processes)
all count. Without a client address (none known) the username alone is the key.
"""

import hashlib
import math
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import delete, or_, select
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.orm import Session

from app.config import Settings
from app.db.base import utcnow
from app.db.models import LoginThrottle
from app.services.errors import TooManyRequests


@dataclass(frozen=True)
class ThrottlePolicy:
    max_failures: int
    max_failures_per_address: int
    window: timedelta
    backoff: timedelta
    max_backoff: timedelta

    @classmethod
    def from_settings(cls, settings: Settings) -> "ThrottlePolicy":
        return cls(
            max_failures=settings.login_max_failures,
            max_failures_per_address=settings.login_max_failures_per_address,
            window=timedelta(seconds=settings.login_failure_window_seconds),
            backoff=timedelta(seconds=settings.login_backoff_seconds),
            max_backoff=timedelta(seconds=settings.login_backoff_max_seconds),
        )

    def lockout(self, failures: int, limit: int) -> timedelta | None:
        """How long a key with this many failures stays locked (None: not yet)."""
        if failures < limit:
            return None
        doublings = min(failures - limit, 32)  # 2**32 backoffs is past any sensible cap
        return min(self.backoff * 2**doublings, self.max_backoff)


def _key(kind: str, value: str) -> str:
    # Hashed: usernames that do not exist are attacker-chosen text of any length.
    return f"{kind}:{hashlib.sha256(value.encode()).hexdigest()}"


def _pair_key(username: str, address: str | None) -> str:
    # NUL cannot occur in a username (sign-in refuses it), so the pair is unambiguous.
    return _key("pair", f"{username}\x00{address}") if address else _key("user", username)


def _keys(policy: ThrottlePolicy, username: str, address: str | None) -> Iterator[tuple[str, int]]:
    yield _pair_key(username, address), policy.max_failures
    if address:
        yield _key("addr", address), policy.max_failures_per_address


def check(*, session: Session, policy: ThrottlePolicy, username: str, address: str | None) -> None:
    """Refuse (429) while the (username, address) pair or the address is locked."""
    now = utcnow()
    keys = [key for key, _ in _keys(policy, username, address)]
    locks = [
        until
        for until in session.scalars(
            select(LoginThrottle.locked_until).where(
                LoginThrottle.key.in_(keys), LoginThrottle.locked_until > now
            )
        )
        if until is not None
    ]
    if locks:
        wait = math.ceil((max(locks) - now).total_seconds())
        raise TooManyRequests(
            f"too many failed sign-ins for this account from this address; try again in {wait} s",
            retry_after=wait,
        )


def _row_for_update(session: Session, key: str, now: datetime) -> LoginThrottle:
    """The key's row, created if missing, locked until the transaction ends.

    The insert (a no-op when the row exists) takes SQLite's write lock; on PostgreSQL the
    SELECT ... FOR UPDATE locks the row."""
    dialect = session.get_bind().dialect.name
    insert = postgresql_insert if dialect == "postgresql" else sqlite_insert
    session.execute(
        insert(LoginThrottle)
        .values(key=key, failures=0, last_failure_at=now, locked_until=None)
        .on_conflict_do_nothing(index_elements=["key"])
    )
    row = session.scalars(
        select(LoginThrottle)
        .where(LoginThrottle.key == key)
        .with_for_update()
        .execution_options(populate_existing=True)
    ).one()
    return row


def record_failure(
    *, session: Session, policy: ThrottlePolicy, username: str, address: str | None
) -> None:
    """Count one failed sign-in against the username and the address (flushes; the caller
    commits even though the request fails)."""
    now = utcnow()
    for key, limit in _keys(policy, username, address):
        row = _row_for_update(session, key, now)
        quiet_since = max(row.last_failure_at, row.locked_until or row.last_failure_at)
        if now - quiet_since > policy.window:
            row.failures = 0
        row.failures += 1
        row.last_failure_at = now
        lockout = policy.lockout(row.failures, limit)
        row.locked_until = now + lockout if lockout else None
    # Forget keys that have been quiet for a whole window, so sprayed usernames do not pile up.
    cutoff = now - policy.window
    session.execute(
        delete(LoginThrottle).where(
            LoginThrottle.last_failure_at < cutoff,
            or_(LoginThrottle.locked_until.is_(None), LoginThrottle.locked_until < cutoff),
        )
    )
    session.flush()


def clear_pair(*, session: Session, username: str, address: str | None) -> None:
    """A successful sign-in: the pair's failures are forgiven (the address's are not)."""
    key = _pair_key(username, address)
    session.execute(delete(LoginThrottle).where(LoginThrottle.key == key))
