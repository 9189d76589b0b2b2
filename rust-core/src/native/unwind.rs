//! A thread's physical frames from its registers and its stack, by the call frame
//! information (`.eh_frame`, else `.debug_frame`) of the ELF file each pc is in, read
//! with gimli: what a debugger's DWARF unwinder does, with its conventions (a caller's pc
//! is looked up one byte before its return address, registers no rule names keep their
//! value, an undefined return address ends the stack); where no CFI covers a pc, the frame
//! record `rbp` points at, as debuggers fall back to. Where a frame's CFA is its `rbp` and
//! `rbp` is not known (a thread read without stopping it: only its pc and stack pointer
//! are), the frame record is searched for on the stack. Each unwind says why it ended.

use gimli::{
    CfaRule, EndianSlice, EvaluationResult, Expression, ParsedEhFrameHdr, Register, RegisterRule,
    RunTimeEndian, UnwindContext, UnwindSection, UnwindTableRow, Value as DwarfValue,
};

use std::collections::HashMap;

use super::modules::{Module, Modules};
use super::registers::{Registers, FRAME_POINTER, RETURN_ADDRESS, STACK_POINTER};
use crate::arch::{
    ends_with_call, FRAME_RECORD_RETURN_ADDRESS, FRAME_RECORD_SAVED_FP, FRAME_RECORD_SIZE,
    LONGEST_CALL, RETURN_ADDRESS_SIZE,
};
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
    /// How it was found, where not by the call frame information alone (`--verbose`
    /// says which).
    pub found_by: FoundBy,
}

/// How the unwinder found a frame from the frame inside it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FoundBy {
    /// The call frame information of the frame inside, or it is the innermost.
    CallFrameInfo,
    /// The frame record `rbp` points at: no CFI covers the frame inside.
    FrameRecord,
    /// The frame inside has its CFA in `rbp`, which was not known: its frame record was
    /// searched for on the stack (a return address just after a call, from which the
    /// unwind goes on).
    StackScan,
}

/// Why a thread's frames end where they do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnwindEnd {
    /// The outermost frame: its return address is undefined (`start_thread`, `_start`).
    Outermost,
    /// No call frame information covers this pc, and no frame record (`rbp` chain) was
    /// found either.
    NoCallFrameInfo { pc: u64 },
    /// The caller's registers could not be read (memory, or a rule the unwinder cannot
    /// follow).
    Unreadable { pc: u64 },
    /// The next frame would not be further out on the stack (a loop, or garbage).
    NotOutward { pc: u64 },
    /// `MAX_FRAMES` were unwound.
    Limit,
}

/// Why a stack ends, where that is not at its outermost frame: one line for `--verbose`.
fn unusual_end(end: UnwindEnd) -> Option<String> {
    match end {
        UnwindEnd::Outermost => None,
        UnwindEnd::NoCallFrameInfo { pc } => Some(format!(
            "its stack ends at {pc:#x}: no call frame information covers it, nor a frame record"
        )),
        UnwindEnd::Unreadable { pc } => Some(format!(
            "its stack ends at {pc:#x}: its caller's registers could not be read"
        )),
        UnwindEnd::NotOutward { pc } => Some(format!(
            "its stack ends at {pc:#x}: the next frame would not be further out on the stack"
        )),
        UnwindEnd::Limit => Some(format!("its stack is cut at {MAX_FRAMES} frames")),
    }
}

/// A thread's frames, innermost first, and why they end there.
pub struct Unwound {
    pub frames: Vec<PhysicalFrame>,
    pub end: UnwindEnd,
}

impl Unwound {
    /// What `--verbose` says of this unwind: the frames found by frame records, where the
    /// call frame information missed, and an end other than the outermost frame.
    pub fn notes(&self) -> Vec<String> {
        let mut notes = Vec::new();
        for (found_by, why) in [
            (
                FoundBy::FrameRecord,
                "found by the frame pointer: no call frame information covers the frame inside",
            ),
            (
                FoundBy::StackScan,
                "found by searching the stack for a frame record: the frame inside keeps its CFA in rbp, which was not known",
            ),
        ] {
            let pcs: Vec<u64> = self
                .frames
                .iter()
                .filter(|frame| frame.found_by == found_by)
                .map(|frame| frame.pc)
                .collect();
            if let [first, ..] = pcs[..] {
                let frames = match pcs.len() {
                    1 => format!("1 frame, at {first:#x}, was"),
                    count => format!("{count} frames, the first at {first:#x}, were"),
                };
                notes.push(format!("{frames} {why}"));
            }
        }
        notes.extend(unusual_end(self.end));
        notes
    }
}

