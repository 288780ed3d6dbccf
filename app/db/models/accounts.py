"""Users and their hashed bearer tokens (API tokens, OAuth2 access tokens, browser sessions)."""

from datetime import datetime

from sqlalchemy import Boolean, ForeignKey, Integer, String
from sqlalchemy.orm import Mapped, mapped_column, relationship

from app.db.base import AddressedById, Base, UTCDateTime, utcnow


class User(AddressedById, Base):
    __tablename__ = "users"

    username: Mapped[str] = mapped_column(String(64), unique=True)
    password_hash: Mapped[str] = mapped_column(String(255))
    is_admin: Mapped[bool] = mapped_column(Boolean, default=False)
    is_active: Mapped[bool] = mapped_column(Boolean, default=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)

    tokens: Mapped[list["ApiToken"]] = relationship(
        back_populates="user", cascade="all, delete-orphan", passive_deletes=True
    )


class ApiToken(AddressedById, Base):
    """A bearer secret. Only its SHA-256 is stored; `prefix` lets a user recognise it in a list.

    `kind` is `api` (named, long-lived, made by the user), `access` (from the OAuth2 password
    flow, expires) or `session` (a browser login cookie, expires).
    """

    __tablename__ = "api_tokens"

    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(100))
    kind: Mapped[str] = mapped_column(String(16))
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    prefix: Mapped[str] = mapped_column(String(16))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    last_used_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    revoked_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    # Where it was issued to and last used from (client addresses, the browser's User-Agent),
    # so its owner can tell sign-ins apart on the sessions page.
    created_from: Mapped[str | None] = mapped_column(String(64))
    user_agent: Mapped[str | None] = mapped_column(String(200))
    last_used_from: Mapped[str | None] = mapped_column(String(64))

    user: Mapped[User] = relationship(back_populates="tokens")


class LoginThrottle(Base):
    """Recent failed sign-ins for one key: a username or a client address (both hashed).

    At the threshold the key is locked until `locked_until`, for a wait that doubles with each
    further failure; the count is forgotten after a quiet window with no failure and no lock.
    """

    __tablename__ = "login_throttles"

    key: Mapped[str] = mapped_column(String(80), primary_key=True)
    failures: Mapped[int] = mapped_column(Integer, default=0)
    last_failure_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    locked_until: Mapped[datetime | None] = mapped_column(UTCDateTime)
