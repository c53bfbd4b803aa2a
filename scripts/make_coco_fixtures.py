#!/usr/bin/env python3
"""Writes the YOLO family's COCO scoring fixtures and records what pycocotools and the official
accuracy-coco.py say about them (tests/fixtures/accuracy/coco/, README.md there).

1. instances_val2017.json: a seeded synthetic ground truth in the format the reference's
   create_safe_annotations.py writes (images in QSL order with unsorted ids, box annotations with
   unique non-zero ids, crowd boxes, segment areas below w*h, areas on the small/medium and
   medium/large bounds, images without boxes, a category without detections, one without boxes).
2. detections.json: pycocotools results (image_id, category_id, bbox, score): near-duplicates of
   the boxes, wrong classes, false positives, tiny and empty boxes, many score ties, images with
   more than 100 detections, a category id outside the categories.
   cocoeval_stats.json: COCOeval(gt, gt.loadRes(detections), "bbox") evaluate/accumulate/summarize
   over every image: its 12 stats as repr() strings.
3. mlperf_log_accuracy.json: most of those detections as the YOLO SUT logs them (7 float32 per
   detection: qsl_idx, ymin/h, xmin/w, ymax/h, xmax/w, score, class), entries shuffled, some images
   not logged, an empty payload, a qsl_idx logged twice, a payload whose image index disagrees.
   accuracy-coco.stdout: what the UNMODIFIED tools/accuracy-coco.py (mlcommons/inference b66003e1)
   prints for it (--coco-dir holding annotations/instances_val2017.json);
   accuracy-coco-results.json: the detections it decoded (its --output-file, image_loc dropped);
   cocoeval_stats.json's logged_stats: COCOeval over those with imgIds = the logged images, as
   the script sets them.

4. With --large <dir> (outside the repository; nothing committed): a set of the real one's scale
   (1,525 images, 80 categories, about 7 boxes and 300 detections per image, as predict(conf=0.001)
   gives) with its detections and pycocotools' stats, for the opt-in test
   `coco_eval::tests::agrees_with_pycocotools_at_full_scale` (COCO_LARGE_DIR=<dir>).

Usage: make_coco_fixtures.py --script <copy of accuracy-coco.py> [--python <venv python>] [--large <dir>]
(run it with a python that has pycocotools and numpy).
"""
import argparse
import json
import os
import random
import shutil
import struct
import subprocess
import sys
import tempfile

import numpy as np
from pycocotools.coco import COCO
from pycocotools.cocoeval import COCOeval

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests/fixtures/accuracy/coco")
SEED = 20261128
# COCO-91 ids: 90 has boxes but no detections; 44 has detections but no boxes.
CATEGORIES = [(1, "person"), (3, "car"), (18, "dog"), (44, "bottle"), (62, "chair"), (90, "toothbrush")]
BOXED = [1, 3, 18, 62, 90]
DETECTED = [1, 3, 18, 44, 62]
OUTSIDE = 7  # a class id the ground truth has no category for


def box_of_area(rng, area, width, height):
    aspect = rng.uniform(0.4, 2.5)
    w = (area * aspect) ** 0.5
    h = area / w
    x = rng.uniform(-0.05 * width, max(1.0, width - 0.9 * w))
    y = rng.uniform(-0.05 * height, max(1.0, height - 0.9 * h))
    return [round(x, 2), round(y, 2), round(w, 2), round(h, 2)]


def ground_truth(rng):
    images, annotations = [], []
    ids = rng.sample(range(1, 600000), 36)
    ann_ids = iter(rng.sample(range(1, 10**6), 1000))
    for n, image_id in enumerate(ids):
        width, height = rng.choice([(640, 480), (480, 640), (640, 427), (500, 375), (612, 612)])
        images.append({"license": 4, "file_name": "%012d.jpg" % image_id, "coco_url": "http://images.cocodataset.org/val2017/%012d.jpg" % image_id,
                       "height": height, "width": width, "id": image_id})
        count = 0 if n in (3, 17) else (12 if n in (5, 20) else rng.randint(1, 9))
        for _ in range(count):
            size = rng.choice(["small", "medium", "large"])
            area = {"small": rng.uniform(20, 1024), "medium": rng.uniform(1024, 9216), "large": rng.uniform(9216, 90000)}[size]
            bbox = box_of_area(rng, area, width, height)
            crowd = 1 if rng.random() < 0.07 else 0
            segment = bbox[2] * bbox[3] * rng.uniform(0.55, 1.0)
            if rng.random() < 0.08:
                segment = rng.choice([1024.0, 9216.0])  # on a range bound: in both ranges
            annotations.append({"segmentation": [[bbox[0], bbox[1], bbox[0] + bbox[2], bbox[1]]], "area": segment, "iscrowd": crowd,
                                "image_id": image_id, "bbox": bbox, "category_id": rng.choice(BOXED), "id": next(ann_ids)})
    categories = [{"supercategory": "thing", "id": i, "name": name} for i, name in CATEGORIES]
    return {"info": {"description": "synthetic COCO-format ground truth, seed %d" % SEED}, "licenses": [{"id": 4, "name": "CC BY"}],
            "images": images, "annotations": annotations, "categories": categories}