/// Which section a rule came from (its expressions are read from it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum SectionKind {
    EhFrame,
    DebugFrame,
}

/// The unwind row that holds at one pc, as found once.
#[derive(Clone)]
struct Rule {
    row: UnwindTableRow<usize>,
    section: SectionKind,
    signal_trampoline: bool,
}

/// An FDE's link-time address range and its offset in its section.
#[derive(Debug, Clone, Copy)]
struct FdeRange {
    start: u64,
    end: u64,
    offset: usize,
}

/// Rows looked up per pc at most before the cache starts over (a bound on its memory).
const MAX_CACHED_RULES: usize = 1 << 16;

/// Unwinds the threads of one stop over the same modules, keeping what it finds: the FDE
/// table of each section without a search table (`.debug_frame`, an `.eh_frame` without
/// `.eh_frame_hdr`), sorted once instead of read through per frame, and the row that holds
/// at each pc (threads parked alike share their frames' pcs).
pub struct Unwinder<'m> {
    modules: &'m Modules,
    context: Box<UnwindContext<usize>>,
    fde_tables: HashMap<(u64, SectionKind), Vec<FdeRange>>,
    /// Each module's `.eh_frame_hdr` (by its start), parsed once: `None` where it has none.
    eh_frame_hdrs: HashMap<u64, Option<ParsedEhFrameHdr<EndianSlice<'m, RunTimeEndian>>>>,
    rules: HashMap<u64, Option<Rule>>,
}

