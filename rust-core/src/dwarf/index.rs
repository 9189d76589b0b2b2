//! One pass over every DIE that records what later questions need: types by qualified
//! name, subprograms by start address, linkage names of coroutine resume functions, and
//! thread-local variables.

use std::sync::Arc;

use gimli::{constants, AttributeValue, Reader as _};
use rustc_hash::{FxHashMap, FxHashSet};

use super::{DieRef, Reader, UnitView};
use crate::error::{Error, ErrorKind, Result};

/// A `#[thread_local]` variable whose location is an offset in the module's TLS block.
#[derive(Debug, Clone, PartialEq)]
pub struct TlsVariable {
    pub path: String,
    pub linkage_name: Option<String>,
    pub ty: Option<DieRef>,
    pub tls_offset: Option<u64>,
}

#[derive(Default, Debug, PartialEq)]
pub struct Index {
    /// The first defining DIE of each type, in unit order (every copy has the same layout).
    types: FxHashMap<Arc<str>, DieRef>,
    type_names: FxHashMap<DieRef, Arc<str>>,
    subprograms: FxHashMap<u64, DieRef>,
    /// Address ranges of concrete subprograms, sorted by start: (start, end, DIE).
    code_ranges: Vec<(u64, u64, DieRef)>,
    /// Qualified path of every named subprogram (declarations and abstract ones too).
    subprogram_paths: FxHashMap<DieRef, Arc<str>>,
    /// A concrete subprogram -> the DIE its name lives on (`DW_AT_specification`/`abstract_origin`).
    subprogram_origins: FxHashMap<DieRef, DieRef>,
    /// Qualified DWARF path of a coroutine's resume function -> its linkage name.
    coroutine_linkage: FxHashMap<String, String>,
    tls_variables: Vec<TlsVariable>,
    /// Link-time address of each `<T as Future>::{vtable}` -> the variable's type
    /// (a `{vtable_type}` whose `containing_type` is T).
    future_vtables: FxHashMap<u64, DieRef>,
    /// Paths (without generics) of the types the binary has `Future::poll` or
    /// `Stream::poll_next` code for, from the demangled linkage names of those functions.
    polled_types: FxHashSet<String>,
    /// Every inlined call: (the DIE of the function inlined, the inlined copy).
    inlined_subroutines: Vec<(DieRef, DieRef)>,
}

/// Indexing threads: beyond a few, merging the parts costs more than the threads save.
const MAX_THREADS: usize = 4;

/// Splits `units` into at most `parts` contiguous runs of about equal size in bytes.
fn split_by_size<'u, 'a>(units: &'u [UnitView<'a>], parts: usize) -> Vec<&'u [UnitView<'a>]> {
    let size = |unit: &UnitView<'_>| unit.header.length_including_self() as u64;
    let total: u64 = units.iter().map(size).sum();
    let share = total / parts as u64 + 1;
    let mut runs = Vec::with_capacity(parts);
    let (mut start, mut filled) = (0, 0u64);
    for (position, unit) in units.iter().enumerate() {
        filled += size(unit);
        if filled >= share && runs.len() + 1 < parts {
            runs.push(&units[start..=position]);
            (start, filled) = (position + 1, 0);
        }
    }
    if start < units.len() {
        runs.push(&units[start..]);
    }
    runs
}

/// The DIEs whose attributes the index reads; every other DIE is skipped unparsed.
const INDEXED_TAGS: [gimli::DwTag; 8] = [
    constants::DW_TAG_namespace,
    constants::DW_TAG_structure_type,
    constants::DW_TAG_union_type,
    constants::DW_TAG_enumeration_type,
    constants::DW_TAG_base_type,
    constants::DW_TAG_subprogram,
    constants::DW_TAG_variable,
    constants::DW_TAG_inlined_subroutine,
];

struct Scope {
    depth: isize,
    path: Arc<str>,
    in_function: bool,
}

