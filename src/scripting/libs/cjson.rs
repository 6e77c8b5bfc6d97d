//! The `cjson` library (to be written).
