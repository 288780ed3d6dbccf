"""Password hashing (Argon2) and bearer secrets (random, stored as SHA-256)."""

import hashlib
import secrets

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

_hasher = PasswordHasher()

# A real hash to verify against when the user does not exist, so that a login attempt for an
# unknown username costs the same time as one for a known username.
_DUMMY_HASH = _hasher.hash(secrets.token_urlsafe(16))


def hash_password(password: str) -> str:
    return _hasher.hash(password)


def verify_password(password: str, password_hash: str | None) -> bool:
    try:
        return _hasher.verify(password_hash or _DUMMY_HASH, password) and password_hash is not None
    except (VerificationError, InvalidHashError):
        return False


def new_token() -> str:
    """A bearer secret: 256 bits of randomness, prefixed so leaked tokens are recognisable."""
    return "cwb_" + secrets.token_urlsafe(32)


def hash_token(token: str) -> str:
    # Tokens are high-entropy random strings, so a fast hash is enough (no brute force possible).
    return hashlib.sha256(token.encode()).hexdigest()


def generate_password() -> str:
    return secrets.token_urlsafe(12)
