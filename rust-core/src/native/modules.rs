//! The ELF files mapped into the program (the executable, ld.so, libc, the vDSO), where
//! each was loaded, and the call frame information each carries for the unwind. A live
//! process lists its mappings in `/proc/PID/maps`, a core in its `NT_FILE` note; the vDSO
//! is no file and is read from the program's memory, where the auxiliary vector says.

use std::fs::File;
use std::path::{Path, PathBuf};

use gimli::BaseAddresses;
use object::{Object, ObjectSection, ObjectSegment};

use crate::memory::Memory;

/// One mapping of a file into the program: `[start, end)` from file offset `offset`.
#[derive(Debug, Clone, PartialEq)]
pub struct Mapping {
    pub start: u64,
    pub end: u64,
    pub offset: u64,
    pub path: String,
}

enum Bytes {
    Mapped(memmap2::Mmap),
    Owned(Vec<u8>),
}

impl Bytes {
    fn as_slice(&self) -> &[u8] {
        match self {
            Bytes::Mapped(map) => map,
            Bytes::Owned(bytes) => bytes,
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct SectionAt {
    address: u64,
    offset: usize,
    size: usize,
}

impl SectionAt {
    fn of(section: &object::Section<'_, '_>) -> Option<SectionAt> {
        let (offset, size) = section.file_range()?;
        Some(SectionAt {
            address: section.address(),
            offset: usize::try_from(offset).ok()?,
            size: usize::try_from(size).ok()?,
        })
    }

    fn slice<'d>(&self, data: &'d [u8]) -> Option<&'d [u8]> {
        data.get(self.offset..self.offset.checked_add(self.size)?)
    }
}

/// A loaded file's bytes, kept mapped, and where its unwind sections are (if it has any).
pub struct Cfi {
    data: Bytes,
    eh_frame: Option<SectionAt>,
    eh_frame_hdr: Option<SectionAt>,
    debug_frame: Option<SectionAt>,
    text: u64,
}

impl Cfi {
    fn read(data: Bytes) -> Option<Cfi> {
        let file = object::File::parse(data.as_slice()).ok()?;
        let section = |name: &str| file.section_by_name(name).and_then(|s| SectionAt::of(&s));
        let (eh_frame, eh_frame_hdr, debug_frame) = (
            section(".eh_frame"),
            section(".eh_frame_hdr"),
            section(".debug_frame"),
        );
        let text = file.section_by_name(".text").map_or(0, |s| s.address());
        drop(file);
        Some(Cfi {
            data,
            eh_frame,
            eh_frame_hdr,
            debug_frame,
            text,
        })
    }

    pub fn data(&self) -> &[u8] {
        self.data.as_slice()
    }

    pub fn bases(&self) -> BaseAddresses {
        let mut bases = BaseAddresses::default().set_text(self.text);
        if let Some(eh_frame) = self.eh_frame {
            bases = bases.set_eh_frame(eh_frame.address);
        }
        if let Some(hdr) = self.eh_frame_hdr {
            bases = bases.set_eh_frame_hdr(hdr.address);
        }
        bases
    }

    /// `.eh_frame` and `.eh_frame_hdr` (its search table), when there is an `.eh_frame`.
    pub fn eh_frame_sections<'d>(&self, data: &'d [u8]) -> Option<(&'d [u8], Option<&'d [u8]>)> {
        let eh_frame = self.eh_frame?.slice(data)?;
        Some((eh_frame, self.eh_frame_hdr.and_then(|hdr| hdr.slice(data))))
    }

    pub fn debug_frame_section<'d>(&self, data: &'d [u8]) -> Option<&'d [u8]> {
        self.debug_frame?.slice(data)
    }
}

/// One loaded ELF file.
pub struct Module {
    pub path: String,
    /// The addresses its mappings span.
    pub start: u64,
    pub end: u64,
    /// Runtime address minus link-time address.
    pub bias: u64,
    pub cfi: Option<Cfi>,
}

/// The loaded files, by address.
#[derive(Default)]
pub struct Modules {
    modules: Vec<Module>,
}

#[cfg(test)]
impl Modules {
    /// One module whose `.eh_frame` is `eh_frame` (at link-time address `eh_frame_address`),
    /// spanning `[start, end)` at `bias`: for the unwinder's tests.
    pub fn with_eh_frame(
        eh_frame: Vec<u8>,
        eh_frame_address: u64,
        start: u64,
        end: u64,
        bias: u64,
    ) -> Modules {
        let size = eh_frame.len();
        Modules {
            modules: vec![Module {
                path: "test".into(),
                start,
                end,
                bias,
                cfi: Some(Cfi {
                    data: Bytes::Owned(eh_frame),
                    eh_frame: Some(SectionAt {
                        address: eh_frame_address,
                        offset: 0,
                        size,
                    }),
                    eh_frame_hdr: None,
                    debug_frame: None,
                    text: 0,
                }),
            }],
        }
    }
}

#[cfg(test)]
impl Modules {
    /// One module whose only CFI is `.debug_frame` (at file offset 0), spanning `[start,
    /// end)` at `bias`: for the unwinder's tests.
    pub fn with_debug_frame(debug_frame: Vec<u8>, start: u64, end: u64, bias: u64) -> Modules {
        let size = debug_frame.len();
        Modules {
            modules: vec![Module {
                path: "test".into(),
                start,
                end,
                bias,
                cfi: Some(Cfi {
                    data: Bytes::Owned(debug_frame),
                    eh_frame: None,
                    eh_frame_hdr: None,
                    debug_frame: Some(SectionAt {
                        address: 0,
                        offset: 0,
                        size,
                    }),
                    text: 0,
                }),
            }],
        }
    }
}

