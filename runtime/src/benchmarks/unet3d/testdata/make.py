# Writes the fixtures of preprocessed.rs's tests as the reference's preprocess.py pickles its
# output (pickle.dump, Python's default protocol): python3 make.py, with numpy installed.
import json, pickle, sys
import numpy as np

cases = [line.strip().strip('",') for line in sys.stdin if "case_" in line]
image = (np.arange(12, dtype=np.float32) * 0.25 - 1.0).reshape(1, 2, 2, 3)
label = (np.arange(12) % 3).astype(np.uint8).reshape(1, 2, 2, 3)
with open("case_00000.pkl", "wb") as f:
    pickle.dump([image, label], f)
aux = {c: {"case": c, "image_shape": image.shape, "reshaped_affine": np.eye(4), "zoom_factor": np.ones(3)} for c in cases}
with open("preprocessed_files.pkl", "wb") as f:
    pickle.dump({"file_list": cases, "cases": aux}, f)
