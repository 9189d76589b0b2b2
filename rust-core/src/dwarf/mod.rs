//! The inferior's executable: its ELF facts and its DWARF, read with object and gimli.
//! Everything above this module asks by name ("the type called X", "the field called y")
//! and never sees gimli.

mod calls;
mod code;
mod elf;
mod index;
mod types;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use gimli::{AttributeValue, Reader as _, Section as _};

pub use calls::{CallSite, Signature};
pub use code::FunctionAt;
pub use elf::{ElfFacts, TlsSegment};
pub use index::{Index, TlsVariable};
pub use types::{Field, SourceLocation, TypeInfo, TypeTag, Variant, VariantPart, PIN_POINTER_FIELDS, PIN_PREFIX};

use crate::error::{Error, ErrorKind, Result};

pub type Reader = gimli::EndianArcSlice<gimli::RunTimeEndian>;
type Unit = gimli::Unit<Reader>;

/// A DIE named by its offset in `.debug_info`, valid across compilation units.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DieRef(pub u64);

/// One executable's debug information, loaded once and shared by every command.
pub struct DebugInfo {
    pub path: PathBuf,
    pub elf: ElfFacts,
    dwarf: gimli::Dwarf<Reader>,
    units: Vec<Unit>,
    /// `.debug_info` offset of each unit in `units`, ascending.
    unit_starts: Vec<u64>,
    pub index: Index,
    /// The tokio the executable was built with, from its compilation unit's source path
    /// (`…/tokio-1.54.1/src/lib.rs`); `None` when the path names no version (vendored).
    pub tokio_version: Option<String>,
    type_cache: Mutex<HashMap<DieRef, Arc<TypeInfo>>>,
    /// The executable itself, for the machine code of functions.
    file_bytes: memmap2::Mmap,
    /// Call sites by function path (see `calls.rs`), found on first use.
    call_sites: Mutex<HashMap<String, Arc<Vec<CallSite>>>>,
    coroutine_bodies: OnceLock<HashMap<String, Vec<DieRef>>>,
    /// GOT slots holding code addresses (`elf::code_slots`), read on first use: only the
    /// call scan for awaits inside macros needs them.
    code_slots: OnceLock<HashMap<u64, u64>>,
    signatures: Mutex<HashMap<DieRef, Signature>>,
    poll_call_lines: Mutex<HashMap<(String, String), Option<SourceLocation>>>,
}

impl DebugInfo {
    pub fn load(path: &Path) -> Result<DebugInfo> {
        let file = std::fs::File::open(path)
            .map_err(|error| Error::new(ErrorKind::Binary, format!("cannot open {}: {error}", path.display())))?;
        // SAFETY: the executable is mapped read-only; a concurrent rewrite of it would only
        // give wrong answers, which every later step already tolerates.
        let map = unsafe { memmap2::Mmap::map(&file) }
            .map_err(|error| Error::new(ErrorKind::Binary, format!("cannot map {}: {error}", path.display())))?;
        let object = object::File::parse(&*map)
            .map_err(|error| Error::new(ErrorKind::Binary, format!("{} is not an executable: {error}", path.display())))?;
        let elf = ElfFacts::read(&object)?;
        let endian = if object::Object::is_little_endian(&object) {
            gimli::RunTimeEndian::Little
        } else {
            gimli::RunTimeEndian::Big
        };
        let dwarf = gimli::Dwarf::load(|id| -> Result<Reader> {
            let data = elf::section_data(&object, id.name())?;
            Ok(gimli::EndianArcSlice::new(Arc::from(data), endian))
        })?;
        if dwarf.debug_info.reader().is_empty() {
            return Err(no_type_info(path, "it has no DWARF debug information"));
        }
        let mut units = Vec::new();
        let mut unit_starts = Vec::new();
        let mut headers = dwarf.units();
        while let Some(header) = headers.next()? {
            let start = header.offset().0 as u64;
            unit_starts.push(start);
            units.push(dwarf.unit(header)?);
        }
        let index = Index::build(&dwarf, &units, &unit_starts)?;
        let tokio_version = units.iter().find_map(|unit| {
            let name = unit.name.as_ref()?.to_string_lossy().ok()?;
            crate::names::crate_version(&name, "tokio")
        });
        if index.type_count() == 0 {
            return Err(no_type_info(path, "its DWARF has no type information"));
        }
        drop(object);
        Ok(DebugInfo {
            path: path.to_path_buf(),
            elf,
            dwarf,
            units,
            unit_starts,
            index,
            tokio_version,
            type_cache: Mutex::default(),
            file_bytes: map,
            call_sites: Mutex::default(),
            coroutine_bodies: OnceLock::new(),
            code_slots: OnceLock::new(),
            signatures: Mutex::default(),
            poll_call_lines: Mutex::default(),
        })
    }