impl<'m> Unwinder<'m> {
    pub fn new(modules: &'m Modules) -> Unwinder<'m> {
        Unwinder {
            modules,
            context: Box::new(UnwindContext::new()),
            fde_tables: HashMap::new(),
            eh_frame_hdrs: HashMap::new(),
            rules: HashMap::new(),
        }
    }

    /// The frames of a thread whose innermost registers are `registers`, innermost first.
    /// A pc no CFI covers is left by its frame record where `rbp` holds a valid one (code
    /// built with frame pointers, without CFI).
    pub fn unwind(&mut self, memory: &dyn Memory, registers: Registers) -> Unwound {
        let Some(pc) = registers.get(RETURN_ADDRESS) else {
            return Unwound {
                frames: Vec::new(),
                end: UnwindEnd::Unreadable { pc: 0 },
            };
        };
        let mut frames = vec![PhysicalFrame {
            pc,
            registers,
            interrupted: true,
            found_by: FoundBy::CallFrameInfo,
        }];
        while frames.len() < MAX_FRAMES {
            let frame = frames.last().expect("one frame at least");
            let caller = match self.caller_of(memory, frame) {
                Ok(caller) => caller,
                Err(end) => return Unwound { frames, end },
            };
            let (Some(sp), Some(caller_sp)) = (
                frame.registers.get(STACK_POINTER),
                caller.registers.get(STACK_POINTER),
            ) else {
                let end = UnwindEnd::Unreadable { pc: frame.pc };
                return Unwound { frames, end };
            };
            // A caller's frame is outward on the stack; the same place twice is a loop.
            if caller_sp < sp || (caller_sp == sp && caller.pc == frame.pc) || caller.pc == 0 {
                let end = UnwindEnd::NotOutward { pc: frame.pc };
                return Unwound { frames, end };
            }
            frames.push(caller);
        }
        Unwound {
            frames,
            end: UnwindEnd::Limit,
        }
    }

    /// The frame that called `frame`, by the CFI of the module its pc is in, else by its
    /// frame record.
    fn caller_of(
        &mut self,
        memory: &dyn Memory,
        frame: &PhysicalFrame,
    ) -> Result<PhysicalFrame, UnwindEnd> {
        // A return address is just after the call: the call itself is one byte before.
        let lookup = match frame.interrupted {
            true => frame.pc,
            false => frame
                .pc
                .checked_sub(1)
                .ok_or(UnwindEnd::Unreadable { pc: frame.pc })?,
        };
        let Some((module, rule)) = self.rule_for(lookup) else {
            return frame_record_caller(self.modules, memory, frame)
                .ok_or(UnwindEnd::NoCallFrameInfo { pc: frame.pc });
        };
        if let Some(caller) = apply_rule(&rule, module, frame, memory) {
            return Ok(caller);
        }
        if frame_pointer_unknown(&rule, frame) {
            if let Some(caller) = self.caller_by_scanned_record(memory, frame, module, &rule) {
                return Ok(caller);
            }
        }
        Err(match rule.row.register(Register(RETURN_ADDRESS)) {
            Some(RegisterRule::Undefined) => UnwindEnd::Outermost,
            _ => UnwindEnd::Unreadable { pc: frame.pc },
        })
    }

    /// The caller of a frame whose CFA is `rbp` plus an offset while `rbp` is not known:
    /// the first place on the stack above its stack pointer that, taken for `rbp`, gives a
    /// return address just after a call, into code whose own CFI covers it, and from where
    /// the unwind goes on to a call site once more. A stale record left in the frame's
    /// locals rarely passes the second test; where none passes both, the first that passes
    /// the first is taken. Bounded by `MAX_STACK_SCAN` bytes.
    fn caller_by_scanned_record(
        &mut self,
        memory: &dyn Memory,
        frame: &PhysicalFrame,
        module: &Module,
        rule: &Rule,
    ) -> Option<PhysicalFrame> {
        let sp = frame.registers.sp()?;
        let mut first_call_site = None;
        let mut candidate = sp;
        let end = sp.checked_add(MAX_STACK_SCAN)?;
        while candidate < end {
            // The stack a page at a time: its top may be nearer than the bound.
            let page_end = (candidate | (STACK_SCAN_CHUNK - 1))
                .checked_add(1)?
                .min(end);
            let Ok(words) =
                memory.read_bytes(candidate, usize::try_from(page_end - candidate).ok()?)
            else {
                return None;
            };
            let word_at = |offset: u64| {
                let start = usize::try_from(offset).ok()?;
                let bytes = words.get(start..start.checked_add(WORD)?)?;
                Some(u64::from_le_bytes(bytes.try_into().ok()?))
            };
            for offset in (0..words.len() as u64).step_by(WORD) {
                let at = candidate.checked_add(offset)?;
                // A cheap filter first: a frame record's return address (on the next page,
                // not read yet) is in loaded code.
                let return_address = word_at(offset.checked_add(FRAME_RECORD_RETURN_ADDRESS)?);
                if return_address.is_some_and(|address| self.modules.containing(address).is_none())
                {
                    continue;
                }
                let mut guess = frame.clone();
                guess.registers.set(FRAME_POINTER, Some(at));
                let Some(mut caller) = apply_rule(rule, module, &guess, memory) else {
                    continue;
                };
                if self.is_a_call_site(memory, &caller, sp) {
                    caller.found_by = FoundBy::StackScan;
                    if self.unwinds_on(memory, &caller) {
                        return Some(caller);
                    }
                    first_call_site.get_or_insert(caller);
                }
            }
            candidate = page_end;
        }
        first_call_site
    }

    /// Whether the unwind goes on from `frame` as from a real one: it is the outermost
    /// frame, or its own caller is a call site further out.
    fn unwinds_on(&mut self, memory: &dyn Memory, frame: &PhysicalFrame) -> bool {
        let (Some(lookup), Some(sp)) = (frame.pc.checked_sub(1), frame.registers.sp()) else {
            return false;
        };
        let Some((module, rule)) = self.rule_for(lookup) else {
            return false;
        };
        if let Some(RegisterRule::Undefined) = rule.row.register(Register(RETURN_ADDRESS)) {
            return true;
        }
        apply_rule(&rule, module, frame, memory)
            .is_some_and(|caller| self.is_a_call_site(memory, &caller, sp))
    }

    /// Whether `caller` is a real frame: further out than `sp`, its pc just after a call
    /// instruction, in code whose CFI covers it.
    fn is_a_call_site(&mut self, memory: &dyn Memory, caller: &PhysicalFrame, sp: u64) -> bool {
        let outward = caller
            .registers
            .sp()
            .is_some_and(|caller_sp| caller_sp > sp);
        let Some(call) = caller.pc.checked_sub(LONGEST_CALL as u64) else {
            return false;
        };
        outward
            && memory
                .read_bytes(call, LONGEST_CALL)
                .is_ok_and(|code| ends_with_call(&code))
            && self.rule_for(caller.pc - 1).is_some()
    }

    /// The module that holds `lookup` and the row of its CFI that holds there, found once.
    fn rule_for(&mut self, lookup: u64) -> Option<(&'m Module, Rule)> {
        let module = self.modules.containing(lookup)?;
        if let Some(known) = self.rules.get(&lookup) {
            return known.clone().map(|rule| (module, rule));
        }
        let rule = self.find_rule(module, lookup);
        if self.rules.len() >= MAX_CACHED_RULES {
            self.rules.clear();
        }
        self.rules.insert(lookup, rule.clone());
        rule.map(|rule| (module, rule))
    }

    /// `module`'s `.eh_frame_hdr`, parsed the first time it is asked for.
    fn eh_frame_hdr(
        &mut self,
        module: &'m Module,
    ) -> Option<ParsedEhFrameHdr<EndianSlice<'m, RunTimeEndian>>> {
        self.eh_frame_hdrs
            .entry(module.start)
            .or_insert_with(|| {
                let cfi = module.cfi.as_ref()?;
                let (_, hdr) = cfi.eh_frame_sections(cfi.data())?;
                gimli::EhFrameHdr::new(hdr?, RunTimeEndian::Little)
                    .parse(&cfi.bases(), 8)
                    .ok()
            })
            .clone()
    }

