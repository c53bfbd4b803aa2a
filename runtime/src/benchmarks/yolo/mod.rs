//! YOLO (yolo-99, yolo-95): COCO val2017 detection. Here: the filtered COCO annotations
//! ([`coco`]), pycocotools' `COCOeval` for boxes ([`coco_eval`]) and `accuracy-coco.py`'s scoring
//! of an accuracy log ([`accuracy`]).

pub mod accuracy;
pub mod coco;
pub mod coco_eval;
