"""A collection imported by reference: every image under a prefix (TIFF files, OME-Zarr
images) registered as an image dataset read in place, sharing `meta.collection`, and kept in
step with the prefix by a sync that touches only what changed.

Each member is registered as a single image import is (`image_imports.registered_image`:
metadata and a small sample), several at once: a prefix of a few hundred images on S3 answers
in seconds. Its `meta.source` also names the collection's prefix, which is what a sync lists
again. A sync registers the images that appeared, featurizes again the ones whose version
changed, and removes the datasets of images that went, unless they hold annotations: those
are kept and reported (their strokes are the expert's work), never dropped silently."""

import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from app.db.models import Annotation, Dataset, Project, User
from app.jobs.featurize.featurizer import queue_featurization
from app.services.datasets import delete_dataset
from app.services.errors import Conflict, InvalidInput, NotFound
from app.services.image_imports import registered_image
from app.services.image_rows import DEFAULT_RECIPE, image_dataset_row
from app.services.ingest.upload import UploadLimits, valid_name
from app.services.job_limits import check_active_jobs
from app.services.runs import active_run_ids
from app.store.sources.allowed import AllowedSource, SourceRefused, allowed_source
from app.store.sources.binding import sources_of
from app.store.sources.images import ListedImage, current_image_version, list_images
from app.store.sources.tables import SourceError

MAX_COLLECTION_SOURCE_IMAGES = 10_000
REGISTERING_AT_ONCE = 8  # members inspected concurrently (each a few requests on S3)


def import_collection_by_reference(
    *,
    session: Session,
    project: Project,
    user: User | None,
    name: str,
    url: str,
    limits: UploadLimits,
    write_labels: bool = False,
) -> list[Dataset]:
    """Register every image under ``url``, their featurizations queued as one batch (the
    caller commits and submits them); nothing is registered if one cannot be."""
    collection = valid_name(name)
    if _members(session, project, collection):
        raise Conflict(
            f"project {project.id} has a collection named {collection!r} already; sync it "
            "(POST .../collections/sync) or choose another name"
        )
    allowed = _allowed(session, url)
    check_active_jobs(session, user, limits.max_active_jobs, lock=False)
    listed = _listed(allowed)
    if not listed:
        raise InvalidInput(f"{allowed.url} holds no TIFF file and no OME-Zarr image")
    made = _register(project, user, collection, allowed, listed, limits, write_labels)
    check_active_jobs(session, user, limits.max_active_jobs)
    session.add_all(made)
    session.flush()
    return made


@dataclass(frozen=True)
class CollectionSync:
    new: list[Dataset]
    changed: list[Dataset]
    deleted: list[str]
    kept: list[dict[str, Any]]  # {dataset_id, url, annotations}: gone, but annotated
    stopped_runs: list[int]  # runs of removed datasets, to stop once committed


def sync_collection(
    *, session: Session, project: Project, user: User | None, name: str, limits: UploadLimits
) -> CollectionSync:
    """Bring the collection in step with its prefix: list it again, register what appeared,
    featurize again what changed, remove what went (keeping annotated images, reported)."""
    members = _members(session, project, name)
    referenced = [d for d in members if (d.meta.get("source") or {}).get("collection")]
    if not referenced:
        raise NotFound(
            f"project {project.id} has no collection imported by reference named {name!r}"
        )
    first = referenced[0].meta["source"]
    allowed = _allowed(session, first["collection"]["url"])
    write_labels = bool(first.get("write_labels"))
    before = {d.meta["source"]["url"]: d for d in referenced}
    listed = {image.url: image for image in _listed(allowed)}
    new = [listed[url] for url in listed if url not in before]
    went = [url for url in before if url not in listed]
    changed = [
        url
        for url in listed
        if url in before and _version(allowed, listed[url]) != before[url].meta["source"]["version"]
    ]
    made = _register(project, user, name, allowed, new, limits, write_labels) if new else []
    again = _featurize_again(user, allowed, [before[url] for url in changed], limits, write_labels)
    kept: list[dict[str, Any]] = []
    deleted: list[str] = []
    stopped: list[int] = []
    for url in went:
        dataset = before[url]
        annotations = _annotations(session, dataset)
        if annotations:
            kept.append({"dataset_id": dataset.id, "url": url, "annotations": annotations})
        else:
            stopped += active_run_ids(session=session, dataset_id=dataset.id)
            delete_dataset(session=session, dataset=dataset)
            deleted.append(url)
    session.add_all(made)
    session.flush()
    return CollectionSync(made, again, deleted, kept, stopped)


