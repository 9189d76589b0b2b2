//! tokio's runtime as seen from memory: each thread's `CONTEXT`, the runtimes they point
//! to, each runtime's owned tasks, and what its workers have queued; the LocalSets and
//! runtimes values and statics keep (`anchors`, `statics`), and each list with the count
//! tokio keeps of it (`sources`).

pub mod activity;
pub mod anchors;
pub mod context;
pub mod sources;
pub mod statics;
pub mod tasks;
pub mod workers;

#[cfg(test)]
pub(crate) mod tests;

use std::path::{Path, PathBuf};

use crate::dwarf::{DebugInfo, LoadOptions};
use crate::error::Result;
use crate::layouts::tokio::{self as layout, CRATE};

/// Loads a tokio program's DWARF, indexing tokio's own units at once (every command reads
/// them first). With `only_if_tokio`, a program that does not link tokio is refused
/// (`NotTokio`) before its DWARF is read.
pub fn load_program(
    path: &Path,
    debug_dirs: &[PathBuf],
    debugger_file: Option<&Path>,
    only_if_tokio: bool,
) -> Result<DebugInfo> {
    let options = LoadOptions {
        debug_dirs,
        debugger_file,
        types_of: Some(CRATE),
        only_if_linked: only_if_tokio,
    };
    DebugInfo::open(path, &options)
}

/// The tokio version the program was built with, from its source paths; `None` for a
/// vendored tokio.
pub fn version(debug: &DebugInfo) -> Option<String> {
    debug.crate_version(CRATE)
}

/// The tokio version and how it was built, as far as the DWARF shows (`tokio 1.54.1 built
/// with rt-multi-thread, tokio_unstable; without parking_lot, taskdump, tracing`): what an
/// unknown layout names, since versions and features change layouts. Indexes every unit
/// the first time (the searches are kept with the binary); only errors ask.
pub fn build_shape(debug: &DebugInfo) -> String {
    let mut with = Vec::new();
    let mut without = Vec::new();
    for (feature, prefix) in layout::FEATURE_MARKS {
        match debug.type_name_with_prefix(prefix) {
            Some(_) => with.push(*feature),
            None => without.push(*feature),
        }
    }
    let unstable = debug
        .type_name_with_prefix(layout::CORE_TYPE_PREFIX)
        .and_then(|name| debug.type_named(&name).ok().flatten())
        .is_some_and(|core| core.field(layout::CORE_SPAWNED_AT).is_some());
    match unstable {
        true => with.push(layout::UNSTABLE_CFG),
        false => without.push(layout::UNSTABLE_CFG),
    }
    let version = version(debug).unwrap_or_else(|| "(version unknown)".to_string());
    let list = |names: &[&str]| match names.is_empty() {
        true => "nothing it checks".to_string(),
        false => names.join(", "),
    };
    format!(
        "tokio {version} built with {}; without {}",
        list(&with),
        list(&without)
    )
}
