//! A thread's physical frames from its registers and its stack, by the call frame
//! information (`.eh_frame`, else `.debug_frame`) of the ELF file each pc is in, read
//! with gimli: what a debugger's DWARF unwinder does, with its conventions (a caller's pc
//! is looked up one byte before its return address, registers no rule names keep their
//! value, an undefined return address ends the stack).

use gimli::{
    CfaRule, EndianSlice, EvaluationResult, Expression, Register, RegisterRule, RunTimeEndian,
    UnwindContext, UnwindSection, UnwindTableRow, Value as DwarfValue,
};

use super::modules::{Module, Modules};
use super::registers::{Registers, RETURN_ADDRESS, STACK_POINTER};
use crate::memory::{Memory, MemoryExt};

/// Frames unwound per thread at most, as the debugger glue reads (`adapter.MAX_FRAMES`).
pub const MAX_FRAMES: usize = 128;
/// Operations a CFA or register expression may run (a corrupt one must not loop).
const MAX_EXPRESSION_OPERATIONS: u32 = 1024;
const MAX_EXPRESSION_STEPS: usize = 16;

/// One physical frame: its pc and the registers the unwind recovered for it.
#[derive(Debug, Clone)]
pub struct PhysicalFrame {
    pub pc: u64,
    pub registers: Registers,
    /// Its pc is where the thread was, not a return address: the innermost frame, or the
    /// one a signal interrupted (the caller of a signal trampoline).
    pub interrupted: bool,
}

/// The frames of a thread whose innermost registers are `registers`, innermost first.
/// Ends at the outermost frame (an undefined return address), at a pc no module has CFI
/// for, at a stack that does not grow outward, or after `MAX_FRAMES`.
pub fn unwind(modules: &Modules, memory: &dyn Memory, registers: Registers) -> Vec<PhysicalFrame> {
    let Some(pc) = registers.get(RETURN_ADDRESS) else {
        return Vec::new();
    };
    let mut frames = vec![PhysicalFrame {
        pc,
        registers,
        interrupted: true,
    }];
    let mut context = Box::new(UnwindContext::new());
    while frames.len() < MAX_FRAMES {
        let frame = frames.last().expect("one frame at least");
        // None: the outermost frame, or no CFI says more.
        let Some(caller) = caller_of(modules, memory, frame, &mut context) else {
            break;
        };
        let (Some(sp), Some(caller_sp)) = (
            frame.registers.get(STACK_POINTER),
            caller.registers.get(STACK_POINTER),
        ) else {
            break;
        };
        // A caller's frame is outward on the stack; the same place twice is a loop.
        if caller_sp < sp || (caller_sp == sp && caller.pc == frame.pc) || caller.pc == 0 {
            break;
        }
        frames.push(caller);
    }
    frames
}

/// The frame that called `frame`, by the CFI of the module its pc is in; `None` past the
/// outermost frame (an undefined return address) or where no CFI covers the pc.
fn caller_of(
    modules: &Modules,
    memory: &dyn Memory,
    frame: &PhysicalFrame,
    context: &mut UnwindContext<usize>,
) -> Option<PhysicalFrame> {
    // A return address is just after the call: the call itself is one byte before.
    let lookup = if frame.interrupted {
        frame.pc
    } else {
        frame.pc.checked_sub(1)?
    };
    let module = modules.containing(lookup)?;
    let relative = lookup.checked_sub(module.bias)?;
    let cfi = module.cfi.as_ref()?;
    let data = cfi.data();
    let endian = RunTimeEndian::Little;
    let bases = cfi.bases();
    if let Some((eh_frame, hdr)) = cfi.eh_frame_sections(data) {
        let eh_frame = gimli::EhFrame::new(eh_frame, endian);
        let found = match hdr
            .and_then(|hdr| gimli::EhFrameHdr::new(hdr, endian).parse(&bases, 8).ok())
            .as_ref()
            .and_then(|parsed| parsed.table())
        {
            Some(table) => table
                .fde_for_address(&eh_frame, &bases, relative, gimli::EhFrame::cie_from_offset)
                .ok(),
            None => eh_frame
                .fde_for_address(&bases, relative, gimli::EhFrame::cie_from_offset)
                .ok(),
        };
        if let Some(fde) = found {
            let signal = fde.is_signal_trampoline();
            let row = fde
                .unwind_info_for_address(&eh_frame, &bases, context, relative)
                .ok()?;
            return apply_row(row, &eh_frame, frame, memory, module, signal);
        }
    }
    let debug_frame = gimli::DebugFrame::new(cfi.debug_frame_section(data)?, endian);
    let fde = debug_frame
        .fde_for_address(&bases, relative, gimli::DebugFrame::cie_from_offset)
        .ok()?;
    let signal = fde.is_signal_trampoline();
    let row = fde
        .unwind_info_for_address(&debug_frame, &bases, context, relative)
        .ok()?;
    apply_row(row, &debug_frame, frame, memory, module, signal)
}

