//! What this tool knows of x86-64, the one architecture it reads (Linux, ELF): the calls
//! in machine code, DWARF's numbers for its registers, what its dynamic relocations write,
//! and where a thread's static TLS block lies. Another architecture would be another
//! module with the same functions.

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

/// DWARF's numbers for the frame pointer (`rbp`) and the stack pointer (`rsp`).
pub const DWARF_FRAME_POINTER: u16 = 6;
pub const DWARF_STACK_POINTER: u16 = 7;

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
pub const DWARF_REGISTER_NAMES: [&str; 17] = [
    "rax", "rdx", "rcx", "rbx", "rsi", "rdi", "rbp", "rsp", "r8", "r9", "r10", "r11", "r12", "r13",
    "r14", "r15", "rip",
];
/// The registers of the first two integer arguments at a call (System V).
pub const FIRST_TWO_ARGUMENTS: [&str; 2] = ["rdi", "rsi"];