    fn find_rule(&mut self, module: &'m Module, lookup: u64) -> Option<Rule> {
        let relative = lookup.checked_sub(module.bias)?;
        let cfi = module.cfi.as_ref()?;
        let data = cfi.data();
        let endian = RunTimeEndian::Little;
        let bases = cfi.bases();
        if let Some((eh_frame, _)) = cfi.eh_frame_sections(data) {
            let eh_frame = gimli::EhFrame::new(eh_frame, endian);
            let table = self.eh_frame_hdr(module);
            let fde = match table.as_ref().and_then(|parsed| parsed.table()) {
                Some(table) => table
                    .fde_for_address(&eh_frame, &bases, relative, gimli::EhFrame::cie_from_offset)
                    .ok(),
                None => self
                    .fde_offset(
                        module.start,
                        SectionKind::EhFrame,
                        &eh_frame,
                        &bases,
                        relative,
                    )
                    .and_then(|offset| {
                        eh_frame
                            .fde_from_offset(
                                &bases,
                                gimli::EhFrameOffset(offset),
                                gimli::EhFrame::cie_from_offset,
                            )
                            .ok()
                    }),
            };
            if let Some(fde) = fde {
                let row = fde
                    .unwind_info_for_address(&eh_frame, &bases, &mut self.context, relative)
                    .ok()?;
                return Some(Rule {
                    row: row.clone(),
                    section: SectionKind::EhFrame,
                    signal_trampoline: fde.is_signal_trampoline(),
                });
            }
        }
        let debug_frame = gimli::DebugFrame::new(cfi.debug_frame_section(data)?, endian);
        let offset = self.fde_offset(
            module.start,
            SectionKind::DebugFrame,
            &debug_frame,
            &bases,
            relative,
        )?;
        let fde = debug_frame
            .fde_from_offset(
                &bases,
                gimli::DebugFrameOffset(offset),
                gimli::DebugFrame::cie_from_offset,
            )
            .ok()?;
        let row = fde
            .unwind_info_for_address(&debug_frame, &bases, &mut self.context, relative)
            .ok()?;
        Some(Rule {
            row: row.clone(),
            section: SectionKind::DebugFrame,
            signal_trampoline: fde.is_signal_trampoline(),
        })
    }

    /// The offset of the FDE that covers `relative` in a section, by halves through its
    /// table of FDE ranges (made at the first lookup in that section).
    fn fde_offset<'d, S>(
        &mut self,
        module: u64,
        kind: SectionKind,
        section: &S,
        bases: &gimli::BaseAddresses,
        relative: u64,
    ) -> Option<usize>
    where
        S: UnwindSection<EndianSlice<'d, RunTimeEndian>>,
        S::Offset: gimli::UnwindOffset<usize>,
    {
        let table = self
            .fde_tables
            .entry((module, kind))
            .or_insert_with(|| fde_ranges(section, bases));
        let after = table.partition_point(|range| range.start <= relative);
        let range = table.get(after.checked_sub(1)?)?;
        (relative < range.end).then_some(range.offset)
    }
}

/// Whether `rule` finds the CFA from `rbp` and `frame`'s `rbp` is not known.
fn frame_pointer_unknown(rule: &Rule, frame: &PhysicalFrame) -> bool {
    matches!(rule.row.cfa(), CfaRule::RegisterAndOffset { register, .. } if register.0 == FRAME_POINTER)
        && frame.registers.get(FRAME_POINTER).is_none()
}

