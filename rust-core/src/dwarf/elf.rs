//! Facts from the ELF container: sections for gimli, the TLS segment, and symbol names.

use std::sync::{Arc, OnceLock};

use object::{Object, ObjectSection, ObjectSymbol, ObjectSymbolTable};
use rustc_hash::FxHashMap;

use super::Reader;
use crate::arch::{relocation_value, RelocationValue};
use crate::error::{Error, ErrorKind, Result};

#[derive(Debug, Clone, Copy)]
pub struct TlsSegment {
    pub memsz: u64,
    pub align: u64,
}

pub struct ElfFacts {
    /// The executable's own thread-local segment (`PT_TLS`), if it has one.
    pub tls: Option<TlsSegment>,
    /// Defined symbols by name (`.symtab`, else `.dynsym`).
    pub symbols: FxHashMap<String, u64>,
    /// The entry point's link-time address; with the loaded one it gives the load bias.
    pub entry: u64,
    /// Executable sections: (link-time address, file offset, size).
    pub code_sections: Vec<(u64, u64, u64)>,
    /// Direct calls can be found in code by decoding `call rel32` (x86-64 only).
    pub is_x86_64: bool,
    /// Loaded segments the program cannot write (`PT_LOAD` without `PF_W`): (link-time
    /// address, file offset, size in the file). Their bytes in memory are the file's.
    pub read_only_segments: Vec<(u64, u64, u64)>,
    /// Loaded segments the program can write (`PF_W`): (link-time address, size in memory),
    /// where its mutable statics are.
    pub writable_segments: Vec<(u64, u64)>,
}

impl ElfFacts {
    pub fn read(object: &object::File<'_>) -> Result<ElfFacts> {
        let (tls, read_only_segments, writable_segments) = match object {
            object::File::Elf64(elf) => {
                let headers = elf.elf_program_headers();
                (
                    tls_segment::<object::elf::FileHeader64<object::Endianness>>(
                        headers,
                        elf.endian(),
                    ),
                    read_only_segments::<object::elf::FileHeader64<object::Endianness>>(
                        headers,
                        elf.endian(),
                    ),
                    writable_segments::<object::elf::FileHeader64<object::Endianness>>(
                        headers,
                        elf.endian(),
                    ),
                )
            }
            object::File::Elf32(_) => (None, Vec::new(), Vec::new()),
            _ => {
                return Err(Error::new(
                    ErrorKind::Binary,
                    "only ELF executables are supported",
                ))
            }
        };
        let mut symbols = FxHashMap::default();
        add_symbols(&mut symbols, object);
        let code_sections: Vec<(u64, u64, u64)> = object
            .sections()
            .filter(|section| section.kind() == object::SectionKind::Text)
            .filter_map(|section| {
                let (offset, size) = section.file_range()?;
                Some((section.address(), offset, size))
            })
            .collect();
        let is_x86_64 = object.architecture() == object::Architecture::X86_64;
        Ok(ElfFacts {
            tls,
            symbols,
            entry: object.entry(),
            code_sections,
            is_x86_64,
            read_only_segments,
            writable_segments,
        })
    }

    /// Takes the symbols of a separate debug file the executable lacks: one stripped with
    /// `--strip-all` keeps only `.dynsym`, its debug file the whole `.symtab`.
    pub fn add_symbols_from(&mut self, debug_file: &object::File<'_>) {
        add_symbols(&mut self.symbols, debug_file);
    }

    /// Whether any symbol names the crate `name` (mangled names spell it with its length
    /// first: `5tokio`).
    pub fn links_crate(&self, name: &str) -> bool {
        let mangled = format!("{}{name}", name.len());
        self.symbols.keys().any(|symbol| symbol.contains(&mangled))
    }
}

