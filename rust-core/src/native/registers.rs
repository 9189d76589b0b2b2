//! A thread's general registers by their DWARF numbers (x86-64: rax 0, rdx 1, rcx 2,
//! rbx 3, rsi 4, rdi 5, rbp 6, rsp 7, r8-r15 8-15, the return address / rip 16), as the
//! kernel's `user_regs_struct` lays them out in `PTRACE_GETREGS` and in a core's
//! `NT_PRSTATUS` note.

pub const FRAME_POINTER: u16 = 6;
pub const STACK_POINTER: u16 = 7;
pub const RETURN_ADDRESS: u16 = 16;

/// The registers of one frame; `None` where the unwind could not recover one.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Registers {
    values: [Option<u64>; Registers::COUNT],
}

/// `user_regs_struct` in u64 words: where each DWARF register is.
const USER_REGS_WORDS: usize = 27;
const USER_REGS_BY_DWARF: [usize; Registers::COUNT] = [
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
const USER_REGS_FS_BASE: usize = 21;

impl Registers {
    pub const COUNT: usize = 17;

    pub fn get(&self, number: u16) -> Option<u64> {
        self.values.get(usize::from(number)).copied().flatten()
    }

    pub fn set(&mut self, number: u16, value: Option<u64>) {
        if let Some(slot) = self.values.get_mut(usize::from(number)) {
            *slot = value;
        }
    }

    /// As the `FrameRegisters` of `dwarf::locals`.
    pub fn as_array(&self) -> [Option<u64>; Registers::COUNT] {
        self.values
    }

    /// From a `user_regs_struct` as little-endian bytes; with the thread pointer.
    pub fn from_user_regs(bytes: &[u8]) -> Option<(Registers, u64)> {
        if bytes.len() < USER_REGS_WORDS * 8 {
            return None;
        }
        let word = |index: usize| {
            u64::from_le_bytes(bytes[index * 8..index * 8 + 8].try_into().expect("8 bytes"))
        };
        let mut registers = Registers::default();
        for (number, &index) in USER_REGS_BY_DWARF.iter().enumerate() {
            registers.values[number] = Some(word(index));
        }
        Some((registers, word(USER_REGS_FS_BASE)))
    }

    /// The stack pointer, frame pointer and pc, where known.
    pub fn sp(&self) -> Option<u64> {
        self.get(STACK_POINTER)
    }

    pub fn fp(&self) -> Option<u64> {
        self.get(FRAME_POINTER)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_regs_give_each_register_and_the_thread_pointer() {
        let mut bytes = vec![0u8; USER_REGS_WORDS * 8];
        for word in 0..USER_REGS_WORDS {
            bytes[word * 8..word * 8 + 8].copy_from_slice(&(0x100 + word as u64).to_le_bytes());
        }
        let (registers, fs_base) = Registers::from_user_regs(&bytes).unwrap();
        assert_eq!(registers.get(RETURN_ADDRESS), Some(0x110)); // rip is word 16
        assert_eq!(registers.sp(), Some(0x113)); // rsp is word 19
        assert_eq!(registers.fp(), Some(0x104)); // rbp is word 4
        assert_eq!(registers.get(3), Some(0x105)); // rbx is word 5
        assert_eq!(fs_base, 0x115);
        assert!(Registers::from_user_regs(&bytes[..100]).is_none());
    }
}
