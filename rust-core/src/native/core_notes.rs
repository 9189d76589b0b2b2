//! What a core file says of the process besides its memory, from its `PT_NOTE` segments:
//! each thread's registers (`NT_PRSTATUS`, in the order the kernel or GDB wrote them), the
//! auxiliary vector (`NT_AUXV`: where the program was loaded, where the vDSO is) and the
//! files mapped (`NT_FILE`).

use std::path::Path;

use object::elf::{NT_AUXV, NT_FILE, NT_PRSTATUS, PT_NOTE};
use object::read::elf::{ElfFile64, FileHeader, ProgramHeader};
use object::Endianness;

use super::modules::Mapping;
use super::registers::Registers;
use crate::arch::{PRSTATUS_PID, PRSTATUS_REGISTERS};
use crate::error::{Error, ErrorKind, Result};
use crate::memory::Memory;

/// The auxiliary vector's key for where the program's headers were loaded.
const AT_PHDR: u64 = 3;
/// `elf_prstatus` on x86-64: the thread id at 32, the registers at 112.
/// Notes read at most (a corrupt core must not make us loop).
const MAX_NOTES: usize = 1 << 16;

/// One thread of the core.
#[derive(Debug, Clone)]
pub struct CoreThread {
    pub tid: u64,
    pub registers: Registers,
    pub fs_base: u64,
}

#[derive(Debug, Default)]
pub struct CoreNotes {
    pub threads: Vec<CoreThread>,
    pub auxv: Vec<(u64, u64)>,
    pub mappings: Vec<Mapping>,
}

impl CoreNotes {
    pub fn read(path: &Path) -> Result<CoreNotes> {
        let failed = |why: String| {
            Error::new(
                ErrorKind::Binary,
                format!("core file {}: {why}", path.display()),
            )
        };
        let file = std::fs::File::open(path).map_err(|error| failed(error.to_string()))?;
        // SAFETY: mapped read-only; only the notes are read.
        let map =
            unsafe { memmap2::Mmap::map(&file) }.map_err(|error| failed(error.to_string()))?;
        if !map.starts_with(b"\x7fELF") {
            return Err(failed("not a core file (no ELF header)".into()));
        }
        let elf =
            ElfFile64::<Endianness>::parse(&*map).map_err(|error| failed(error.to_string()))?;
        let endian = elf.endian();
        if elf.elf_header().e_type(endian) != object::elf::ET_CORE {
            return Err(failed("not a core file".into()));
        }
        let mut notes = CoreNotes::default();
        let mut count = 0;
        for header in elf.elf_program_headers() {
            if header.p_type(endian) != PT_NOTE {
                continue;
            }
            let Ok(Some(mut iterator)) = header.notes(endian, &*map) else {
                continue;
            };
            while let Ok(Some(note)) = iterator.next() {
                count += 1;
                if count > MAX_NOTES {
                    break;
                }
                if note.name() != b"CORE" {
                    continue;
                }
                let data = note.desc();
                match note.n_type(endian) {
                    NT_PRSTATUS => {
                        if let Some(thread) = thread_of(data) {
                            notes.threads.push(thread);
                        }
                    }
                    NT_AUXV => notes.auxv = auxv_pairs(data),
                    NT_FILE => notes.mappings = file_mappings(data),
                    _ => {}
                }
            }
        }
        if notes.threads.is_empty() {
            return Err(failed("it records no thread (no NT_PRSTATUS note)".into()));
        }
        Ok(notes)
    }

    /// Where the executable's ELF header was mapped: the first mapping of the file that
    /// holds its program headers (`AT_PHDR`).
    pub fn executable_base(&self) -> Option<u64> {
        let headers = self.auxv_value(AT_PHDR)?;
        let file = self
            .mappings
            .iter()
            .find(|mapping| mapping.start <= headers && headers < mapping.end)?;
        self.mappings
            .iter()
            .filter(|mapping| mapping.path == file.path && mapping.offset == 0)
            .map(|mapping| mapping.start)
            .min()
    }

    /// The auxiliary vector's value for `key` (`AT_ENTRY`, `AT_SYSINFO_EHDR`).
    pub fn auxv_value(&self, key: u64) -> Option<u64> {
        auxv_value(&self.auxv, key)
    }
}