/// Qualified paths, each kept once: most type and function paths recur in every unit
/// that uses them, and one `Arc` per distinct path saves an allocation per DIE.
#[derive(Default)]
struct Paths {
    interned: FxHashSet<Arc<str>>,
    buffer: String,
}

impl Paths {
    fn join(&mut self, parent: &str, name: &str) -> Arc<str> {
        self.buffer.clear();
        if !parent.is_empty() {
            self.buffer.push_str(parent);
            self.buffer.push_str("::");
        }
        self.buffer.push_str(name);
        if let Some(path) = self.interned.get(self.buffer.as_str()) {
            return path.clone();
        }
        let path: Arc<str> = Arc::from(self.buffer.as_str());
        self.interned.insert(path.clone());
        path
    }
}

impl Index {
    /// Indexes the units on as many threads as the machine has cores (at most
    /// `MAX_THREADS`), each taking a contiguous run of units of about equal size, and
    /// merges the parts in unit order, so the result is the one a single pass gives.
    pub(super) fn build(units: &[UnitView<'_>]) -> Result<Index> {
        let threads = std::thread::available_parallelism().map_or(1, |count| count.get());
        Index::build_on(units, threads.clamp(1, MAX_THREADS))
    }

    pub(super) fn build_on(units: &[UnitView<'_>], threads: usize) -> Result<Index> {
        let parts = if threads == 1 || units.len() < 2 {
            vec![Index::build_part(units)]
        } else {
            std::thread::scope(|scope| {
                let workers: Vec<_> = split_by_size(units, threads)
                    .into_iter()
                    .map(|part| scope.spawn(move || crate::panics::guarded(|| Index::build_part(part))))
                    .collect();
                workers
                    .into_iter()
                    .map(|worker| worker.join().unwrap_or_else(|_| Err(Error::new(ErrorKind::Internal, "a DWARF indexing thread stopped"))))
                    .collect()
            })
        };
        let mut parts = parts.into_iter();
        let mut index = parts.next().unwrap_or_else(|| Ok(Index::default()))?;
        for part in parts {
            index.merge(part?);
        }
        index.code_ranges.sort_unstable();
        Ok(index)
    }

    fn build_part(units: &[UnitView<'_>]) -> Result<Index> {
        let mut index = Index::default();
        let mut paths = Paths::default();
        for &unit in units {
            index.add_unit(unit, &mut paths)?;
        }
        Ok(index)
    }

    /// Adds a later part, keeping what a single pass in unit order would keep: the first
    /// DIE of a type, the first subprogram at an address and the first linkage name of a
    /// coroutine, the last vtable variable at an address, and every list in order.
    fn merge(&mut self, later: Index) {
        for (path, die) in later.types {
            self.types.entry(path).or_insert(die);
        }
        self.type_names.extend(later.type_names);
        for (address, die) in later.subprograms {
            self.subprograms.entry(address).or_insert(die);
        }
        self.code_ranges.extend(later.code_ranges);
        self.subprogram_paths.extend(later.subprogram_paths);
        self.subprogram_origins.extend(later.subprogram_origins);
        for (path, linkage) in later.coroutine_linkage {
            self.coroutine_linkage.entry(path).or_insert(linkage);
        }
        self.tls_variables.extend(later.tls_variables);
        self.future_vtables.extend(later.future_vtables);
        self.polled_types.extend(later.polled_types);
        self.inlined_subroutines.extend(later.inlined_subroutines);
    }

    fn add_unit(&mut self, unit: UnitView<'_>, paths: &mut Paths) -> Result<()> {
        let root: Arc<str> = Arc::from("");
        let mut scopes: Vec<Scope> = Vec::new();
        let mut raw = unit.entries_raw(None)?;
        let mut entry = gimli::DebuggingInformationEntry::default();
        while !raw.is_empty() {
            let depth = raw.next_depth();
            let offset = raw.next_offset();
            // The tag first: most DIEs (parameters, locals, members, blocks) need nothing
            // from their attributes, and skipping those is far cheaper than parsing them.
            let mut probe = raw.clone();
            let Some(abbreviation) = probe.read_abbreviation()? else {
                raw = probe;
                continue;
            };
            while scopes.last().is_some_and(|scope| scope.depth >= depth) {
                scopes.pop();
            }
            // Only DIEs that start a scope (namespaces, types, functions) are on the stack:
            // any other DIE's children share its parent's path.
            let (parent, in_function) = match scopes.last() {
                Some(scope) => (&scope.path, scope.in_function),
                None => (&root, false),
            };
            let tag = abbreviation.tag();
            if !INDEXED_TAGS.contains(&tag) || (tag == constants::DW_TAG_variable && in_function) {
                raw = probe;
                raw.skip_attributes(abbreviation.attributes())?;
                continue;
            }
            let parent = parent.clone();
            raw.read_entry(&mut entry)?;
            let entry = &entry;
            let die = unit.die(offset);
            // Borrowed from the string section; copied only into the paths kept.
            let name_bytes = entry.attr_value(constants::DW_AT_name).and_then(|value| unit.dwarf.attr_string(unit.unit, value).ok());
            let name = name_bytes.as_ref().and_then(|bytes| bytes.to_string_lossy().ok());
            let mut child_scope: Option<(Arc<str>, bool)> = None;
            match tag {
                constants::DW_TAG_namespace => {
                    let path: Arc<str> = match &name {
                        Some(name) => paths.join(&parent, name),
                        None => parent.clone(),
                    };
                    child_scope = Some((path, in_function));
                }
                constants::DW_TAG_structure_type
                | constants::DW_TAG_union_type
                | constants::DW_TAG_enumeration_type
                | constants::DW_TAG_base_type => {
                    let path: Arc<str> = match &name {
                        Some(name) => paths.join(&parent, name),
                        None => parent.clone(),
                    };
                    let declaration = entry.attr_value(constants::DW_AT_declaration).is_some();
                    if !declaration && !path.is_empty() {
                        self.types.entry(path.clone()).or_insert(die);
                        self.type_names.insert(die, path.clone());
                    }
                    child_scope = Some((path, in_function));
                }
                constants::DW_TAG_subprogram => {
                    // `attr_address` reads DW_FORM_addr and, through .debug_addr, addrx.
                    if let Some(address) = entry
                        .attr_value(constants::DW_AT_low_pc)
                        .and_then(|value| unit.dwarf.attr_address(unit.unit, value).ok().flatten())
                        .filter(|&address| address != 0)
                    {
                        self.subprograms.entry(address).or_insert(die);
                    }
                    for (start, end) in unit.code_ranges(entry) {
                        self.code_ranges.push((start, end, die));
                    }
                    let origin = [constants::DW_AT_specification, constants::DW_AT_abstract_origin]
                        .into_iter()
                        .find_map(|attr| entry.attr_value(attr))
                        .and_then(|value| unit.attr_die(value));
                    if let Some(origin) = origin {
                        self.subprogram_origins.insert(die, origin);
                    }
                    if let Some(name) = &name {
                        self.subprogram_paths.insert(die, paths.join(&parent, name));
                        if is_poll_name(name) {
                            if let Some(path) = entry
                                .attr_value(constants::DW_AT_linkage_name)
                                .and_then(|value| unit.attr_string(value))
                                .and_then(|name| polled_type(&name))
                            {
                                self.polled_types.insert(path);
                            }
                        }
                        if crate::names::is_coroutine_body_name(name) {
                            if let Some(linkage) = entry
                                .attr_value(constants::DW_AT_linkage_name)
                                .and_then(|value| unit.attr_string(value))
                            {
                                // Generic resume fns are named `{async_fn#0}<T>`; envs are looked up without.
                                let base = name.split('<').next().unwrap_or(name);
                                self.coroutine_linkage.entry(paths.join(&parent, base).to_string()).or_insert(linkage);
                            }
                        }
                    }
                    child_scope = Some((parent.clone(), true));
                }
                constants::DW_TAG_variable if !in_function => {
                    if name.as_ref().is_some_and(|name| FUTURE_VTABLE_SUFFIXES.iter().any(|suffix| name.ends_with(suffix))) {
                        if let (Some(address), Some(ty)) = (
                            static_address(unit, entry),
                            entry.attr_value(constants::DW_AT_type).and_then(|value| unit.attr_die(value)),
                        ) {
                            self.future_vtables.insert(address, ty);
                        }
                    }
                    if let Some(tls_offset) = tls_offset(unit, entry) {
                        if let Some(name) = &name {
                            let path = paths.join(&parent, name).to_string();
                            if path.starts_with("tokio::") {
                                let linkage_name = entry
                                    .attr_value(constants::DW_AT_linkage_name)
                                    .and_then(|value| unit.attr_string(value));
                                let ty = entry.attr_value(constants::DW_AT_type).and_then(|value| unit.attr_die(value));
                                self.tls_variables.push(TlsVariable { path, linkage_name, ty, tls_offset });
                            }
                        }
                    }
                }
                constants::DW_TAG_inlined_subroutine => {
                    if let Some(origin) = entry.attr_value(constants::DW_AT_abstract_origin).and_then(|value| unit.attr_die(value)) {
                        self.inlined_subroutines.push((origin, die));
                    }
                }
                _ => {}
            }
            if let Some((path, in_function)) = child_scope.filter(|_| entry.has_children()) {
                scopes.push(Scope { depth, path, in_function });
            }
        }
        Ok(())
    }

    /// Every inlined call: (the DIE of the function inlined, the inlined copy).
    pub fn inlined_subroutines(&self) -> &[(DieRef, DieRef)] {
        &self.inlined_subroutines
    }

    pub fn type_count(&self) -> usize {
        self.types.len()
    }

    /// A defining DIE of the type with this qualified name (any of its per-unit copies).
    pub fn type_by_name(&self, name: &str) -> Option<DieRef> {
        self.types.get(name).copied()
    }

    /// Qualified names of all types starting with `prefix` (a scan; use sparingly).
    pub fn type_names_with_prefix<'a>(&'a self, prefix: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.types.keys().filter(move |name| name.starts_with(prefix)).map(|name| &**name)
    }

    pub fn type_name(&self, die: DieRef) -> Option<&str> {
        self.type_names.get(&die).map(|name| &**name)
    }

    pub fn subprogram_at(&self, address: u64) -> Option<DieRef> {
        self.subprograms.get(&address).copied()
    }

    /// The concrete subprogram whose code contains `address` (unbiased).
    pub fn subprogram_containing(&self, address: u64) -> Option<DieRef> {
        let position = self.code_ranges.partition_point(|&(start, _, _)| start <= address);
        self.code_ranges[..position]
            .iter()
            .rev()
            .take(64)
            .find(|&&(start, end, _)| start <= address && address < end)
            .map(|&(_, _, die)| die)
    }

    /// Every subprogram DIE that carries a name (concrete, abstract or declaration), with its path.
    pub fn named_subprograms(&self) -> impl Iterator<Item = (DieRef, &str)> + '_ {
        self.subprogram_paths.iter().map(|(&die, path)| (die, &**path))
    }

    /// Every subprogram that has code of its own (each once per address range).
    pub fn concrete_subprograms(&self) -> impl Iterator<Item = DieRef> + '_ {
        self.code_ranges.iter().map(|&(_, _, die)| die)
    }

