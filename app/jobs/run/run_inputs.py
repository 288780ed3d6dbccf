"""Everything a run reads before it computes, in one place: the features and side information
of its dataset (and, for images, the pixel layout), or for a run that applies another run's
model to a new image, that model and the image featurized the way the model's image was."""

import pickle
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray
from sqlalchemy.orm import Session

from app.db.models import Dataset, Run, RunResult
from app.engine.image.featurize import FittedReduction, Recipe, apply_featurization
from app.engine.image.image_file import decode
from app.jobs.algorithms import Algorithm, get_algorithm
from app.jobs.algorithms.base import ItemStructure, Params
from app.jobs.featurize.featurizer import item_ground_truth
from app.jobs.results.continuation import Previous, previous_fit
from app.jobs.run.chunked_result import ChunkedInputs, chunked_inputs
from app.jobs.run.data_parallel import ROWS_PER_TASK, fits_data_parallel
from app.jobs.run.image_runs import image_params, image_structure
from app.jobs.run.region_runs import RegionPlan, plan_region
from app.sideinfo import SideInformation, compile_side_information
from app.store import chunks
from app.store.dataset_arrays import (
    IMAGE,
    REDUCTION,
    chunked_features,
    is_slide,
    load_ground_truth,
    load_item_borders,
    load_item_boxes,
    load_item_of_pixel,
    load_model_features,
    load_pixel_ground_truth,
)
from app.store.run_side_information import thaw


@dataclass
class ImageLayout:
    item_of_pixel: NDArray[np.int32] | None  # None for a slide: never held whole
    superpixels: bool
    pixel_truth: NDArray[np.int32] | None
    borders: NDArray[np.int64] | None = None  # a slide's touching items (a, b, shared border)


@dataclass
class RunInputs:
    algorithm: Algorithm
    params: Params
    info: SideInformation
    truth: NDArray[np.int32] | None  # item-level ground truth
    # None until `featurize_target` (apply runs); a dask array for a data-parallel fit
    features: Any = None
    image: ImageLayout | None = None
    model: Any = None  # the fitted estimator an apply run predicts with
    target: tuple[bytes, Recipe, FittedReduction] | None = None  # an apply run's image to featurize
    n_classes: int = 0
    # An apply run's clusters are the model's: they carry the labels they had in its run.
    source_cluster_labels: list[str | None] | None = None
    # ... and the numbers they were stored under (jobs/numbering.py).
    source_cluster_order: NDArray[np.int64] | None = None
    # The mixture a warm start continues (jobs/continuation.py), when the params ask for one.
    previous: Previous | None = None
    data_parallel: bool = False  # features are a dask array read chunk by chunk by Dask
    # A data-parallel run's ground truth and earlier labels, read chunk by chunk by the workers
    chunked: ChunkedInputs | None = None
    # A wide table's runs model its leading principal components: how many, of how many columns
    model_features: dict[str, Any] | None = None
    # A run on a region of a slide: the items it fits on and those it labels (region_runs.py)
    region: RegionPlan | None = None

    @property
    def warm_start(self) -> bool:
        return bool(getattr(self.params, "warm_start", False))

    def plan_kwargs(self) -> dict[str, Any]:
        kwargs: dict[str, Any] = {}
        if self.algorithm.continues:
            kwargs["previous"] = self.previous
        if self.algorithm.uses_structure and self.image is not None:
            kwargs["structure"] = self.structure()
        return kwargs

    def structure(self) -> ItemStructure:
        """The image's neighbour links (pixels or touching superpixels); a region run's
        between the items it fits on."""
        image = self.image
        assert image is not None
        links = image_structure(image.item_of_pixel, image.superpixels, image.borders)
        return links if self.region is None else self.region.restricted(links)

    def featurize_target(self) -> None:
        """Apply runs: featurize the new image with the model image's recipe and reduction."""
        assert self.target is not None
        data, recipe, fitted = self.target
        result = apply_featurization(decode(data), recipe, fitted)
        self.features = result.features
        self.info = compile_side_information(n_items=result.n_items, revision=0, records=[])
        truth = self.image.pixel_truth if self.image else None
        self.image = ImageLayout(result.item_of_pixel, result.superpixels, truth)
        if truth is not None and self.n_classes:
            self.truth = item_ground_truth(
                result.item_of_pixel, truth, result.n_items, self.n_classes
            )


