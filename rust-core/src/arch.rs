//! What this tool knows of x86-64, the one architecture it reads (Linux, ELF): the calls
//! in machine code, DWARF's numbers and the debuggers' names for its registers, the
//! kernel's `user_regs_struct` and `elf_prstatus`, the return address a call pushes, what
//! its dynamic relocations write, and where a thread's static TLS block lies. Another
//! architecture would be another module with the same functions.

/// `call rel32`: opcode and length.
const CALL_REL32: u8 = 0xe8;
const CALL_REL32_LEN: usize = 5;
/// `call [rip+disp32]`: opcode, ModRM, length.
const CALL_INDIRECT: u8 = 0xff;
const MODRM_CALL_RIP: u8 = 0x15;
const CALL_RIP_LEN: usize = 6;
/// `mov r64, [rip+disp32]`: REX.W (with or without REX.R), opcode, ModRM mask, length.
const REX_W: u8 = 0x48;
const REX_WR: u8 = 0x4c;
const MOV_LOAD: u8 = 0x8b;
const MODRM_RIP_MASK: u8 = 0xc7;
const MODRM_RIP: u8 = 0x05;
const MOV_RIP_LEN: usize = 7;

/// Where a call found in machine code goes.
pub enum CallTarget {
    /// rel32 from the next instruction.
    Relative(i32),
    /// The address lies in the slot at disp32 from the next instruction (a GOT slot).
    Slot(i32),
}

/// The call (or GOT load) that starts `code`, if any: (instruction length, target).
pub fn call_at(code: &[u8]) -> Option<(usize, CallTarget)> {
    let disp = |at: usize| -> Option<i32> {
        Some(i32::from_le_bytes(code.get(at..at + 4)?.try_into().ok()?))
    };
    match *code.first()? {
        CALL_REL32 => Some((CALL_REL32_LEN, CallTarget::Relative(disp(1)?))),
        CALL_INDIRECT if *code.get(1)? == MODRM_CALL_RIP => {
            Some((CALL_RIP_LEN, CallTarget::Slot(disp(2)?)))
        }
        REX_W | REX_WR
            if *code.get(1)? == MOV_LOAD && code.get(2)? & MODRM_RIP_MASK == MODRM_RIP =>
        {
            Some((MOV_RIP_LEN, CallTarget::Slot(disp(3)?)))
        }
        _ => None,
    }
}

/// The longest call instruction a return address may follow (`call [base+index*s+disp32]`).
pub const LONGEST_CALL: usize = 7;
/// ModRM's reg field for `call r/m64` (`ff /2`).
const MODRM_REG_CALL: u8 = 2;

/// Whether `code`, the bytes just before a return address, ends with a call: `call rel32`
/// or `call r/m64` in any addressing form, whose length its ModRM (and SIB) byte gives.
/// Telling a return address from other numbers on a stack that is scanned.
pub fn ends_with_call(code: &[u8]) -> bool {
    let from_end = |back: usize| code.len().checked_sub(back).and_then(|at| code.get(at));
    if from_end(CALL_REL32_LEN) == Some(&CALL_REL32) {
        return true;
    }
    (2..=LONGEST_CALL).any(|length| {
        let (Some(&CALL_INDIRECT), Some(&modrm)) = (from_end(length), from_end(length - 1)) else {
            return false;
        };
        let sib = from_end(length - 2).copied();
        (modrm >> 3) & 7 == MODRM_REG_CALL && indirect_call_length(modrm, sib) == Some(length)
    })
}

/// The length of `ff /2` with this ModRM (and the SIB byte after it, if any).
fn indirect_call_length(modrm: u8, sib: Option<u8>) -> Option<usize> {
    let (mode, rm) = (modrm >> 6, modrm & 7);
    let has_sib = mode != 3 && rm == 4;
    let displacement = match mode {
        0 if rm == 5 => 4,
        0 if has_sib && sib? & 7 == 5 => 4,
        0 | 3 => 0,
        1 => 1,
        _ => 4,
    };
    Some(2 + usize::from(has_sib) + displacement)
}

