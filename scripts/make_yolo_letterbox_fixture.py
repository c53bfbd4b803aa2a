#!/usr/bin/env python3
"""Writes runtime/src/benchmarks/yolo/testdata/letterbox.json: what ultralytics' LetterBox
(auto=False, centre, scale-up, INTER_LINEAR, pad 114) gives for generated BGR images, computed with
OpenCV exactly as ultralytics/data/augment.py's LetterBox.__call__ does (the lines are copied below
as its arithmetic), then BGR->RGB and CHW as ultralytics' predictor's preprocess does.

Each image: pixel (x, y), BGR channel c = (x * 7 + y * 13 + c * 29 + (x * y) % 17 + (x // 3) * (y // 5)) % 256.
The record holds the sha256 of the uint8 RGB CHW result and, for inputs of side 64, the result itself
(hex), so a mismatch can be located. Run: python3 scripts/make_yolo_letterbox_fixture.py (a venv with
opencv-python-headless and numpy)."""
import hashlib, json, os, sys
import cv2, numpy as np

def image(w, h):
    y, x = np.mgrid[0:h, 0:w]
    return np.stack([(x * 7 + y * 13 + c * 29 + (x * y) % 17 + (x // 3) * (y // 5)) % 256 for c in range(3)], axis=-1).astype(np.uint8)

def letterbox(img, size):
    shape = img.shape[:2]
    new_shape = (size, size)
    r = min(new_shape[0] / shape[0], new_shape[1] / shape[1])
    new_unpad = int(round(shape[1] * r)), int(round(shape[0] * r))
    dw, dh = new_shape[1] - new_unpad[0], new_shape[0] - new_unpad[1]
    dw /= 2
    dh /= 2
    if shape[::-1] != new_unpad:
        img = cv2.resize(img, new_unpad, interpolation=cv2.INTER_LINEAR)
    top, bottom = int(round(dh - 0.1)), int(round(dh + 0.1))
    left, right = int(round(dw - 0.1)), int(round(dw + 0.1))
    img = cv2.copyMakeBorder(img, top, bottom, left, right, cv2.BORDER_CONSTANT, value=(114, 114, 114))
    return np.ascontiguousarray(img[..., ::-1].transpose(2, 0, 1))

cases = [(50, 30, 64), (30, 50, 64), (100, 57, 64), (128, 128, 64), (33, 97, 64), (64, 64, 64), (17, 9, 64), (200, 113, 64),
         (640, 480, 640), (500, 333, 640), (427, 640, 640), (1024, 683, 640), (320, 240, 640)]
out = {"provenance": {"command": "python3 scripts/make_yolo_letterbox_fixture.py", "opencv": cv2.__version__, "numpy": np.__version__,
                      "python": sys.version.split()[0]}, "cases": []}
for w, h, size in cases:
    chw = letterbox(image(w, h), size)
    assert chw.shape == (3, size, size)
    case = {"width": w, "height": h, "size": size, "sha256": hashlib.sha256(chw.tobytes()).hexdigest()}
    if size == 64:
        case["hex"] = chw.tobytes().hex()
    out["cases"].append(case)
path = os.path.join(os.path.dirname(__file__), "..", "runtime/src/benchmarks/yolo/testdata/letterbox.json")
os.makedirs(os.path.dirname(path), exist_ok=True)
with open(path, "w") as f:
    json.dump(out, f, indent=0)
    f.write("\n")
print(path, len(cases), "cases")
