//! Runtimes and LocalSets kept in the program's statics (`static RT: OnceLock<Runtime>`, a
//! `LazyLock`, a struct holding a `Handle`): what leads to a runtime no thread is inside,
//! as blocking client wrappers keep one. Only statics whose type can hold one are read.

use std::sync::Arc;

use crate::dwarf::{DebugInfo, StaticVariable};
use crate::error::{Error, ErrorKind};
use crate::value::{offset, Target};

use super::anchors::{Anchor, AnchorTypes};

/// What the statics worth reading are kept under: the mutable ones whose type can hold a
/// runtime handle or a LocalSet (module-level statics; not those inside functions).
const STATICS_WITH_ANCHORS: &str = "statics that can hold a runtime or LocalSet";

/// Works out which statics can hold a runtime or LocalSet (the units holding the
/// program's mutable statics are indexed for it), ahead of any command where it can be:
/// the executable before it stops the process, the debuggers behind their own work.
pub fn prepare(debug: &DebugInfo) {
    statics_with_anchors(debug);
}

fn statics_with_anchors(debug: &DebugInfo) -> Arc<[StaticVariable]> {
    let types = AnchorTypes::default();
    debug.mutable_statics_chosen(STATICS_WITH_ANCHORS, |variable| {
        types.reach(debug, variable.ty)
    })
}

/// The anchors in the program's statics, each with the static's path; and what could not
/// be read.
pub fn anchors_in_statics(target: &Target<'_>) -> (Vec<(String, Anchor)>, Vec<Error>) {
    let candidates = statics_with_anchors(target.debug);
    let types = AnchorTypes::default();
    let mut found = Vec::new();
    let mut problems = Vec::new();
    for variable in candidates.iter() {
        let value = offset(variable.address, target.load_bias)
            .and_then(|address| target.value(variable.ty, address));
        match value {
            Ok(value) => found.extend(
                types
                    .find_in(&value)
                    .into_iter()
                    .map(|anchor| (variable.path.to_string(), anchor)),
            ),
            Err(error) => problems.push(
                error
                    .of_kind(ErrorKind::Layout)
                    .context(format!("static {}", variable.path)),
            ),
        }
    }
    (found, problems)
}
