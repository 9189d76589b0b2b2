//! The compilation directories of a program's units: what a source path DWARF gives
//! relative (the user's own files, `src/main.rs`) is relative to.

use std::borrow::Cow;
use std::path::Path;

use object::{Object, ObjectSection};

use crate::error::{Error, ErrorKind, Result};

/// Each distinct `DW_AT_comp_dir` of the units in the ELF file at `path`, in unit order.
/// Reads only the units' headers and root DIEs.
pub fn compilation_dirs(path: &Path) -> Result<Vec<String>> {
    let unreadable = |error: &dyn std::fmt::Display| {
        Error::new(
            ErrorKind::NoDebugInfo,
            format!("cannot read {}: {error}", path.display()),
        )
    };
    let file = std::fs::File::open(path).map_err(|error| unreadable(&error))?;
    // SAFETY: the map is read-only and lives for this function; a file changed under it
    // gives wrong bytes (read as bad DWARF), not undefined behaviour in safe code here.
    let map = unsafe { memmap2::Mmap::map(&file) }.map_err(|error| unreadable(&error))?;
    let object = object::File::parse(&*map).map_err(|error| unreadable(&error))?;
    let load = |id: gimli::SectionId| -> std::result::Result<Cow<'_, [u8]>, gimli::Error> {
        Ok(object
            .section_by_name(id.name())
            .and_then(|section| section.uncompressed_data().ok())
            .unwrap_or(Cow::Borrowed(&[])))
    };
    let sections = gimli::DwarfSections::load(load).map_err(|error| unreadable(&error))?;
    let dwarf = sections.borrow(|section| gimli::EndianSlice::new(section, gimli::LittleEndian));
    let mut dirs: Vec<String> = Vec::new();
    let mut headers = dwarf.units();
    while let Ok(Some(header)) = headers.next() {
        let Ok(unit) = dwarf.unit(header) else {
            continue;
        };
        if let Some(dir) = unit.comp_dir {
            let dir = dir.to_string_lossy().into_owned();
            if !dirs.contains(&dir) {
                dirs.push(dir);
            }
        }
    }
    Ok(dirs)
}