/// The caller's registers from one row of the unwind table.
fn apply_row<'d, S: UnwindSection<EndianSlice<'d, RunTimeEndian>>>(
    row: &UnwindTableRow<usize>,
    section: &S,
    frame: &PhysicalFrame,
    memory: &dyn Memory,
    module: &Module,
    signal_trampoline: bool,
) -> Option<PhysicalFrame> {
    let registers = &frame.registers;
    let cfa = match row.cfa() {
        CfaRule::RegisterAndOffset { register, offset } => {
            registers.get(register.0)?.checked_add_signed(*offset)?
        }
        CfaRule::Expression(expression) => {
            let expression = expression.get(section).ok()?;
            evaluate(expression, registers, memory, module.bias, None)?
        }
    };
    let mut caller = Registers::default();
    for number in 0..Registers::COUNT as u16 {
        let rule = row.register(Register(number));
        let value = match rule {
            // No rule: the register keeps its value (as debuggers take callee-saved ones),
            // but the return address and the stack pointer are what the CFA says.
            None if number == STACK_POINTER => Some(cfa),
            None if number == RETURN_ADDRESS => None,
            None | Some(RegisterRule::SameValue) => registers.get(number),
            Some(RegisterRule::Undefined) => {
                if number == RETURN_ADDRESS {
                    return None;
                }
                None
            }
            Some(RegisterRule::Offset(offset)) => {
                memory.read_u64(cfa.checked_add_signed(offset)?).ok()
            }
            Some(RegisterRule::ValOffset(offset)) => cfa.checked_add_signed(offset),
            Some(RegisterRule::Register(other)) => registers.get(other.0),
            Some(RegisterRule::Expression(expression)) => {
                let expression = expression.get(section).ok()?;
                evaluate(expression, registers, memory, module.bias, Some(cfa))
                    .and_then(|address| memory.read_u64(address).ok())
            }
            Some(RegisterRule::ValExpression(expression)) => {
                let expression = expression.get(section).ok()?;
                evaluate(expression, registers, memory, module.bias, Some(cfa))
            }
            Some(RegisterRule::Constant(value)) => Some(value),
            Some(RegisterRule::Architectural) => None,
        };
        caller.set(number, value);
    }
    // The return address column is the caller's pc.
    let pc = match row.register(Register(RETURN_ADDRESS)) {
        None => {
            // The x86-64 ABI's CIE default: the return address is at CFA - 8.
            memory.read_u64(cfa.checked_sub(8)?).ok()?
        }
        Some(_) => caller.get(RETURN_ADDRESS)?,
    };
    caller.set(RETURN_ADDRESS, Some(pc));
    Some(PhysicalFrame {
        pc,
        registers: caller,
        interrupted: signal_trampoline,
    })
}

/// Runs a CFI expression; with `cfa`, it starts with the CFA pushed (register rules).
fn evaluate(
    expression: Expression<EndianSlice<'_, RunTimeEndian>>,
    registers: &Registers,
    memory: &dyn Memory,
    bias: u64,
    cfa: Option<u64>,
) -> Option<u64> {
    let encoding = gimli::Encoding {
        address_size: 8,
        format: gimli::Format::Dwarf32,
        version: 4,
    };
    let mut evaluation = expression.evaluation(encoding);
    evaluation.set_max_iterations(MAX_EXPRESSION_OPERATIONS);
    if let Some(cfa) = cfa {
        evaluation.set_initial_value(cfa);
    }
    let mut step = evaluation.evaluate().ok()?;
    for _ in 0..MAX_EXPRESSION_STEPS {
        step = match step {
            EvaluationResult::Complete => {
                let pieces = evaluation.result();
                return match pieces.as_slice() {
                    [piece] => match piece.location {
                        gimli::Location::Address { address } => Some(address),
                        gimli::Location::Value { value } => value.to_u64(u64::MAX).ok(),
                        _ => None,
                    },
                    _ => None,
                };
            }
            EvaluationResult::RequiresRegister { register, .. } => {
                let value = registers.get(register.0)?;
                evaluation
                    .resume_with_register(DwarfValue::Generic(value))
                    .ok()?
            }
            EvaluationResult::RequiresMemory { address, size, .. } => {
                let value = memory.read_uint(address, u64::from(size)).ok()?;
                evaluation
                    .resume_with_memory(DwarfValue::Generic(value))
                    .ok()?
            }
            EvaluationResult::RequiresRelocatedAddress(address) => evaluation
                .resume_with_relocated_address(address.checked_add(bias)?)
                .ok()?,
            _ => return None,
        };
    }
    None
}

#[cfg(test)]
mod tests {
    use gimli::write::{
        Address, CallFrameInstruction, CommonInformationEntry, EhFrame, EndianVec,
        FrameDescriptionEntry, FrameTable,
    };
    use gimli::{Encoding, Format, LittleEndian, Register};