fn add_symbols(symbols: &mut FxHashMap<String, u64>, object: &object::File<'_>) {
    for symbol in object.symbols().chain(object.dynamic_symbols()) {
        // Not `is_definition()`: it leaves out thread-local symbols, which we need.
        if symbol.is_undefined() {
            continue;
        }
        if let Ok(name) = symbol.name() {
            symbols.entry(name.to_string()).or_insert(symbol.address());
        }
    }
}

/// GOT slots the dynamic relocations fill with an address inside a code section: slot ->
/// target. Calls to another crate's functions go through these in position-independent
/// executables.
pub fn code_slots(
    object: &object::File<'_>,
    code_sections: &[(u64, u64, u64)],
) -> FxHashMap<u64, u64> {
    let in_code = |address: u64| {
        code_sections
            .iter()
            .any(|&(start, _, size)| start <= address && address - start < size)
    };
    let symbols = object.dynamic_symbol_table();
    let mut slots = FxHashMap::default();
    let Some(relocations) = object.dynamic_relocations() else {
        return slots;
    };
    for (slot, relocation) in relocations {
        let Some(target) = link_time_value(&relocation, symbols.as_ref()) else {
            continue;
        };
        if in_code(target) {
            slots.insert(slot, target);
        }
    }
    slots
}

/// The link-time address a dynamic relocation writes into its slot (the load bias
/// is added at run time); `None` for one that takes another object's symbol, or that
/// writes no address.
fn link_time_value(
    relocation: &object::Relocation,
    symbols: Option<&object::read::SymbolTable<'_, '_>>,
) -> Option<u64> {
    let object::RelocationFlags::Elf { r_type } = relocation.flags() else {
        return None;
    };
    let base = match (relocation_value(r_type)?, relocation.target()) {
        (RelocationValue::Addend, _) => 0,
        (RelocationValue::SymbolPlusAddend, object::RelocationTarget::Symbol(index)) => {
            match symbols.and_then(|table| table.symbol_by_index(index).ok()) {
                Some(symbol) if !symbol.is_undefined() => symbol.address(),
                _ => return None,
            }
        }
        _ => return None,
    };
    Some(base.wrapping_add(relocation.addend() as u64))
}

/// The executable's own bytes (mapped) and what is read from them only when a command
/// needs it.
pub(super) struct ExecutableImage {
    bytes: Arc<memmap2::Mmap>,
    /// GOT slots holding code addresses (`code_slots`): only the call scan for awaits
    /// inside macros needs them.
    code_slots: OnceLock<FxHashMap<u64, u64>>,
    /// The relro segment and its relocations: only reads that a core left out need them.
    relro: OnceLock<Option<Relro>>,
}

impl ExecutableImage {
    pub(super) fn new(bytes: Arc<memmap2::Mmap>) -> ExecutableImage {
        ExecutableImage {
            bytes,
            code_slots: OnceLock::new(),
            relro: OnceLock::new(),
        }
    }

    pub(super) fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    pub(super) fn code_slots(&self, elf: &ElfFacts) -> &FxHashMap<u64, u64> {
        self.code_slots
            .get_or_init(|| match object::File::parse(self.bytes()) {
                Ok(object) => code_slots(&object, &elf.code_sections),
                // It parsed when loaded; a file rewritten since gives no slots, only fewer lines.
                Err(_) => FxHashMap::default(),
            })
    }

    /// Fills `buf` with what memory holds at a link-time address, from the file: its
    /// read-only segments as they are, its relro segment relocated with `load_bias`.
    pub(super) fn memory(
        &self,
        elf: &ElfFacts,
        address: u64,
        load_bias: u64,
        buf: &mut [u8],
    ) -> Option<()> {
        let read_only = elf
            .read_only_segments
            .iter()
            .find_map(|&segment| segment_bytes(self.bytes(), segment, address, buf.len()));
        if let Some(bytes) = read_only {
            buf.copy_from_slice(bytes);
            return Some(());
        }
        let relro = self.relro.get_or_init(|| {
            object::File::parse(self.bytes())
                .ok()
                .and_then(|object| Relro::read(&object))
        });
        relro.as_ref()?.fill(self.bytes(), address, load_bias, buf)
    }
}

