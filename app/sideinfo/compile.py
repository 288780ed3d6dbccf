"""Compile live annotations into `SideInformation`."""

from collections.abc import Sequence

from app.sideinfo.compiled import CompiledAnnotations, ViewCoordinates
from app.sideinfo.model import AnnotationRecord, SideInformation


def compile_side_information(
    *,
    n_items: int,
    revision: int,
    records: Sequence[AnnotationRecord],
    view_coordinates: ViewCoordinates | None = None,
    seed: int = 0,
) -> SideInformation:
    """`records` are the live annotations at `revision`, in creation order.

    `view_coordinates(view_id)` returns the (n_items, 2) coordinates a boundary was drawn in.
    To follow a dataset act by act, keep a `CompiledAnnotations` instead.
    """
    compiled = CompiledAnnotations(n_items, seed=seed).add(records)
    return compiled.side_information(revision=revision, view_coordinates=view_coordinates)
