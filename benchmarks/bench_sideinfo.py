"""Compile side information for 1,000,000 items from 100,000 annotations.

Target (issue 7): under 2 s. The annotations mix what experts make: single-pair links, small
must-link sets, label strokes of a few hundred items, and a boundary in a 2-D view.

Then the expert's next acts on top of them (issue 38): each a label on 5 items, compiled into the
kept arrays (`CompiledAnnotations.add`, what a run does after an act) beside compiling every
annotation again (what a run did before), with the same side information out of both.

    .venv/bin/python -m benchmarks.bench_sideinfo [--items 1000000 --annotations 100000]
"""

import argparse
import tempfile
import time

import numpy as np
from sqlalchemy import insert

from app.db.migrate import upgrade_to_head
from app.db.models import Annotation, Dataset, Project
from app.db.session import make_engine, make_session_factory
from app.services.side_information import compile_for_dataset, forget_compiled
from app.sideinfo import AnnotationRecord, compile_side_information
from app.sideinfo.compiled import CompiledAnnotations


def make_records(n_items: int, n_annotations: int, seed: int = 0) -> list[AnnotationRecord]:
    rng = np.random.default_rng(seed)
    records = []
    kinds = rng.choice(
        ["label", "must_link", "cannot_link"], size=n_annotations - 1, p=[0.2, 0.4, 0.4]
    )
    for i, kind in enumerate(kinds):
        if kind == "label":
            # A lasso stroke: 200 neighbouring items, labelled by the region they lie in.
            start = int(rng.integers(0, n_items - 200))
            items = list(range(start, start + 200))
            records.append(
                AnnotationRecord(i, "label", {"items": items, "label": f"L{start * 8 // n_items}"})
            )
        elif kind == "must_link":
            items = rng.choice(n_items, size=int(rng.integers(2, 6)), replace=False).tolist()
            records.append(AnnotationRecord(i, "must_link", {"items": items}))
        else:
            a, b = rng.choice(n_items, size=2, replace=False).tolist()
            records.append(
                AnnotationRecord(
                    i,
                    "cannot_link",
                    {"items_a": [a], "items_b": [b]},
                    confidence=float(rng.choice([1.0, 0.9])),
                )
            )
    records.append(
        AnnotationRecord(
            n_annotations,
            "boundary",
            {"view_id": 1, "points": [[-3.0, -3.0], [0.0, 0.5], [3.0, 3.0]], "labels": ["a", "b"]},
        )
    )
    return records


def consistent_records(n_items: int, n_annotations: int, seed: int = 0) -> list[AnnotationRecord]:
    """What a session that can run looks like: the same mix, none contradicting another (8
    classes by item range; labels and must-links inside one, cannot-links across two)."""
    rng = np.random.default_rng(seed)
    width = n_items // 8

    def within(c: int, k: int) -> list[int]:
        return (c * width + rng.choice(width, size=k, replace=False)).tolist()

    records = []
    kinds = rng.choice(["label", "must_link", "cannot_link"], size=n_annotations, p=[0.2, 0.4, 0.4])
    for i, kind in enumerate(kinds):
        c, d = rng.choice(8, size=2, replace=False).tolist()
        if kind == "label":
            records.append(AnnotationRecord(i, "label", {"items": within(c, 5), "label": f"L{c}"}))
        elif kind == "must_link":
            items = within(c, int(rng.integers(2, 6)))
            records.append(AnnotationRecord(i, "must_link", {"items": items}))
        else:
            payload = {"items_a": within(c, 1), "items_b": within(d, 1)}
            records.append(AnnotationRecord(i, "cannot_link", payload))
    return records


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, default=1_000_000)
    parser.add_argument("--annotations", type=int, default=100_000)
    args = parser.parse_args()
    records = make_records(args.items, args.annotations)
    coords = np.random.default_rng(1).normal(size=(args.items, 2)).astype(np.float32)
    timings = []
    for _ in range(3):
        started = time.perf_counter()
        info = compile_side_information(
            n_items=args.items, revision=1, records=records, view_coordinates=lambda _v: coords
        )
        timings.append(time.perf_counter() - started)
    best = min(timings)
    print(f"compile {args.annotations:,} annotations over {args.items:,} items")
    print(
        "| best of 3 (s) | target (s) | ratio to target | labeled | must pairs | "
        "cannot pairs | chunklets | conflicts |"
    )
    print("|---|---|---|---|---|---|---|---|")
    print(
        f"| {best:.2f} | 2.0 | {best / 2:.2f} | {info.n_labeled:,} | {len(info.must_link):,} "
        f"| {len(info.cannot_link):,} | {info.n_chunklets:,} | {len(info.conflicts):,} |"
    )
    print()
    print(f"an act (a label on 5 items) after {args.annotations:,} annotations, median of 5 acts")
    print(
        "| annotations | conflicts | kept, the act added (s) | compiled from nothing (s) "
        "| ratio | same result |"
    )
    print("|---|---|---|---|---|---|")
    acts(args.items, records, coords, "the mix above")
    consistent = consistent_records(args.items, args.annotations)
    acts(args.items, consistent, coords, "none contradicting")
    through_the_database(args.items, consistent)