/// The part of a writable segment that the loader relocates and then makes read-only
/// (`PT_GNU_RELRO`: vtables, `.data.rel.ro`, the GOT), with what the relocations write
/// there, so that memory a core left out can be rebuilt from the file.
pub struct Relro {
    /// Link-time address, file offset and size in the file.
    pub segment: (u64, u64, u64),
    /// Relocated slots, by link-time address: the link-time address each receives (to which
    /// the load bias is added), or `None` for a value from another object (libc's symbols).
    pub slots: Vec<(u64, Option<u64>)>,
}

impl Relro {
    /// The relro segment of an x86-64 ELF with its relocations; `None` without one, or
    /// where the relocations are packed (`.relr.dyn`), which are not read here.
    pub fn read(object: &object::File<'_>) -> Option<Relro> {
        use object::read::elf::ProgramHeader;
        let object::File::Elf64(elf) = object else {
            return None;
        };
        if object.architecture() != object::Architecture::X86_64
            || object.section_by_name(".relr.dyn").is_some()
        {
            return None;
        }
        let endian = elf.endian();
        let header = elf
            .elf_program_headers()
            .iter()
            .find(|header| header.p_type(endian) == object::elf::PT_GNU_RELRO)?;
        let segment = (
            header.p_vaddr(endian),
            header.p_offset(endian),
            header.p_filesz(endian),
        );
        let inside = |address: u64| {
            address
                .checked_sub(segment.0)
                .is_some_and(|offset| offset < segment.2)
        };
        let symbols = object.dynamic_symbol_table();
        let mut slots: Vec<(u64, Option<u64>)> = object
            .dynamic_relocations()?
            .filter(|(slot, _)| inside(*slot))
            .map(|(slot, relocation)| (slot, link_time_value(&relocation, symbols.as_ref())))
            .collect();
        slots.sort_unstable_by_key(|(slot, _)| *slot);
        Some(Relro { segment, slots })
    }

    /// Fills `buf` with what memory holds at `address` (link-time) once relocated with
    /// `load_bias`; `None` outside the segment or where a slot takes another object's value.
    pub fn fill(&self, file: &[u8], address: u64, load_bias: u64, buf: &mut [u8]) -> Option<()> {
        buf.copy_from_slice(segment_bytes(file, self.segment, address, buf.len())?);
        // Slots are 8 bytes: the first that can overlap starts up to 7 bytes before.
        let first = self
            .slots
            .partition_point(|(slot, _)| slot.saturating_add(8) <= address);
        let end_address = address.checked_add(buf.len() as u64)?;
        for &(slot, value) in self.slots[first..]
            .iter()
            .take_while(|(slot, _)| *slot < end_address)
        {
            let bytes = value?.wrapping_add(load_bias).to_le_bytes();
            for (position, byte) in bytes.iter().enumerate() {
                let at = slot.wrapping_add(position as u64);
                if let Some(index) = at
                    .checked_sub(address)
                    .filter(|index| *index < buf.len() as u64)
                {
                    buf[index as usize] = *byte;
                }
            }
        }
        Some(())
    }
}

/// The file's bytes at link-time `address..address + len`, when `segment` (link-time
/// address, file offset, size in the file) holds all of them.
pub fn segment_bytes(
    file: &[u8],
    (start, offset, size): (u64, u64, u64),
    address: u64,
    len: usize,
) -> Option<&[u8]> {
    let skip = address.checked_sub(start)?;
    if skip.checked_add(len as u64)? > size {
        return None;
    }
    let from = usize::try_from(offset.checked_add(skip)?).ok()?;
    file.get(from..from.checked_add(len)?)
}

