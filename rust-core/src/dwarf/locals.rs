//! Where a local variable of a physical frame lives, from DWARF alone: the variable in
//! scope at the pc (the innermost lexical block declaring one by that name), its location
//! expression for the pc, evaluated with the frame's stack and frame pointers. Only what
//! those two registers and memory determine is answered; a local in another register, or
//! in an inlined frame, is left to the debugger. LLDB spends a whole-program name index
//! (about 0.4 s on a 70 MB binary) on the first local it is asked for.

use gimli::{
    constants, AttributeValue, EvaluationResult, Location, Reader as _, Value as DwarfValue,
};

use super::{DebugInfo, DieRef, Reader, UnitView};
use crate::arch::{DWARF_FRAME_POINTER, DWARF_STACK_POINTER};
use crate::error::{Error, Result};
use crate::memory::{Memory, MemoryExt};

/// Requests an expression may make of us (memory, registers), and operations it may run:
/// location expressions are a handful of operations.
const MAX_EXPRESSION_STEPS: usize = 64;
const MAX_EXPRESSION_OPERATIONS: u32 = 1024;

/// The frame a local is read in: its pc and registers as the debugger unwound them
/// (link-time pc; runtime stack pointer, and frame pointer if the debugger gave it).
#[derive(Clone, Copy)]
pub struct PhysicalFrame {
    pub pc: u64,
    pub sp: u64,
    pub fp: Option<u64>,
}

impl PhysicalFrame {
    fn register(&self, register: u16) -> Option<u64> {
        match register {
            DWARF_STACK_POINTER => Some(self.sp),
            DWARF_FRAME_POINTER => self.fp,
            _ => None,
        }
    }
}

/// A frame's general registers by DWARF number (x86-64: 0 to 16), as the debugger
/// unwound them; `None` where it could not (a caller-saved register in an outer frame).
pub type FrameRegisters = [Option<u64>; 17];

impl DebugInfo {
    /// The address of local `name` in the function running at `frame.pc`, when DWARF says
    /// it from the stack and frame pointers (x86-64); `Ok(None)` when it cannot: no such
    /// local in scope, optimized out at the pc, or kept in another register.
    pub fn local_address(
        &self,
        frame: PhysicalFrame,
        name: &str,
        memory: &dyn Memory,
        load_bias: u64,
    ) -> Result<Option<u64>> {
        if !self.elf.is_x86_64 {
            return Ok(None);
        }
        let Some(subprogram) = self.subprogram_containing(frame.pc) else {
            return Ok(None);
        };
        let (unit, offset) = self.unit_of(subprogram)?;
        let mut tree = unit.entries_tree(Some(offset))?;
        let root = tree.root()?;
        let Some(frame_base) = frame_base(root.entry(), &frame) else {
            return Ok(None);
        };
        let Some(location) = innermost_local(unit, root, frame.pc, name)? else {
            return Ok(None);
        };
        let Some(expression) = expression_at(unit, location, frame.pc)? else {
            return Ok(None);
        };
        evaluate(
            unit.encoding(),
            expression,
            frame_base,
            &|register| frame.register(register),
            memory,
            load_bias,
        )
        .map(|location| match location {
            Some(Location::Address { address }) => Some(address),
            _ => None,
        })
    }

    /// The value of the first parameter of `function` (a subprogram, or an inlined copy in
    /// `subprogram`) at `pc` (link-time) in a frame with `registers`: a pointer-sized value
    /// in a register or in memory, wherever its location says. `Ok(None)` when DWARF does not
    /// say at the pc, or the registers it needs are unknown.
    pub fn first_parameter_value(
        &self,
        function: DieRef,
        subprogram: DieRef,
        pc: u64,
        registers: &FrameRegisters,
        memory: &dyn Memory,
        load_bias: u64,
    ) -> Result<Option<u64>> {
        let register = |number: u16| registers.get(usize::from(number)).copied().flatten();
        let frame_base = self.frame_base_in(subprogram, pc, registers)?;
        let (unit, offset) = self.unit_of(function)?;
        let mut tree = unit.entries_tree(Some(offset))?;
        let Some(location) = first_parameter_location(tree.root()?)? else {
            return Ok(None);
        };
        let Some(expression) = expression_at(unit, location, pc)? else {
            return Ok(None);
        };
        pointer_value(unit, expression, frame_base, &register, memory, load_bias)
    }

