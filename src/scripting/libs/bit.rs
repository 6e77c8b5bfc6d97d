//! The `bit` library (to be written).