/// DWARF's numbers for the frame pointer (`rbp`) and the stack pointer (`rsp`).
pub const DWARF_FRAME_POINTER: u16 = 6;
pub const DWARF_STACK_POINTER: u16 = 7;
/// DWARF's column for the return address: the caller's pc (`rip`).
pub const DWARF_RETURN_ADDRESS: u16 = 16;
/// The registers DWARF numbers 0 to 16 name (the general ones, then the return address).
pub const DWARF_REGISTER_COUNT: usize = 17;
/// What a call pushes: the return address, just below the caller's stack pointer, so at
/// CFA - 8 (the ABI's CIE default rule).
pub const RETURN_ADDRESS_SIZE: u64 = 8;

/// A frame record (code built with frame pointers): `rbp` points at the caller's saved
/// `rbp`, with the return address above it; the caller's stack pointer is past both.
pub const FRAME_RECORD_SAVED_FP: u64 = 0;
pub const FRAME_RECORD_RETURN_ADDRESS: u64 = 8;
pub const FRAME_RECORD_SIZE: u64 = 16;

/// `user_regs_struct` (PTRACE_GETREGS, and a core's `NT_PRSTATUS`) in u64 words, in the
/// kernel's order.
pub const USER_REGS_WORDS: usize = 27;
/// The word of `user_regs_struct` each DWARF register (0 to 16) is in.
pub const USER_REGS_BY_DWARF: [usize; DWARF_REGISTER_COUNT] = [
    10, // rax
    12, // rdx
    11, // rcx
    5,  // rbx
    13, // rsi
    14, // rdi
    4,  // rbp
    19, // rsp
    9,  // r8
    8,  // r9
    7,  // r10
    6,  // r11
    3,  // r12
    2,  // r13
    1,  // r14
    0,  // r15
    16, // rip
];
/// `fs_base` in `user_regs_struct`: the thread pointer.
pub const USER_REGS_FS_BASE: usize = 21;

/// The words of the `user_regs_struct` ptrace fills, in the kernel's order.
pub fn user_regs_words(regs: &libc::user_regs_struct) -> [u64; USER_REGS_WORDS] {
    [
        regs.r15,
        regs.r14,
        regs.r13,
        regs.r12,
        regs.rbp,
        regs.rbx,
        regs.r11,
        regs.r10,
        regs.r9,
        regs.r8,
        regs.rax,
        regs.rcx,
        regs.rdx,
        regs.rsi,
        regs.rdi,
        regs.orig_rax,
        regs.rip,
        regs.cs,
        regs.eflags,
        regs.rsp,
        regs.ss,
        regs.fs_base,
        regs.gs_base,
        regs.ds,
        regs.es,
        regs.fs,
        regs.gs,
    ]
}

/// `elf_prstatus` in a core's `NT_PRSTATUS` note: where the thread's id (`pr_pid`) and its
/// `user_regs_struct` (`pr_reg`) are.
pub const PRSTATUS_PID: usize = 32;
pub const PRSTATUS_REGISTERS: usize = 112;

/// What a dynamic relocation of this type writes into its slot, to which the load bias is
/// added at run time: the addend alone (`RELATIVE`), or a symbol's address plus the addend
/// (`GLOB_DAT`, `64`); `None` for a type that writes no address this tool reads.
pub enum RelocationValue {
    Addend,
    SymbolPlusAddend,
}

pub fn relocation_value(r_type: object::elf::RelocationType) -> Option<RelocationValue> {
    match r_type {
        object::elf::R_X86_64_RELATIVE => Some(RelocationValue::Addend),
        object::elf::R_X86_64_GLOB_DAT | object::elf::R_X86_64_64 => {
            Some(RelocationValue::SymbolPlusAddend)
        }
        _ => None,
    }
}

