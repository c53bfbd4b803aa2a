//! accuracy-coco.py (in progress).
