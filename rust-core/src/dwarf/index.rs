//! One pass over a unit's DIEs that records what later questions need: types by qualified
//! name, subprograms by start address, linkage names of coroutine resume functions, and
//! thread-local variables.

use std::sync::Arc;

use gimli::{constants, AttributeValue, Reader as _};
use rustc_hash::{FxHashMap, FxHashSet};

use super::{DieRef, Reader, UnitView};
use crate::error::Result;

/// A `#[thread_local]` variable whose location is an offset in the module's TLS block.
#[derive(Debug, Clone, PartialEq)]
pub struct TlsVariable {
    pub path: String,
    pub linkage_name: Option<String>,
    pub ty: Option<DieRef>,
    pub tls_offset: Option<u64>,
}

impl TlsVariable {
    /// Whether its linkage name is a symbol (`symbols`: the executable's, by name). rustc
    /// emits decoys at the same location whose names are not.
    pub fn is_symbol_in(&self, symbols: &FxHashMap<String, u64>) -> bool {
        self.linkage_name
            .as_ref()
            .is_some_and(|name| symbols.contains_key(name))
    }
}

/// A static variable at module level, at a link-time address.
#[derive(Debug, Clone, PartialEq)]
pub struct StaticVariable {
    pub path: Arc<str>,
    pub ty: DieRef,
    pub address: u64,
}

