//! Memory of a core file read straight from the file, mapped: no call into the debugger's
//! Python per page. The core's `PT_LOAD` segments give each address range's bytes; a range
//! the core left out (a kernel core omits unmodified file-backed pages) is unreadable here,
//! and `memory::WithExecutable` fills it from the executable as for any other backend.

use std::fs::File;
use std::path::Path;

use object::elf::{ET_CORE, PT_LOAD};
use object::read::elf::{ElfFile64, FileHeader, ProgramHeader};
use object::Endianness;

use crate::error::{Error, ErrorKind, Result};
use crate::memory::Memory;
use crate::model::{ClockSource, TakenAt};

/// One `PT_LOAD` segment's bytes present in the file.
struct Segment {
    address: u64,
    /// Bytes present in the file (`p_filesz`), from `offset`.
    size: u64,
    offset: u64,
}

pub struct CoreFileMemory {
    map: memmap2::Mmap,
    /// By address, not overlapping.
    segments: Vec<Segment>,
}

impl CoreFileMemory {
    pub fn open(path: &Path) -> Result<Self> {
        let failed = |why: String| {
            Error::new(
                ErrorKind::Binary,
                format!("core file {}: {why}", path.display()),
            )
        };
        let file = File::open(path).map_err(|error| failed(error.to_string()))?;
        // SAFETY: mapped read-only; a core rewritten meanwhile only gives wrong bytes, which
        // every reader already tolerates.
        let map =
            unsafe { memmap2::Mmap::map(&file) }.map_err(|error| failed(error.to_string()))?;
        let elf =
            ElfFile64::<Endianness>::parse(&*map).map_err(|error| failed(error.to_string()))?;
        let endian = elf.endian();
        if elf.elf_header().e_type(endian) != ET_CORE {
            return Err(failed("not a core file".into()));
        }
        let mut segments: Vec<Segment> = elf
            .elf_program_headers()
            .iter()
            .filter(|header| header.p_type(endian) == PT_LOAD && header.p_filesz(endian) > 0)
            .map(|header| Segment {
                address: header.p_vaddr(endian),
                size: header.p_filesz(endian).min(header.p_memsz(endian)),
                offset: header.p_offset(endian),
            })
            .filter(|segment| {
                segment
                    .offset
                    .checked_add(segment.size)
                    .is_some_and(|end| end <= map.len() as u64)
                    && segment.address.checked_add(segment.size).is_some()
            })
            .collect();
        segments.sort_by_key(|segment| segment.address);
        Ok(CoreFileMemory { map, segments })
    }

    /// The segment holding `address`.
    fn segment_at(&self, address: u64) -> Option<&Segment> {
        let after = self
            .segments
            .partition_point(|segment| segment.address <= address);
        let segment = self.segments.get(after.checked_sub(1)?)?;
        (address - segment.address < segment.size).then_some(segment)
    }
}

/// What a core file cut short lacks, as a sentence (`ulimit -c`, a full disk or a partial
/// copy leave its headers promising segments past its end); `None` for a whole file, or one
/// that is no ELF core at all.
pub fn truncation_note(path: &Path) -> Option<String> {
    let file = File::open(path).ok()?;
    // SAFETY: as in `open`: read-only, and only the headers are read.
    let map = unsafe { memmap2::Mmap::map(&file) }.ok()?;
    let elf = ElfFile64::<Endianness>::parse(&*map).ok()?;
    let endian = elf.endian();
    if elf.elf_header().e_type(endian) != ET_CORE {
        return None;
    }
    let expected = elf
        .elf_program_headers()
        .iter()
        .map(|header| {
            header
                .p_offset(endian)
                .saturating_add(header.p_filesz(endian))
        })
        .max()?;
    let present = map.len() as u64;
    (expected > present).then(|| {
        format!(
            "core file {} is truncated: it has {present} of the {expected} bytes its headers describe, \
             so memory stored past its end cannot be read",
            path.display()
        )
    })
}

impl Memory for CoreFileMemory {
    fn second_reader(&self) -> Option<Box<dyn Memory + Send + '_>> {
        Some(Box::new(crate::memory::SharedReader(self)))
    }

    /// Unmaps the pages read so far; the next read of one maps it again from the file.
    /// Otherwise every task of a large core would stay in the debugger's RSS.
    fn release_cache(&self) {
        // SAFETY: the mapping is private and read-only, so nothing is lost: a dropped page
        // reads back the same bytes from the file, and no reference into the map outlives
        // a `read` call.
        let _ = unsafe {
            self.map
                .unchecked_advise(memmap2::UncheckedAdvice::DontNeed)
        };
    }

    fn read(&self, address: u64, buf: &mut [u8]) -> Result<()> {
        let mut done = 0usize;
        while done < buf.len() {
            let at = address
                .checked_add(done as u64)
                .ok_or_else(|| Error::memory(address, buf.len()))?;
            let segment = self
                .segment_at(at)
                .ok_or_else(|| Error::memory(address, buf.len()))?;
            let within = at - segment.address;
            let take = ((segment.size - within) as usize).min(buf.len() - done);
            let start = (segment.offset + within) as usize;
            buf[done..done + take].copy_from_slice(&self.map[start..start + take]);
            done += take;
        }
        Ok(())
    }
}

/// When the core was taken: the time systemd-coredump recorded with it (extended attribute
/// `user.coredump.timestamp`, microseconds since the epoch), else the file's modification
/// time (it is written at or just after the stop).
pub fn taken_at(path: &Path) -> Option<TakenAt> {
    if let Some(micros) = xattr_number(path, "user.coredump.timestamp") {
        return Some(TakenAt {
            unix_secs: micros as f64 / 1e6,
            source: ClockSource::CoreDumpTime,
        });
    }
    let modified = std::fs::metadata(path).ok()?.modified().ok()?;
    let since_epoch = modified.duration_since(std::time::UNIX_EPOCH).ok()?;
    Some(TakenAt {
        unix_secs: since_epoch.as_secs_f64(),
        source: ClockSource::CoreFileTime,
    })
}

fn xattr_number(path: &Path, name: &str) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let path = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
    let name = std::ffi::CString::new(name).ok()?;
    let mut value = [0u8; 32];
    // SAFETY: both strings are NUL-terminated and `value` is as long as we say.
    let length = unsafe {
        libc::getxattr(
            path.as_ptr(),
            name.as_ptr(),
            value.as_mut_ptr().cast(),
            value.len(),
        )
    };
    let length = usize::try_from(length).ok()?;
    std::str::from_utf8(value.get(..length)?)
        .ok()?
        .trim_end_matches('\0')
        .trim()
        .parse()
        .ok()
}
