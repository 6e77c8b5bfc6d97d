//! Replication: streamd as a primary of streamd and Redis replicas.

pub mod redis_forms;