/// The address of a variable at `tls_offset` in the main executable's static TLS block, for
/// the thread whose thread pointer is `fs_base` (variant II: the block ends at the thread
/// pointer, its size rounded up to its alignment).
pub fn static_tls_address(fs_base: u64, block_size: u64, block_align: u64, tls_offset: u64) -> u64 {
    let align = block_align.max(1);
    let block = block_size.div_ceil(align) * align;
    fs_base.wrapping_sub(block).wrapping_add(tls_offset)
}

/// The names of the general registers by DWARF number (0 to 16), as debuggers spell them.
pub const DWARF_REGISTER_NAMES: [&str; DWARF_REGISTER_COUNT] = [
    "rax", "rdx", "rcx", "rbx", "rsi", "rdi", "rbp", "rsp", "r8", "r9", "r10", "r11", "r12", "r13",
    "r14", "r15", "rip",
];
/// The general registers (all but the return address), which may hold a coroutine's
/// address where a stepping breakpoint compares it.
pub fn general_register_names() -> &'static [&'static str] {
    &DWARF_REGISTER_NAMES[..usize::from(DWARF_RETURN_ADDRESS)]
}
/// How the debuggers name the frame pointer and the thread pointer.
pub const FRAME_POINTER_NAME: &str = "rbp";
pub const THREAD_POINTER_NAME: &str = "fs_base";
/// The registers of the first two integer arguments at a call (System V).
pub const FIRST_TWO_ARGUMENTS: [&str; 2] = ["rdi", "rsi"];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_are_told_by_their_last_bytes() {
        // call rel32; call rax; call r15 (REX); call [rip+d32]; call [rsp+8]; call [rax+d8];
        // call [rbx*8+d32] (SIB, no base).
        let calls: [&[u8]; 7] = [
            &[0xe8, 1, 2, 3, 4],
            &[0xff, 0xd0],
            &[0x41, 0xff, 0xd7],
            &[0xff, 0x15, 1, 2, 3, 4],
            &[0xff, 0x54, 0x24, 0x08],
            &[0xff, 0x50, 0x10],
            &[0xff, 0x14, 0xdd, 1, 2, 3, 4],
        ];
        for call in calls {
            let mut code = vec![0x90; 8];
            code.extend_from_slice(call);
            assert!(ends_with_call(&code), "{call:x?}");
        }
        // jmp rax (ff /4), a mov, and too little code.
        for other in [&[0x90, 0xff, 0xe0][..], &[0x48, 0x89, 0xc7], &[0xd0]] {
            assert!(!ends_with_call(other), "{other:x?}");
        }
    }

    /// The word table and the struct's field order say the same: each DWARF register read
    /// from the struct is the one its name says.
    #[test]
    fn user_regs_by_dwarf_number_agree_with_the_struct() {
        // SAFETY: user_regs_struct is plain integers; all zeros is a valid value.
        let mut regs: libc::user_regs_struct = unsafe { std::mem::zeroed() };
        (regs.rax, regs.rdx, regs.rcx, regs.rbx) = (100, 101, 102, 103);
        (regs.rsi, regs.rdi, regs.rbp, regs.rsp) = (104, 105, 106, 107);
        (regs.r8, regs.r9, regs.r10, regs.r11) = (108, 109, 110, 111);
        (regs.r12, regs.r13, regs.r14, regs.r15) = (112, 113, 114, 115);
        (regs.rip, regs.fs_base) = (116, 999);
        let words = user_regs_words(&regs);
        for (number, &word) in USER_REGS_BY_DWARF.iter().enumerate() {
            assert_eq!(
                words[word],
                100 + number as u64,
                "{}",
                DWARF_REGISTER_NAMES[number]
            );
        }
        assert_eq!(words[USER_REGS_FS_BASE], 999);
        assert_eq!(
            DWARF_REGISTER_NAMES[usize::from(DWARF_FRAME_POINTER)],
            FRAME_POINTER_NAME
        );
        assert_eq!(general_register_names().len(), 16);
    }
}
