//! Which functions a function calls, and from which source line: the `call_file`/`call_line`
//! of each inlined copy in its body (optimized builds), and the line-table row of each
//! direct `call` in its machine code (unoptimized builds; `crate::arch` decodes the calls). An await inside a macro
//! has its user's line only here: the line of the call that polls the awaited future.

use std::sync::{Arc, Mutex, OnceLock};

use gimli::{constants, AttributeValue};
use rustc_hash::FxHashMap;

use super::{kept, DebugInfo, DieRef, FunctionInUnit, Reader, SourceLocation, TypeInfo, UnitView};
use crate::arch::{call_at, CallTarget};
use crate::error::Result;

/// One call made by a function's own code (not by functions inlined into it).
#[derive(Debug, Clone)]
pub struct CallSite {
    /// The called function: an out-of-line subprogram, or the origin of an inlined copy.
    pub callee: DieRef,
    pub location: SourceLocation,
}

/// One copy of a coroutine body's code: an out-of-line subprogram or an inlined copy.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct BodyCopy {
    pub die: DieRef,
    pub inlined: bool,
}

/// What a function takes and gives, as its DWARF declares them.
#[derive(Debug, Clone, Default)]
pub struct Signature {
    pub first_parameter: Option<DieRef>,
    pub returns: Option<DieRef>,
}

/// What the questions of this module found, kept: each is asked again and again.
pub(super) struct CallCaches {
    /// Call sites by function path, found on first use.
    call_sites: Mutex<FxHashMap<FunctionInUnit, Arc<Vec<CallSite>>>>,
    /// Per unit: the copies of each coroutine resume function it holds.
    coroutine_bodies: Vec<OnceLock<FxHashMap<String, Vec<BodyCopy>>>>,
    signatures: Mutex<FxHashMap<DieRef, Signature>>,
    poll_call_lines: Mutex<FxHashMap<(FunctionInUnit, String), Option<SourceLocation>>>,
    /// The line of each frame's pc: the stacks of every stop (a sample, a refresh) mostly
    /// stand where the last stop's stood, and each answer runs a unit's line program.
    frame_lines: Mutex<FxHashMap<u64, Option<SourceLocation>>>,
}

impl CallCaches {
    pub(super) fn new(unit_count: usize) -> CallCaches {
        CallCaches {
            call_sites: Mutex::default(),
            coroutine_bodies: (0..unit_count).map(|_| OnceLock::new()).collect(),
            signatures: Mutex::default(),
            poll_call_lines: Mutex::default(),
            frame_lines: Mutex::default(),
        }
    }
}

/// How far `specification`/`abstract_origin` links are followed.
pub(super) const MAX_ORIGIN_HOPS: usize = 4;

impl DebugInfo {
    /// Every call site in the concrete code of the functions whose DWARF path, without the
    /// generic arguments of its last segment, is `function_path` (all instantiations in the
    /// units `units_for_function` gives for `near`, a DIE of the function's env type).
    pub fn call_sites_in(&self, function_path: &str, near: DieRef) -> Arc<Vec<CallSite>> {
        let key = (function_path.to_string(), self.unit_position(near));
        kept(&self.calls.call_sites, key, || {
            let mut sites = Vec::new();
            for die in self.concrete_functions(function_path, near) {
                // A function we cannot read has no call sites we can report; callers fall back.
                let _ = self.collect_call_sites(die, &mut sites);
            }
            Arc::new(sites)
        })
    }

    /// The line from which `function_path` calls a function whose first parameter's type
    /// `first_parameter` accepts (the poll of an awaited future, say), cached by `key`.
    /// `None` when no call is found or the calls disagree on the line.
    pub fn line_of_call_taking(
        &self,
        function_path: &str,
        near: DieRef,
        key: &str,
        first_parameter: &dyn Fn(&TypeInfo) -> bool,
    ) -> Option<SourceLocation> {
        let key = (
            (function_path.to_string(), self.unit_position(near)),
            key.to_string(),
        );
        kept(&self.calls.poll_call_lines, key, || {
            let mut lines = self
                .call_sites_in(function_path, near)
                .iter()
                .filter(|site| self.first_parameter_is(site.callee, first_parameter))
                .map(|site| site.location.clone())
                .collect::<Vec<_>>();
            lines.sort_by(|a, b| (&a.file, a.line).cmp(&(&b.file, b.line)));
            lines.dedup();
            if lines.len() == 1 {
                lines.pop()
            } else {
                None
            }
        })
    }

