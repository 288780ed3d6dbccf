"""Standardise-then-PCA reduction of raw feature maps, fitted once and stored as plain arrays.

``z = (x - scaler_mean) / scaler_scale`` per raw feature, then
``features = (z - pca_mean) @ components.T``. Components come from the eigenvectors of the
covariance of ``z`` (largest variance first; each signed so its largest-magnitude loading is
positive, as scikit-learn's ``svd_flip`` does), so a reduction is deterministic.
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from app.engine.arrays import FloatArray

Float32Array = NDArray[np.float32]

_FIELDS = ("scaler_mean", "scaler_scale", "pca_mean", "components", "explained_variance")
_CHUNK = 32_768


@dataclass(frozen=True, eq=False)
class FittedReduction:
    """A fitted standardisation and PCA: ``n_components`` x ``n_raw`` plain float64 arrays.

    ``explained_variance`` holds the variance of each component on the data it was fitted on
    (the eigenvalues of the standardised covariance, whose trace is the number of non-constant
    raw features).
    """

    scaler_mean: FloatArray
    scaler_scale: FloatArray
    pca_mean: FloatArray
    components: FloatArray
    explained_variance: FloatArray

    def __post_init__(self) -> None:
        arrays = {name: np.asarray(getattr(self, name), dtype=np.float64) for name in _FIELDS}
        components = arrays["components"]
        if components.ndim != 2 or components.shape[0] < 1:
            raise ValueError(
                f"components must be an (n_components, n_raw) array, got shape {components.shape}"
            )
        n_components, n_raw = components.shape
        for name in ("scaler_mean", "scaler_scale", "pca_mean"):
            if arrays[name].shape != (n_raw,):
                raise ValueError(
                    f"{name} must have shape ({n_raw},) to match components, "
                    f"got {arrays[name].shape}"
                )
        if arrays["explained_variance"].shape != (n_components,):
            raise ValueError(
                f"explained_variance must have shape ({n_components},), "
                f"got {arrays['explained_variance'].shape}"
            )
        for name, arr in arrays.items():
            if not np.all(np.isfinite(arr)):
                raise ValueError(f"{name} contains NaN or infinite values")
        if np.any(arrays["scaler_scale"] <= 0):
            raise ValueError("scaler_scale must be positive")
        for name, arr in arrays.items():
            arr.setflags(write=False)
            object.__setattr__(self, name, arr)

    @property
    def n_components(self) -> int:
        return int(self.components.shape[0])

    @property
    def n_raw(self) -> int:
        return int(self.components.shape[1])

    def to_dict(self) -> dict[str, FloatArray]:
        """The five arrays by name (copies)."""
        return {name: np.array(getattr(self, name)) for name in _FIELDS}

    @classmethod
    def from_dict(cls, arrays: Mapping[str, ArrayLike]) -> FittedReduction:
        missing = [name for name in _FIELDS if name not in arrays]
        if missing:
            raise ValueError(f"a fitted reduction needs the arrays {missing}")
        unknown = sorted(set(arrays) - set(_FIELDS))
        if unknown:
            raise ValueError(f"unknown arrays in a fitted reduction: {unknown}")
        return cls(**{name: np.asarray(arrays[name], dtype=np.float64) for name in _FIELDS})

    def to_npz(self) -> bytes:
        """The arrays as an uncompressed NPZ archive (no pickled objects)."""
        buffer = io.BytesIO()
        arrays: dict[str, Any] = self.to_dict()
        np.savez(buffer, **arrays)
        return buffer.getvalue()

    @classmethod
    def from_npz(cls, data: bytes) -> FittedReduction:
        try:
            with np.load(io.BytesIO(data), allow_pickle=False) as archive:
                arrays = {name: archive[name] for name in archive.files}
        except (OSError, ValueError) as exc:
            raise ValueError(f"not a readable NPZ archive of a fitted reduction: {exc}") from exc
        return cls.from_dict(arrays)

    def transform_rows(self, raw: NDArray[np.floating]) -> Float32Array:
        """(n, n_raw) raw rows to (n, n_components) float32 features."""
        z = (np.asarray(raw, dtype=np.float64) - self.scaler_mean) / self.scaler_scale
        return ((z - self.pca_mean) @ self.components.T).astype(np.float32)

    def project_groups(self, groups: Iterable[Float32Array], n_items: int) -> Float32Array:
        """Project raw maps given as consecutive (g, n_items) groups; (n_items, d) float32."""
        out = np.zeros((self.n_components, n_items), dtype=np.float32)
        start = 0
        for group in groups:
            stop = start + group.shape[0]
            if stop > self.n_raw:
                raise ValueError(f"more raw features than the {self.n_raw} the reduction expects")
            mean = self.scaler_mean[start:stop, None].astype(np.float32)
            scale = self.scaler_scale[start:stop, None].astype(np.float32)
            out += self.components[:, start:stop].astype(np.float32) @ ((group - mean) / scale)
            start = stop
        if start != self.n_raw:
            raise ValueError(f"{start} raw features where the reduction expects {self.n_raw}")
        out -= (self.components @ self.pca_mean).astype(np.float32)[:, None]
        return np.ascontiguousarray(out.T)


def standardiser(mean: FloatArray, std: FloatArray) -> tuple[FloatArray, FloatArray]:
    """Mean and scale; constant features get scale 1 (as scikit-learn's StandardScaler)."""
    scale = np.where(std > 1e-12 * np.maximum(1.0, np.abs(mean)), std, 1.0)
    return mean, scale


def fit_pca(
    rows: NDArray[np.floating], mean: FloatArray, scale: FloatArray, n_components: int
) -> FittedReduction:
    """PCA of the standardised ``rows`` (n, n_raw), accumulated in float64 chunks."""
    n, n_raw = rows.shape
    if n_components > n_raw:
        raise ValueError(
            f"n_components={n_components} is more than the {n_raw} raw features this recipe "
            "gives for this image; lower n_components or add filters"
        )
    total = np.zeros(n_raw)
    gram = np.zeros((n_raw, n_raw))
    for start in range(0, n, _CHUNK):
        z = (np.asarray(rows[start : start + _CHUNK], dtype=np.float64) - mean) / scale
        total += z.sum(axis=0)
        gram += z.T @ z
    pca_mean = total / n
    covariance = (gram - n * np.outer(pca_mean, pca_mean)) / max(n - 1, 1)
    eigenvalues, eigenvectors = np.linalg.eigh((covariance + covariance.T) / 2)
    order = np.argsort(eigenvalues)[::-1][:n_components]
    components = eigenvectors[:, order].T
    signs = np.sign(components[np.arange(n_components), np.argmax(np.abs(components), axis=1)])
    components *= np.where(signs == 0, 1.0, signs)[:, None]
    return FittedReduction(
        scaler_mean=mean,
        scaler_scale=scale,
        pca_mean=pca_mean,
        components=components,
        explained_variance=np.maximum(eigenvalues[order], 0.0),
    )