#[derive(Default, Debug)]
pub struct Index {
    /// The first defining DIE of each type in the unit (every copy has the same layout).
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
    statics: Vec<StaticVariable>,
    /// Link-time address of each `<T as Trait>::{vtable}` -> (the trait's path, the
    /// variable's type: a `{vtable_type}` whose `containing_type` is T). Identical vtables
    /// of several types may share an address.
    vtables: FxHashMap<u64, Vec<(Arc<str>, DieRef)>>,
    /// Every inlined call: (the DIE of the function inlined, the inlined copy).
    inlined_subroutines: Vec<(DieRef, DieRef)>,
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
    fn intern(&mut self, text: &str) -> Arc<str> {
        if let Some(kept) = self.interned.get(text) {
            return kept.clone();
        }
        let kept: Arc<str> = Arc::from(text);
        self.interned.insert(kept.clone());
        kept
    }

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
    /// Indexes one unit.
    pub(super) fn of_unit(unit: UnitView<'_>) -> Result<Index> {
        let mut index = Index::default();
        index.add_unit(unit, &mut Paths::default())?;
        index.code_ranges.sort_unstable();
        Ok(index)
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
            let name_bytes = entry
                .attr_value(constants::DW_AT_name)
                .and_then(|value| unit.dwarf.attr_string(unit.unit, value).ok());
            let name = name_bytes
                .as_ref()
                .and_then(|bytes| bytes.to_string_lossy().ok());
            let found = Found {
                unit,
                entry,
                die,
                name: name.as_deref(),
                parent: &parent,
            };
            let child_scope = self.add_entry(tag, &found, in_function, paths);
            if let Some((path, in_function)) = child_scope.filter(|_| entry.has_children()) {
                scopes.push(Scope {
                    depth,
                    path,
                    in_function,
                });
            }
        }
        Ok(())
    }

    /// Indexes one DIE of an indexed tag; returns the scope its children are in (its
    /// path, and whether inside a function), where it starts one.
    fn add_entry(
        &mut self,
        tag: gimli::DwTag,
        found: &Found<'_, '_>,
        in_function: bool,
        paths: &mut Paths,
    ) -> Option<(Arc<str>, bool)> {
        match tag {
            constants::DW_TAG_namespace => Some((found.path(paths), in_function)),
            constants::DW_TAG_structure_type
            | constants::DW_TAG_union_type
            | constants::DW_TAG_enumeration_type
            | constants::DW_TAG_base_type => Some((self.add_type(found, paths), in_function)),
            constants::DW_TAG_subprogram => {
                self.add_subprogram(found, paths);
                Some((found.parent.clone(), true))
            }
            constants::DW_TAG_variable if !in_function => {
                self.add_static_variable(found, paths);
                None
            }
            constants::DW_TAG_inlined_subroutine => {
                self.inlined_subroutines.extend(
                    found
                        .entry
                        .attr_value(constants::DW_AT_abstract_origin)
                        .and_then(|value| found.unit.attr_die(value))
                        .map(|origin| (origin, found.die)),
                );
                None
            }
            _ => None,
        }
    }

    /// A type: indexed by its path, unless only declared. Its children's scope is its path.
    fn add_type(&mut self, found: &Found<'_, '_>, paths: &mut Paths) -> Arc<str> {
        let path = found.path(paths);
        let declaration = found
            .entry
            .attr_value(constants::DW_AT_declaration)
            .is_some();
        if !declaration && !path.is_empty() {
            self.types.entry(path.clone()).or_insert(found.die);
            self.type_names.insert(found.die, path.clone());
        }
        path
    }

    /// A function: by its address, its code ranges, its origin, its path, and for a
    /// coroutine body its linkage name.
    fn add_subprogram(&mut self, found: &Found<'_, '_>, paths: &mut Paths) {
        let Found {
            unit, entry, die, ..
        } = *found;
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
        if let Some(origin) = unit.origin_of(entry) {
            self.subprogram_origins.insert(die, origin);
        }
        let Some(name) = found.name else {
            return;
        };
        self.subprogram_paths
            .insert(die, paths.join(found.parent, name));
        if !crate::names::is_coroutine_body_name(name) {
            return;
        }
        if let Some(linkage) = entry
            .attr_value(constants::DW_AT_linkage_name)
            .and_then(|value| unit.attr_string(value))
        {
            // Generic resume fns are named `{async_fn#0}<T>`; envs are looked up without.
            let base = name.split('<').next().unwrap_or(name);
            self.coroutine_linkage
                .entry(paths.join(found.parent, base).to_string())
                .or_insert(linkage);
        }
    }

    /// A variable outside any function: a static, a vtable, or a thread-local.
    fn add_static_variable(&mut self, found: &Found<'_, '_>, paths: &mut Paths) {
        let Found {
            unit, entry, name, ..
        } = *found;
        let vtable_trait = name.and_then(vtable_trait);
        let ty = || {
            entry
                .attr_value(constants::DW_AT_type)
                .and_then(|value| unit.attr_die(value))
        };
        if let (None, Some(name), Some(address), Some(ty)) =
            (vtable_trait, name, static_address(unit, entry), ty())
        {
            self.statics.push(StaticVariable {
                path: paths.join(found.parent, name),
                ty,
                address,
            });
        }
        if let (Some(vtable_trait), Some(address), Some(ty)) =
            (vtable_trait, static_address(unit, entry), ty())
        {
            let vtable_trait = paths.intern(vtable_trait);
            self.vtables
                .entry(address)
                .or_default()
                .push((vtable_trait, ty));
        }
        if let (Some(tls_offset), Some(name)) = (tls_offset(unit, entry), name) {
            let linkage_name = entry
                .attr_value(constants::DW_AT_linkage_name)
                .and_then(|value| unit.attr_string(value));
            self.tls_variables.push(TlsVariable {
                path: paths.join(found.parent, name).to_string(),
                linkage_name,
                ty: ty(),
                tls_offset,
            });
        }
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

    /// The qualified names of the types this unit defines.
    pub fn type_names(&self) -> impl Iterator<Item = &str> + '_ {
        self.types.keys().map(|name| &**name)
    }

    #[cfg(test)]
    pub fn types(&self) -> impl Iterator<Item = (&str, DieRef)> + '_ {
        self.types.iter().map(|(name, &die)| (&**name, die))
    }

    #[cfg(test)]
    pub fn code_range_list(&self) -> &[(u64, u64, DieRef)] {
        &self.code_ranges
    }

    pub fn type_name(&self, die: DieRef) -> Option<&str> {
        self.type_names.get(&die).map(|name| &**name)
    }

    pub fn subprogram_at(&self, address: u64) -> Option<DieRef> {
        self.subprograms.get(&address).copied()
    }

    /// The concrete subprogram whose code contains `address` (unbiased).
    pub fn subprogram_containing(&self, address: u64) -> Option<DieRef> {
        let position = self
            .code_ranges
            .partition_point(|&(start, _, _)| start <= address);
        self.code_ranges[..position]
            .iter()
            .rev()
            .take(64)
            .find(|&&(start, end, _)| start <= address && address < end)
            .map(|&(_, _, die)| die)
    }

    /// Every subprogram that has code of its own (each once per address range).
    pub fn concrete_subprograms(&self) -> impl Iterator<Item = DieRef> + '_ {
        self.code_ranges.iter().map(|&(_, _, die)| die)
    }

    /// The qualified path of a subprogram of this unit that carries its own name.
    pub fn subprogram_path_here(&self, die: DieRef) -> Option<&str> {
        self.subprogram_paths.get(&die).map(|path| &**path)
    }

    /// The DIE a subprogram of this unit takes its name from (`specification`/`abstract_origin`).
    pub fn subprogram_origin(&self, die: DieRef) -> Option<DieRef> {
        self.subprogram_origins.get(&die).copied()
    }

    pub fn coroutine_linkage_name(&self, resume_path: &str) -> Option<&str> {
        self.coroutine_linkage.get(resume_path).map(|s| s.as_str())
    }

    /// The `{vtable_type}` of the `dyn Future`/`Stream`/`Body` vtable at this link-time address.
    /// The `{vtable_type}` of the vtable at this address of one of the traits `traits`.
    pub fn vtable_type(&self, address: u64, traits: &[&str]) -> Option<DieRef> {
        let vtables = self.vtables.get(&address)?;
        vtables
            .iter()
            .find(|(vtable_trait, _)| traits.iter().any(|wanted| vtable_trait.starts_with(wanted)))
            .map(|(_, ty)| *ty)
    }

    pub fn tls_variables(&self) -> &[TlsVariable] {
        &self.tls_variables
    }

    pub fn statics(&self) -> &[StaticVariable] {
        &self.statics
    }
}

