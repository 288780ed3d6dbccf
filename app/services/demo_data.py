"""Demo datasets that ship inside scikit-learn and scikit-image (nothing is downloaded)."""

import io
from collections.abc import Callable, Iterator

import numpy as np
from PIL import Image

from app.services.ingest.checks import encode_classes
from app.services.ingest.parsed import ParsedImage, ParsedTable


def demo_tables() -> Iterator[tuple[str, ParsedTable]]:
    from sklearn import datasets

    loaders: list[tuple[str, Callable[..., object]]] = [
        ("iris", datasets.load_iris),
        ("wine", datasets.load_wine),
        ("digits", datasets.load_digits),
    ]
    for name, load in loaders:
        bunch = load()
        target_names = [str(t) for t in bunch.target_names]  # type: ignore[attr-defined]
        labels = [target_names[t] for t in bunch.target]  # type: ignore[attr-defined]
        codes, classes = encode_classes(labels)
        features = np.asarray(bunch.data, dtype=np.float64)  # type: ignore[attr-defined]
        yield (
            name,
            ParsedTable(
                features=features,
                feature_names=[str(f) for f in bunch.feature_names],  # type: ignore[attr-defined]
                ground_truth=codes,
                ground_truth_classes=classes,
            ),
        )


def demo_image() -> tuple[str, ParsedImage]:
    from skimage import data

    pixels = data.coffee()  # 400 x 600 RGB, ships with scikit-image
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, format="PNG")
    height, width = pixels.shape[:2]
    return "coffee", ParsedImage(
        data=buffer.getvalue(), format="PNG", width=width, height=height, mode="RGB"
    )
