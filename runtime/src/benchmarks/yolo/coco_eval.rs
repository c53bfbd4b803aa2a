//! pycocotools COCOeval for boxes (in progress).
