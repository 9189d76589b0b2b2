//! The inferior's executable: its ELF facts and its DWARF, read with object and gimli.
//! Everything above this module asks by name ("the type called X", "the field called y")
//! and never sees gimli.

mod calls;
mod code;
mod comp_dirs;
mod debug_files;
mod elf;
mod index;
mod locals;
mod resume;
mod searches;
mod split;
mod types;
mod units;

use std::cell::RefCell;
use std::hash::Hash;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use gimli::{AttributeValue, Reader as _, Section as _};
use rustc_hash::FxHashMap;
use thread_local::ThreadLocal;

pub use calls::{CallSite, Signature};
pub use code::FunctionAt;
pub use comp_dirs::compilation_dirs;
pub use elf::{build_id_of, ElfFacts, TlsSegment};
pub use index::{Index, StaticVariable, TlsVariable};
pub use locals::{FrameRegisters, InlinedScope, LocalValue, PhysicalFrame};
pub use resume::{AddressAtEntry, ResumeEntry};
pub use searches::{ThreadLocalPlace, ThreadLocalSearch, TraitMethods};
pub use types::{Field, SourceLocation, TypeInfo, TypeTag, Variant, VariantPart};

use crate::error::{Error, ErrorKind, Result};

pub type Reader = gimli::EndianReader<gimli::RunTimeEndian, elf::SectionBytes>;
/// How deep lexical blocks may nest inside one function before a walk stops looking.
const MAX_BLOCK_DEPTH: u32 = 64;
type Unit = gimli::Unit<Reader>;

/// A DIE named by its offset in `.debug_info`, valid across compilation units. Split units
/// each have a `.debug_info` of their own; each such section gets its own stretch of this
/// one offset space (see `SectionSet::base`), so a `DieRef` names a DIE in any of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DieRef(pub u64);

/// One set of DWARF sections: the executable's (or its debug file's), or a split unit's.
struct SectionSet {
    dwarf: gimli::Dwarf<Reader>,
    /// Where its `.debug_info` starts in the `DieRef` space.
    base: u64,
}

/// A compilation unit and the sections it is read from.
struct LoadedUnit {
    unit: Unit,
    /// Position in `UnitStore::sections`.
    sections: usize,
    /// A split unit's skeleton (in `sections[0]`): its line table and compilation
    /// directory are the ones the split unit's file indices refer to.
    skeleton: Option<Unit>,
}

/// One unit as the parsers use it: the unit, its sections and where its file names come from.
#[derive(Clone, Copy)]
pub(super) struct UnitView<'a> {
    pub unit: &'a Unit,
    pub dwarf: &'a gimli::Dwarf<Reader>,
    base: u64,
    /// The unit holding the line table (itself, or a split unit's skeleton) and its sections.
    line_unit: &'a Unit,
    line_dwarf: &'a gimli::Dwarf<Reader>,
}

impl std::ops::Deref for UnitView<'_> {
    type Target = Unit;

    fn deref(&self) -> &Unit {
        self.unit
    }
}

