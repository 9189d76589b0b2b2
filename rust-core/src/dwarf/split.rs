//! Split DWARF (`-C split-debuginfo=packed|unpacked`): the executable keeps one skeleton
//! unit per compilation unit (its addresses, line table and dwo id) and the unit's DIEs live
//! in a `.dwp` package next to the executable or in the `.dwo` file the skeleton names
//! (`DW_AT_dwo_name`, DWARF 4's `DW_AT_GNU_dwo_name`, relative to its `DW_AT_comp_dir`).

use std::path::{Path, PathBuf};

use super::elf::{self, SectionNames};
use super::{Reader, Unit};
use crate::error::{Error, ErrorKind, Result};

/// A split compilation unit with its own sections (`.debug_addr` and DWARF 4's
/// `.debug_ranges` are the executable's, through `Dwarf::make_dwo`).
pub(super) struct SplitUnit {
    pub dwarf: gimli::Dwarf<Reader>,
    pub unit: Unit,
}

/// The split unit of each skeleton (same order), and the files that were not there.
pub(super) struct SplitUnits {
    pub units: Vec<Option<SplitUnit>>,
    /// `.dwo` files named by skeletons whose unit was found nowhere.
    pub missing: Vec<PathBuf>,
    /// The package the units came from, if there was one.
    pub package: Option<PathBuf>,
}

/// Finds the split unit of every skeleton: in the first of `packages` that exists, else in
/// the `.dwo` file it names (tried as named, then next to the executable).
pub(super) fn load(
    main: &gimli::Dwarf<Reader>,
    skeletons: &[&Unit],
    packages: &[PathBuf],
    executable_dir: &Path,
) -> Result<SplitUnits> {
    let package = packages.iter().find(|path| path.is_file());
    let dwp = match package {
        Some(path) => Some(load_package(path)?),
        None => None,
    };
    let mut result = SplitUnits {
        units: Vec::new(),
        missing: Vec::new(),
        package: package.cloned(),
    };
    for skeleton in skeletons {
        let Some(dwo_id) = skeleton.dwo_id else {
            result.units.push(None);
            continue;
        };
        if let (Some(dwp), Some(path)) = (&dwp, package) {
            let in_package = || -> Result<Option<SplitUnit>> {
                match dwp.find_cu(dwo_id, main)? {
                    Some(dwarf) => split_unit(dwarf, skeleton, dwo_id),
                    None => Ok(None),
                }
            };
            if let Some(unit) = in_package().map_err(|error| error.context(path.display()))? {
                result.units.push(Some(unit));
                continue;
            }
        }
        let candidates = dwo_candidates(main, skeleton, executable_dir);
        let Some(path) = candidates
            .iter()
            .find(|path| path.is_file())
            .or(candidates.first())
            .cloned()
        else {
            result.units.push(None);
            continue;
        };
        // An unreadable file counts as missing: the units found still give a report.
        let dwarf = load_dwo(&path, main).ok();
        let unit = match dwarf {
            Some(dwarf) => split_unit(dwarf, skeleton, dwo_id)?,
            None => None,
        };
        if unit.is_none() {
            result.missing.push(path);
        }
        result.units.push(unit);
    }
    Ok(result)
}

/// The compilation unit with this dwo id in a split file's sections, with the skeleton's
/// relocated attributes (low_pc, addr_base, DWARF 4's ranges base).
fn split_unit(
    dwarf: gimli::Dwarf<Reader>,
    skeleton: &Unit,
    dwo_id: gimli::DwoId,
) -> Result<Option<SplitUnit>> {
    let mut headers = dwarf.units();
    while let Some(header) = headers.next()? {
        let mut unit = dwarf.unit(header)?;
        if unit.dwo_id == Some(dwo_id) {
            unit.copy_relocated_attributes(skeleton);
            return Ok(Some(SplitUnit { dwarf, unit }));
        }
    }
    Ok(None)
}

fn load_package(path: &Path) -> Result<gimli::DwarfPackage<Reader>> {
    let cannot = |why: String| {
        Error::new(
            ErrorKind::Binary,
            format!("cannot read the DWARF package {}: {why}", path.display()),
        )
    };
    let file = std::fs::File::open(path).map_err(|error| cannot(error.to_string()))?;
    // SAFETY: mapped read-only, like the executable (see `DebugInfo::load`).
    let map = std::sync::Arc::new(
        unsafe { memmap2::Mmap::map(&file) }.map_err(|error| cannot(error.to_string()))?,
    );
    let object = object::File::parse(&**map).map_err(|error| cannot(error.to_string()))?;
    let empty = elf::empty_reader(elf::endian(&object));
    gimli::DwarfPackage::load(
        |id| elf::dwarf_section(&object, &map, id, SectionNames::Split),
        empty,
    )
    .map_err(|error: Error| cannot(error.message()))
}

fn load_dwo(path: &Path, main: &gimli::Dwarf<Reader>) -> Result<gimli::Dwarf<Reader>> {
    let cannot = |why: String| {
        Error::new(
            ErrorKind::Binary,
            format!("cannot read {}: {why}", path.display()),
        )
    };
    let file = std::fs::File::open(path).map_err(|error| cannot(error.to_string()))?;
    // SAFETY: as above.
    let map = std::sync::Arc::new(
        unsafe { memmap2::Mmap::map(&file) }.map_err(|error| cannot(error.to_string()))?,
    );
    let object = object::File::parse(&**map).map_err(|error| cannot(error.to_string()))?;
    let mut dwarf =
        gimli::Dwarf::load(|id| elf::dwarf_section(&object, &map, id, SectionNames::Split))?;
    dwarf.make_dwo(main);
    Ok(dwarf)
}

/// Where the skeleton's `.dwo` file may be: as named (joined to its compilation directory
/// when relative), then by its file name next to the executable (a build tree moved with it).
fn dwo_candidates(
    main: &gimli::Dwarf<Reader>,
    skeleton: &Unit,
    executable_dir: &Path,
) -> Vec<PathBuf> {
    use gimli::Reader as _;
    let Some(name) = skeleton
        .dwo_name()
        .ok()
        .flatten()
        .and_then(|value| main.attr_string(skeleton, value).ok())
        .and_then(|name| {
            name.to_string_lossy()
                .ok()
                .map(|name| PathBuf::from(name.as_ref()))
        })
    else {
        return Vec::new();
    };
    let mut candidates = Vec::new();
    match &skeleton.comp_dir {
        Some(dir) if name.is_relative() => {
            if let Ok(dir) = dir.to_string_lossy() {
                candidates.push(Path::new(dir.as_ref()).join(&name));
            }
        }
        _ => candidates.push(name.clone()),
    }
    if let Some(file_name) = name.file_name() {
        candidates.push(executable_dir.join(file_name));
    }
    candidates
}