fn tls_segment<Elf: object::read::elf::FileHeader>(
    headers: &[Elf::ProgramHeader],
    endian: Elf::Endian,
) -> Option<TlsSegment> {
    use object::read::elf::ProgramHeader;
    headers
        .iter()
        .find(|header| header.p_type(endian) == object::elf::PT_TLS)
        .map(|header| TlsSegment {
            memsz: header.p_memsz(endian).into(),
            align: header.p_align(endian).into(),
        })
}

fn read_only_segments<Elf: object::read::elf::FileHeader>(
    headers: &[Elf::ProgramHeader],
    endian: Elf::Endian,
) -> Vec<(u64, u64, u64)> {
    use object::read::elf::ProgramHeader;
    headers
        .iter()
        .filter(|header| {
            header.p_type(endian) == object::elf::PT_LOAD
                && !header.p_flags(endian).contains(object::elf::PF_W)
        })
        .map(|header| {
            (
                header.p_vaddr(endian).into(),
                header.p_offset(endian).into(),
                header.p_filesz(endian).into(),
            )
        })
        .collect()
}

fn writable_segments<Elf: object::read::elf::FileHeader>(
    headers: &[Elf::ProgramHeader],
    endian: Elf::Endian,
) -> Vec<(u64, u64)> {
    use object::read::elf::ProgramHeader;
    headers
        .iter()
        .filter(|header| {
            header.p_type(endian) == object::elf::PT_LOAD
                && header.p_flags(endian).contains(object::elf::PF_W)
        })
        .map(|header| (header.p_vaddr(endian).into(), header.p_memsz(endian).into()))
        .collect()
}

impl ElfFacts {
    /// Whether the link-time `address` lies where the program keeps its mutable statics.
    pub fn is_writable_static(&self, address: u64) -> bool {
        self.writable_segments
            .iter()
            .any(|&(start, size)| start <= address && address - start < size)
    }
}

/// The GNU build id of the ELF file at `path`, in hex, read from its notes (the whole file
/// is not parsed for DWARF); `None` without one or when unreadable.
pub fn build_id_of(path: &std::path::Path) -> Option<String> {
    let file = std::fs::File::open(path).ok()?;
    // SAFETY: read-only and only for this call; a file truncated meanwhile is the same
    // exposure as the executable's own mapping (see `DebugInfo::load_searching`).
    let map = unsafe { memmap2::Mmap::map(&file) }.ok()?;
    let id = object::File::parse(&*map).ok()?.build_id().ok()??;
    Some(id.iter().map(|byte| format!("{byte:02x}")).collect())
}

/// Whether the object carries DWARF of its own (a `.debug_info` with bytes in the file).
pub fn has_dwarf(object: &object::File<'_>) -> bool {
    object
        .section_by_name(".debug_info")
        .is_some_and(|section| section.file_range().is_some_and(|(_, size)| size > 0))
}

pub fn endian(object: &object::File<'_>) -> gimli::RunTimeEndian {
    if object.is_little_endian() {
        gimli::RunTimeEndian::Little
    } else {
        gimli::RunTimeEndian::Big
    }
}

/// Which of an object's sections gimli gets: an executable's (or its debug file's) own,
/// or the `.dwo`-suffixed ones of a split DWARF file (`.dwo`, `.dwp`).
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum SectionNames {
    Main,
    Split,
}

/// A DWARF section's bytes as gimli reads them: a stretch of the mapped file when the
/// section is stored uncompressed, so tens of megabytes of DWARF are not copied, else the
/// decompressed bytes.
#[derive(Clone)]
pub enum SectionBytes {
    Mapped {
        map: Arc<memmap2::Mmap>,
        start: usize,
        len: usize,
    },
    Owned(Arc<[u8]>),
}

impl std::ops::Deref for SectionBytes {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match self {
            SectionBytes::Mapped { map, start, len } => &map[*start..*start + *len],
            SectionBytes::Owned(bytes) => bytes,
        }
    }
}

impl std::fmt::Debug for SectionBytes {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(formatter, "SectionBytes({} bytes)", self.len())
    }
}

