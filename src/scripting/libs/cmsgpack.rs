//! The `cmsgpack` library (to be written).
