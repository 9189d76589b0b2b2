//! Where one instance of a coroutine can be stopped: each code-bearing copy of its resume
//! function (out of line, or inlined into a caller), that copy's first instruction, and
//! where the coroutine's address is at that instruction.

use gimli::{constants, AttributeValue, Reader as _};

use super::{DebugInfo, DieRef, Reader, UnitView};
use crate::error::Result;

/// Where a resume function's copy holds the coroutine's address at its first instruction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AddressAtEntry {
    /// The register DWARF names there (its DWARF number).
    Register(u16),
    /// An out-of-line copy whose DWARF locates the address only after its prologue (a debug
    /// build's stack slot): at the call it is the first argument, or the second when the
    /// return value goes through a hidden pointer (which cannot equal the coroutine's).
    FirstOrSecondArgument,
}

/// One code-bearing copy of a resume function.
#[derive(Debug, Clone)]
pub struct ResumeEntry {
    /// Its first instruction, in the executable's own numbering.
    pub address: u64,
    pub inlined: bool,
    /// The type of its first parameter (`Pin<&mut Env>` names which coroutine it resumes).
    pub first_parameter_type: Option<DieRef>,
    /// `None`: an inlined copy whose DWARF does not say where the address is at its start.
    pub address_at_entry: Option<AddressAtEntry>,
}

impl DebugInfo {
    /// The copies of the resume functions at `function_path` (every instantiation in the
    /// units `call_sites_in` would search for `near`, a DIE of the coroutine's type).
    pub fn resume_entries(&self, function_path: &str, near: DieRef) -> Vec<ResumeEntry> {
        let mut entries: Vec<ResumeEntry> = self
            .concrete_functions(function_path, near)
            .into_iter()
            .filter_map(|die| self.resume_entry(die).ok().flatten())
            .collect();
        entries.sort_by_key(|entry| entry.address);
        entries.dedup_by_key(|entry| entry.address);
        entries
    }

    fn resume_entry(&self, die: DieRef) -> Result<Option<ResumeEntry>> {
        let (unit, offset) = self.unit_of(die)?;
        let mut tree = unit.entries_tree(Some(offset))?;
        let root = tree.root()?;
        let entry = root.entry();
        let inlined = entry.tag() == constants::DW_TAG_inlined_subroutine;
        let entry_pc = match entry.attr_value(constants::DW_AT_entry_pc) {
            Some(AttributeValue::Addr(address)) => Some(address),
            _ => None,
        };
        let Some(address) = entry_pc.or_else(|| {
            unit.code_ranges(entry)
                .iter()
                .map(|&(start, _)| start)
                .min()
        }) else {
            return Ok(None);
        };
        let first_parameter_type = self.signature(die).first_parameter;
        let register = match super::locals::first_parameter_location(root)? {
            Some(location) => register_at(unit, location, address)?,
            None => None,
        };
        let address_at_entry = match (register, inlined) {
            (Some(register), _) => Some(AddressAtEntry::Register(register)),
            (None, false) => Some(AddressAtEntry::FirstOrSecondArgument),
            (None, true) => None,
        };
        Ok(Some(ResumeEntry {
            address,
            inlined,
            first_parameter_type,
            address_at_entry,
        }))
    }
}

/// The register a location (expression or list) puts the value in at `pc`, when it is a
/// plain `DW_OP_regN`.
fn register_at(
    unit: UnitView<'_>,
    location: AttributeValue<Reader>,
    pc: u64,
) -> Result<Option<u16>> {
    let Some(expression) = super::locals::expression_at(unit, location, pc)? else {
        return Ok(None);
    };
    let bytes = expression.0.to_slice()?;
    Ok(match bytes.as_ref() {
        [operation] if (constants::DW_OP_reg0.0..=constants::DW_OP_reg31.0).contains(operation) => {
            Some(u16::from(operation - constants::DW_OP_reg0.0))
        }
        _ => None,
    })
}