def _members(session: Session, project: Project, name: str) -> list[Dataset]:
    images = session.scalars(
        select(Dataset)
        .where(Dataset.project_id == project.id, Dataset.kind == "image")
        .order_by(Dataset.id)
    )
    return [d for d in images if (d.meta or {}).get("collection") == name]


def _allowed(session: Session, url: str) -> AllowedSource:
    try:
        return allowed_source(url, sources_of(session))
    except SourceRefused as exc:
        raise InvalidInput(f"url: {exc}") from None


def _listed(allowed: AllowedSource) -> list[ListedImage]:
    try:
        return list_images(
            allowed.protocol, allowed.path, allowed.options, MAX_COLLECTION_SOURCE_IMAGES
        )
    except SourceError as exc:
        raise InvalidInput(str(exc)) from None


def _version(allowed: AllowedSource, image: ListedImage) -> str | None:
    if image.version is not None:
        return image.version
    try:
        return current_image_version(allowed.protocol, allowed.options, image.url, image.format)
    except SourceError as exc:
        raise Conflict(str(exc)) from None


def _inspect_all(
    allowed: AllowedSource,
    images: list[ListedImage],
    limits: UploadLimits,
    write_labels: bool,
) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """Each image's ``meta.image`` and ``meta.source``, REGISTERING_AT_ONCE at a time."""
    prefix = f"{allowed.protocol}://"

    def one(image: ListedImage) -> tuple[dict[str, Any], dict[str, Any]]:
        meta, record = registered_image(
            allowed.protocol, image.url[len(prefix) :], allowed.options, image.format,
            limits.max_image_pixels, write_labels,
        )  # fmt: skip
        return meta, {**record, "collection": {"url": allowed.url}}

    with ThreadPoolExecutor(REGISTERING_AT_ONCE) as pool:
        return list(pool.map(one, images))


def _register(
    project: Project,
    user: User | None,
    collection: str,
    allowed: AllowedSource,
    images: list[ListedImage],
    limits: UploadLimits,
    write_labels: bool,
) -> list[Dataset]:
    batch = uuid.uuid4().hex
    made = []
    for image, (meta, record) in zip(
        images, _inspect_all(allowed, images, limits, write_labels), strict=True
    ):
        dataset = image_dataset_row(
            project=project, user=user, name=valid_name(_member_name(allowed, image.url)),
            source_filename=image.url, image=meta, collection=collection, batch=batch,
        )  # fmt: skip
        dataset.meta = {**dataset.meta, "source": record}
        made.append(dataset)
    return made


def _featurize_again(
    user: User | None,
    allowed: AllowedSource,
    datasets: list[Dataset],
    limits: UploadLimits,
    write_labels: bool,
) -> list[Dataset]:
    """Changed images: read again from their metadata, featurized again."""
    listed = [
        ListedImage(d.meta["source"]["url"], d.meta["source"]["format"], None) for d in datasets
    ]
    batch = uuid.uuid4().hex
    for dataset, (meta, record) in zip(
        datasets, _inspect_all(allowed, listed, limits, write_labels), strict=True
    ):
        dataset.meta = {**dataset.meta, "image": meta, "source": record}
        dataset.n_items = int(meta["width"]) * int(meta["height"])
        queue_featurization(
            dataset, dict(DEFAULT_RECIPE), requested_by=user.id if user else None, batch=batch
        )
    return datasets


def _annotations(session: Session, dataset: Dataset) -> int:
    return int(
        session.scalar(
            select(func.count())
            .select_from(Annotation)
            .where(Annotation.dataset_id == dataset.id, Annotation.deleted_at.is_(None))
        )
        or 0
    )


def _member_name(allowed: AllowedSource, url: str) -> str:
    """An image's path under the prefix: ``plate1/A01.ome.tif``."""
    return url[len(allowed.url.rstrip("/")) + 1 :] or url.rsplit("/", 1)[-1]