    /// A subprogram's frame base at `pc` in a frame with `registers`.
    fn frame_base_in(
        &self,
        subprogram: DieRef,
        pc: u64,
        registers: &FrameRegisters,
    ) -> Result<Option<u64>> {
        let register = |number: u16| registers.get(usize::from(number)).copied().flatten();
        let (unit, offset) = self.unit_of(subprogram)?;
        let mut tree = unit.entries_tree(Some(offset))?;
        let root = tree.root()?;
        let frame = PhysicalFrame {
            pc,
            sp: register(DWARF_STACK_POINTER).unwrap_or(0),
            fp: register(DWARF_FRAME_POINTER),
        };
        Ok(frame_base(root.entry(), &frame))
    }
}

/// The pointer-sized value a location expression gives: read from memory, a register's,
/// or the value itself.
fn pointer_value(
    unit: UnitView<'_>,
    expression: gimli::Expression<Reader>,
    frame_base: Option<u64>,
    register: &dyn Fn(u16) -> Option<u64>,
    memory: &dyn Memory,
    load_bias: u64,
) -> Result<Option<u64>> {
    let found = evaluate(
        unit.encoding(),
        expression,
        frame_base.unwrap_or(0),
        register,
        memory,
        load_bias,
    )?;
    Ok(match found {
        Some(Location::Address { address }) => Some(memory.read_uint(address, 8)?),
        Some(Location::Register { register: number }) => register(number.0),
        Some(Location::Value { value }) => value.to_u64(u64::MAX).ok(),
        _ => None,
    })
}

/// A local met in scope: its own name or its abstract origin (which names it), and its
/// location attribute.
type Candidate = (
    Option<String>,
    Option<DieRef>,
    Option<AttributeValue<Reader>>,
);

/// What an inlined frame's local holds, as a debugger tells it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum LocalValue {
    /// No local of that name is in scope at the pc.
    Absent,
    /// It is, but its location says nothing there (or needs a register not recovered).
    OptimizedOut,
    Value(u64),
}

/// Where an inlined frame's local is looked for: the inlined copy (`FunctionAt::code`), the
/// subprogram it is inlined into, and the link-time pc.
#[derive(Clone, Copy)]
pub struct InlinedScope {
    pub scope: DieRef,
    pub subprogram: DieRef,
    pub pc: u64,
}

impl DebugInfo {
    /// The pointer-sized value of local `name` in the scope `scope` (an inlined copy of a
    /// function, `FunctionAt::code`, inside `subprogram`) at `pc` (link-time), in a frame
    /// whose registers the unwind recovered: in memory, in a register, or a value, as its
    /// location says. What a debugger's `read_var` gives for an inlined frame's local.
    pub fn local_value_in(
        &self,
        InlinedScope {
            scope,
            subprogram,
            pc,
        }: InlinedScope,
        name: &str,
        registers: &FrameRegisters,
        memory: &dyn Memory,
        load_bias: u64,
    ) -> Result<LocalValue> {
        let register = |number: u16| registers.get(usize::from(number)).copied().flatten();
        let frame_base = self.frame_base_in(subprogram, pc, registers)?;
        let (unit, offset) = self.unit_of(scope)?;
        let mut tree = unit.entries_tree(Some(offset))?;
        let root = tree.root()?;
        // Inlined copies name their locals through their abstract origin.
        let mut candidates: Vec<Candidate> = Vec::new();
        let covers_pc = |block: &gimli::DebuggingInformationEntry<Reader>| {
            let ranges = unit.code_ranges(block);
            ranges.is_empty() || ranges.iter().any(|&(start, end)| start <= pc && pc < end)
        };
        unit.for_each_in_scope(root, &covers_pc, &mut |entry| {
            if !matches!(
                entry.tag(),
                constants::DW_TAG_variable | constants::DW_TAG_formal_parameter
            ) {
                return;
            }
            let location = entry.attr_value(constants::DW_AT_location);
            let own = entry
                .attr_value(constants::DW_AT_name)
                .and_then(|value| unit.attr_string(value));
            let origin = entry
                .attr_value(constants::DW_AT_abstract_origin)
                .and_then(|value| unit.attr_die(value));
            candidates.push((own, origin, location));
        })?;
        let named = |own: &Option<String>, origin: &Option<DieRef>| match own {
            Some(own) => own == name,
            None => origin.is_some_and(|origin| self.die_name(origin).as_deref() == Some(name)),
        };
        // Later and deeper declarations shadow earlier ones.
        let Some((_, _, location)) = candidates
            .into_iter()
            .rev()
            .find(|(own, origin, _)| named(own, origin))
        else {
            return Ok(LocalValue::Absent);
        };
        let Some(location) = location else {
            return Ok(LocalValue::OptimizedOut);
        };
        let Some(expression) = expression_at(unit, location, pc)? else {
            return Ok(LocalValue::OptimizedOut);
        };
        Ok(
            pointer_value(unit, expression, frame_base, &register, memory, load_bias)?
                .map_or(LocalValue::OptimizedOut, LocalValue::Value),
        )
    }

