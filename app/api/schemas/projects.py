from datetime import datetime
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, Strict

from app.api.schemas.common import Name, Page, RequestBody, Text
from app.db.models import Role


class ProjectCreate(RequestBody):
    name: Name = Field(min_length=1, max_length=200)
    description: Text = Field(default="", max_length=5000)


class ProjectRead(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: int
    name: str
    description: str
    created_at: datetime


class ProjectsPage(Page):
    items: list[ProjectRead]
    total: int
    limit: int
    offset: int


class MemberWrite(RequestBody):
    username: Name = Field(min_length=1, max_length=64)
    role: Annotated[Role, Strict(False)]  # the role's name


class MemberRead(BaseModel):
    username: str
    role: Role


class MembersPage(Page):
    items: list[MemberRead]
    total: int
    limit: int
    offset: int