    /// The call sites in `function_path` of functions returning the type named `returned`.
    pub fn calls_returning(
        &self,
        function_path: &str,
        near: DieRef,
        returned: &str,
    ) -> Vec<CallSite> {
        self.call_sites_in(function_path, near)
            .iter()
            .filter(|site| {
                self.signature(site.callee)
                    .returns
                    .and_then(|ty| self.type_info(ty).ok())
                    .is_some_and(|info| info.name == returned)
            })
            .cloned()
            .collect()
    }

    /// The type the closure or coroutine body at `function_path` returns, as `call_sites_in`
    /// finds the function.
    pub fn function_returns(&self, function_path: &str, near: DieRef) -> Option<DieRef> {
        self.concrete_functions(function_path, near)
            .into_iter()
            .find_map(|die| self.signature(die).returns)
    }

    /// Where the closure or coroutine body at `function_path` is written (its
    /// `decl_file`/`decl_line`, through its origin), as `call_sites_in` finds it.
    pub fn function_declaration(
        &self,
        function_path: &str,
        near: DieRef,
    ) -> Option<SourceLocation> {
        self.concrete_functions(function_path, near)
            .into_iter()
            .find_map(|die| self.declaration(die).ok().flatten())
    }

    fn declaration(&self, die: DieRef) -> Result<Option<SourceLocation>> {
        let mut current = die;
        for _ in 0..MAX_ORIGIN_HOPS {
            let (unit, offset) = self.unit_of(current)?;
            let entry = unit.entry(offset)?;
            let file = entry
                .attr_value(constants::DW_AT_decl_file)
                .and_then(|value| match value {
                    AttributeValue::FileIndex(index) => Some(index),
                    other => other.udata_value(),
                });
            let line = entry
                .attr_value(constants::DW_AT_decl_line)
                .and_then(|value| value.udata_value());
            if let (Some(file), Some(line)) = (file, line) {
                return Ok(unit
                    .file_name(file)
                    .map(|file| SourceLocation { file, line }));
            }
            let origin = unit.origin_of(&entry);
            match origin {
                Some(next) => current = next,
                None => return Ok(None),
            }
        }
        Ok(None)
    }

    fn first_parameter_is(&self, callee: DieRef, accepts: &dyn Fn(&TypeInfo) -> bool) -> bool {
        let Some(parameter) = self.signature(callee).first_parameter else {
            return false;
        };
        self.type_info(parameter).is_ok_and(|info| accepts(&info))
    }

    /// The type of a function's first parameter (through its origin).
    pub fn first_parameter_type(&self, die: DieRef) -> Option<DieRef> {
        self.signature(die).first_parameter
    }

    /// The type of a function's parameter called `name`, following its specification or
    /// abstract origin to the DIE that declares it.
    pub fn parameter_type(&self, die: DieRef, name: &str) -> Option<DieRef> {
        let mut current = die;
        for _ in 0..MAX_ORIGIN_HOPS {
            let (unit, offset) = self.unit_of(current).ok()?;
            let mut tree = unit.entries_tree(Some(offset)).ok()?;
            let root = tree.root().ok()?;
            let origin = unit.origin_of(root.entry());
            let mut children = root.children();
            while let Ok(Some(child)) = children.next() {
                let entry = child.entry();
                if entry.tag() != constants::DW_TAG_formal_parameter {
                    continue;
                }
                let named = entry
                    .attr_value(constants::DW_AT_name)
                    .and_then(|value| unit.attr_string(value));
                if named.as_deref() == Some(name) {
                    return entry
                        .attr_value(constants::DW_AT_type)
                        .and_then(|value| unit.attr_die(value));
                }
            }
            current = origin?;
        }
        None
    }

    pub(super) fn signature(&self, die: DieRef) -> Signature {
        kept(&self.calls.signatures, die, || {
            self.function_signature(die).unwrap_or_default()
        })
    }

    /// The type of the first parameter and the return type of a function, following its
    /// specification or abstract origin to the DIE that declares them.
    fn function_signature(&self, die: DieRef) -> Result<Signature> {
        let mut current = die;
        let mut signature = Signature::default();
        for _ in 0..MAX_ORIGIN_HOPS {
            let (unit, offset) = self.unit_of(current)?;
            let mut tree = unit.entries_tree(Some(offset))?;
            let root = tree.root()?;
            let entry = root.entry();
            if signature.returns.is_none() {
                signature.returns = entry
                    .attr_value(constants::DW_AT_type)
                    .and_then(|value| unit.attr_die(value));
            }
            let origin = unit.origin_of(entry);
            let mut children = root.children();
            while let Some(child) = children.next()? {
                if child.entry().tag() == constants::DW_TAG_formal_parameter {
                    signature.first_parameter = child
                        .entry()
                        .attr_value(constants::DW_AT_type)
                        .and_then(|value| unit.attr_die(value));
                    break;
                }
            }
            if signature.first_parameter.is_some() {
                break;
            }
            match origin {
                Some(next) => current = next,
                None => break,
            }
        }
        Ok(signature)
    }

