//! Where a local variable of a physical frame lives, from DWARF alone: the variable in
//! scope at the pc (the innermost lexical block declaring one by that name), its location
//! expression for the pc, evaluated with the frame's stack pointer. Only what the stack
//! pointer and memory determine is answered; a local in another register, or in an
//! inlined frame, is left to the debugger. LLDB spends a whole-program name index (about
//! 0.4 s on a 70 MB binary) on the first local it is asked for.

use gimli::{constants, AttributeValue, EvaluationResult, Location, Reader as _, Value as DwarfValue};

use super::{DebugInfo, Reader, UnitView};
use crate::error::{Error, Result};
use crate::memory::{Memory, MemoryExt};

/// DWARF's number for x86-64's stack pointer (`rsp`).
const X86_64_RSP: u16 = 7;
/// Steps an expression may take: location expressions are a handful of operations.
const MAX_EXPRESSION_STEPS: usize = 64;
/// How deeply lexical blocks may nest before the search stops.
const MAX_BLOCK_DEPTH: u32 = 64;

/// The frame a local is read in: its pc and stack pointer as the debugger unwound them
/// (link-time pc; runtime stack pointer).
#[derive(Clone, Copy)]
pub struct PhysicalFrame {
    pub pc: u64,
    pub sp: u64,
}

impl DebugInfo {
    /// The address of local `name` in the function running at `frame.pc`, when DWARF says
    /// it from the stack pointer alone (x86-64); `Ok(None)` when it cannot: no such local
    /// in scope, optimized out at the pc, or kept in another register.
    pub fn local_address(&self, frame: PhysicalFrame, name: &str, memory: &dyn Memory, load_bias: u64) -> Result<Option<u64>> {
        if !self.elf.is_x86_64 {
            return Ok(None);
        }
        let Some(subprogram) = self.index.subprogram_containing(frame.pc) else { return Ok(None) };
        let (unit, offset) = self.unit_of(subprogram)?;
        let mut tree = unit.entries_tree(Some(offset))?;
        let root = tree.root()?;
        if !frame_base_is_stack_pointer(root.entry()) {
            return Ok(None);
        }
        let mut found = None;
        innermost_local(unit, root, frame.pc, name, 0, &mut found)?;
        let Some(location) = found else { return Ok(None) };
        let Some(expression) = expression_at(unit, location, frame.pc)? else { return Ok(None) };
        evaluate(unit, expression, frame.sp, memory, load_bias)
    }
}

/// Whether the subprogram's frame base is the stack pointer (`DW_OP_reg7`), as LLVM emits
/// for x86-64 functions that keep no frame pointer.
fn frame_base_is_stack_pointer(entry: &gimli::DebuggingInformationEntry<Reader>) -> bool {
    let Some(AttributeValue::Exprloc(expression)) = entry.attr_value(constants::DW_AT_frame_base) else { return false };
    matches!(expression.0.to_slice().as_deref(), Ok([operation]) if *operation == constants::DW_OP_reg7.0)
}

/// The location attribute of the variable or parameter called `name` in the innermost
/// scope containing `pc`: later and deeper declarations shadow earlier ones, as in Rust.
fn innermost_local(
    unit: UnitView<'_>,
    node: gimli::EntriesTreeNode<'_, '_, Reader>,
    pc: u64,
    name: &str,
    depth: u32,
    found: &mut Option<AttributeValue<Reader>>,
) -> Result<()> {
    if depth > MAX_BLOCK_DEPTH {
        return Ok(());
    }
    let mut children = node.children();
    while let Some(child) = children.next()? {
        let entry = child.entry();
        match entry.tag() {
            constants::DW_TAG_variable | constants::DW_TAG_formal_parameter => {
                let named = entry.attr_value(constants::DW_AT_name).and_then(|value| unit.attr_string(value));
                if named.as_deref() == Some(name) {
                    *found = entry.attr_value(constants::DW_AT_location);
                }
            }
            constants::DW_TAG_lexical_block => {
                let ranges = unit.code_ranges(entry);
                if ranges.is_empty() || ranges.iter().any(|&(start, end)| start <= pc && pc < end) {
                    innermost_local(unit, child, pc, name, depth + 1, found)?;
                }
            }
            // Inlined calls and nested functions have locals of their own.
            _ => {}
        }
    }
    Ok(())
}

/// The location expression that holds at `pc`: the attribute's own, or its location
/// list's entry for that pc (`None`: optimized out there).
fn expression_at(unit: UnitView<'_>, location: AttributeValue<Reader>, pc: u64) -> Result<Option<gimli::Expression<Reader>>> {
    match location {
        AttributeValue::Exprloc(expression) => Ok(Some(expression)),
        AttributeValue::LocationListsRef(offset) => {
            let mut entries = unit.dwarf.locations(unit.unit, offset)?;
            while let Some(entry) = entries.next()? {
                if entry.range.begin <= pc && pc < entry.range.end {
                    return Ok(Some(entry.data));
                }
            }
            Ok(None)
        }
        _ => Ok(None),
    }
}

/// Runs a location expression with the frame base and `rsp` both the stack pointer,
/// reading memory for `DW_OP_deref`; the address of the value, if it lies in memory.
fn evaluate(
    unit: UnitView<'_>,
    expression: gimli::Expression<Reader>,
    sp: u64,
    memory: &dyn Memory,
    load_bias: u64,
) -> Result<Option<u64>> {
    let mut evaluation = expression.evaluation(unit.encoding());
    let mut step = evaluation.evaluate()?;
    for _ in 0..MAX_EXPRESSION_STEPS {
        step = match step {
            EvaluationResult::Complete => {
                return Ok(match evaluation.result().as_slice() {
                    [piece] if piece.size_in_bits.is_none() => match piece.location {
                        Location::Address { address } => Some(address),
                        _ => None,
                    },
                    _ => None,
                });
            }
            EvaluationResult::RequiresFrameBase => evaluation.resume_with_frame_base(sp)?,
            EvaluationResult::RequiresRegister { register, .. } if register.0 == X86_64_RSP => {
                evaluation.resume_with_register(DwarfValue::Generic(sp))?
            }
            EvaluationResult::RequiresMemory { address, size, .. } => {
                let value = memory.read_uint(address, u64::from(size))?;
                evaluation.resume_with_memory(DwarfValue::Generic(value))?
            }
            EvaluationResult::RequiresRelocatedAddress(address) => {
                evaluation.resume_with_relocated_address(address.wrapping_add(load_bias))?
            }
            _ => return Ok(None),
        };
    }
    Err(Error::layout("a location expression did not finish"))
}