/// The largest vDSO image read from memory.
const MAX_VDSO_BYTES: usize = 64 << 10;
const PAGE: usize = 4096;

impl Modules {
    /// The files of `mappings` (opened under `root`, a process's `/proc/PID/root` so that a
    /// container's files are its own), the executable where it was loaded, and the vDSO
    /// at `vdso` in `memory`.
    pub fn load(
        mappings: &[Mapping],
        root: Option<&Path>,
        executable: (&Path, u64),
        vdso: Option<u64>,
        memory: &dyn Memory,
    ) -> Modules {
        let mut modules = Vec::new();
        let (executable_path, executable_bias) = executable;
        if let Some(module) = file_module(executable_path, |_| Some(executable_bias), mappings) {
            modules.push(module);
        }
        let mut seen: Vec<&str> = Vec::new();
        for mapping in mappings {
            if seen.contains(&mapping.path.as_str()) || !mapping.path.starts_with('/') {
                continue;
            }
            seen.push(&mapping.path);
            let on_host = match root {
                Some(root) => root.join(mapping.path.trim_start_matches('/')),
                None => PathBuf::from(&mapping.path),
            };
            let bias = |object: &object::File<'_>| bias_of(object, mapping);
            let Some(mut module) = file_module(&on_host, bias, mappings) else {
                continue;
            };
            module.path = mapping.path.clone();
            // The executable was loaded from its own path already.
            if modules
                .iter()
                .any(|known: &Module| known.start == module.start)
            {
                continue;
            }
            modules.push(module);
        }
        if let Some(module) = vdso.and_then(|address| vdso_module(address, memory)) {
            modules.push(module);
        }
        modules.sort_by_key(|module| module.start);
        Modules { modules }
    }

    pub fn iter(&self) -> impl Iterator<Item = &Module> {
        self.modules.iter()
    }

    /// The module whose mappings hold `address`.
    pub fn containing(&self, address: u64) -> Option<&Module> {
        let after = self
            .modules
            .partition_point(|module| module.start <= address);
        let module = self.modules.get(after.checked_sub(1)?)?;
        (address < module.end).then_some(module)
    }
}

/// A file's module, spanning the mappings loaded at its bias (`bias`, from the parsed file
/// and where it was mapped: the file is opened and parsed once).
fn file_module(
    path: &Path,
    bias: impl FnOnce(&object::File<'_>) -> Option<u64>,
    mappings: &[Mapping],
) -> Option<Module> {
    let file = File::open(path).ok()?;
    // SAFETY: mapped read-only; a file rewritten meanwhile gives wrong CFI, which the unwind
    // tolerates (it stops).
    let map = unsafe { memmap2::Mmap::map(&file) }.ok()?;
    let (low, high, bias) = {
        let object = object::File::parse(&*map).ok()?;
        let bias = bias(&object)?;
        let mut low = u64::MAX;
        let mut high = 0u64;
        for segment in object.segments() {
            low = low.min(segment.address());
            high = high.max(segment.address().checked_add(segment.size())?);
        }
        (low, high, bias)
    };
    if low > high {
        return None;
    }
    let start = low.checked_add(bias)?;
    let end = high.checked_add(bias)?;
    // Where the file's own mappings say more (a segment larger than its mapping), keep them.
    let end = mappings
        .iter()
        .filter(|mapping| mapping.start >= start && mapping.start < end)
        .map(|mapping| mapping.end)
        .max()
        .map_or(end, |mapped| mapped.max(end));
    Some(Module {
        path: path.display().to_string(),
        start,
        end,
        bias,
        cfi: Cfi::read(Bytes::Mapped(map)),
    })
}

/// A file's load bias, from the lowest of its mappings: the segment that holds that
/// mapping's file offset was loaded at the mapping's start.
fn bias_of(object: &object::File<'_>, mapping: &Mapping) -> Option<u64> {
    for segment in object.segments() {
        let (offset, size) = segment.file_range();
        let page = (PAGE as u64) - 1;
        let first = offset & !page;
        if first <= mapping.offset && mapping.offset < offset.checked_add(size.max(1))? {
            let address = (segment.address() & !page).checked_add(mapping.offset - first)?;
            return mapping.start.checked_sub(address);
        }
    }
    None
}

/// The vDSO, read from the program's memory (it was never a file).
fn vdso_module(address: u64, memory: &dyn Memory) -> Option<Module> {
    let mut bytes = Vec::new();
    let mut page = vec![0u8; PAGE];
    while bytes.len() < MAX_VDSO_BYTES {
        let at = address.checked_add(bytes.len() as u64)?;
        if memory.read(at, &mut page).is_err() {
            break;
        }
        bytes.extend_from_slice(&page);
    }
    let (low, high) = {
        let object = object::File::parse(&*bytes).ok()?;
        let low = object.segments().map(|segment| segment.address()).min()?;
        let high = object
            .segments()
            .map(|segment| segment.address().saturating_add(segment.size()))
            .max()?;
        (low, high)
    };
    let bias = address.checked_sub(low)?;
    Some(Module {
        path: "[vdso]".to_string(),
        start: address,
        end: high.checked_add(bias)?,
        bias,
        cfi: Cfi::read(Bytes::Owned(bytes)),
    })
}
