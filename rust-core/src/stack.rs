//! A thread's stack as the debugger gives it (pcs, inlined flags, file:line, a few locals),
//! with each frame's function named from DWARF rather than by the debugger.

use rustc_hash::FxHashMap;
use serde::Deserialize;

use crate::dwarf::{DebugInfo, FunctionAt};
use crate::names;

/// One frame as the debugger shows it. Inlined calls are frames of their own that share
/// the pc of the physical frame below them.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FrameInput {
    pub pc: u64,
    /// The stack pointer in this frame (inlined frames share their physical frame's).
    #[serde(default)]
    pub sp: Option<u64>,
    /// The frame pointer (`rbp`), given with the stack pointer.
    #[serde(default)]
    pub fp: Option<u64>,
    #[serde(default)]
    pub inlined: bool,
    pub file: Option<String>,
    pub line: Option<u64>,
    /// Locals the glue was asked for (see `block_on_frames`): name -> bytes as hex.
    #[serde(default)]
    pub locals: FxHashMap<String, String>,
    /// Locals that could not be read: name -> why.
    #[serde(default)]
    pub local_errors: FxHashMap<String, String>,
}

/// A frame with the function it runs, as DWARF names it.
pub struct ResolvedFrame<'f> {
    pub input: &'f FrameInput,
    pub function: Option<FunctionAt>,
}

impl ResolvedFrame<'_> {
    /// The function's path without the generic arguments of its last segment.
    pub fn path_without_generics(&self) -> Option<String> {
        self.function
            .as_ref()
            .map(|function| names::strip_last_generics(&function.path))
    }
}

/// Names each frame's function from its pc. The debugger lists inlined calls as frames
/// sharing one pc, innermost first, ending with the physical (not inlined) frame; DWARF
/// gives the same chain outermost first.
pub fn resolve_frames<'f>(
    debug: &DebugInfo,
    load_bias: u64,
    frames: &'f [FrameInput],
) -> Vec<ResolvedFrame<'f>> {
    let mut resolved = Vec::with_capacity(frames.len());
    let mut group_start = 0;
    for end in 0..frames.len() {
        if frames[end].inlined && end + 1 < frames.len() {
            continue;
        }
        let group = &frames[group_start..=end];
        // Return addresses point after the call; look up the call itself. GDB gives every
        // frame of a group the physical pc; LLDB gives inlined frames other addresses and
        // the true pc only to the innermost, so that one is used.
        let adjust = if group_start == 0 { 0 } else { 1 };
        let pc = frames[group_start]
            .pc
            .wrapping_sub(load_bias)
            .wrapping_sub(adjust);
        let chain = debug.functions_at(pc).unwrap_or_default();
        for (i, input) in group.iter().enumerate() {
            let function = if i + 1 == group.len() {
                chain.first().cloned()
            } else {
                chain
                    .len()
                    .checked_sub(1 + i)
                    .filter(|&index| index > 0)
                    .map(|index| chain[index].clone())
            };
            resolved.push(ResolvedFrame { input, function });
        }
        group_start = end + 1;
    }
    resolved
}