/// The trait of a vtable variable, `<T as Trait>::{vtable}` -> `Trait`.
fn vtable_trait(name: &str) -> Option<&str> {
    let inside = name.strip_suffix(">::{vtable}")?;
    let at = inside.rfind(" as ")?;
    Some(&inside[at + " as ".len()..])
}

/// An indexed DIE being added, with what `add_unit` found of it.
struct Found<'u, 'e> {
    unit: UnitView<'u>,
    entry: &'e gimli::DebuggingInformationEntry<Reader>,
    die: DieRef,
    name: Option<&'e str>,
    parent: &'e Arc<str>,
}

impl Found<'_, '_> {
    /// Its path: its parent's joined with its name (a nameless one shares its parent's).
    fn path(&self, paths: &mut Paths) -> Arc<str> {
        match self.name {
            Some(name) => paths.join(self.parent, name),
            None => self.parent.clone(),
        }
    }
}

/// The link-time address of a static variable (`DW_OP_addr`, or `DW_OP_addrx` through
/// .debug_addr); dead vtables are emitted at address 0 and are skipped.
fn static_address(
    unit: UnitView<'_>,
    entry: &gimli::DebuggingInformationEntry<Reader>,
) -> Option<u64> {
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
fn tls_offset(
    unit: UnitView<'_>,
    entry: &gimli::DebuggingInformationEntry<Reader>,
) -> Option<Option<u64>> {
    let AttributeValue::Exprloc(expression) = entry.attr_value(constants::DW_AT_location)? else {
        return None;
    };
    let mut operations = expression.operations(unit.encoding());
    let mut constant = None;
    let mut is_tls = false;
    while let Ok(Some(operation)) = operations.next() {
        match operation {
            gimli::Operation::UnsignedConstant { value } => constant = Some(value),
            gimli::Operation::ConstantIndex { index } => {
                constant = unit.dwarf.address(unit.unit, index).ok()
            }
            gimli::Operation::TLS => is_tls = true,
            _ => constant = None,
        }
    }
    is_tls.then_some(constant)
}