    /// A DIE's own `DW_AT_name`.
    fn die_name(&self, die: DieRef) -> Option<String> {
        let (unit, offset) = self.unit_of(die).ok()?;
        let entry = unit.entry(offset).ok()?;
        entry
            .attr_value(constants::DW_AT_name)
            .and_then(|value| unit.attr_string(value))
    }
}

/// The subprogram's frame base: the value of the register its `DW_AT_frame_base` names,
/// `DW_OP_reg7` (rsp) as LLVM emits for x86-64 code without a frame pointer, `DW_OP_reg6`
/// (rbp) for code that keeps one.
fn frame_base(
    entry: &gimli::DebuggingInformationEntry<Reader>,
    frame: &PhysicalFrame,
) -> Option<u64> {
    let Some(AttributeValue::Exprloc(expression)) = entry.attr_value(constants::DW_AT_frame_base)
    else {
        return None;
    };
    let bytes = expression.0.to_slice().ok()?;
    let [operation] = bytes.as_ref() else {
        return None;
    };
    let register = operation
        .checked_sub(constants::DW_OP_reg0.0)
        .filter(|&register| register < 32)?;
    frame.register(u16::from(register))
}

/// The location attribute of the variable or parameter called `name` in the innermost
/// scope containing `pc`: later and deeper declarations shadow earlier ones, as in Rust.
fn innermost_local(
    unit: UnitView<'_>,
    function: gimli::EntriesTreeNode<'_, '_, Reader>,
    pc: u64,
    name: &str,
) -> Result<Option<AttributeValue<Reader>>> {
    let mut found = None;
    let covers_pc = |block: &gimli::DebuggingInformationEntry<Reader>| {
        let ranges = unit.code_ranges(block);
        ranges.is_empty() || ranges.iter().any(|&(start, end)| start <= pc && pc < end)
    };
    unit.for_each_in_scope(function, &covers_pc, &mut |entry| {
        if matches!(
            entry.tag(),
            constants::DW_TAG_variable | constants::DW_TAG_formal_parameter
        ) && entry
            .attr_value(constants::DW_AT_name)
            .and_then(|value| unit.attr_string(value))
            .as_deref()
            == Some(name)
        {
            found = entry.attr_value(constants::DW_AT_location);
        }
    })?;
    Ok(found)
}

/// The location attribute of a function's (or inlined copy's) first parameter.
pub(super) fn first_parameter_location(
    function: gimli::EntriesTreeNode<'_, '_, Reader>,
) -> Result<Option<AttributeValue<Reader>>> {
    let mut children = function.children();
    while let Some(child) = children.next()? {
        if child.entry().tag() == constants::DW_TAG_formal_parameter {
            return Ok(child.entry().attr_value(constants::DW_AT_location));
        }
    }
    Ok(None)
}

