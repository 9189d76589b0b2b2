//! A thread's frames as a debugger lists them, from its physical frames: each inlined call
//! a frame of its own (innermost first, sharing the physical pc), with the source line a
//! debugger shows for it (the line of the pc in the innermost one, the call site of the
//! next inlined call in the others; a caller's pc is looked up one byte back, at its call).

use super::modules::Modules;
use super::unwind::PhysicalFrame;
use crate::dwarf::DebugInfo;
use crate::stack::FrameInput;

/// The frames of one thread, innermost first, for `inspect`. Code outside the executable
/// (libc, the vDSO) is one frame per physical frame, without a line: its DWARF is not ours.
pub fn frames_of(
    debug: &DebugInfo,
    load_bias: u64,
    modules: &Modules,
    physical: &[PhysicalFrame],
    max_frames: usize,
) -> Vec<FrameInput> {
    let _ = modules;
    let mut frames = Vec::new();
    for (index, frame) in physical.iter().enumerate() {
        if frames.len() >= max_frames {
            break;
        }
        let lookup = match index == 0 || frame.interrupted {
            true => frame.pc,
            false => frame.pc.wrapping_sub(1),
        };
        let chain = lookup
            .checked_sub(load_bias)
            .and_then(|address| Some((address, debug.functions_at(address).ok()?)))
            .filter(|(_, chain)| !chain.is_empty());
        let (sp, fp) = (frame.registers.sp(), frame.registers.fp());
        let Some((address, chain)) = chain else {
            frames.push(FrameInput {
                pc: frame.pc,
                sp,
                fp,
                inlined: false,
                file: None,
                line: None,
                locals: Default::default(),
                local_errors: Default::default(),
            });
            continue;
        };
        // `chain` is outermost first: the physical function, then each inlined call in it.
        for depth in (0..chain.len()).rev() {
            let location = if depth + 1 == chain.len() {
                wants_line(&chain[depth].path)
                    .then(|| debug.line_at(address))
                    .flatten()
            } else if wants_line(&chain[depth].path) {
                debug.call_site_of(chain[depth + 1].code)
            } else {
                None
            };
            frames.push(FrameInput {
                pc: frame.pc,
                sp,
                fp,
                inlined: depth > 0,
                file: location.as_ref().map(|at| at.file.clone()),
                line: location.map(|at| at.line).filter(|&line| line > 0),
                locals: Default::default(),
                local_errors: Default::default(),
            });
        }
    }
    frames.truncate(max_frames);
    frames
}

/// Lines are looked up only in coroutine bodies and closures, where they tell where a
/// running async fn is (as the debugger glue asks for them).
fn wants_line(path: &str) -> bool {
    path.contains("{async") || path.contains("{closure")
}