/// The GNU build id (hex) of the ELF file whose headers are at `base` in `memory` (the
/// kernel writes the first page of each mapped ELF file into a core); `None` when that page
/// is not there or names none.
pub fn build_id_in_memory(memory: &dyn Memory, base: u64) -> Option<String> {
    use object::read::elf::FileHeader;
    let mut page = vec![0u8; 4096];
    memory.read(base, &mut page).ok()?;
    let header = object::elf::FileHeader64::<Endianness>::parse(&*page).ok()?;
    let endian = header.endian().ok()?;
    for program in header.program_headers(endian, &*page).ok()? {
        if program.p_type(endian) != PT_NOTE {
            continue;
        }
        let Ok(Some(mut notes)) = program.notes(endian, &*page) else {
            continue;
        };
        while let Ok(Some(note)) = notes.next() {
            if note.name() == b"GNU" && note.n_type(endian) == object::elf::NT_GNU_BUILD_ID {
                return Some(
                    note.desc()
                        .iter()
                        .map(|byte| format!("{byte:02x}"))
                        .collect(),
                );
            }
        }
    }
    None
}

pub fn auxv_value(auxv: &[(u64, u64)], key: u64) -> Option<u64> {
    auxv.iter()
        .find(|(found, _)| *found == key)
        .map(|(_, value)| *value)
}

fn thread_of(data: &[u8]) -> Option<CoreThread> {
    let tid = u32::from_le_bytes(data.get(PRSTATUS_PID..PRSTATUS_PID + 4)?.try_into().ok()?);
    let (registers, fs_base) = Registers::from_user_regs(data.get(PRSTATUS_REGISTERS..)?)?;
    Some(CoreThread {
        tid: u64::from(tid),
        registers,
        fs_base,
    })
}

fn words(data: &[u8]) -> impl Iterator<Item = u64> + '_ {
    data.chunks_exact(8)
        .map(|word| u64::from_le_bytes(word.try_into().expect("8 bytes")))
}

/// (key, value) pairs up to `AT_NULL`; also what `/proc/PID/auxv` holds.
pub fn auxv_pairs(data: &[u8]) -> Vec<(u64, u64)> {
    let all: Vec<u64> = words(data).collect();
    all.chunks_exact(2)
        .map(|pair| (pair[0], pair[1]))
        .take_while(|&(key, _)| key != 0)
        .collect()
}

/// `NT_FILE`: a count, the page size, `count` (start, end, offset in pages), then the
/// `count` file names, NUL-terminated.
fn file_mappings(data: &[u8]) -> Vec<Mapping> {
    let header: Vec<u64> = words(data).take(2).collect();
    let [count, page_size] = header[..] else {
        return Vec::new();
    };
    let Some(count) = usize::try_from(count)
        .ok()
        .filter(|&count| count < MAX_NOTES)
    else {
        return Vec::new();
    };
    let table_end = 16 + count * 24;
    let Some(table) = data.get(16..table_end) else {
        return Vec::new();
    };
    let names = data[table_end..].split(|&byte| byte == 0);
    table
        .chunks_exact(24)
        .zip(names)
        .filter_map(|(entry, name)| {
            let values: Vec<u64> = words(entry).collect();
            Some(Mapping {
                start: values[0],
                end: values[1],
                offset: values[2].checked_mul(page_size)?,
                path: String::from_utf8_lossy(name).into_owned(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nt_file_lists_each_mapping_with_its_name() {
        let mut data = Vec::new();
        for word in [2u64, 4096, 0x1000, 0x3000, 0, 0x7000, 0x8000, 3] {
            data.extend_from_slice(&word.to_le_bytes());
        }
        data.extend_from_slice(b"/bin/app\0/lib/libc.so.6\0");
        let mappings = file_mappings(&data);
        assert_eq!(
            mappings,
            vec![
                Mapping {
                    start: 0x1000,
                    end: 0x3000,
                    offset: 0,
                    path: "/bin/app".into()
                },
                Mapping {
                    start: 0x7000,
                    end: 0x8000,
                    offset: 3 * 4096,
                    path: "/lib/libc.so.6".into()
                },
            ]
        );
        // A count larger than the note: nothing, not a panic.
        let mut short = data.clone();
        short[..8].copy_from_slice(&1000u64.to_le_bytes());
        assert!(file_mappings(&short).is_empty());
    }

    #[test]
    fn the_auxiliary_vector_ends_at_at_null() {
        let mut data = Vec::new();
        for word in [9u64, 0x5000, 33, 0x7fff0000, 0, 0, 9, 1] {
            data.extend_from_slice(&word.to_le_bytes());
        }
        let pairs = auxv_pairs(&data);
        assert_eq!(auxv_value(&pairs, 9), Some(0x5000));
        assert_eq!(auxv_value(&pairs, 33), Some(0x7fff0000));
        assert_eq!(pairs.len(), 2);
    }
}