    use super::*;
    use crate::memory::testing::SparseMemory;
    use crate::native::registers::FRAME_POINTER;

    const BIAS: u64 = 0x5550_0000_0000;
    const RBP: Register = Register(6);
    const RSP: Register = Register(7);
    const RA: Register = Register(16);

    /// Two functions as a compiler describes them:
    /// - `leaf` at 0x1000..0x1040, no frame of its own: CFA = rsp + 8, return address at CFA - 8;
    /// - `caller` at 0x2000..0x2100, which pushed rbp (CFA = rsp + 16, rbp at CFA - 16) and
    ///   marks itself outermost from 0x2080 on (its return address undefined there).
    fn program() -> Modules {
        let encoding = Encoding {
            format: Format::Dwarf32,
            version: 1,
            address_size: 8,
        };
        let mut cie = CommonInformationEntry::new(encoding, 1, -8, RA);
        cie.add_instruction(CallFrameInstruction::Cfa(RSP, 8));
        cie.add_instruction(CallFrameInstruction::Offset(RA, -8));
        let mut table = FrameTable::default();
        let cie = table.add_cie(cie);
        table.add_fde(
            cie,
            FrameDescriptionEntry::new(Address::Constant(0x1000), 0x40),
        );
        let mut caller = FrameDescriptionEntry::new(Address::Constant(0x2000), 0x100);
        caller.add_instruction(1, CallFrameInstruction::CfaOffset(16));
        caller.add_instruction(1, CallFrameInstruction::Offset(RBP, -16));
        caller.add_instruction(0x80, CallFrameInstruction::Undefined(RA));
        table.add_fde(cie, caller);
        let mut eh_frame = EhFrame(EndianVec::new(LittleEndian));
        table.write_eh_frame(&mut eh_frame).unwrap();
        Modules::with_eh_frame(eh_frame.0.into_vec(), 0x8000, BIAS, BIAS + 0x10000, BIAS)
    }

    fn registers(pc: u64, sp: u64, fp: u64) -> Registers {
        let mut registers = Registers::default();
        registers.set(RETURN_ADDRESS, Some(pc));
        registers.set(STACK_POINTER, Some(sp));
        registers.set(FRAME_POINTER, Some(fp));
        registers
    }

    #[test]
    fn frames_follow_the_cfi_out_to_the_outermost() {
        let mut stack = SparseMemory::default();
        // leaf's return address into caller (after a call at 0x200f), then caller's saved
        // rbp and a return address into caller past 0x2080, where caller is outermost.
        let mut words = Vec::new();
        for word in [BIAS + 0x2010, 0x7777, BIAS + 0x2090, 0] {
            words.extend_from_slice(&u64::to_le_bytes(word));
        }
        stack.put(0x7000, &words);
        let frames = unwind(&program(), &stack, registers(BIAS + 0x1010, 0x7000, 0x1234));
        let pcs: Vec<u64> = frames.iter().map(|frame| frame.pc - BIAS).collect();
        assert_eq!(pcs, vec![0x1010, 0x2010, 0x2090]);
        // The caller's stack pointer is leaf's CFA; its rbp is kept (no rule in leaf).
        assert_eq!(frames[1].registers.sp(), Some(0x7008));
        assert_eq!(frames[1].registers.fp(), Some(0x1234));
        // caller restores rbp from where it saved it, and its CFA is 16 above.
        assert_eq!(frames[2].registers.sp(), Some(0x7018));
        assert_eq!(frames[2].registers.fp(), Some(0x7777));
        assert!(frames[1..].iter().all(|frame| !frame.interrupted));
    }

    #[test]
    fn a_pc_without_cfi_or_a_stack_going_inward_ends_the_unwind() {
        let mut stack = SparseMemory::default();
        stack.put(0x7000, &u64::to_le_bytes(BIAS + 0x9999));
        // The return address lands where no CFI is: that frame is the last.
        let frames = unwind(&program(), &stack, registers(BIAS + 0x1010, 0x7000, 0));
        assert_eq!(frames.len(), 2);
        // A pc in no module: the first frame alone.
        assert_eq!(
            unwind(&program(), &stack, registers(0x42, 0x7000, 0)).len(),
            1
        );
        // A return address that loops back to the same frame stops at once.
        let mut looping = SparseMemory::default();
        looping.put(0x7000, &u64::to_le_bytes(BIAS + 0x1010 + 1));
        let frames = unwind(&program(), &looping, registers(BIAS + 0x1011, 0x7000, 0));
        assert!(frames.len() <= MAX_FRAMES);
        // An unreadable stack: no caller.
        let empty = SparseMemory::default();
        assert_eq!(
            unwind(&program(), &empty, registers(BIAS + 0x1010, 0x7000, 0)).len(),
            1
        );
    }
}