    /// The qualified path of a subprogram, following its specification/abstract origin.
    pub fn subprogram_path(&self, die: DieRef) -> Option<(&str, DieRef)> {
        let mut current = die;
        for _ in 0..4 {
            if let Some(path) = self.subprogram_paths.get(&current) {
                return Some((path, current));
            }
            current = *self.subprogram_origins.get(&current)?;
        }
        None
    }

    pub fn coroutine_linkage_name(&self, resume_path: &str) -> Option<&str> {
        self.coroutine_linkage.get(resume_path).map(|s| s.as_str())
    }

    /// The `{vtable_type}` of the `dyn Future`/`Stream`/`Body` vtable at this link-time address.
    pub fn vtable_type(&self, address: u64) -> Option<DieRef> {
        self.future_vtables.get(&address).copied()
    }

    /// Whether the binary has `Future::poll` or `Stream::poll_next` code for the type at
    /// this path (generic arguments ignored).
    pub fn has_poll_code(&self, type_path: &str) -> bool {
        self.polled_types.contains(type_path)
    }

    pub fn tls_variables(&self) -> &[TlsVariable] {
        &self.tls_variables
    }
}

/// Vtables of `dyn Future`, `dyn Stream` (the futures-core trait tokio-stream also uses) and
/// `dyn http_body::Body` (boxed bodies, which may stream from a future of their own).
const FUTURE_VTABLE_SUFFIXES: &[&str] = &[
    "as core::future::future::Future>::{vtable}",
    "as futures_core::stream::Stream>::{vtable}",
    "as http_body::Body>::{vtable}",
];
const POLL_IMPLS: &[&str] = &[" as core::future::future::Future>::poll", " as futures_core::stream::Stream>::poll_next"];