def acts(n_items: int, records: list[AnnotationRecord], coords: np.ndarray, name: str) -> None:
    """Five acts after `records`: kept and updated, against compiled from nothing."""
    rng = np.random.default_rng(2)
    compiled = CompiledAnnotations(n_items).add(records)
    live = list(records)
    kept, again = [], []
    for act in range(5):
        start = int(rng.integers(0, n_items // 8 - 5)) + act * (n_items // 8)
        payload = {"items": list(range(start, start + 5)), "label": f"L{act}"}  # class act's
        record = AnnotationRecord(len(live) + 1, "label", payload)
        live.append(record)
        started = time.perf_counter()
        compiled.add([record])
        got = compiled.side_information(revision=act, view_coordinates=lambda _v: coords)
        kept.append(time.perf_counter() - started)
        started = time.perf_counter()
        want = compile_side_information(
            n_items=n_items, revision=act, records=live, view_coordinates=lambda _v: coords
        )
        again.append(time.perf_counter() - started)
        same = np.array_equal(got.labels, want.labels) and got.conflicts == want.conflicts
    k, a = float(np.median(kept)), float(np.median(again))
    print(
        f"| {name} | {len(want.conflicts):,} | {k:.3f} | {a:.3f} | {k / a:.2f} "
        f"| {'yes' if same else 'NO'} |"
    )


def through_the_database(n_items: int, records: list[AnnotationRecord]) -> None:
    """What a run pays (`compile_for_dataset`): reading the annotations from SQLite and compiling
    them, for an act after `records`, kept from the run before against read and compiled from
    nothing."""
    with tempfile.TemporaryDirectory() as folder:
        url = f"sqlite:///{folder}/bench.db"
        upgrade_to_head(url)
        engine = make_engine(url)
        factory = make_session_factory(engine)
        with factory.begin() as session:
            project = Project(name="bench")
            session.add(project)
            session.flush()
            dataset = Dataset(
                project_id=project.id, name="bench", kind="table", status="ready",
                n_items=n_items, n_features=2, revision=len(records),
            )  # fmt: skip
            session.add(dataset)
            session.flush()
            dataset_id = dataset.id
            rows = [
                {"dataset_id": dataset_id, "kind": r.kind, "payload": r.payload,
                 "confidence": r.confidence, "revision": i + 1}
                for i, r in enumerate(records)
            ]  # fmt: skip
            session.execute(insert(Annotation), rows)

        def compile_now() -> float:
            with factory() as session:
                dataset = session.get_one(Dataset, dataset_id)
                started = time.perf_counter()
                compile_for_dataset(session=session, dataset=dataset)
                return time.perf_counter() - started

        forget_compiled()
        first = compile_now()
        kept, again = [], []
        for act in range(5):
            with factory.begin() as session:
                dataset = session.get_one(Dataset, dataset_id)
                dataset.revision += 1
                start = act * (n_items // 8)
                payload = {"items": list(range(start, start + 5)), "label": f"L{act}"}
                session.add(
                    Annotation(
                        dataset_id=dataset_id, kind="label", payload=payload,
                        revision=dataset.revision,
                    )
                )  # fmt: skip
            kept.append(compile_now())
            forget_compiled()
            again.append(compile_now())
        engine.dispose()
    print()
    print(
        f"through the database (SQLite), {len(records):,} annotations none contradicting: "
        "reading and compiling, median of 5 acts"
    )
    print("| first compilation (s) | an act, kept (s) | an act, from nothing (s) | ratio |")
    print("|---|---|---|---|")
    k, a = float(np.median(kept)), float(np.median(again))
    print(f"| {first:.3f} | {k:.3f} | {a:.3f} | {k / a:.2f} |")


if __name__ == "__main__":
    main()
