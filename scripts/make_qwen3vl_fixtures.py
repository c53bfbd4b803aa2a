#!/usr/bin/env python3
"""Generate the qwen3-vl-235b-a22b fixtures from the unmodified MLCommons reference code.

What it makes (in tests/fixtures/qwen3vl/):

  catalogue/data/train-00000-of-00001.parquet, catalogue/data/test-00000-of-00001.parquet
      A 12-product catalogue (8 train, 4 test) with the Hugging Face layout of
      Shopify/product-catalogue: written by ``datasets.Dataset.to_parquet`` from
      the real features (product_image an ``Image()``: struct {bytes, path};
      potential_product_categories a list of strings; ground_truth_is_secondhand a
      bool), tiny PNG, JPEG, WEBP and GIF images, and titles and categories with
      quotes, backslashes, tabs, non-breaking and zero-width spaces.
  missing-column/data/train-00000-of-00001.parquet
      The same rows without ground_truth_category.
  bad-image/data/train-00000-of-00001.parquet
      The same rows with product 5's image bytes replaced by HTML.
  requests.json
      For each product: the system text, the user text part and the image URL's
      ``data:image/<FORMAT>;base64,`` prefix, from the reference's
      ``ShopifyGlobalCatalogue.formulate_loaded_sample`` (task.py).
  mlperf_log_accuracy.json
      A LoadGen accuracy log answering the 12 products with tricky responses
      (exact, partial paths, fenced JSON, extra keys, lax bools, wrong types,
      unparsable text, a duplicate entry).
  accuracy.txt
      What the reference's ``run_evaluation`` (evaluation.py) writes for that log
      over that catalogue (the dataset given as the local directory, which
      ``datasets.load_dataset`` reads as parquet: ``repo_id=<dir>``,
      ``split=["train", "test"]``).

The reference code is mlcommons/inference at COMMIT below
(multimodal/qwen3-vl/src/mlperf_inf_mm_q3vl/{task,schema,evaluation}.py), read
from a bare clone with ``git show`` into a temporary package and imported as is;
``mlperf_loadgen`` (a compiled module only LoadGen runs need) is replaced by a
stub because nothing here calls it.

Run:  python3 -m venv /tmp/venv-qwen3vl
      /tmp/venv-qwen3vl/bin/pip install pydantic numpy rapidfuzz scikit-learn \
          tabulate loguru datasets pyarrow pillow openai httpx pympler
      /tmp/venv-qwen3vl/bin/python scripts/make_qwen3vl_fixtures.py \
          /work/.mirror/mlcommons+inference/repo
The versions it ran with are written into README.md.
"""

import io
import json
import os
import subprocess
import sys
import tempfile
import types
from importlib import metadata
from pathlib import Path

COMMIT = "b66003e10e2db4b8c36a448b0545ec90fcc6e9e9"
OUT = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "qwen3vl"
FILES = ("__init__.py", "task.py", "schema.py", "evaluation.py")


def reference_package(repo: str) -> Path:
    """The reference's package, copied from the bare clone into a temporary directory."""
    root = Path(tempfile.mkdtemp(prefix="q3vl-ref-"))
    pkg = root / "mlperf_inf_mm_q3vl"
    pkg.mkdir()
    for name in FILES:
        text = subprocess.run(
            ["git", "-C", repo, "show", f"{COMMIT}:multimodal/qwen3-vl/src/mlperf_inf_mm_q3vl/{name}"],
            check=True, capture_output=True, text=True).stdout
        (pkg / name).write_text(text)
    return root


class _Anything(types.ModuleType):
    """A stand-in for mlperf_loadgen: any attribute is another stand-in."""

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _Anything(name)

    def __call__(self, *args, **kwargs):
        return _Anything("call")


def images():
    from PIL import Image
    out = []
    for i, fmt in enumerate(["PNG", "JPEG", "WEBP", "GIF", "PNG", "JPEG"]):
        buf = io.BytesIO()
        Image.new("RGB", (4 + i, 3), (40 * i % 256, 90, 200)).save(buf, format=fmt)
        out.append(buf.getvalue())
    return out