def load_inputs(
    session: Session, run: Run, dataset: Dataset, data_parallel_from: int | None = None
) -> RunInputs:
    """``data_parallel_from``: tables of at least this many items fit data-parallel (the Dask
    executor's setting; None for in-process runs)."""
    algorithm = get_algorithm(run.algorithm)
    assert algorithm is not None, f"unknown algorithm {run.algorithm!r}"
    params = algorithm.params_model.model_validate(run.params)
    if run.source_run_id is not None:
        return _apply_inputs(session, run, dataset, algorithm, params)
    parallel = fits_data_parallel(run.algorithm, dataset, data_parallel_from)
    inputs = RunInputs(
        algorithm=algorithm,
        params=params,
        info=thaw(session=session, run=run),
        truth=None if parallel else load_ground_truth(session=session, dataset=dataset),
        features=(
            chunked_features(
                session=session,
                dataset=dataset,
                rows_per_task=_rows_per_task(run.algorithm, params),
            )
            if parallel
            else load_model_features(session=session, dataset=dataset)
        ),
        data_parallel=parallel,
        chunked=chunked_inputs(session, run, dataset) if parallel else None,
        model_features=dataset.meta.get("model_features"),
    )
    if is_slide(dataset):
        inputs.params = image_params(params)
        inputs.image = ImageLayout(
            None, True, None, load_item_borders(session=session, dataset=dataset)
        )
        if run.region is not None:
            boxes = load_item_boxes(session=session, dataset=dataset)
            inputs.region = plan_region(inputs.info, boxes, run.region)
            # A warm start continues a partition of every item; a region run fits a part.
            if inputs.warm_start:
                inputs.params = inputs.params.model_copy(update={"warm_start": False})
    elif dataset.kind == "image":
        inputs.params = image_params(params)
        inputs.image = ImageLayout(
            load_item_of_pixel(session=session, dataset=dataset),
            bool((dataset.featurization or {}).get("superpixels")),
            load_pixel_ground_truth(session=session, dataset=dataset),
        )
    if algorithm.continues and inputs.warm_start:
        inputs.previous = previous_fit(session, run, with_labels=not parallel)
    return inputs


def _rows_per_task(algorithm: str, params: Params) -> int:
    """Rows a pass task reads: ROWS_PER_TASK, but for PPC past 10 components fewer: its E-step
    holds several float64 values per row and component (log densities, responsibilities) beside
    the chunk, and the run's own worker runs pass tasks too. (CEC's tasks hold one cost per row
    and cluster: at k = 20 halving their rows cost a 20M-row run a fifth of its time.)"""
    count = getattr(params, "n_components", None) if algorithm == "ppc" else None
    return max(1, ROWS_PER_TASK * 10 // max(int(count or 10), 10))


def _apply_inputs(
    session: Session, run: Run, target: Dataset, algorithm: Algorithm, params: Params
) -> RunInputs:
    source_run = session.get(Run, run.source_run_id)
    result = session.get(RunResult, run.source_run_id)
    if source_run is None or result is None or result.model is None:
        raise ValueError(f"run {run.source_run_id} has no fitted model to apply any more")
    source = session.get(Dataset, source_run.dataset_id)
    reduction = chunks.read_blob(session=session, dataset_id=source_run.dataset_id, kind=REDUCTION)
    image = chunks.read_blob(session=session, dataset_id=target.id, kind=IMAGE)
    if source is None or not source.featurization or reduction is None or image is None:
        raise ValueError("the model's image or the new image is gone")
    pixel_truth = load_pixel_ground_truth(session=session, dataset=target)
    return RunInputs(
        algorithm=algorithm,
        params=params,
        info=compile_side_information(n_items=0, revision=0, records=[]),
        truth=None,
        image=ImageLayout(np.zeros((0, 0), dtype=np.int32), False, pixel_truth),
        # Our own pickle, written by the runner from a fitted estimator; never user data.
        model=pickle.loads(result.model),
        target=(
            image,
            Recipe.from_dict(source.featurization["recipe"]),
            FittedReduction.from_npz(reduction),
        ),
        n_classes=len(target.ground_truth_classes or []),
        source_cluster_labels=list(result.metrics.get("cluster_labels", [])),
        source_cluster_order=_cluster_order(result.metrics.get("cluster_order")),
    )


def _cluster_order(value: Any) -> NDArray[np.int64] | None:
    return None if not value else np.asarray(value, dtype=np.int64)
