"""A wide single-cell table imported by reference on a live server: how long until it can be
clustered, beside reading it (printed, never asserted).

A generated ``--cells`` x ``--genes`` float32 AnnData file (dense X, cell types in `obs`; 100,000
x 20,000 is 8 GB, written block by block, never held whole here) lies in a folder the server's
IMPORT_SOURCES opens. The benchmark imports it by reference and times the 201, then the
background read (statistics, the PCA view and the 50 components runs model it through, each a
pass or several over X), then a CEC-IB run with a tenth of the cells labelled (ARI against the
cell types). The peer: h5py reading X whole, as `anndata.read_h5ad` does for a dense X (anndata
itself is not a dependency). Target: the dataset ready within 3x the peer's read; the run
succeeding.

    .venv/bin/python -m benchmarks.bench_wide_import [--cells 100000] [--genes 20000]
"""

from __future__ import annotations

import argparse
import io
import json
import shutil
import tempfile
import time
from pathlib import Path

import h5py
import httpx
import numpy as np
from sklearn.metrics import adjusted_rand_score

from benchmarks._peak_memory import with_peak_rss
from benchmarks._server import live_server, run_request

TYPES = 8
BLOCK = 2_000  # cells written at once


def write_h5ad(path: Path, cells: int, genes: int) -> np.ndarray:
    """Cells of TYPES types, each a gamma profile over the genes plus Poisson noise; the types."""
    rng = np.random.default_rng(0)
    profiles = rng.gamma(0.6, 2.0, size=(TYPES, genes)).astype(np.float32)
    kinds = rng.integers(0, TYPES, size=cells)
    with h5py.File(path, "w") as file:
        file.attrs.update({"encoding-type": "anndata", "encoding-version": "0.1.0"})
        # Contiguous, as anndata writes a dense X: a block of rows is one range of the file.
        x = file.create_dataset("X", shape=(cells, genes), dtype="float32")
        x.attrs.update({"encoding-type": "array", "encoding-version": "0.2.0"})
        for start in range(0, cells, BLOCK):
            stop = min(start + BLOCK, cells)
            x[start:stop] = rng.poisson(profiles[kinds[start:stop]]).astype(np.float32)
        obs = file.create_group("obs")
        obs.attrs.update({"encoding-type": "dataframe", "encoding-version": "0.2.0",
                          "_index": "_index", "column-order": ["cell_type"]})  # fmt: skip
        obs.create_dataset("_index", data=[f"c{i}" for i in range(cells)],
                           dtype=h5py.string_dtype())  # fmt: skip
        types = obs.create_group("cell_type")
        types.attrs.update({"encoding-type": "categorical", "encoding-version": "0.2.0",
                            "ordered": False})  # fmt: skip
        types["codes"] = kinds.astype(np.int8)
        types.create_dataset("categories", data=[f"type{k}" for k in range(TYPES)],
                             dtype=h5py.string_dtype())  # fmt: skip
    return kinds


def peer_seconds(path: Path) -> float:
    started = time.perf_counter()
    with h5py.File(path, "r") as file:
        file["X"][()]
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cells", type=int, default=100_000)
    parser.add_argument("--genes", type=int, default=20_000)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="bench-wide-"))
    try:
        measure(folder, args.cells, args.genes)
    finally:
        shutil.rmtree(folder)


def measure(folder: Path, cells: int, genes: int) -> None:
    path = folder / "cells.h5ad"
    started = time.perf_counter()
    kinds = write_h5ad(path, cells, genes)
    print(
        f"bench_wide_import: {cells:,} cells x {genes:,} genes float32 AnnData, "
        f"{path.stat().st_size / 2**30:.2f} GiB, written in {time.perf_counter() - started:.0f} s"
    )
    peer = peer_seconds(path)
    sources = json.dumps({f"file://{folder}/": {}})
    with live_server(IMPORT_SOURCES=sources) as server:
        client = httpx.Client(base_url=server.base, headers=server.headers, timeout=3600)
        project = client.post("/projects", json={"name": "cells"}).json()["id"]
        response, to_201, rss_201 = with_peak_rss(
            server.pid,
            lambda: client.post(
                f"/projects/{project}/datasets/import",
                json={"name": "cells", "url": f"file://{path}", "id_column": "_index",
                      "ground_truth_column": "cell_type"},
            ),
            every_s=0.05,
        )  # fmt: skip
        response.raise_for_status()
        dataset = int(response.json()["id"])

        def until_ready() -> dict[str, object]:
            while (got := client.get(f"/datasets/{dataset}").json())["status"] == "featurizing":
                time.sleep(0.5)
            return got

        ready, ready_s, rss_ready = with_peak_rss(server.pid, until_ready, every_s=0.2)
        if ready["status"] != "ready":
            raise RuntimeError(f"the read failed: {ready['featurization']}")
        model = ready["meta"]["model_features"]  # type: ignore[index]
        labelled = np.flatnonzero(np.arange(cells) % 10 == 0)
        for k in range(TYPES):
            items = labelled[kinds[labelled] == k].tolist()
            client.post(
                f"/datasets/{dataset}/annotations",
                json={"kind": "label", "items": items, "label": f"type{k}"},
            ).raise_for_status()
        run_started = time.perf_counter()
        run = client.post("/runs", json=run_request(dataset, "cec-ib", n_clusters=TYPES))
        run.raise_for_status()
        run_id = run.json()["id"]
        while (status := client.get(f"/runs/{run_id}").json()["status"]) in ("queued", "running"):
            time.sleep(0.5)
        run_s = time.perf_counter() - run_started
        labels = client.get(f"/runs/{run_id}/result", params={"format": "npy"})
        ari = (
            adjusted_rand_score(kinds, np.load(io.BytesIO(labels.content)))
            if status == "succeeded"
            else float("nan")
        )
    print("| step | seconds | peak server RSS growth (MiB) |")
    print("|---|---|---|")
    print(f"| import, to 201 | {to_201:.2f} | {rss_201 / 2**20:.0f} |")
    print(f"| background read, 201 to ready | {ready_s:.1f} | {rss_ready / 2**20:.0f} |")
    print(f"| CEC-IB run, 10% labelled, POST to {status} | {run_s:.1f} | |")
    components, explained = model["components"], model["explained_variance"]
    print(
        f"runs model it through {components} components ({100 * explained:.0f}% of the "
        f"variance); CEC-IB ARI {ari:.3f}; h5py reading X whole (the peer): {peer:.1f} s; "
        "ready / peer: "
        f"{(to_201 + ready_s) / peer:.1f}x (target 3x)"
    )


if __name__ == "__main__":
    main()