CATEGORIES = [
    "Apparel & Accessories > Clothing > Shirts & Tops",
    "Apparel & Accessories > Clothing > Men's Shirts",
    'Home & Garden > Decor > "Quoted" Candles',
    "Home & Garden > Kitchen & Dining > Tableware > Drinkware > Mugs",
    "Electronics > Audio > Headphones",
    "Toys & Games > Puzzles \\ Jigsaw",
    "Health & Beauty > Personal Care > Cosmetics\u00a0Sets",
    "Sporting Goods > Outdoor\u200bRecreation > Cycling",
    "Arts & Entertainment > Hobbies & Creative Arts > Crafts\tKits",
]


def rows():
    imgs = images()
    out = []
    for i in range(12):
        cands = [CATEGORIES[(i + 2 * k) % len(CATEGORIES)] for k in range(5)]
        out.append({
            "product_title": ["Mug \"Morning\"", "Men's shirt", "Vela perfumada 200 g", "Kopfhörer X2"][i % 4] + f" #{i}",
            "product_description": f"Line one of product {i}.\nLine two: <b>bold</b> {{json: 1}} \\ end" if i % 3 else "",
            "product_image": {"bytes": imgs[i % len(imgs)], "path": None},
            "potential_product_categories": cands,
            "ground_truth_brand": ["acme", "Giorgio Armani", "nike", "N/A"][i % 4],
            "ground_truth_is_secondhand": i % 3 == 0,
            "ground_truth_category": cands[i % len(cands)],
        })
    return out


def features():
    from datasets import Features, Image, Sequence, Value
    return Features({
        "product_title": Value("string"),
        "product_description": Value("string"),
        "product_image": Image(),
        "potential_product_categories": Sequence(Value("string")),
        "ground_truth_brand": Value("string"),
        "ground_truth_is_secondhand": Value("bool"),
        "ground_truth_category": Value("string"),
    })


def write_catalogue(dir: Path, rows, split_at=8, drop=None):
    from datasets import Dataset
    (dir / "data").mkdir(parents=True, exist_ok=True)
    parts = {"train": rows[:split_at], "test": rows[split_at:]} if split_at < len(rows) else {"train": rows}
    for split, part in parts.items():
        ds = Dataset.from_list(part, features=features())
        if drop:
            ds = ds.remove_columns(drop)
        ds.to_parquet(str(dir / "data" / f"{split}-00000-of-00001.parquet"))


def responses(truths):
    """Tricky answers, one per product (index i gets case i), and one duplicate entry."""
    out = []
    for i, t in enumerate(truths):
        cat, brand = t["ground_truth_category"], t["ground_truth_brand"]
        levels = cat.split(" > ")
        case = [
            json.dumps({"category": cat, "brand": brand, "is_secondhand": t["ground_truth_is_secondhand"]}),
            json.dumps({"category": " > ".join(levels[:2]), "brand": brand, "is_secondhand": False}),
            "```json\n" + json.dumps({"category": cat, "brand": brand, "is_secondhand": True}) + "\n```",
            json.dumps({"category": cat, "brand": brand, "is_secondhand": False, "confidence": 0.9}),
            '{"category": "%s", "brand": "x", "is_secondhand": "yes"}' % cat.replace("\\", "\\\\").replace('"', '\\"').replace("\t", "\\t"),
            json.dumps({"category": 7, "brand": brand, "is_secondhand": False}),
            "I think it is " + cat,
            json.dumps({"category": levels[0] + " > Something Else > " + " > ".join(levels[1:]), "brand": brand, "is_secondhand": 1}),
            "  " + json.dumps({"category": "  " + levels[0] + "  >  " + " > ".join(levels[1:]), "brand": brand, "is_secondhand": "off"}) + "\n",
            json.dumps({"category": cat + " > Extra Level", "brand": brand, "is_secondhand": 2}),
            json.dumps({"category": "Totally > Wrong", "brand": brand, "is_secondhand": False}, ensure_ascii=False),
            "",
        ][i % 12]
        out.append((i, case))
    out.append((1, json.dumps({"category": truths[1]["ground_truth_category"], "brand": "", "is_secondhand": False})))
    return out


