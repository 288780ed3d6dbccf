"""A run's frozen side information as one NPZ blob (arrays plus a JSON header)."""

import io
import json
import zipfile

import numpy as np

from app.sideinfo import Conflict, SideInformation


def to_npz(info: SideInformation) -> bytes:
    """Everything a run needs, as one NPZ blob (arrays plus a JSON header)."""
    header = {
        "n_items": info.n_items,
        "revision": info.revision,
        "label_names": info.label_names,
        "boundary_labels": info.boundary_labels,
        "boundary_annotation_id": info.boundary_annotation_id,
        "notes": info.notes,
        "conflicts": [c.as_dict() for c in info.conflicts],
    }
    arrays: dict[str, np.ndarray] = {
        "labels": info.labels,
        "must_link": info.must_link,
        "must_link_confidence": info.must_link_confidence,
        "cannot_link": info.cannot_link,
        "cannot_link_confidence": info.cannot_link_confidence,
        "chunklets": info.chunklets,
    }
    if info.side_scores is not None:
        arrays["side_scores"] = info.side_scores
    arrays["header"] = np.array(json.dumps(header))
    return _npz(arrays)


def _npz(arrays: dict[str, np.ndarray]) -> bytes:
    """An NPZ as `np.savez_compressed` writes it, at deflate level 1: every run stores one, and
    at 100k items with 100k annotations level 6 took 0.15 s of an act's run, level 1 0.03 s for
    a blob 14% larger."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
        for name, values in arrays.items():
            with archive.open(f"{name}.npy", "w", force_zip64=True) as member:
                np.lib.format.write_array(member, np.asanyarray(values), allow_pickle=False)
    return buffer.getvalue()


def from_npz(data: bytes) -> SideInformation:
    with np.load(io.BytesIO(data), allow_pickle=False) as npz:
        header = json.loads(str(npz["header"]))
        return SideInformation(
            n_items=header["n_items"],
            revision=header["revision"],
            labels=npz["labels"],
            label_names=header["label_names"],
            must_link=npz["must_link"],
            must_link_confidence=npz["must_link_confidence"],
            cannot_link=npz["cannot_link"],
            cannot_link_confidence=npz["cannot_link_confidence"],
            chunklets=npz["chunklets"],
            side_scores=npz.get("side_scores"),
            boundary_labels=header["boundary_labels"],
            boundary_annotation_id=header["boundary_annotation_id"],
            conflicts=[
                Conflict(c["kind"], c["message"], c["annotation_ids"], c["items"])
                for c in header["conflicts"]
            ],
            notes=header["notes"],
        )
