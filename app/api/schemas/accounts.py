from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from app.api.schemas.common import Name, Page, RequestBody


class TokenRead(BaseModel):
    access_token: str
    token_type: str = "bearer"


class UserRead(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: int
    username: str
    is_admin: bool
    created_at: datetime


class UserCreate(RequestBody):
    username: Name = Field(min_length=1, max_length=64)
    password: str = Field(min_length=8, max_length=256)
    is_admin: bool = False


class ApiTokenCreate(RequestBody):
    name: Name = Field(min_length=1, max_length=100)


class ApiTokenRead(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: int
    name: str
    prefix: str
    created_at: datetime
    last_used_at: datetime | None
    revoked_at: datetime | None


class ApiTokenCreated(ApiTokenRead):
    token: str = Field(description="The secret. Shown only in this response; store it now.")


class ApiTokensPage(Page):
    items: list[ApiTokenRead]
    total: int
    limit: int
    offset: int


class SignInRead(BaseModel):
    """A live sign-in of the caller's: a browser session or an OAuth2 access token."""

    model_config = ConfigDict(from_attributes=True)

    id: int
    kind: Literal["session", "access"] = Field(
        description="'session': a browser's login cookie; 'access': a password-flow token"
    )
    created_at: datetime
    created_from: str | None = Field(description="The client address it was issued to")
    user_agent: str | None = Field(description="The User-Agent it was issued to")
    last_used_at: datetime | None
    last_used_from: str | None = Field(description="The client address it was last used from")
    expires_at: datetime | None
    current: bool = Field(False, description="True for the sign-in this request was made with")


class SignInsPage(Page):
    items: list[SignInRead]
    total: int
    limit: int
    offset: int