def jitter(rng, bbox, scale):
    x, y, w, h = bbox
    return [x + rng.gauss(0, scale * w), y + rng.gauss(0, scale * h), max(0.0, w * (1 + rng.gauss(0, scale))), max(0.0, h * (1 + rng.gauss(0, scale)))]


def detections(rng, gt):
    by_image = {}
    for a in gt["annotations"]:
        by_image.setdefault(a["image_id"], []).append(a)
    out = []
    for n, image in enumerate(gt["images"]):
        tie = n % 2 == 0  # half the images' scores on a 0.05 grid: many exact ties
        dets = []
        boxes = by_image.get(image["id"], [])
        copies = 12 if n in (5, 20) else 1  # two images with more than 100 detections
        for a in boxes:
            for _ in range(copies):
                for _ in range(rng.choice([0, 1, 1, 1, 2, 3])):
                    cat = a["category_id"] if rng.random() > 0.1 else rng.choice(DETECTED)
                    dets.append((cat, jitter(rng, a["bbox"], rng.choice([0.01, 0.05, 0.1, 0.3])), rng.random()))
        for _ in range(rng.randint(0, 6)):
            w, h = image["width"], image["height"]
            bw, bh = rng.uniform(2, w / 2), rng.uniform(2, h / 2)
            dets.append((rng.choice(DETECTED), [rng.uniform(0, w - bw), rng.uniform(0, h - bh), bw, bh], rng.random() * 0.6))
        if n % 5 == 1:
            dets.append((rng.choice(DETECTED), [rng.uniform(0, 300), rng.uniform(0, 300), rng.uniform(0.5, 3), rng.uniform(0.5, 3)], rng.random()))
            dets.append((rng.choice(DETECTED), [10.0, 20.0, 0.0, 5.0], rng.random()))
        if n % 7 == 2:
            dets.append((OUTSIDE, [5.0, 5.0, 50.0, 50.0], 0.9))
        for cat, bbox, score in dets:
            if tie:
                score = round(score * 20) / 20
            out.append({"image_id": image["id"], "category_id": cat, "bbox": bbox, "score": score})
    return out


def run_cocoeval(gt_path, dets, img_ids=None):
    gt = COCO(gt_path)
    dt = gt.loadRes(dets)
    e = COCOeval(gt, dt, iouType="bbox")
    if img_ids is not None:
        e.params.imgIds = img_ids
    e.evaluate()
    e.accumulate()
    e.summarize()
    return [repr(float(s)) for s in e.stats]


def f32_entry(qsl_idx, image, dets, claimed=None):
    """The YOLO SUT's payload: 7 float32 per detection, box corners normalised by the image size."""
    values = []
    for d in dets:
        x, y, w, h = d["bbox"]
        W, H = image["width"], image["height"]
        values += [claimed if claimed is not None else qsl_idx, y / H, x / W, (y + h) / H, (x + w) / W, d["score"], d["category_id"]]
    return {"seq_id": 0, "qsl_idx": qsl_idx, "data": struct.pack("<%df" % len(values), *values).hex().upper()}


def accuracy_log(rng, gt, dets):
    per_image = {}
    for d in dets:
        per_image.setdefault(d["image_id"], []).append(d)
    entries = []
    skipped = {8, 21, 30}  # not logged: not in the evaluation's image ids
    for idx, image in enumerate(gt["images"]):
        if idx in skipped:
            continue
        mine = per_image.get(image["id"], [])
        if idx == 11:
            mine = []  # an image with boxes but no detections: empty payload
        entries.append(f32_entry(idx, image, mine, claimed=idx + 1 if idx == 14 else None))
        if idx in (2, 9):  # logged again with other detections: the script keeps the first
            entries.append(f32_entry(idx, image, mine[:1]))
    first = entries[0]
    rest = entries[1:]
    rng.shuffle(rest)
    entries = [first] + rest
    for seq, e in enumerate(entries):
        e["seq_id"] = seq
    return entries


