from fastapi import APIRouter, status

from app.api.deps import AdminUser, SessionDep
from app.api.schemas.accounts import UserCreate, UserRead
from app.api.schemas.common import ERROR_RESPONSES
from app.services import accounts

router = APIRouter(prefix="/users", tags=["users"], responses=ERROR_RESPONSES)


@router.post("", response_model=UserRead, status_code=status.HTTP_201_CREATED)
def create_user(user_in: UserCreate, session: SessionDep, _admin: AdminUser) -> UserRead:
    """Create an account (administrators only)."""
    user = accounts.create_user(
        session=session,
        username=user_in.username,
        password=user_in.password,
        is_admin=user_in.is_admin,
    )
    session.commit()
    return UserRead.model_validate(user)