fn is_poll_name(name: &str) -> bool {
    let base = name.split('<').next().unwrap_or(name);
    base == "poll" || base == "poll_next"
}

/// `_ZN..` of `<a::B<T> as core::future::future::Future>::poll` -> `a::B`.
fn polled_type(linkage_name: &str) -> Option<String> {
    let demangled = format!("{:#}", rustc_demangle::demangle(linkage_name));
    let inner = demangled.strip_prefix('<')?;
    let (ty, _) = POLL_IMPLS.iter().find_map(|suffix| inner.strip_suffix(suffix).map(|ty| (ty, ())))?;
    Some(crate::names::strip_last_generics(ty))
}

/// The link-time address of a static variable (`DW_OP_addr`, or `DW_OP_addrx` through
/// .debug_addr); dead vtables are emitted at address 0 and are skipped.
fn static_address(unit: UnitView<'_>, entry: &gimli::DebuggingInformationEntry<Reader>) -> Option<u64> {
    let AttributeValue::Exprloc(expression) = entry.attr_value(constants::DW_AT_location)? else {
        return None;
    };
    let mut operations = expression.operations(unit.encoding());
    match operations.next().ok()?? {
        gimli::Operation::Address { address } => Some(address),
        gimli::Operation::AddressIndex { index } => unit.dwarf.address(unit.unit, index).ok(),
        _ => None,
    }
    .filter(|&address| address != 0)
}

/// `Some(offset)` for a variable located at "offset in this module's TLS block";
/// `Some(None)` when it is thread-local but the offset is not a constant. Split DWARF keeps
/// the offset in .debug_addr (`DW_OP_constx`, `DW_OP_GNU_const_index`).
fn tls_offset(unit: UnitView<'_>, entry: &gimli::DebuggingInformationEntry<Reader>) -> Option<Option<u64>> {
    let AttributeValue::Exprloc(expression) = entry.attr_value(constants::DW_AT_location)? else {
        return None;
    };
    let mut operations = expression.operations(unit.encoding());
    let mut constant = None;
    let mut is_tls = false;
    while let Ok(Some(operation)) = operations.next() {
        match operation {
            gimli::Operation::UnsignedConstant { value } => constant = Some(value),
            gimli::Operation::ConstantIndex { index } => constant = unit.dwarf.address(unit.unit, index).ok(),
            gimli::Operation::TLS => is_tls = true,
            _ => constant = None,
        }
    }
    is_tls.then_some(constant)
}