impl UnitView<'_> {
    /// The start of this unit in the `DieRef` space.
    fn start(&self) -> u64 {
        self.base + self.unit.header.offset().0 as u64
    }

    fn die(&self, offset: gimli::UnitOffset<usize>) -> DieRef {
        DieRef(self.start() + offset.0 as u64)
    }

    /// The DIE a reference attribute points at (in this unit, or anywhere in its `.debug_info`).
    fn attr_die(&self, value: AttributeValue<Reader>) -> Option<DieRef> {
        match value {
            AttributeValue::UnitRef(offset) => Some(self.die(offset)),
            AttributeValue::DebugInfoRef(offset) => Some(DieRef(self.base + offset.0 as u64)),
            // Type units (DW_FORM_ref_sig8): rustc emits none.
            _ => None,
        }
    }

    /// The DIE an entry takes its name, parameters and declaration from: its
    /// `DW_AT_specification`, else its `DW_AT_abstract_origin`.
    fn origin_of(&self, entry: &gimli::DebuggingInformationEntry<Reader>) -> Option<DieRef> {
        [
            gimli::constants::DW_AT_specification,
            gimli::constants::DW_AT_abstract_origin,
        ]
        .into_iter()
        .find_map(|attr| {
            entry
                .attr_value(attr)
                .and_then(|value| self.attr_die(value))
        })
    }

    fn attr_string(&self, value: AttributeValue<Reader>) -> Option<String> {
        string_attribute(self.dwarf, self.unit, value)
    }

    /// The source file named by a `DW_AT_decl_file`/`DW_AT_call_file` index (or a line-table
    /// row's), as the DWARF spells it (joined to its directory unless that is the
    /// compilation directory).
    fn file_name(&self, index: u64) -> Option<String> {
        let (unit, dwarf) = (self.line_unit, self.line_dwarf);
        let line_string = |value| string_attribute(dwarf, unit, value);
        let program = unit.line_program.as_ref()?;
        let header = program.header();
        let file = header.file(index)?;
        let name = line_string(file.path_name())?;
        if name.starts_with('/') {
            return Some(name);
        }
        let comp_dir = unit
            .comp_dir
            .as_ref()
            .and_then(|dir| dir.to_string_lossy().ok().map(|d| d.into_owned()));
        let directory = file.directory(header).and_then(line_string);
        let joined = match directory {
            Some(dir) if !dir.is_empty() && Some(&dir) != comp_dir.as_ref() => {
                format!("{dir}/{name}")
            }
            _ => name,
        };
        // A dependency compiled in its own crate directory: keep that directory, which
        // names the crate and its version.
        match comp_dir {
            Some(dir) if !joined.starts_with('/') && crate::names::is_dependency_dir(&dir) => {
                Some(format!("{dir}/{joined}"))
            }
            _ => Some(joined),
        }
    }

    /// Calls `visit` with each DIE declared in the scope at `node` (a function or a
    /// lexical block): its children, and the children of each nested lexical block that
    /// `enter` accepts, in order. Inlined calls and nested functions are scopes of their
    /// own and are not entered.
    fn for_each_in_scope(
        &self,
        node: gimli::EntriesTreeNode<'_, '_, Reader>,
        enter: &dyn Fn(&gimli::DebuggingInformationEntry<Reader>) -> bool,
        visit: &mut dyn FnMut(&gimli::DebuggingInformationEntry<Reader>),
    ) -> Result<()> {
        self.for_each_in_scope_below(node, enter, visit, 0)
    }

    fn for_each_in_scope_below(
        &self,
        node: gimli::EntriesTreeNode<'_, '_, Reader>,
        enter: &dyn Fn(&gimli::DebuggingInformationEntry<Reader>) -> bool,
        visit: &mut dyn FnMut(&gimli::DebuggingInformationEntry<Reader>),
        depth: u32,
    ) -> Result<()> {
        if depth > MAX_BLOCK_DEPTH {
            return Ok(());
        }
        let mut children = node.children();
        while let Some(child) = children.next()? {
            let entry = child.entry();
            if entry.tag() == gimli::constants::DW_TAG_lexical_block {
                if enter(entry) {
                    self.for_each_in_scope_below(child, enter, visit, depth + 1)?;
                }
            } else {
                visit(entry);
            }
        }
        Ok(())
    }

    /// The code ranges of a subprogram or inlined subroutine (`low_pc`/`high_pc` or `DW_AT_ranges`).
    fn code_ranges(&self, entry: &gimli::DebuggingInformationEntry<Reader>) -> Vec<(u64, u64)> {
        let mut ranges = Vec::new();
        if let Ok(mut iter) = self.dwarf.die_ranges(self.unit, entry) {
            while let Ok(Some(range)) = iter.next() {
                if range.begin != 0 && range.begin < range.end {
                    ranges.push((range.begin, range.end));
                }
            }
        }
        ranges
    }
}

/// A string attribute's text, wherever the unit's sections keep it.
fn string_attribute(
    dwarf: &gimli::Dwarf<Reader>,
    unit: &Unit,
    value: AttributeValue<Reader>,
) -> Option<String> {
    let reader = dwarf.attr_string(unit, value).ok()?;
    Some(reader.to_string_lossy().ok()?.into_owned())
}

/// A function path and the unit it was asked about from (the keys of `calls.rs`'s caches).
type FunctionInUnit = (String, Option<usize>);

