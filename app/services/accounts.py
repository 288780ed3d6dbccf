"""Users, logins and tokens: the use cases behind sign-in, OAuth2 and named API tokens."""

from dataclasses import dataclass
from datetime import timedelta

from sqlalchemy import func, or_, select
from sqlalchemy.orm import Session

from app.db.base import utcnow
from app.db.models import ApiToken, User
from app.services import login_throttle, security
from app.services.errors import Conflict, InvalidInput, NotAuthenticated, NotFound
from app.services.login_throttle import ThrottlePolicy

TOKEN_KINDS = ("api", "access", "session")
# Sign-ins: what a password is exchanged for (a browser session, an OAuth2 access token).
SIGN_IN_KINDS = ("session", "access")
_ADDRESS_CHARS = 64  # IPv6 with a zone fits; longer is not an address
_USER_AGENT_CHARS = 200  # enough to recognise a browser


@dataclass(frozen=True)
class Client:
    """Who is on the other end of a request: its address (the connecting peer, or what a
    trusted proxy forwarded) and the User-Agent it sent, either unknown."""

    address: str | None = None
    user_agent: str | None = None

    def trimmed(self) -> "Client":
        return Client(
            (self.address or "")[:_ADDRESS_CHARS] or None,
            (self.user_agent or "")[:_USER_AGENT_CHARS] or None,
        )


# Touching last_used_at on every request would turn each read into a write; once a minute is enough.
_LAST_USED_RESOLUTION = timedelta(minutes=1)


def create_user(*, session: Session, username: str, password: str, is_admin: bool = False) -> User:
    username = username.strip()
    if not username or len(username) > 64:
        raise InvalidInput("username must be 1 to 64 characters")
    if len(password) < 8:
        raise InvalidInput("password must be at least 8 characters")
    if session.scalar(select(User).where(User.username == username)) is not None:
        raise Conflict(f"user {username!r} already exists")
    user = User(
        username=username, password_hash=security.hash_password(password), is_admin=is_admin
    )
    session.add(user)
    session.flush()
    return user


def get_user_by_username(*, session: Session, username: str) -> User:
    user = session.scalar(select(User).where(User.username == username))
    if user is None:
        raise NotFound(f"no user named {username!r}")
    return user


def authenticate(*, session: Session, username: str, password: str) -> User:
    user = session.scalar(select(User).where(User.username == username))
    if not security.verify_password(password, user.password_hash if user else None):
        raise NotAuthenticated("incorrect username or password")
    assert user is not None
    if not user.is_active:
        raise NotAuthenticated("this account is disabled")
    return user


def sign_in(
    *,
    session: Session,
    username: str,
    password: str,
    address: str | None,
    policy: ThrottlePolicy,
) -> User:
    """`authenticate` behind the login throttle (per (username, client address) pair, and per
    address with a higher budget: app/services/login_throttle.py).

    A locked pair or address gets TooManyRequests before the password is checked. A failure
    is counted and committed at once (the request itself fails); a success clears the pair's
    count.
    """
    if "\x00" in username:  # no user has one, and databases refuse it in text
        raise InvalidInput("username must not contain NUL characters")
    login_throttle.check(session=session, policy=policy, username=username, address=address)
    try:
        user = authenticate(session=session, username=username, password=password)
    except NotAuthenticated:
        session.rollback()
        login_throttle.record_failure(
            session=session, policy=policy, username=username, address=address
        )
        session.commit()
        raise
    login_throttle.clear_pair(session=session, username=username, address=address)
    return user


def issue_token(
    *,
    session: Session,
    user: User,
    kind: str,
    name: str,
    lifetime: timedelta | None,
    client: Client | None = None,
) -> tuple[ApiToken, str]:
    """Create a token row and return it with the plain secret, which is never stored; it
    remembers the client it was issued to."""
    if kind not in TOKEN_KINDS:
        raise ValueError(f"unknown token kind {kind!r}")
    name = name.strip()
    if not name or len(name) > 100:
        raise InvalidInput("token name must be 1 to 100 characters")
    secret = security.new_token()
    token = ApiToken(
        user_id=user.id,
        name=name,
        kind=kind,
        token_hash=security.hash_token(secret),
        prefix=secret[:12],
        expires_at=utcnow() + lifetime if lifetime else None,
    )
    if client is not None:
        client = client.trimmed()
        token.created_from, token.user_agent = client.address, client.user_agent
        token.last_used_from = client.address
    session.add(token)
    session.flush()
    return token, secret


def live_token(*, session: Session, secret: str, address: str | None = None) -> ApiToken | None:
    """The live token behind a secret (its user active), or None for an unknown, expired or
    revoked one. Its last use (time and address) is recorded."""
    token = session.scalar(
        select(ApiToken).where(ApiToken.token_hash == security.hash_token(secret))
    )
    if token is None or token.revoked_at is not None:
        return None
    now = utcnow()
    if token.expires_at is not None and token.expires_at <= now:
        return None
    if not token.user.is_active:
        return None
    address = (address or "")[:_ADDRESS_CHARS] or None
    stale = token.last_used_at is None or now - token.last_used_at > _LAST_USED_RESOLUTION
    if stale or (address is not None and address != token.last_used_from):
        token.last_used_at = now
        token.last_used_from = address or token.last_used_from
        session.commit()
    return token


def list_api_tokens(*, session: Session, user: User) -> list[ApiToken]:
    return list(
        session.scalars(
            select(ApiToken)
            .where(ApiToken.user_id == user.id, ApiToken.kind == "api")
            .order_by(ApiToken.id)
        )
    )


def revoke_token(*, session: Session, user: User, token_id: int) -> ApiToken:
    token = session.get(ApiToken, token_id)
    if token is None or token.user_id != user.id or token.kind != "api":
        raise NotFound(f"no API token with id {token_id}")
    if token.revoked_at is None:
        token.revoked_at = utcnow()
    return token


def list_sign_ins(*, session: Session, user: User) -> list[ApiToken]:
    """The user's live sessions and access tokens, most recently used first."""
    now = utcnow()
    return list(
        session.scalars(
            select(ApiToken)
            .where(
                ApiToken.user_id == user.id,
                ApiToken.kind.in_(SIGN_IN_KINDS),
                ApiToken.revoked_at.is_(None),
                or_(ApiToken.expires_at.is_(None), ApiToken.expires_at > now),
            )
            .order_by(
                func.coalesce(ApiToken.last_used_at, ApiToken.created_at).desc(),
                ApiToken.id.desc(),
            )
        )
    )


def revoke_sign_in(*, session: Session, user: User, token_id: int) -> ApiToken:
    """Sign out one of the user's sessions or access tokens (already revoked: unchanged)."""
    token = session.get(ApiToken, token_id)
    if token is None or token.user_id != user.id or token.kind not in SIGN_IN_KINDS:
        raise NotFound(f"no session or access token of yours with id {token_id}")
    if token.revoked_at is None:
        token.revoked_at = utcnow()
    return token


def revoke_secret(*, session: Session, secret: str) -> None:
    """Log out: revoke the session or access token behind this secret, if it exists."""
    token = session.scalar(
        select(ApiToken).where(ApiToken.token_hash == security.hash_token(secret))
    )
    if token is not None and token.revoked_at is None:
        token.revoked_at = utcnow()