    /// The code-bearing copies of the coroutine resume functions at `function_path`:
    /// out-of-line subprograms and inlined copies (optimized builds inline a resume function
    /// into its caller's), in the units `units_for_function` gives.
    pub(super) fn concrete_functions(&self, function_path: &str, near: DieRef) -> Vec<DieRef> {
        let copies_in = |at: usize| match self.coroutine_bodies_in(at).get(function_path) {
            Some(copies) => (
                copies.len(),
                copies.iter().filter(|copy| copy.inlined).count(),
            ),
            None => (0, 0),
        };
        let units = self.units_for_function(function_path, Some(near), copies_in);
        units
            .into_iter()
            .filter_map(|at| self.coroutine_bodies_in(at).get(function_path))
            .flatten()
            .map(|copy| copy.die)
            .collect()
    }

    /// The code-bearing copies of coroutine resume functions in one unit, by path without the
    /// last segment's generics; built once per unit.
    fn coroutine_bodies_in(&self, at: usize) -> &FxHashMap<String, Vec<BodyCopy>> {
        self.calls.coroutine_bodies[at].get_or_init(|| {
            let index = self.unit_index(at);
            let mut by_path: FxHashMap<String, Vec<BodyCopy>> = FxHashMap::default();
            let copies = index
                .concrete_subprograms()
                .map(|die| {
                    (
                        die,
                        BodyCopy {
                            die,
                            inlined: false,
                        },
                    )
                })
                .chain(
                    index
                        .inlined_subroutines()
                        .iter()
                        .map(|&(origin, die)| (origin, BodyCopy { die, inlined: true })),
                );
            for (named, copy) in copies {
                let Some((path, _)) = self.subprogram_path(named) else {
                    continue;
                };
                // Cheap first: a coroutine body's path names one (`{async_fn#0}`, `{closure#1}`).
                if !path.contains("{async_") && !path.contains("{closure#") {
                    continue;
                }
                let path = crate::names::strip_last_generics(path);
                if crate::names::is_coroutine_body_path(&path) {
                    let dies = by_path.entry(path).or_default();
                    if !dies.contains(&copy) {
                        dies.push(copy);
                    }
                }
            }
            by_path
        })
    }

    fn collect_call_sites(&self, function: DieRef, sites: &mut Vec<CallSite>) -> Result<()> {
        let (unit, offset) = self.unit_of(function)?;
        let mut tree = unit.entries_tree(Some(offset))?;
        let root = tree.root()?;
        let ranges = unit.code_ranges(root.entry());
        self.inlined_calls(unit, root, sites)?;
        if self.elf.is_x86_64 {
            let calls = self.direct_calls(&ranges);
            let lines = self.lines_at(unit, calls.iter().map(|&(address, _)| address).collect())?;
            for ((_, callee), location) in calls.into_iter().zip(lines) {
                if let Some(location) = location {
                    sites.push(CallSite { callee, location });
                }
            }
        }
        Ok(())
    }

    /// Inlined calls made by this function's own body (through lexical blocks, not
    /// through other inlined functions, whose call lines are in their own sources).
    fn inlined_calls(
        &self,
        unit: UnitView<'_>,
        node: gimli::EntriesTreeNode<'_, '_, Reader>,
        sites: &mut Vec<CallSite>,
    ) -> Result<()> {
        unit.for_each_in_scope(node, &|_| true, &mut |entry| {
            if entry.tag() != constants::DW_TAG_inlined_subroutine {
                return;
            }
            let callee = entry
                .attr_value(constants::DW_AT_abstract_origin)
                .and_then(|v| unit.attr_die(v));
            let file = entry
                .attr_value(constants::DW_AT_call_file)
                .and_then(|value| match value {
                    AttributeValue::FileIndex(index) => Some(index),
                    other => other.udata_value(),
                });
            let line = entry
                .attr_value(constants::DW_AT_call_line)
                .and_then(|value| value.udata_value());
            if let (Some(callee), Some(file), Some(line)) = (callee, file, line) {
                if let Some(file) = unit.file_name(file) {
                    sites.push(CallSite {
                        callee,
                        location: SourceLocation { file, line },
                    });
                }
            }
        })
    }

