"""The questions the engine asks next, from a dataset's latest finished run and what the expert
has said since (the rule: app/engine/active/questions.py)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

import numpy as np
from sqlalchemy import select
from sqlalchemy.orm import Session

from app.db.models import Dataset, Run
from app.engine.active import Question, knowledge, suggest_items, suggest_pairs
from app.engine.image import ItemRegion, item_regions
from app.services.datasets import require_ready
from app.services.errors import Conflict, NotFound
from app.services.runs import get_result, result_labels
from app.services.side_information import compile_for_dataset
from app.store.dataset_arrays import (
    is_slide,
    load_item_of_pixel,
    load_model_features,
    read_item_boxes,
    read_item_region,
)

Kind = Literal["pairs", "items"]


@dataclass(frozen=True)
class Suggestions:
    run: Run
    revision: int  # the annotations the questions already take into account
    questions: list[Question]
    regions: list[list[ItemRegion]] | None  # images: each question's items' regions


def reasoning_run(*, session: Session, dataset: Dataset, run_id: int | None) -> Run:
    """The run to reason from: the one asked for, else the dataset's latest that succeeded."""
    if run_id is not None:
        run = session.get(Run, run_id)
        if run is None or run.dataset_id != dataset.id:
            raise NotFound(f"dataset {dataset.id} has no run with id {run_id}")
        if run.status != "succeeded":
            raise Conflict(f"run {run_id} is {run.status}; questions need a finished run")
        return run
    latest = session.scalars(
        select(Run)
        .where(Run.dataset_id == dataset.id, Run.status == "succeeded")
        .order_by(Run.id.desc())
        .limit(1)
    ).first()
    if latest is None:
        raise Conflict(
            f"dataset {dataset.id} has no finished run to reason from; run a method first"
        )
    return latest


def suggest(
    *, session: Session, dataset: Dataset, kind: Kind, n: int, run_id: int | None = None
) -> Suggestions:
    require_ready(dataset)
    run = reasoning_run(session=session, dataset=dataset, run_id=run_id)
    partition = result_labels(session=session, result=get_result(session=session, run=run))
    features = load_model_features(session=session, dataset=dataset)
    info = compile_for_dataset(session=session, dataset=dataset)
    # Only hard relations settle a question; a soft one is still worth confirming.
    hard_must = info.must_link[info.must_link_confidence >= 1.0]
    hard_cannot = info.cannot_link[info.cannot_link_confidence >= 1.0]
    facts = knowledge(
        dataset.n_items, labels=info.labels, must_link=hard_must, cannot_link=hard_cannot
    )
    ask = suggest_pairs if kind == "pairs" else suggest_items
    questions = ask(np.asarray(features, dtype=np.float64), partition, n, facts)
    regions = None
    if dataset.kind == "image":
        asked = [int(item) for q in questions for item in q.items]
        if is_slide(dataset):
            found = _slide_regions(session, dataset, asked)
        else:
            item_of_pixel = load_item_of_pixel(session=session, dataset=dataset)
            found = dict(zip(asked, item_regions(item_of_pixel, asked), strict=True))
        regions = [[found[int(item)] for item in q.items] for q in questions]
    return Suggestions(run=run, revision=info.revision, questions=questions, regions=regions)


def _slide_regions(session: Session, dataset: Dataset, items: list[int]) -> dict[int, ItemRegion]:
    """Each item's region on a slide, from the map read only inside the item's bounding box."""
    found = {}
    boxes = read_item_boxes(session=session, dataset=dataset, items=items)
    for item, (x0, y0, x1, y1) in zip(items, boxes.tolist(), strict=True):
        local = read_item_region(
            session=session, dataset=dataset, rows=(y0, y1 + 1), columns=(x0, x1 + 1)
        )
        (region,) = item_regions(local, [item])
        ax, ay = region.anchor
        bx0, by0, bx1, by1 = region.bbox
        found[item] = replace(
            region, anchor=(ax + x0, ay + y0), bbox=(bx0 + x0, by0 + y0, bx1 + x0, by1 + y0)
        )
    return found