/// How far above a frame's stack pointer its frame record is searched for.
const MAX_STACK_SCAN: u64 = 64 << 10;
/// The stack is read this many bytes at a time (a page) while it is searched.
const STACK_SCAN_CHUNK: u64 = 4096;
/// A frame record is searched for at each word of the stack.
const WORD: usize = RETURN_ADDRESS_SIZE as usize;

/// The caller's registers by `rule`, the row that holds at `frame`'s pc in `module`.
fn apply_rule(
    rule: &Rule,
    module: &Module,
    frame: &PhysicalFrame,
    memory: &dyn Memory,
) -> Option<PhysicalFrame> {
    let cfi = module.cfi.as_ref().expect("a rule comes from CFI");
    let data = cfi.data();
    let endian = RunTimeEndian::Little;
    match rule.section {
        SectionKind::EhFrame => cfi.eh_frame_sections(data).and_then(|(section, _)| {
            let section = gimli::EhFrame::new(section, endian);
            apply_row(
                &rule.row,
                &section,
                frame,
                memory,
                module,
                rule.signal_trampoline,
            )
        }),
        SectionKind::DebugFrame => cfi.debug_frame_section(data).and_then(|section| {
            let section = gimli::DebugFrame::new(section, endian);
            apply_row(
                &rule.row,
                &section,
                frame,
                memory,
                module,
                rule.signal_trampoline,
            )
        }),
    }
}

/// The FDEs of a section as address ranges, sorted by start (at most `MAX_FDES` read).
fn fde_ranges<'d, S>(section: &S, bases: &gimli::BaseAddresses) -> Vec<FdeRange>
where
    S: UnwindSection<EndianSlice<'d, RunTimeEndian>>,
    S::Offset: gimli::UnwindOffset<usize>,
{
    let mut ranges = Vec::new();
    let mut entries = section.entries(bases);
    while ranges.len() < MAX_FDES {
        match entries.next() {
            Ok(Some(gimli::CieOrFde::Fde(partial))) => {
                let offset = partial.offset();
                // The CIE is needed for the address encoding: parsed per FDE, once.
                if let Ok(fde) = partial.parse(S::cie_from_offset) {
                    let start = fde.initial_address();
                    if let Some(end) = start.checked_add(fde.len()) {
                        ranges.push(FdeRange { start, end, offset });
                    }
                }
            }
            Ok(Some(gimli::CieOrFde::Cie(_))) => {}
            Ok(None) | Err(_) => break,
        }
    }
    ranges.sort_by_key(|range| range.start);
    ranges
}

/// FDEs read from one section at most (a corrupt one must not run on).
const MAX_FDES: usize = 1 << 22;

/// The frame that called `frame` by its frame record: `rbp` points at the caller's saved
/// `rbp`, the return address above it. Taken only where that record is on the stack above
/// the frame and returns into a loaded module.
fn frame_record_caller(
    modules: &Modules,
    memory: &dyn Memory,
    frame: &PhysicalFrame,
) -> Option<PhysicalFrame> {
    let (sp, fp) = (frame.registers.sp()?, frame.registers.fp()?);
    if fp < sp || fp - sp > MAX_FRAME_RECORD_DISTANCE || fp % RETURN_ADDRESS_SIZE != 0 {
        return None;
    }
    let saved_fp = memory
        .read_u64(fp.checked_add(FRAME_RECORD_SAVED_FP)?)
        .ok()?;
    let return_address = memory
        .read_u64(fp.checked_add(FRAME_RECORD_RETURN_ADDRESS)?)
        .ok()?;
    modules.containing(return_address.checked_sub(1)?)?;
    let mut caller = Registers::default();
    caller.set(RETURN_ADDRESS, Some(return_address));
    caller.set(STACK_POINTER, fp.checked_add(FRAME_RECORD_SIZE));
    caller.set(FRAME_POINTER, Some(saved_fp));
    Some(PhysicalFrame {
        pc: return_address,
        registers: caller,
        interrupted: false,
        found_by: FoundBy::FrameRecord,
    })
}

/// How far above the stack pointer a frame record may be (a frame larger than this is
/// taken for garbage in `rbp`).
const MAX_FRAME_RECORD_DISTANCE: u64 = 1 << 20;