/// The location expression that holds at `pc`: the attribute's own, or its location
/// list's entry for that pc (`None`: optimized out there).
pub(super) fn expression_at(
    unit: UnitView<'_>,
    location: AttributeValue<Reader>,
    pc: u64,
) -> Result<Option<gimli::Expression<Reader>>> {
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

/// Runs a location expression in the frame, reading memory for `DW_OP_deref`; the
/// address of the value, if it lies in memory.
fn evaluate(
    encoding: gimli::Encoding,
    expression: gimli::Expression<Reader>,
    frame_base: u64,
    register: &dyn Fn(u16) -> Option<u64>,
    memory: &dyn Memory,
    load_bias: u64,
) -> Result<Option<Location<Reader>>> {
    let mut evaluation = expression.evaluation(encoding);
    // A branch back (`DW_OP_skip`) in a corrupt expression must not loop for ever.
    evaluation.set_max_iterations(MAX_EXPRESSION_OPERATIONS);
    let mut step = evaluation.evaluate()?;
    for _ in 0..MAX_EXPRESSION_STEPS {
        step = match step {
            EvaluationResult::Complete => {
                return Ok(match evaluation.result().as_slice() {
                    [piece] if piece.size_in_bits.is_none() => Some(piece.location.clone()),
                    _ => None,
                });
            }
            EvaluationResult::RequiresFrameBase => evaluation.resume_with_frame_base(frame_base)?,
            EvaluationResult::RequiresRegister {
                register: number, ..
            } => match register(number.0) {
                Some(value) => evaluation.resume_with_register(DwarfValue::Generic(value))?,
                None => return Ok(None),
            },
            EvaluationResult::RequiresMemory { address, size, .. } => {
                let value = memory.read_uint(address, u64::from(size))?;
                evaluation.resume_with_memory(DwarfValue::Generic(value))?
            }
            EvaluationResult::RequiresRelocatedAddress(address) => {
                match address.checked_add(load_bias) {
                    Some(address) => evaluation.resume_with_relocated_address(address)?,
                    None => return Ok(None),
                }
            }
            _ => return Ok(None),
        };
    }
    Err(Error::layout("a location expression did not finish"))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::dwarf::elf::SectionBytes;
    use crate::memory::testing::SparseMemory;

    const ENCODING: gimli::Encoding = gimli::Encoding {
        address_size: 8,
        format: gimli::Format::Dwarf32,
        version: 4,
    };

    fn run(
        bytes: &[u8],
        frame_base: u64,
        frame: PhysicalFrame,
        memory: &SparseMemory,
    ) -> Option<u64> {
        let reader = gimli::EndianReader::new(
            SectionBytes::Owned(Arc::from(bytes)),
            gimli::RunTimeEndian::Little,
        );
        match evaluate(
            ENCODING,
            gimli::Expression(reader),
            frame_base,
            &|register| frame.register(register),
            memory,
            0,
        )
        .unwrap()
        {
            Some(Location::Address { address }) => Some(address),
            _ => None,
        }
    }

    #[test]
    fn an_expression_that_loops_stops() {
        let frame = PhysicalFrame {
            pc: 0,
            sp: 0x7000,
            fp: None,
        };
        // DW_OP_skip -3: back to itself.
        let looping = [constants::DW_OP_skip.0, 0xfd, 0xff];
        let reader = gimli::EndianReader::new(
            SectionBytes::Owned(Arc::from(&looping[..])),
            gimli::RunTimeEndian::Little,
        );
        assert!(evaluate(
            ENCODING,
            gimli::Expression(reader),
            0,
            &|register| frame.register(register),
            &SparseMemory::default(),
            0
        )
        .is_err());
    }

    #[test]
    fn locations_from_the_frame_base_the_registers_and_memory() {
        let frame = PhysicalFrame {
            pc: 0,
            sp: 0x7000,
            fp: Some(0x7100),
        };
        let mut memory = SparseMemory::default();
        memory.put(0x7058, &0x9000u64.to_le_bytes());
        let fbreg_88 = [constants::DW_OP_fbreg.0, 0xd8, 0x00];
        // rustc's debug builds: `DW_OP_fbreg +88`, and `+88, DW_OP_deref` for a reference.
        assert_eq!(run(&fbreg_88, 0x7000, frame, &memory), Some(0x7058));
        assert_eq!(
            run(
                &[fbreg_88.as_slice(), &[constants::DW_OP_deref.0]].concat(),
                0x7000,
                frame,
                &memory
            ),
            Some(0x9000)
        );
        // `DW_OP_breg6 -8` (rbp), and a register the frame does not know.
        assert_eq!(
            run(&[constants::DW_OP_breg6.0, 0x78], 0, frame, &memory),
            Some(0x70f8)
        );
        assert_eq!(
            run(&[constants::DW_OP_breg3.0, 0x00], 0, frame, &memory),
            None
        );
        let without_fp = PhysicalFrame { fp: None, ..frame };
        assert_eq!(
            run(&[constants::DW_OP_breg6.0, 0x78], 0, without_fp, &memory),
            None
        );
        // A value in a register, not in memory: not an address.
        assert_eq!(run(&[constants::DW_OP_reg0.0], 0, frame, &memory), None);
    }
}