    /// Bytes of the executable's read-only segments at a link-time address, from the file:
    /// what memory holds there whether or not a core file kept it. `None` outside them.
    pub fn read_only_bytes(&self, address: u64, len: usize) -> Option<&[u8]> {
        self.elf.read_only_segments.iter().find_map(|&(start, offset, size)| {
            let skip = address.checked_sub(start)?;
            let end = skip.checked_add(len as u64)?;
            if end > size {
                return None;
            }
            let from = usize::try_from(offset.checked_add(skip)?).ok()?;
            self.file_bytes.get(from..from.checked_add(len)?)
        })
    }

    fn unit_of(&self, die: DieRef) -> Result<(&Unit, gimli::UnitOffset<usize>)> {
        let position = match self.unit_starts.binary_search(&die.0) {
            Ok(position) => position,
            Err(0) => return Err(Error::layout(format!("DIE {:#x} lies before the first unit", die.0))),
            Err(position) => position - 1,
        };
        let unit = &self.units[position];
        let offset = gimli::DebugInfoOffset(die.0 as usize)
            .to_unit_offset(&unit.header)
            .ok_or_else(|| Error::layout(format!("DIE {:#x} lies outside every unit", die.0)))?;
        Ok((unit, offset))
    }

    /// The layout of the type at `die`, after typedefs and qualifiers, parsed once.
    pub fn type_info(&self, die: DieRef) -> Result<Arc<TypeInfo>> {
        if let Some(info) = self.type_cache.lock().unwrap().get(&die) {
            return Ok(info.clone());
        }
        let info = Arc::new(types::parse_type(self, die, 0)?);
        self.type_cache.lock().unwrap().insert(die, info.clone());
        Ok(info)
    }

    /// For a `Pin<P>`: the layout of P (`&mut F`, `Box<F>`, `Box<dyn Future>`, ...).
    pub fn pin_pointer(&self, pin: &TypeInfo) -> Option<Arc<TypeInfo>> {
        if !pin.name.starts_with(PIN_PREFIX) {
            return None;
        }
        let field = PIN_POINTER_FIELDS.iter().find_map(|name| pin.field(name))?;
        self.type_info(field.ty?).ok()
    }

    /// The layout of the type with this fully qualified name.
    pub fn type_named(&self, name: &str) -> Result<Option<Arc<TypeInfo>>> {
        match self.index.type_by_name(name) {
            Some(die) => self.type_info(die).map(Some),
            None => Ok(None),
        }
    }

    /// Template type parameters (name, type) of the subprogram that starts at `address`
    /// (an address in the executable's own numbering, load bias removed).
    pub fn subprogram_template_params(&self, address: u64) -> Result<Option<Vec<(String, DieRef)>>> {
        let Some(die) = self.index.subprogram_at(address) else { return Ok(None) };
        types::template_params_of_subprogram(self, die).map(Some)
    }

    fn attr_to_die(&self, unit: &Unit, value: AttributeValue<Reader>) -> Option<DieRef> {
        match value {
            AttributeValue::UnitRef(offset) => offset.to_debug_info_offset(&unit.header).map(|o| DieRef(o.0 as u64)),
            AttributeValue::DebugInfoRef(offset) => Some(DieRef(offset.0 as u64)),
            _ => None,
        }
    }

    fn attr_string(&self, unit: &Unit, value: AttributeValue<Reader>) -> Option<String> {
        let reader = self.dwarf.attr_string(unit, value).ok()?;
        Some(reader.to_string_lossy().ok()?.into_owned())
    }

    /// The source file named by a `DW_AT_decl_file` index in `unit`, as the DWARF spells it
    /// (joined to its directory unless that is the compilation directory).
    fn file_name(&self, unit: &Unit, index: u64) -> Option<String> {
        let program = unit.line_program.as_ref()?;
        let header = program.header();
        let file = header.file(index)?;
        let name = self.attr_string(unit, file.path_name())?;
        if name.starts_with('/') {
            return Some(name);
        }
        let comp_dir = unit.comp_dir.as_ref().and_then(|dir| dir.to_string_lossy().ok().map(|d| d.into_owned()));
        let directory = file.directory(header).and_then(|dir| self.attr_string(unit, dir));
        let joined = match directory {
            Some(dir) if !dir.is_empty() && Some(&dir) != comp_dir.as_ref() => format!("{dir}/{name}"),
            _ => name,
        };
        // A dependency compiled in its own crate directory: keep that directory, which
        // names the crate and its version.
        match comp_dir {
            Some(dir) if !joined.starts_with('/') && crate::names::is_dependency_dir(&dir) => Some(format!("{dir}/{joined}")),
            _ => Some(joined),
        }
    }
}

fn no_type_info(path: &Path, why: &str) -> Error {
    Error::new(
        ErrorKind::NoDebugInfo,
        format!(
            "{} cannot be inspected: {why} (stripped, or built with debug = \"line-tables-only\" or \"limited\"); \
             rebuild with `debug = true` in its Cargo profile (for release: [profile.release] debug = true)",
            path.display()
        ),
    )
}