/// One executable's debug information, loaded once and shared by every command.
pub struct DebugInfo {
    pub path: PathBuf,
    /// The separate debug file the DWARF came from, if not from the executable itself.
    pub debug_file: Option<PathBuf>,
    pub elf: ElfFacts,
    /// What loading could not find but did without (split units whose files are missing).
    pub load_problems: Vec<String>,
    /// The compilation units, their sections, and which units answer which question.
    units: units::UnitStore,
    /// The executable's own bytes and what is read from them on first need.
    image: elf::ExecutableImage,
    /// Parsed types. Each thread's own: two threads that shared one map (and so each
    /// type's `Arc`) would spend their time taking turns at its lock and reference counts.
    type_cache: ThreadLocal<RefCell<FxHashMap<DieRef, Arc<TypeInfo>>>>,
    /// Call sites, coroutine bodies and signatures, found on first use (`calls.rs`).
    calls: calls::CallCaches,
    /// Answers of searches across units, kept by what was asked (`searches.rs`).
    searches: searches::SearchCaches,
}

/// The answer kept under `key` in one of this module's caches, made by `make` the first
/// time (outside the lock: a search may ask another cache). The lock is taken even if
/// a panic, caught at the boundary, poisoned it: an entry is inserted whole. Two threads
/// may both make a missing answer; the first inserted is kept.
fn kept<K: Eq + Hash, V: Clone>(
    map: &Mutex<FxHashMap<K, V>>,
    key: K,
    make: impl FnOnce() -> V,
) -> V {
    let lock = || map.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(found) = lock().get(&key) {
        return found.clone();
    }
    let made = make();
    lock().entry(key).or_insert(made).clone()
}

/// How many missing `.dwo` files an error names.
const MISSING_NAMED: usize = 3;

/// What a load asks of the program besides readable DWARF.
#[derive(Default, Clone, Copy)]
pub struct LoadOptions<'a> {
    /// Where to look for a separate debug file (the debugger's own setting), before the
    /// system's directory.
    pub debug_dirs: &'a [PathBuf],
    /// The separate debug file the debugger loaded, however it found it: tried first.
    pub debugger_file: Option<&'a Path>,
    /// A crate whose types the program must have: its units are indexed at load, and a
    /// program without them is refused as having no type information.
    pub types_of: Option<&'a str>,
    /// Refuse a program whose symbols never name `types_of` (`NotTokio`) before reading its
    /// DWARF: loading ahead of any command must cost other programs nothing.
    pub only_if_linked: bool,
}

impl DebugInfo {
    /// The executable's GNU build id, in hex.
    pub fn build_id(&self) -> Option<String> {
        let file = object::File::parse(self.image.bytes()).ok()?;
        let id = object::Object::build_id(&file).ok()??;
        Some(id.iter().map(|byte| format!("{byte:02x}")).collect())
    }

    /// Loads the executable's DWARF, looking for a separate debug file only in
    /// `SYSTEM_DEBUG_DIR`.
    pub fn load(path: &Path) -> Result<DebugInfo> {
        DebugInfo::open(path, &LoadOptions::default())
    }

    /// Loads the executable's DWARF, looking for a separate debug file in `debug_dirs`, then
    /// `SYSTEM_DEBUG_DIR`.
    pub fn load_searching(path: &Path, debug_dirs: &[PathBuf]) -> Result<DebugInfo> {
        DebugInfo::open(
            path,
            &LoadOptions {
                debug_dirs,
                ..LoadOptions::default()
            },
        )
    }

    /// Loads the executable's DWARF: its own, or a separate debug file's (the debugger's,
    /// else one found in `options.debug_dirs`, then `SYSTEM_DEBUG_DIR`), with the split
    /// units a `.dwp` or `.dwo` files hold. Code, symbols and the TLS segment are always the
    /// executable's.
    pub fn open(path: &Path, options: &LoadOptions<'_>) -> Result<DebugInfo> {
        let map = Arc::new(map_file(path)?);
        let object = object::File::parse(&**map).map_err(|error| {
            Error::new(
                ErrorKind::Binary,
                format!("{} is not an executable: {error}", path.display()),
            )
        })?;
        let mut elf = ElfFacts::read(&object)?;
        let (main, debug_file) = main_dwarf(path, &object, &map, &mut elf, options)?;
        drop(object);
        if main.debug_info.reader().is_empty() {
            return Err(no_type_info(path, "it has no DWARF debug information", ""));
        }
        let mut sections = vec![SectionSet {
            base: 0,
            dwarf: main,
        }];
        let mut units = Vec::new();
        let mut headers = sections[0].dwarf.units();
        while let Some(header) = headers.next()? {
            let unit = sections[0].dwarf.unit(header)?;
            units.push(LoadedUnit {
                unit,
                sections: 0,
                skeleton: None,
            });
        }
        let load_problems =
            load_split_units(path, debug_file.as_deref(), &mut sections, &mut units)?;
        let unit_count = units.len();
        let debug = DebugInfo {
            path: path.to_path_buf(),
            debug_file,
            elf,
            load_problems,
            units: units::UnitStore::new(sections, units),
            image: elf::ExecutableImage::new(map),
            type_cache: ThreadLocal::new(),
            calls: calls::CallCaches::new(unit_count),
            searches: searches::SearchCaches::default(),
        };
        // The asked-for crate's units are the first a walk reads: index them now.
        if options
            .types_of
            .is_some_and(|krate| !debug.has_types(krate))
        {
            let why = match debug.load_problems.first() {
                Some(problem) => format!("its DWARF has no type information: {problem}"),
                None => "its DWARF has no type information".to_string(),
            };
            return Err(no_type_info(path, &why, ""));
        }
        Ok(debug)
    }

