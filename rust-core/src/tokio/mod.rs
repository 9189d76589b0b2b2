//! tokio's runtime as seen from memory: each thread's `CONTEXT`, the runtimes they point
//! to, each runtime's owned tasks, and what its workers have queued.

pub mod context;
pub mod tasks;
pub mod workers;

#[cfg(test)]
pub(crate) mod tests;

use std::path::{Path, PathBuf};

use crate::dwarf::{DebugInfo, LoadOptions};
use crate::error::Result;
use crate::layouts::tokio::CRATE;

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
