//! Accuracy scoring of LoadGen accuracy logs, writing accuracy.txt like the official scripts.