    /// Fills `buf` with what memory holds at a link-time address whether or not a core file
    /// kept it, from the executable: its read-only segments as they are in the file, and
    /// its relro segment relocated with `load_bias`. `None` elsewhere.
    pub fn executable_memory(&self, address: u64, load_bias: u64, buf: &mut [u8]) -> Option<()> {
        self.image.memory(&self.elf, address, load_bias, buf)
    }

    fn view<'a>(&'a self, unit: &'a LoadedUnit) -> UnitView<'a> {
        view(&self.units.sections, unit)
    }

    fn unit_of(&self, die: DieRef) -> Result<(UnitView<'_>, gimli::UnitOffset<usize>)> {
        let position = match self.units.starts.binary_search(&die.0) {
            Ok(position) => position,
            Err(0) => {
                return Err(Error::layout(format!(
                    "DIE {:#x} lies before the first unit",
                    die.0
                )))
            }
            Err(position) => position - 1,
        };
        let view = self.view(&self.units.loaded[position]);
        let offset = die
            .0
            .checked_sub(view.base)
            .and_then(|local| {
                gimli::DebugInfoOffset(local as usize).to_unit_offset(&view.unit.header)
            })
            .ok_or_else(|| Error::layout(format!("DIE {:#x} lies outside every unit", die.0)))?;
        Ok((view, offset))
    }

    /// The link-time address of the one symbol whose (mangled) name contains `fragment`:
    /// a static's, say; `None` when none does, or several.
    pub fn symbol_containing(&self, fragment: &str) -> Option<u64> {
        let mut found = self
            .elf
            .symbols
            .iter()
            .filter(|(name, _)| name.contains(fragment))
            .map(|(_, &address)| address);
        let first = found.next()?;
        found.all(|other| other == first).then_some(first)
    }

    /// The version of crate `name` the executable was built with, from the source path of
    /// one of its compilation units (`…/tokio-1.54.1/src/lib.rs`); `None` when no path
    /// names one (a vendored crate).
    pub fn crate_version(&self, name: &str) -> Option<String> {
        self.units.loaded.iter().find_map(|loaded| {
            let unit_name = loaded.unit.name.as_ref()?.to_string_lossy().ok()?;
            crate::names::crate_version(&unit_name, name)
        })
    }

    /// The layout of the type at `die`, after typedefs and qualifiers, parsed once.
    pub fn type_info(&self, die: DieRef) -> Result<Arc<TypeInfo>> {
        let cache = self.type_cache.get_or_default();
        if let Some(info) = cache.borrow().get(&die) {
            return Ok(info.clone());
        }
        // Not borrowed while parsing: a type's parse asks for the types it holds.
        let info = Arc::new(types::parse_type(self, die, 0)?);
        cache.borrow_mut().insert(die, info.clone());
        Ok(info)
    }

    /// The layout of a field's type, kept on the field after its first use.
    pub fn field_type(&self, field: &Field) -> Result<Arc<TypeInfo>> {
        if let Some(info) = field.resolved.0.get() {
            return Ok(info.clone());
        }
        let ty = field
            .ty
            .ok_or_else(|| Error::layout(format!("field `{}` has no type", field.name)))?;
        let info = self.type_info(ty)?;
        let _ = field.resolved.0.set(info.clone());
        Ok(info)
    }

