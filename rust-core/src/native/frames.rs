//! A thread's frames as a debugger lists them, from its physical frames: each inlined call
//! a frame of its own (innermost first, sharing the physical pc), with the source line a
//! debugger shows for it (the line of the pc in the innermost one, the call site of the
//! next inlined call in the others; a caller's pc is looked up one byte back, at its call).

use rustc_hash::FxHashMap;

use super::unwind::PhysicalFrame;
use crate::block_on::block_on_frames;
use crate::dwarf::{DebugInfo, FunctionAt, InlinedScope, LocalValue, SourceLocation};
use crate::memory::Memory;
use crate::names::strip_last_generics;
use crate::stack::{FrameInput, LocalBytes};

/// What the DWARF says of the code at one address: the functions active there (outermost
/// first) and the line each shows. Kept for every thread of a stop: a runtime's workers
/// mostly wait at the same pcs.
#[derive(Default)]
pub struct Symbols {
    at: FxHashMap<u64, Option<std::sync::Arc<CodeAt>>>,
}

pub struct CodeAt {
    chain: Vec<FunctionAt>,
    /// By depth in `chain`.
    lines: Vec<Option<SourceLocation>>,
}

impl Symbols {
    fn code_at(&mut self, debug: &DebugInfo, address: u64) -> Option<std::sync::Arc<CodeAt>> {
        self.at
            .entry(address)
            .or_insert_with(|| {
                let chain = debug
                    .functions_at(address)
                    .ok()
                    .filter(|chain| !chain.is_empty())?;
                let lines = (0..chain.len())
                    .map(|depth| match wants_line(&chain[depth].path) {
                        false => None,
                        true if depth + 1 == chain.len() => debug.line_at(address),
                        true => debug.call_site_of(chain[depth + 1].code),
                    })
                    .collect();
                Some(std::sync::Arc::new(CodeAt { chain, lines }))
            })
            .clone()
    }
}

/// The frames of one thread, innermost first, for `inspect`. Code outside the executable
/// (libc, the vDSO) is one frame per physical frame, without a line: its DWARF is not ours.
/// The innermost inlined frame of a `block_on` function gets the local holding its future,
/// read where its DWARF location says (physical frames the core reads itself).
pub fn frames_of(
    debug: &DebugInfo,
    symbols: &mut Symbols,
    load_bias: u64,
    memory: &dyn Memory,
    physical: &[PhysicalFrame],
    max_frames: usize,
) -> Vec<FrameInput> {
    let mut block_on_local_read = false;
    let mut frames = Vec::new();
    for (index, frame) in physical.iter().enumerate() {
        if frames.len() >= max_frames {
            break;
        }
        let lookup = match index == 0 || frame.interrupted {
            true => frame.pc,
            false => frame.pc.wrapping_sub(1),
        };
        let code = lookup
            .checked_sub(load_bias)
            .and_then(|address| Some((address, symbols.code_at(debug, address)?)));
        let (sp, fp) = (frame.registers.sp(), frame.registers.fp());
        let Some((address, code)) = code else {
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
        let chain = &code.chain;
        for depth in (0..chain.len()).rev() {
            let location = code.lines[depth].clone();
            let mut input = FrameInput {
                pc: frame.pc,
                sp,
                fp,
                inlined: depth > 0,
                file: location.as_ref().map(|at| at.file.clone()),
                line: location.map(|at| at.line).filter(|&line| line > 0),
                locals: Default::default(),
                local_errors: Default::default(),
            };
            let block_on_local = block_on_frames()
                .iter()
                .find(|(function, _)| *function == strip_last_generics(&chain[depth].path))
                .map(|(_, local)| *local);
            if let Some(local) = block_on_local.filter(|_| depth > 0 && !block_on_local_read) {
                block_on_local_read = true;
                let scope = InlinedScope {
                    scope: chain[depth].code,
                    subprogram: chain[0].code,
                    pc: address,
                };
                let value = debug.local_value_in(
                    scope,
                    local,
                    &frame.registers.as_array(),
                    memory,
                    load_bias,
                );
                (input.locals, input.local_errors) = local_entries(local, value);
            }
            frames.push(input);
        }
    }
    frames.truncate(max_frames);
    frames
}

type Entries<T> = FxHashMap<String, T>;

/// A local as the glue sends it: its bytes, or why it cannot be read (as GDB says).
fn local_entries(
    local: &str,
    value: crate::error::Result<LocalValue>,
) -> (Entries<LocalBytes>, Entries<String>) {
    let (mut locals, mut errors) = (Entries::default(), Entries::default());
    match value {
        // As a debugger's read of an unknown local: nothing.
        Ok(LocalValue::Absent) => {}
        Ok(LocalValue::Value(value)) => {
            locals.insert(local.to_string(), LocalBytes(value.to_le_bytes().to_vec()));
        }
        Ok(LocalValue::OptimizedOut) => {
            errors.insert(
                local.to_string(),
                format!("`{local}` is optimized out in this build"),
            );
        }
        Err(error) => {
            errors.insert(
                local.to_string(),
                format!("cannot read `{local}`: {}", error.message()),
            );
        }
    }
    (locals, errors)
}

/// Lines are looked up only in coroutine bodies and closures, where they tell where a
/// running async fn is (as the debugger glue asks for them).
fn wants_line(path: &str) -> bool {
    path.contains("{async") || path.contains("{closure")
}