def large(dir):
    rng = random.Random(SEED + 1)
    cats = sorted(rng.sample(range(1, 91), 80))
    images, annotations, dets = [], [], []
    ann_ids = iter(rng.sample(range(1, 10**7), 20000))
    for n, image_id in enumerate(rng.sample(range(1, 600000), 1525)):
        width, height = rng.choice([(640, 480), (480, 640), (640, 427)])
        images.append({"file_name": "%012d.jpg" % image_id, "height": height, "width": width, "id": image_id})
        mine = []
        for _ in range(rng.choice([0, 2, 4, 7, 10, 15])):
            bbox = box_of_area(rng, rng.choice([rng.uniform(20, 1024), rng.uniform(1024, 9216), rng.uniform(9216, 90000)]), width, height)
            a = {"area": bbox[2] * bbox[3] * rng.uniform(0.55, 1.0), "iscrowd": 1 if rng.random() < 0.01 else 0, "image_id": image_id, "bbox": bbox,
                 "category_id": rng.choice(cats), "id": next(ann_ids)}
            annotations.append(a)
            mine.append(a)
        for _ in range(300):
            if mine and rng.random() < 0.3:
                a = rng.choice(mine)
                cat = a["category_id"] if rng.random() > 0.1 else rng.choice(cats)
                dets.append({"image_id": image_id, "category_id": cat, "bbox": jitter(rng, a["bbox"], rng.choice([0.02, 0.1, 0.3])), "score": rng.random()})
            else:
                bw, bh = rng.uniform(2, width / 2), rng.uniform(2, height / 2)
                dets.append({"image_id": image_id, "category_id": rng.choice(cats), "bbox": [rng.uniform(0, width - bw), rng.uniform(0, height - bh), bw, bh],
                             "score": round(rng.random() * 0.3, 3)})
    gt = {"images": images, "annotations": annotations, "categories": [{"id": c, "name": "c%d" % c} for c in cats]}
    os.makedirs(dir, exist_ok=True)
    with open(os.path.join(dir, "instances_val2017.json"), "w") as f:
        json.dump(gt, f)
    with open(os.path.join(dir, "detections.json"), "w") as f:
        json.dump(dets, f)
    stats = run_cocoeval(os.path.join(dir, "instances_val2017.json"), json.load(open(os.path.join(dir, "detections.json"))))
    with open(os.path.join(dir, "cocoeval_stats.json"), "w") as f:
        json.dump({"stats": stats}, f, indent=1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--script", required=True, help="a copy of tools/accuracy-coco.py (mlcommons/inference b66003e1)")
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--large", help="also write the full-scale set here (not committed)")
    args = ap.parse_args()
    if args.large:
        large(args.large)
    rng = random.Random(SEED)
    os.makedirs(OUT, exist_ok=True)
    gt = ground_truth(rng)
    gt_path = os.path.join(OUT, "instances_val2017.json")
    with open(gt_path, "w") as f:
        json.dump(gt, f)
    dets = detections(rng, gt)
    with open(os.path.join(OUT, "detections.json"), "w") as f:
        json.dump(dets, f)
    stats = run_cocoeval(gt_path, json.load(open(os.path.join(OUT, "detections.json"))))
    log = accuracy_log(rng, gt, dets)
    log_path = os.path.join(OUT, "mlperf_log_accuracy.json")
    with open(log_path, "w") as f:
        json.dump(log, f, indent=0)
    with tempfile.TemporaryDirectory() as coco_dir:
        os.makedirs(os.path.join(coco_dir, "annotations"))
        shutil.copy(gt_path, os.path.join(coco_dir, "annotations/instances_val2017.json"))
        run = subprocess.run([args.python, args.script, "--mlperf-accuracy-file", log_path, "--coco-dir", coco_dir,
                              "--output-file", os.path.join(coco_dir, "coco-results.json")], capture_output=True, text=True, check=True)
        with open(os.path.join(coco_dir, "coco-results.json")) as f:
            results = json.load(f)
    # The detections the script decoded (its --output-file without image_loc), and COCOeval over
    # them with the script's imgIds (every logged image), for a test finer than its printed mAP.
    results = [{k: r[k] for k in ("image_id", "category_id", "bbox", "score")} for r in results]
    with open(os.path.join(OUT, "accuracy-coco-results.json"), "w") as f:
        json.dump(results, f)
    logged = sorted({gt["images"][e["qsl_idx"]]["id"] for e in log})
    logged_stats = run_cocoeval(gt_path, results, logged)
    with open(os.path.join(OUT, "cocoeval_stats.json"), "w") as f:
        json.dump({"stats": stats, "logged_image_ids": logged, "logged_stats": logged_stats}, f, indent=1)
    with open(os.path.join(OUT, "accuracy-coco.stdout"), "w") as f:
        f.write(run.stdout)
    print("%d images, %d boxes, %d detections, %d log entries; stats[0] = %s" % (len(gt["images"]), len(gt["annotations"]), len(dets), len(log), stats[0]))
    print("numpy", np.__version__)


if __name__ == "__main__":
    main()
