"""All ORM models; importing this package registers every table on `Base.metadata`."""

from app.db.models.accounts import ApiToken, LoginThrottle, User
from app.db.models.annotations import Annotation
from app.db.models.datasets import Dataset
from app.db.models.display_settings import DisplaySetting
from app.db.models.projects import Membership, Project, Role
from app.db.models.runs import Run, RunResult
from app.db.models.stored_arrays import StoredArray
from app.db.models.views import View

__all__ = [
    "Annotation",
    "ApiToken",
    "Dataset",
    "DisplaySetting",
    "LoginThrottle",
    "Membership",
    "Project",
    "Role",
    "Run",
    "RunResult",
    "StoredArray",
    "User",
    "View",
]
