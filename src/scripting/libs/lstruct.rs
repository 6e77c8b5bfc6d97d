//! The `lstruct` library (to be written).