    /// Calls in these code ranges whose target starts a subprogram: (address of the call,
    /// callee). Found by decoding `call rel32`, `call [rip+disp32]` through a GOT slot, and
    /// `mov reg, [rip+disp32]` loading a GOT slot (the pointer a `call reg` then uses). A
    /// stray byte pattern inside another instruction would have to land exactly on a
    /// function's first byte, or on a GOT slot of one, to be taken for a call.
    fn direct_calls(&self, ranges: &[(u64, u64)]) -> Vec<(u64, DieRef)> {
        let mut calls = Vec::new();
        for &(start, end) in ranges {
            let Some(code) = self.code_bytes(start, end) else {
                continue;
            };
            for position in 0..code.len() {
                let address = start + position as u64;
                let Some((length, target)) = call_at(&code[position..]) else {
                    continue;
                };
                let next = address.wrapping_add(length as u64);
                let callee_address = match target {
                    CallTarget::Relative(displacement) => {
                        next.wrapping_add(displacement as i64 as u64)
                    }
                    CallTarget::Slot(displacement) => {
                        match self
                            .code_slots()
                            .get(&next.wrapping_add(displacement as i64 as u64))
                        {
                            Some(&target) => target,
                            None => continue,
                        }
                    }
                };
                if let Some(callee) = self.subprogram_at(callee_address) {
                    calls.push((address, callee));
                }
            }
        }
        calls
    }

    pub(super) fn code_slots(&self) -> &FxHashMap<u64, u64> {
        self.image.code_slots(&self.elf)
    }

    /// The executable's bytes at link-time addresses `start..end`, when one code section holds them.
    fn code_bytes(&self, start: u64, end: u64) -> Option<&[u8]> {
        let &(address, offset, _) =
            self.elf.code_sections.iter().find(|&&(address, _, size)| {
                address <= start && end <= address.checked_add(size).unwrap_or(0)
            })?;
        let from = usize::try_from(offset.checked_add(start - address)?).ok()?;
        let to = usize::try_from(offset.checked_add(end - address)?).ok()?;
        self.image.bytes().get(from..to)
    }

    /// The source line of the code at `address` (link-time), as a debugger shows it for a
    /// frame: the line-table row in force there, in the unit of the subprogram holding it.
    pub fn line_at(&self, address: u64) -> Option<SourceLocation> {
        kept(&self.calls.frame_lines, address, || {
            let subprogram = self.subprogram_containing(address)?;
            let (unit, _) = self.unit_of(subprogram).ok()?;
            self.lines_at(unit, vec![address]).ok()?.pop().flatten()
        })
    }

    /// Where an inlined copy of a function (`FunctionAt::code` of an inlined frame) was
    /// called from: its `DW_AT_call_file` and `DW_AT_call_line`, the line a debugger shows
    /// for the frame that made the call.
    pub fn call_site_of(&self, inlined: DieRef) -> Option<SourceLocation> {
        let (unit, offset) = self.unit_of(inlined).ok()?;
        let entry = unit.entry(offset).ok()?;
        let file = entry
            .attr_value(constants::DW_AT_call_file)
            .and_then(|value| match value {
                AttributeValue::FileIndex(index) => Some(index),
                other => other.udata_value(),
            })?;
        let line = entry
            .attr_value(constants::DW_AT_call_line)
            .and_then(|value| value.udata_value())?;
        Some(SourceLocation {
            file: unit.file_name(file)?,
            line,
        })
    }

    /// The line-table row of each address (sorted or not), from one pass over the unit's
    /// line program.
    fn lines_at(
        &self,
        unit: UnitView<'_>,
        addresses: Vec<u64>,
    ) -> Result<Vec<Option<SourceLocation>>> {
        let mut found: Vec<Option<(u64, u64)>> = vec![None; addresses.len()];
        // A split unit's addresses are in its skeleton's line table.
        let Some(program) = unit.line_unit.line_program.clone() else {
            return Ok(vec![None; addresses.len()]);
        };
        let mut sorted: Vec<(u64, usize)> = addresses
            .iter()
            .enumerate()
            .map(|(slot, &address)| (address, slot))
            .collect();
        sorted.sort_unstable();
        let mut rows = program.rows();
        // The row in force: (start address, file, line).
        let mut previous: Option<(u64, u64, u64)> = None;
        while let Some((_, row)) = rows.next_row()? {
            let address = row.address();
            if let Some((start, file, line)) = previous {
                let first = sorted.partition_point(|&(wanted, _)| wanted < start);
                for &(wanted, slot) in sorted[first..]
                    .iter()
                    .take_while(|&&(wanted, _)| wanted < address)
                {
                    debug_assert!(start <= wanted);
                    found[slot] = Some((file, line));
                }
            }
            previous = if row.end_sequence() {
                None
            } else {
                row.line()
                    .map(|line| (address, row.file_index(), line.get()))
            };
        }
        Ok(found
            .into_iter()
            .map(|slot| {
                slot.and_then(|(file, line)| {
                    Some(SourceLocation {
                        file: unit.file_name(file)?,
                        line,
                    })
                })
            })
            .collect())
    }
}
