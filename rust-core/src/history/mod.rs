//! Time across stops: a compact snapshot of each stop's tasks (`snapshot`), kept between
//! commands (`store`) or read from a saved report (`saved`), compared into stuck, moved,
//! new and finished tasks (`diff`), and summed over many stops by `async sample`
//! (`sample`). `progress` says which facts of a waiting future count as moving.

pub mod diff;
pub mod progress;
pub mod sample;
pub mod saved;
pub mod snapshot;
pub mod store;

pub use diff::diff;
pub use sample::{SampleSummary, Sampler};
pub use snapshot::Snapshot;
pub use store::ProcessKey;