    /// The layout of the type with this fully qualified name.
    pub fn type_named(&self, name: &str) -> Result<Option<Arc<TypeInfo>>> {
        self.type_named_near(name, None)
    }

    /// `type_named`, looking first in `near`'s unit and crate (a type the name's generic
    /// arguments come from, where the generic type is instantiated).
    pub fn type_named_near(
        &self,
        name: &str,
        near: Option<DieRef>,
    ) -> Result<Option<Arc<TypeInfo>>> {
        match self.type_by_name(name, near) {
            Some(die) => self.type_info(die).map(Some),
            None => Ok(None),
        }
    }

    /// Template type parameters (name, type) of the subprogram that starts at `address`
    /// (an address in the executable's own numbering, load bias removed).
    pub fn subprogram_template_params(
        &self,
        address: u64,
    ) -> Result<Option<Vec<(String, DieRef)>>> {
        let Some(die) = self.subprogram_at(address) else {
            return Ok(None);
        };
        types::template_params_of_subprogram(self, die).map(Some)
    }
}

fn view<'a>(sections: &'a [SectionSet], loaded: &'a LoadedUnit) -> UnitView<'a> {
    let set = &sections[loaded.sections];
    let (line_unit, line_dwarf) = match &loaded.skeleton {
        Some(skeleton) => (skeleton, &sections[0].dwarf),
        None => (&loaded.unit, &set.dwarf),
    };
    UnitView {
        unit: &loaded.unit,
        dwarf: &set.dwarf,
        base: set.base,
        line_unit,
        line_dwarf,
    }
}

/// Replaces each skeleton unit in `units` by its split unit, each with a section set of its
/// own placed after the last one in the `DieRef` space. Returns what could not be found.
fn load_split_units(
    executable: &Path,
    debug_file: Option<&Path>,
    sections: &mut Vec<SectionSet>,
    units: &mut Vec<LoadedUnit>,
) -> Result<Vec<String>> {
    let skeleton_positions: Vec<usize> = units
        .iter()
        .enumerate()
        .filter(|(_, loaded)| loaded.unit.dwo_id.is_some())
        .map(|(position, _)| position)
        .collect();
    if skeleton_positions.is_empty() {
        return Ok(Vec::new());
    }
    // rustc's packed split debug info: `<executable>.dwp`; a debug file may have its own.
    let mut packages = vec![with_suffix(executable, ".dwp")];
    if let Some(debug_file) = debug_file {
        packages.push(with_suffix(debug_file, ".dwp"));
        packages.push(debug_file.with_extension("dwp"));
    }
    let executable_dir = executable.parent().unwrap_or(Path::new("."));
    let skeletons: Vec<&Unit> = skeleton_positions
        .iter()
        .map(|&position| &units[position].unit)
        .collect();
    let found = split::load(&sections[0].dwarf, &skeletons, &packages, executable_dir)?;
    let mut next_base = sections[0].dwarf.debug_info.reader().len() as u64;
    let mut split_units = Vec::new();
    for (&position, split) in skeleton_positions.iter().zip(found.units) {
        let Some(split) = split else { continue };
        let base = next_base;
        // One spare byte keeps an empty section's start from being the next one's.
        next_base = base + split.dwarf.debug_info.reader().len() as u64 + 1;
        sections.push(SectionSet {
            dwarf: split.dwarf,
            base,
        });
        split_units.push((
            position,
            LoadedUnit {
                unit: split.unit,
                sections: sections.len() - 1,
                skeleton: None,
            },
        ));
    }
    // Each skeleton found moves into its split unit, which goes to the end (its DieRefs are
    // past every earlier one); skeletons not found stay, with nothing in them.
    for (position, mut split) in split_units.into_iter().rev() {
        let skeleton = units.remove(position);
        split.skeleton = Some(skeleton.unit);
        units.push(split);
    }
    units.sort_by_key(|loaded| view(sections, loaded).start());
    missing_split_units(
        executable,
        &found.missing,
        found.package.as_deref(),
        &packages[0],
        skeleton_positions.len(),
    )
}