/// The frames of one thread (an `Unwinder` for one stop keeps what it finds for the next).
pub fn unwind(modules: &Modules, memory: &dyn Memory, registers: Registers) -> Unwound {
    Unwinder::new(modules).unwind(memory, registers)
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
            // The ABI's CIE default: the return address is just below the CFA.
            memory
                .read_u64(cfa.checked_sub(RETURN_ADDRESS_SIZE)?)
                .ok()?
        }
        Some(_) => caller.get(RETURN_ADDRESS)?,
    };
    caller.set(RETURN_ADDRESS, Some(pc));
    Some(PhysicalFrame {
        pc,
        registers: caller,
        interrupted: signal_trampoline,
        found_by: FoundBy::CallFrameInfo,
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
        Address, CallFrameInstruction, CommonInformationEntry, DebugFrame, EhFrame, EndianVec,
        FrameDescriptionEntry, FrameTable,
    };
    use gimli::{Encoding, Format, LittleEndian, Register};

    use super::*;
    use crate::memory::testing::SparseMemory;

    const BIAS: u64 = 0x5550_0000_0000;
    const RBP: Register = Register(6);
    const RSP: Register = Register(7);
    const RA: Register = Register(16);

    /// Two functions as a compiler describes them:
    /// - `leaf` at 0x1000..0x1040, no frame of its own: CFA = rsp + 8, return address at CFA - 8;
    /// - `caller` at 0x2000..0x2100, which pushed rbp (CFA = rsp + 16, rbp at CFA - 16) and
    ///   marks itself outermost from 0x2080 on (its return address undefined there);
    /// - `framed` at 0x4000..0x4100, built with frame pointers: its CFA is rbp + 16 once
    ///   it has pushed rbp and moved rsp into it.
    fn frame_table() -> FrameTable {
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
        let mut framed = FrameDescriptionEntry::new(Address::Constant(0x4000), 0x100);
        framed.add_instruction(1, CallFrameInstruction::CfaOffset(16));
        framed.add_instruction(1, CallFrameInstruction::Offset(RBP, -16));
        framed.add_instruction(4, CallFrameInstruction::CfaRegister(RBP));
        table.add_fde(cie, framed);
        table
    }

    fn program() -> Modules {
        let mut eh_frame = EhFrame(EndianVec::new(LittleEndian));
        frame_table().write_eh_frame(&mut eh_frame).unwrap();
        Modules::with_eh_frame(eh_frame.0.into_vec(), 0x8000, BIAS, BIAS + 0x10000, BIAS)
    }

    /// The same functions described by `.debug_frame` alone (no `.eh_frame`).
    fn program_with_debug_frame() -> Modules {
        let mut debug_frame = DebugFrame(EndianVec::new(LittleEndian));
        frame_table().write_debug_frame(&mut debug_frame).unwrap();
        Modules::with_debug_frame(debug_frame.0.into_vec(), BIAS, BIAS + 0x10000, BIAS)
    }

    fn frames_of(
        modules: &Modules,
        memory: &dyn Memory,
        registers: Registers,
    ) -> Vec<PhysicalFrame> {
        unwind(modules, memory, registers).frames
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
        let frames = frames_of(&program(), &stack, registers(BIAS + 0x1010, 0x7000, 0x1234));
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
        let frames = frames_of(&program(), &stack, registers(BIAS + 0x1010, 0x7000, 0));
        assert_eq!(frames.len(), 2);
        // A pc in no module: the first frame alone.
        assert_eq!(
            frames_of(&program(), &stack, registers(0x42, 0x7000, 0)).len(),
            1
        );
        // A return address that loops back to the same frame stops at once.
        let mut looping = SparseMemory::default();
        looping.put(0x7000, &u64::to_le_bytes(BIAS + 0x1010 + 1));
        let frames = frames_of(&program(), &looping, registers(BIAS + 0x1011, 0x7000, 0));
        assert!(frames.len() <= MAX_FRAMES);
        // An unreadable stack: no caller.
        let empty = SparseMemory::default();
        assert_eq!(
            frames_of(&program(), &empty, registers(BIAS + 0x1010, 0x7000, 0)).len(),
            1
        );
    }

    /// The stack of `frames_follow_the_cfi_out_to_the_outermost`.
    fn two_frames_stack() -> SparseMemory {
        let mut stack = SparseMemory::default();
        let mut words = Vec::new();
        for word in [BIAS + 0x2010, 0x7777, BIAS + 0x2090, 0] {
            words.extend_from_slice(&u64::to_le_bytes(word));
        }
        stack.put(0x7000, &words);
        stack
    }

    #[test]
    fn debug_frame_alone_unwinds_alike_and_each_end_says_why() {
        let stack = two_frames_stack();
        let start = registers(BIAS + 0x1010, 0x7000, 0x1234);
        let by_eh_frame = unwind(&program(), &stack, start);
        let by_debug_frame = unwind(&program_with_debug_frame(), &stack, start);
        let pcs = |unwound: &Unwound| {
            unwound
                .frames
                .iter()
                .map(|frame| frame.pc)
                .collect::<Vec<_>>()
        };
        assert_eq!(pcs(&by_debug_frame), pcs(&by_eh_frame));
        assert_eq!(by_eh_frame.end, UnwindEnd::Outermost);
        assert_eq!(by_debug_frame.end, UnwindEnd::Outermost);
        // A return address where no FDE is, and no frame record: named by its frame's pc.
        let mut lost = SparseMemory::default();
        lost.put(0x7000, &u64::to_le_bytes(BIAS + 0x9999));
        let unwound = unwind(&program(), &lost, registers(BIAS + 0x1010, 0x7000, 0));
        assert_eq!(
            unwound.end,
            UnwindEnd::NoCallFrameInfo { pc: BIAS + 0x9999 }
        );
        // An unreadable stack.
        let unwound = unwind(&program(), &SparseMemory::default(), start);
        assert_eq!(unwound.end, UnwindEnd::Unreadable { pc: BIAS + 0x1010 });
    }

    #[test]
    fn a_frame_record_carries_the_unwind_past_code_without_cfi() {
        // At 0x3000 no FDE: rbp = 0x7100 holds the caller's rbp and a return address into
        // `caller`, whose CFI then leads to the outermost frame.
        let mut stack = two_frames_stack();
        let mut record = Vec::new();
        for word in [0x7777, BIAS + 0x2010] {
            record.extend_from_slice(&u64::to_le_bytes(word));
        }
        stack.put(0x7100, &record);
        let mut outer = Vec::new();
        for word in [0x8888, BIAS + 0x2090] {
            outer.extend_from_slice(&u64::to_le_bytes(word));
        }
        stack.put(0x7110, &outer);
        let unwound = unwind(&program(), &stack, registers(BIAS + 0x3000, 0x7000, 0x7100));
        let pcs: Vec<u64> = unwound.frames.iter().map(|frame| frame.pc - BIAS).collect();
        assert_eq!(pcs, vec![0x3000, 0x2010, 0x2090]);
        let by_record: Vec<bool> = unwound
            .frames
            .iter()
            .map(|frame| frame.found_by == FoundBy::FrameRecord)
            .collect();
        assert_eq!(by_record, vec![false, true, false]);
        assert_eq!(
            unwound.notes(),
            vec![format!(
                "1 frame, at {:#x}, was found by the frame pointer: no call frame information covers the frame inside",
                BIAS + 0x2010
            )]
        );
        assert_eq!(unwound.frames[1].registers.sp(), Some(0x7110));
        assert_eq!(unwound.frames[1].registers.fp(), Some(0x7777));
        assert_eq!(unwound.end, UnwindEnd::Outermost);
        // rbp below the stack pointer, or a record returning into no module: no frame.
        let unwound = unwind(&program(), &stack, registers(BIAS + 0x3000, 0x7000, 0x6000));
        assert_eq!(unwound.frames.len(), 1);
        let mut nowhere = SparseMemory::default();
        nowhere.put(0x7100, &[0; 8]);
        nowhere.put(0x7108, &u64::to_le_bytes(0x42));
        let unwound = unwind(
            &program(),
            &nowhere,
            registers(BIAS + 0x3000, 0x7000, 0x7100),
        );
        assert_eq!(
            unwound.end,
            UnwindEnd::NoCallFrameInfo { pc: BIAS + 0x3000 }
        );
    }

    #[test]
    fn a_frame_pointer_not_known_is_found_by_its_frame_record_on_the_stack() {
        // A thread read without stopping it: its pc in `leaf` and its stack pointer, no
        // rbp. leaf returns into `framed` (CFA = rbp + 16), whose record is at 0x7040: the
        // caller's rbp, then a return address into `caller` just after a call, and caller's
        // own return address at 0x7058, after a call too. Below it, at 0x7010, a stale
        // record: its return address follows a call, but caller's return address would be
        // at 0x7028, where there is none.
        let mut stack = vec![0u8; 0x1000];
        for (at, word) in [
            (0x000, BIAS + 0x4020),
            (0x010, 0x1111),
            (0x018, BIAS + 0x2030),
            (0x040, 0x7777),
            (0x048, BIAS + 0x2010),
            (0x050, 0x8888),
            (0x058, BIAS + 0x2090),
        ] {
            stack[at..at + 8].copy_from_slice(&u64::to_le_bytes(word));
        }
        let mut memory = SparseMemory::default();
        memory.put(0x7000, &stack);
        let call = [0x90, 0x90, 0xe8, 1, 2, 3, 4];
        memory.put(BIAS + 0x2010 - 7, &call);
        memory.put(BIAS + 0x2030 - 7, &call);
        memory.put(BIAS + 0x2090 - 7, &call);
        let mut start = Registers::default();
        start.set(RETURN_ADDRESS, Some(BIAS + 0x1010));
        start.set(STACK_POINTER, Some(0x7000));
        let unwound = unwind(&program(), &memory, start);
        let pcs: Vec<u64> = unwound.frames.iter().map(|frame| frame.pc - BIAS).collect();
        assert_eq!(pcs, vec![0x1010, 0x4020, 0x2010, 0x2090]);
        let found_by: Vec<FoundBy> = unwound.frames.iter().map(|frame| frame.found_by).collect();
        assert_eq!(
            found_by,
            [
                FoundBy::CallFrameInfo,
                FoundBy::CallFrameInfo,
                FoundBy::StackScan,
                FoundBy::CallFrameInfo
            ]
        );
        assert_eq!(unwound.frames[2].registers.sp(), Some(0x7050));
        assert_eq!(unwound.frames[2].registers.fp(), Some(0x7777));
        assert_eq!(unwound.end, UnwindEnd::Outermost);
        assert_eq!(
            unwound.notes(),
            vec![format!(
                "1 frame, at {:#x}, was found by searching the stack for a frame record: the frame inside keeps its CFA in rbp, which was not known",
                BIAS + 0x2010
            )]
        );
        // Without the calls before the return addresses, no record is taken: the stack ends
        // where rbp was needed.
        memory.put(BIAS + 0x2010 - 7, &[0x90; 7]);
        memory.put(BIAS + 0x2030 - 7, &[0x90; 7]);
        memory.put(BIAS + 0x2090 - 7, &[0x90; 7]);
        let unwound = unwind(&program(), &memory, start);
        assert_eq!(unwound.frames.len(), 2);
        assert_eq!(unwound.end, UnwindEnd::Unreadable { pc: BIAS + 0x4020 });
        // A stopped thread's rbp is taken as it is: no search.
        let mut stopped = start;
        stopped.set(FRAME_POINTER, Some(0x7010));
        let unwound = unwind(&program(), &memory, stopped);
        assert_eq!(unwound.frames[1].registers.fp(), Some(0x7010));
        assert_eq!(unwound.frames[2].pc, BIAS + 0x2030);
        assert_eq!(unwound.frames[2].found_by, FoundBy::CallFrameInfo);
    }

    #[test]
    fn threads_at_the_same_pcs_reuse_the_rules_found() {
        let modules = program();
        let stack = two_frames_stack();
        let mut unwinder = Unwinder::new(&modules);
        let start = registers(BIAS + 0x1010, 0x7000, 0x1234);
        let first = unwinder.unwind(&stack, start);
        let rules = unwinder.rules.len();
        assert_eq!(rules, 3); // leaf, and caller twice (0x200f, 0x208f)
        let second = unwinder.unwind(&stack, start);
        assert_eq!(unwinder.rules.len(), rules);
        let registers_of = |unwound: &Unwound| {
            unwound
                .frames
                .iter()
                .map(|frame| frame.registers)
                .collect::<Vec<_>>()
        };
        assert_eq!(registers_of(&first), registers_of(&second));
        assert_eq!(unwinder.fde_tables.len(), 1); // .eh_frame without .eh_frame_hdr, sorted once
                                                  // Its .eh_frame_hdr looked for once, for its three rules: it has none.
        assert_eq!(unwinder.eh_frame_hdrs.len(), 1);
        assert!(unwinder.eh_frame_hdrs.values().all(Option::is_none));
    }
}
