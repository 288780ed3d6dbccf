from datetime import datetime

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