// SAFETY: both variants deref into memory owned through an `Arc` (the mapping or the
// buffer), which neither moves nor changes while any clone is alive.
unsafe impl gimli::StableDeref for SectionBytes {}
unsafe impl gimli::CloneStableDeref for SectionBytes {}

/// A reader over no bytes (a section the file lacks).
pub fn empty_reader(endian: gimli::RunTimeEndian) -> Reader {
    gimli::EndianReader::new(SectionBytes::Owned(Arc::from(&[][..])), endian)
}

/// The bytes of one DWARF section of the object parsed from `map`.
pub fn dwarf_section(
    object: &object::File<'_>,
    map: &Arc<memmap2::Mmap>,
    id: gimli::SectionId,
    names: SectionNames,
) -> Result<Reader> {
    let name = match names {
        SectionNames::Main => Some(id.name()),
        // Sections a split file never holds (.debug_addr, ...) come from the executable.
        SectionNames::Split => id.dwo_name(),
    };
    let section = name
        .and_then(|name| object.section_by_name(name))
        .filter(|section| section.file_range().is_some());
    let Some(section) = section else {
        return Ok(empty_reader(endian(object)));
    };
    let data = section.uncompressed_data().map_err(|error| {
        Error::new(
            ErrorKind::Binary,
            format!("cannot read section {}: {error}", name.unwrap_or_default()),
        )
    })?;
    let bytes = match data {
        std::borrow::Cow::Borrowed(slice) => {
            match (slice.as_ptr() as usize).checked_sub(map.as_ptr() as usize) {
                Some(start) if start + slice.len() <= map.len() => SectionBytes::Mapped {
                    map: map.clone(),
                    start,
                    len: slice.len(),
                },
                _ => SectionBytes::Owned(Arc::from(slice)),
            }
        }
        std::borrow::Cow::Owned(bytes) => SectionBytes::Owned(Arc::from(bytes)),
    };
    Ok(gimli::EndianReader::new(bytes, endian(object)))
}

/// The executable's (or its debug file's) DWARF.
pub fn load_dwarf(
    object: &object::File<'_>,
    map: &Arc<memmap2::Mmap>,
) -> Result<gimli::Dwarf<Reader>> {
    gimli::Dwarf::load(|id| dwarf_section(object, map, id, SectionNames::Main))
}

#[cfg(test)]
mod tests {
    use super::Relro;

    #[test]
    fn relro_memory_is_the_file_with_each_slot_relocated() {
        let file: Vec<u8> = (0..0x40).collect();
        let relro = Relro {
            segment: (0x1000, 0, 0x40),
            slots: vec![
                (0x1008, Some(0x2000)),
                (0x1014, Some(0x3000)),
                (0x1030, None),
            ],
        };
        let bias = 0x5555_0000_0000u64;
        let mut word = [0u8; 8];
        assert_eq!(relro.fill(&file, 0x1008, bias, &mut word), Some(()));
        assert_eq!(u64::from_le_bytes(word), bias + 0x2000);
        // Across the end of one slot and into the start of the next.
        let mut span = [0u8; 12];
        assert_eq!(relro.fill(&file, 0x100c, bias, &mut span), Some(()));
        assert_eq!(&span[..4], &(bias + 0x2000).to_le_bytes()[4..]);
        assert_eq!(&span[4..8], &file[0x10..0x14]);
        assert_eq!(&span[8..], &(bias + 0x3000).to_le_bytes()[..4]);
        // A slot another object fills is unknown; the bytes after it are the file's.
        assert_eq!(relro.fill(&file, 0x1034, bias, &mut word), None);
        assert_eq!(relro.fill(&file, 0x1038, bias, &mut word), Some(()));
        assert_eq!(&word, &file[0x38..0x40]);
        // Outside the segment.
        assert_eq!(relro.fill(&file, 0x103c, bias, &mut word), None);
        assert_eq!(relro.fill(&file, 0xff8, bias, &mut word), None);
    }
}