/// What the split units not found cost: nothing when all were found, a problem line
/// when some were, the error when none was (`looked_for`: the package looked for first).
fn missing_split_units(
    executable: &Path,
    missing: &[PathBuf],
    package: Option<&Path>,
    looked_for: &Path,
    skeletons: usize,
) -> Result<Vec<String>> {
    if missing.is_empty() {
        return Ok(Vec::new());
    }
    let package = match package {
        Some(package) => format!("not in {}", package.display()),
        None => format!("no {}", looked_for.display()),
    };
    let mut dwo_files: Vec<String> = missing
        .iter()
        .take(MISSING_NAMED)
        .map(|path| path.display().to_string())
        .collect();
    if missing.len() > MISSING_NAMED {
        dwo_files.push(format!("and {} more", missing.len() - MISSING_NAMED));
    }
    let looked = format!("{package}, no {}", dwo_files.join(", "));
    if missing.len() == skeletons {
        return Err(Error::new(
            ErrorKind::NoDebugInfo,
            format!(
                "{} cannot be inspected: its DWARF is split (-C split-debuginfo) and none of its {skeletons} split units was found: \
                 {looked}; keep the .dwp next to the executable, or the .dwo files where the build wrote them",
                executable.display(),
            ),
        ));
    }
    Ok(vec![format!(
        "split DWARF: {} of {skeletons} units not found: {looked}",
        missing.len(),
    )])
}

/// `path` with `suffix` appended to its file name (`tokio-app` -> `tokio-app.dwp`).
fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_os_string();
    name.push(suffix);
    PathBuf::from(name)
}

/// The executable, mapped.
fn map_file(path: &Path) -> Result<memmap2::Mmap> {
    let file = std::fs::File::open(path).map_err(|error| {
        Error::new(
            ErrorKind::Binary,
            format!("cannot open {}: {error}", path.display()),
        )
    })?;
    // SAFETY: the executable is mapped read-only, and its DWARF is read from the mapping
    // for the life of the session. Rewriting the file in place would give wrong answers,
    // which every later step tolerates; truncating it in place would fault, as it would
    // in GDB and LLDB, which map it too. Builds replace the file (a new inode), and each
    // command reloads a file whose size or time changed.
    unsafe { memmap2::Mmap::map(&file) }.map_err(|error| {
        Error::new(
            ErrorKind::Binary,
            format!("cannot map {}: {error}", path.display()),
        )
    })
}

/// The executable's DWARF, or its separate debug file's (whose symbols `elf` then
/// takes too), and that file's path; refused when `options` asks for a crate the
/// program does not link.
fn main_dwarf(
    path: &Path,
    object: &object::File<'_>,
    map: &Arc<memmap2::Mmap>,
    elf: &mut ElfFacts,
    options: &LoadOptions<'_>,
) -> Result<(gimli::Dwarf<Reader>, Option<PathBuf>)> {
    let refuse_unless_linked = |elf: &ElfFacts| match options.types_of {
        Some(krate) if options.only_if_linked && !elf.links_crate(krate) => Err(Error::new(
            ErrorKind::NotTokio,
            format!("{} does not link {krate}", path.display()),
        )),
        _ => Ok(()),
    };
    if elf::has_dwarf(object) {
        refuse_unless_linked(elf)?;
        return Ok((elf::load_dwarf(object, map)?, None));
    }
    let search = debug_files::search(path, object, options.debug_dirs, options.debugger_file);
    let Some(found) = search.found else {
        let looked = match search.looked.is_empty() {
            true => {
                "it has neither a build id nor a .gnu_debuglink to find a separate debug file by"
                    .to_string()
            }
            false => format!("no separate debug file at {}", search.looked.join(", ")),
        };
        return Err(no_type_info(
            path,
            "it has no DWARF debug information",
            &looked,
        ));
    };
    let debug_map = Arc::new(found.map);
    let debug_object = object::File::parse(&**debug_map).map_err(|error| {
        Error::new(
            ErrorKind::Binary,
            format!("{} is not an object file: {error}", found.path.display()),
        )
    })?;
    elf.add_symbols_from(&debug_object);
    refuse_unless_linked(elf)?;
    let dwarf = elf::load_dwarf(&debug_object, &debug_map)?;
    Ok((dwarf, Some(found.path)))
}

/// The one line for an executable without usable DWARF; `looked` says where else it was
/// looked for, if anywhere.
fn no_type_info(path: &Path, why: &str, looked: &str) -> Error {
    let looked = if looked.is_empty() {
        String::new()
    } else {
        format!("; {looked}")
    };
    Error::new(
        ErrorKind::NoDebugInfo,
        format!(
            "{} cannot be inspected: {why} (stripped, or built with debug = \"line-tables-only\" or \"limited\"); \
             rebuild with `debug = true` in its Cargo profile (for release: [profile.release] debug = true){looked}",
            path.display()
        ),
    )
}