def main():
    repo = sys.argv[1] if len(sys.argv) > 1 else "/work/.mirror/mlcommons+inference/repo"
    sys.modules["mlperf_loadgen"] = _Anything("mlperf_loadgen")
    sys.path.insert(0, str(reference_package(repo)))
    from mlperf_inf_mm_q3vl.evaluation import run_evaluation
    from mlperf_inf_mm_q3vl.task import ShopifyGlobalCatalogue
    from datasets import load_dataset

    OUT.mkdir(parents=True, exist_ok=True)
    data = rows()
    write_catalogue(OUT / "catalogue", data)
    write_catalogue(OUT / "missing-column", data, split_at=12, drop=["ground_truth_category"])
    bad = [dict(r) for r in data]
    bad[5] = dict(bad[5], product_image={"bytes": b"<html>not an image</html>", "path": None})
    from datasets import Dataset
    (OUT / "bad-image" / "data").mkdir(parents=True, exist_ok=True)
    # An Image() feature would refuse the bytes; the column stays the same struct.
    plain = Dataset.from_list(bad)
    plain.to_parquet(str(OUT / "bad-image" / "data" / "train-00000-of-00001.parquet"))

    dataset = load_dataset(str(OUT / "catalogue"), split="train+test")
    assert len(dataset) == 12
    requests = []
    for i in range(len(dataset)):
        loaded = ShopifyGlobalCatalogue.formulate_loaded_sample(dataset[i])
        system, user = loaded.messages[0], loaded.messages[1]
        content = list(user["content"])
        url = content[1]["image_url"]["url"]
        requests.append({"system": system["content"], "user": content[0]["text"], "image_url_prefix": url[: url.index(",") + 1]})
    (OUT / "requests.json").write_text(json.dumps(requests, indent=1, ensure_ascii=False) + "\n")

    truths = [dataset[i] for i in range(len(dataset))]
    log = [{"seq_id": n, "qsl_idx": i, "data": text.encode("utf-8").hex().upper()} for n, (i, text) in enumerate(responses(truths))]
    (OUT / "mlperf_log_accuracy.json").write_text(json.dumps(log, indent=1) + "\n")

    cwd = os.getcwd()
    os.chdir(OUT)
    try:
        cli = types.SimpleNamespace(repo_id=str(OUT / "catalogue"), token=None, split=["train", "test"])
        run_evaluation(random_seed=12345, filename=OUT / "mlperf_log_accuracy.json", dataset=cli)
    finally:
        os.chdir(cwd)

    versions = {p: metadata.version(p) for p in ["pydantic", "pydantic_core", "datasets", "pyarrow", "pillow", "numpy", "rapidfuzz", "scikit-learn"]}
    (OUT / "README.md").write_text(
        "# qwen3-vl-235b-a22b fixtures\n\n"
        "Written by `scripts/make_qwen3vl_fixtures.py` (its docstring says what each file is) from the unmodified\n"
        f"reference code of mlcommons/inference@{COMMIT} (multimodal/qwen3-vl: task.py, schema.py, evaluation.py).\n"
        "`accuracy.txt` is what the reference's `run_evaluation` wrote for `mlperf_log_accuracy.json` over `catalogue/`;\n"
        "`requests.json` is `ShopifyGlobalCatalogue.formulate_loaded_sample` of each product (texts and the image URL's prefix).\n\n"
        f"Python {sys.version.split()[0]}; " + ", ".join(f"{k} {v}" for k, v in versions.items()) + ".\n")


if __name__ == "__main__":
    main()
