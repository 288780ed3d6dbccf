"""The database row of a new image dataset (a picture or a whole slide), shared by every way an
image comes in: one place decides what a featurizing image's row holds."""

from typing import Any

from app.db.models import Dataset, Project, User
from app.engine.image.featurize import Recipe
from app.jobs.featurize.featurizer import queue_featurization


def image_dataset_row(
    *,
    project: Project,
    user: User | None,
    name: str,
    source_filename: str,
    image: dict[str, Any],
    ground_truth_classes: list[str] | None = None,
    collection: str | None = None,
    batch: str | None = None,
) -> Dataset:
    """The (unsaved) row of an image described by ``image`` (``meta.image``: width, height,
    format, ...) with its featurization queued under the default recipe (the caller submits
    the job after committing); its pixels become items when that finishes. ``batch``: the
    collection's featurizations, one job toward the user's limit."""
    dataset = Dataset(
        project_id=project.id,
        name=name,
        kind="image",
        status="featurizing",
        n_items=int(image["width"]) * int(image["height"]),
        n_features=0,
        feature_names=[],
        source_filename=source_filename,
        ground_truth_classes=ground_truth_classes,
        meta={"image": image, **({"collection": collection} if collection else {})},
        created_by_id=user.id if user else None,
    )
    requested_by = user.id if user else None
    queue_featurization(dataset, Recipe().to_dict(), requested_by=requested_by, batch=batch)
    return dataset