#[cfg(test)]
#[path = "../../tests/common/mod.rs"]
mod common;

#[cfg(test)]
mod tests {
    use super::*;

    /// A lookup reads only the units it needs, and answers as a search of every unit does.
    #[test]
    fn lookups_read_only_the_units_they_need_and_answer_as_a_whole_index() {
        let path = common::fixture("tokio-app", "dev");
        let whole = DebugInfo::load(&path).unwrap();
        whole.index_all();
        let (all, total) = whole.units_indexed();
        assert_eq!(all, total);

        let tokio_first = LoadOptions {
            types_of: Some("tokio"),
            ..LoadOptions::default()
        };
        let lazy = DebugInfo::open(&path, &tokio_first).unwrap();
        let (at_load, _) = lazy.units_indexed();
        assert!(
            at_load > 0 && at_load * 4 < total,
            "{at_load} of {total} units indexed at load"
        );
        let header = lazy
            .type_by_name("tokio::runtime::task::core::Header", None)
            .unwrap();
        assert_eq!(
            lazy.indexed_type_name(header),
            Some("tokio::runtime::task::core::Header")
        );
        assert_eq!(
            lazy.units_indexed().0,
            at_load,
            "tokio's own units answer for its types"
        );

        let mut types = 0;
        let mut subprograms = 0;
        for at in 0..total {
            let index = whole.unit_index(at);
            for (name, _) in index.types().take(20) {
                let found = lazy
                    .type_by_name(name, None)
                    .unwrap_or_else(|| panic!("{name} not found"));
                assert_eq!(lazy.indexed_type_name(found), Some(name));
                types += 1;
            }
            for &(start, _, _) in index.code_range_list().iter().take(20) {
                let first_anywhere =
                    (0..total).find_map(|unit| whole.unit_index(unit).subprogram_at(start));
                assert_eq!(lazy.subprogram_at(start), first_anywhere, "{start:#x}");
                assert_eq!(
                    lazy.subprogram_containing(start),
                    whole.subprogram_containing(start),
                    "{start:#x}"
                );
                subprograms += 1;
            }
        }
        assert!(
            types > 1_000 && subprograms > 1_000,
            "{types} types, {subprograms} subprograms"
        );
        assert!(lazy.subprogram_at(0x10).is_none());
    }

    /// A unit whose DIEs cannot be read answers nothing and is named, and the others answer.
    #[test]
    fn an_unreadable_unit_is_named_and_the_others_answer() {
        let path = common::fixture("tokio-app", "dev");
        let mut bytes = std::fs::read(&path).unwrap();
        let (section_offset, last_unit) = {
            let debug = DebugInfo::load(&path).unwrap();
            let object = object::File::parse(&*bytes).unwrap();
            let section = object::Object::section_by_name(&object, ".debug_info").unwrap();
            let (offset, _) = object::ObjectSection::file_range(&section).unwrap();
            let last = &debug.units.loaded.last().unwrap().unit;
            // The DIE after the unit's root (which loading reads).
            let mut entries = last.entries();
            entries.next_dfs().unwrap();
            let second = entries.next_dfs().unwrap().unwrap();
            (offset as usize, (last.header.offset().0, second.offset().0))
        };
        // Its abbreviation code: one no table defines.
        let second_die = section_offset + last_unit.0 + last_unit.1;
        bytes[second_die..second_die + 5].copy_from_slice(&[0xff, 0xff, 0xff, 0xff, 0x0f]);
        let copy =
            std::env::temp_dir().join(format!("tokio-async-unreadable-{}", std::process::id()));
        std::fs::write(&copy, &bytes).unwrap();

        let debug = DebugInfo::load(&copy).unwrap();
        assert!(debug
            .type_by_name("tokio::runtime::task::core::Header", None)
            .is_some());
        assert!(
            debug.unreadable_units().is_empty(),
            "{:?}",
            debug.unreadable_units()
        );
        debug.index_all();
        let unreadable = debug.unreadable_units();
        std::fs::remove_file(&copy).unwrap();
        assert_eq!(unreadable.len(), 1, "{unreadable:?}");
        assert!(
            unreadable[0].starts_with(&format!(
                "the DWARF unit at {:#x} is unreadable: ",
                last_unit.0
            )),
            "{unreadable:?}"
        );
    }
}
