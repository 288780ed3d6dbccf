"""The database row of a new image dataset (a picture or a whole slide), shared by every way an
image comes in: one place decides what a featurizing image's row holds."""

from typing import Any

from app.db.models import Dataset, Project, User
from app.engine.image.featurize import Recipe
from app.jobs.featurize.collection_images import waiting_source
from app.jobs.featurize.featurizer import queue_featurization
from app.services.errors import Conflict

DEFAULT_RECIPE = Recipe().to_dict()  # made once: a stack's thousand rows share it


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
    source: dict[str, Any] | None = None,
) -> Dataset:
    """The (unsaved) row of an image described by ``image`` (``meta.image``: width, height,
    format, ...) with its featurization queued under the default recipe (the caller submits
    the job after committing); its pixels become items when that finishes. ``batch``: the
    collection's featurizations, one job toward the user's limit; ``source``: where in a staged
    file its image waits (`app/jobs/featurize/collection_images.py`)."""
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
    queue_featurization(
        dataset, dict(DEFAULT_RECIPE), requested_by=requested_by, batch=batch, source=source
    )
    return dataset


def check_image_taken(dataset: Dataset) -> None:
    """Refuse (409) to show an image still waiting in the file it was uploaded in (a
    collection's images are taken from their files in the background, a few a second)."""
    if waiting_source(dataset.featurization) is not None:
        raise Conflict(
            f"dataset {dataset.id}'s image is still being taken from {dataset.source_filename!r}, "
            "uploaded with its collection; it is shown once taken (its featurization's "
            "image_pending turns false)"
        )
