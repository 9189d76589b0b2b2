//! A thread's registers by their DWARF numbers (the architecture's, `arch`), from the
//! kernel's `user_regs_struct` in `PTRACE_GETREGS` and in a core's `NT_PRSTATUS` note.

use crate::arch::{
    user_regs_words, DWARF_FRAME_POINTER, DWARF_REGISTER_COUNT, DWARF_STACK_POINTER,
    USER_REGS_BY_DWARF, USER_REGS_FS_BASE, USER_REGS_WORDS,
};
pub use crate::arch::{
    DWARF_FRAME_POINTER as FRAME_POINTER, DWARF_RETURN_ADDRESS as RETURN_ADDRESS,
    DWARF_STACK_POINTER as STACK_POINTER,
};

/// The registers of one frame; `None` where the unwind could not recover one.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Registers {
    values: [Option<u64>; Registers::COUNT],
}

impl Registers {
    pub const COUNT: usize = DWARF_REGISTER_COUNT;

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
        let mut words = [0u64; USER_REGS_WORDS];
        for (word, chunk) in words.iter_mut().zip(bytes.chunks_exact(8)) {
            *word = u64::from_le_bytes(chunk.try_into().ok()?);
        }
        Some(Registers::from_user_regs_words(&words))
    }

    /// From the `user_regs_struct` ptrace fills; with the thread pointer.
    pub fn from_user_regs_struct(regs: &libc::user_regs_struct) -> (Registers, u64) {
        Registers::from_user_regs_words(&user_regs_words(regs))
    }

    fn from_user_regs_words(words: &[u64; USER_REGS_WORDS]) -> (Registers, u64) {
        let mut registers = Registers::default();
        for (number, &index) in USER_REGS_BY_DWARF.iter().enumerate() {
            registers.values[number] = Some(words[index]);
        }
        (registers, words[USER_REGS_FS_BASE])
    }

    /// The stack pointer, frame pointer and pc, where known.
    pub fn sp(&self) -> Option<u64> {
        self.get(DWARF_STACK_POINTER)
    }

    pub fn fp(&self) -> Option<u64> {
        self.get(DWARF_FRAME_POINTER)
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
