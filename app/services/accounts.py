"""Users, logins and tokens: the use cases behind sign-in, OAuth2 and named API tokens."""

from datetime import timedelta

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.db.base import utcnow
from app.db.models import ApiToken, User
from app.services import login_throttle, security
from app.services.errors import Conflict, InvalidInput, NotAuthenticated, NotFound
from app.services.login_throttle import ThrottlePolicy

TOKEN_KINDS = ("api", "access", "session")
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
    *, session: Session, user: User, kind: str, name: str, lifetime: timedelta | None
) -> tuple[ApiToken, str]:
    """Create a token row and return it with the plain secret, which is never stored."""
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
    session.add(token)
    session.flush()
    return token, secret


def user_for_token(*, session: Session, secret: str) -> User | None:
    """The active user a live token belongs to, or None for an unknown/expired/revoked one."""
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
    if token.last_used_at is None or now - token.last_used_at > _LAST_USED_RESOLUTION:
        token.last_used_at = now
        session.commit()
    return token.user


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


def revoke_secret(*, session: Session, secret: str) -> None:
    """Log out: revoke the session or access token behind this secret, if it exists."""
    token = session.scalar(
        select(ApiToken).where(ApiToken.token_hash == security.hash_token(secret))
    )
    if token is not None and token.revoked_at is None:
        token.revoked_at = utcnow()
