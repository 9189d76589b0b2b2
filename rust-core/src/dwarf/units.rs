//! Which compilation units answer a question. Loading reads the DIEs of no unit but those
//! of the crate the load asks for (`LoadOptions::types_of`); every other unit is indexed
//! the first time a question needs it (an address in its ranges, a name from its crate),
//! so a command's DWARF cost grows with the units its walk touches, not with the binary. rustc's DWARF 4 has no name index: a name is looked for
//! first in the units it is likely in, and a question those units cannot answer is asked of
//! every unit, so the answers are those a whole index gives.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use gimli::{Reader as _, Section as _};
use rustc_hash::FxHashMap;

use super::index::{Index, StaticVariable, TlsVariable};
use super::{DebugInfo, DieRef, LoadedUnit, Reader, SectionSet};

/// Threads that index every unit (behind the commands, or for a question no directed
/// search answered).
const MAX_THREADS: usize = 4;

/// The compilation units and the sections they are read from, with the directory of which
/// answer what.
pub(super) struct UnitStore {
    /// `[0]`: the executable's DWARF (or its debug file's); then one set per split unit.
    pub(super) sections: Vec<SectionSet>,
    /// Ordered by start in the `DieRef` space.
    pub(super) loaded: Vec<LoadedUnit>,
    /// Start of each unit in `loaded` in the `DieRef` space, ascending.
    pub(super) starts: Vec<u64>,
    directory: UnitDirectory,
}

impl UnitStore {
    pub(super) fn new(sections: Vec<SectionSet>, loaded: Vec<LoadedUnit>) -> UnitStore {
        let starts = loaded
            .iter()
            .map(|unit| super::view(&sections, unit).start())
            .collect();
        let directory = UnitDirectory::new(&sections, &loaded);
        UnitStore {
            sections,
            loaded,
            starts,
            directory,
        }
    }
}

/// Where each unit is: by crate and by address. Built at load from each unit's name and
/// ranges and `.debug_aranges`, without reading the units' DIEs.
pub(super) struct UnitDirectory {
    by_crate: FxHashMap<Arc<str>, Vec<usize>>,
    /// The crate of each unit (a key of `by_crate`).
    crate_of: Vec<Arc<str>>,
    /// Whether each unit is the toolchain's own (std, core, alloc, their dependencies).
    toolchain: Vec<bool>,
    /// Whether each unit is of the program's own crates: neither the toolchain's nor from
    /// cargo's registry or git checkouts.
    workspace: Vec<bool>,
    /// Address ranges (code, and statics through `.debug_aranges`) each unit claims:
    /// (start, end, unit), sorted by start.
    ranges: Vec<(u64, u64, usize)>,
    /// `ranges_end_max[i]`: the largest end among `ranges[..=i]`, which bounds a backward scan.
    ranges_end_max: Vec<u64>,
    /// Units that claim no address: asked about every address.
    unplaced: Vec<usize>,
    indexes: Vec<OnceLock<Index>>,
    indexed: AtomicUsize,
    /// What indexing a unit could not read, one line per unit.
    unreadable: Mutex<Vec<String>>,
    all_indexed: OnceLock<()>,
    body_symbols: OnceLock<BodySymbols>,
}

/// Code addresses of closure and coroutine bodies from the symbol table, by the last named
/// segment of their path and how many body segments follow it (`Grpc<T>::unary::{{closure}}`
/// -> ("unary", 1)), each with its demangled path.
type BodySymbols = FxHashMap<(String, usize), Vec<(String, u64)>>;

/// A unit's name (its own, or its skeleton's for a split unit).
fn unit_name(loaded: &LoadedUnit) -> Option<String> {
    [Some(&loaded.unit), loaded.skeleton.as_ref()]
        .into_iter()
        .flatten()
        .find_map(|unit| {
            unit.name
                .as_ref()
                .and_then(|name| name.to_string_lossy().ok().map(|name| name.into_owned()))
        })
}

/// Adds the ranges `.debug_aranges` gives each unit (by its offset in the main sections)
/// to `ranges`, marking the units placed.
fn add_arange_ranges(
    main: &gimli::Dwarf<Reader>,
    by_main_offset: &FxHashMap<usize, usize>,
    ranges: &mut Vec<(u64, u64, usize)>,
    placed: &mut [bool],
) {
    let mut headers = main.debug_aranges.headers();
    while let Ok(Some(header)) = headers.next() {
        let Some(&position) = by_main_offset.get(&header.debug_info_offset().0) else {
            continue;
        };
        let mut entries = header.entries();
        while let Ok(Some(entry)) = entries.next() {
            let range = entry.range();
            if range.begin != 0 && range.begin < range.end {
                ranges.push((range.begin, range.end, position));
                placed[position] = true;
            }
        }
    }
}

impl UnitDirectory {
    fn new(sections: &[SectionSet], units: &[LoadedUnit]) -> UnitDirectory {
        let mut by_crate: FxHashMap<Arc<str>, Vec<usize>> = FxHashMap::default();
        let mut crate_of = Vec::with_capacity(units.len());
        let mut toolchain = Vec::with_capacity(units.len());
        let mut workspace = Vec::with_capacity(units.len());
        let mut ranges = Vec::new();
        let mut placed = vec![false; units.len()];
        let main = &sections[0].dwarf;
        // `.debug_aranges` and a split unit's ranges name the unit in the main sections.
        let mut by_main_offset: FxHashMap<usize, usize> = FxHashMap::default();
        for (position, loaded) in units.iter().enumerate() {
            let main_unit = loaded.skeleton.as_ref().unwrap_or(&loaded.unit);
            by_main_offset.insert(main_unit.header.offset().0, position);
            let name = unit_name(loaded);
            let krate: Arc<str> = Arc::from(crate_of_unit(name.as_deref().unwrap_or("")));
            by_crate.entry(krate.clone()).or_default().push(position);
            crate_of.push(krate);
            toolchain.push(name.as_deref().is_some_and(is_toolchain_unit));
            workspace.push(name.as_deref().is_some_and(is_workspace_unit));
            let dwarf = if loaded.skeleton.is_some() {
                main
            } else {
                &sections[loaded.sections].dwarf
            };
            if let Ok(mut unit_ranges) = dwarf.unit_ranges(main_unit) {
                while let Ok(Some(range)) = unit_ranges.next() {
                    if range.begin != 0 && range.begin < range.end {
                        ranges.push((range.begin, range.end, position));
                        placed[position] = true;
                    }
                }
            }
        }
        add_arange_ranges(main, &by_main_offset, &mut ranges, &mut placed);
        ranges.sort_unstable();
        ranges.dedup();
        let ranges_end_max = ranges
            .iter()
            .scan(0u64, |largest, &(_, end, _)| {
                *largest = (*largest).max(end);
                Some(*largest)
            })
            .collect();
        let unplaced = (0..units.len())
            .filter(|&position| !placed[position])
            .collect();
        UnitDirectory {
            by_crate,
            crate_of,
            toolchain,
            workspace,
            ranges,
            ranges_end_max,
            unplaced,
            indexes: (0..units.len()).map(|_| OnceLock::new()).collect(),
            indexed: AtomicUsize::new(0),
            unreadable: Mutex::default(),
            all_indexed: OnceLock::new(),
            body_symbols: OnceLock::new(),
        }
    }

    /// The units whose ranges hold `address` (not those that claim no address).
    fn units_placing(&self, address: u64) -> Vec<usize> {
        let after = self
            .ranges
            .partition_point(|&(start, _, _)| start <= address);
        let mut found: Vec<usize> = (0..after)
            .rev()
            .take_while(|&at| self.ranges_end_max[at] > address)
            .filter(|&at| self.ranges[at].1 > address)
            .map(|at| self.ranges[at].2)
            .collect();
        found.sort_unstable();
        found.dedup();
        found
    }

    /// The units that claim `address`, and every unit that claims none, in unit order.
    fn units_at(&self, address: u64) -> Vec<usize> {
        let mut found = self.units_placing(address);
        found.extend(self.unplaced.iter().copied());
        found.sort_unstable();
        found.dedup();
        found
    }

    /// The units of the crates `name` mentions, in the order it mentions them.
    fn units_named_by(&self, name: &str) -> Vec<usize> {
        let mut found = Vec::new();
        for krate in crates_named_in(name) {
            if let Some(units) = self.by_crate.get(krate) {
                add_new(&mut found, units.iter().copied());
            }
        }
        found
    }
}

impl DebugInfo {
    /// The index of one unit, built on first use. A unit whose DIEs cannot be read indexes
    /// as empty (its questions go unanswered) and is named in `problems`.
    pub(super) fn unit_index(&self, position: usize) -> &Index {
        self.units.directory.indexes[position].get_or_init(|| {
            self.units.directory.indexed.fetch_add(1, Ordering::Relaxed);
            let view = self.view(&self.units.loaded[position]);
            Index::of_unit(view).unwrap_or_else(|error| {
                let line = format!(
                    "the DWARF unit at {:#x} is unreadable: {}",
                    view.start(),
                    error.message()
                );
                if let Ok(mut unreadable) = self.units.directory.unreadable.lock() {
                    unreadable.push(line);
                }
                Index::default()
            })
        })
    }

    /// The units indexing could not read so far, one line each.
    pub fn unreadable_units(&self) -> Vec<String> {
        self.units
            .directory
            .unreadable
            .lock()
            .map(|lines| lines.clone())
            .unwrap_or_default()
    }

    /// What loading did without (split units not found) and the units indexing could not
    /// read so far, one line each.
    pub fn problems(&self) -> Vec<String> {
        self.load_problems
            .iter()
            .cloned()
            .chain(self.unreadable_units())
            .collect()
    }

    /// (units indexed so far, units in the binary).
    pub fn units_indexed(&self) -> (usize, usize) {
        (
            self.units.directory.indexed.load(Ordering::Relaxed),
            self.units.loaded.len(),
        )
    }

    /// (bytes of DWARF in the units indexed so far, in all units).
    pub fn unit_bytes_indexed(&self) -> (u64, u64) {
        let size = |at: usize| self.units.loaded[at].unit.header.length_including_self() as u64;
        let indexed = (0..self.units.loaded.len())
            .filter(|&at| self.units.directory.indexes[at].get().is_some())
            .map(size)
            .sum();
        (indexed, (0..self.units.loaded.len()).map(size).sum())
    }

    /// Indexes every unit not yet indexed, on up to `MAX_THREADS` threads.
    pub fn index_all(&self) {
        self.units.directory.all_indexed.get_or_init(|| {
            let threads = std::thread::available_parallelism()
                .map_or(1, |count| count.get())
                .clamp(1, MAX_THREADS);
            let missing: Vec<usize> = (0..self.units.loaded.len())
                .filter(|&at| self.units.directory.indexes[at].get().is_none())
                .collect();
            if threads == 1 || missing.len() < 2 {
                for &at in &missing {
                    self.unit_index(at);
                }
                return;
            }
            let next = AtomicUsize::new(0);
            std::thread::scope(|scope| {
                for _ in 0..threads {
                    scope.spawn(|| {
                        crate::threads::block_signals();
                        // A panic here leaves the unit unindexed; `unit_index` retries it.
                        let _ = crate::panics::guarded(|| {
                            while let Some(&at) = missing.get(next.fetch_add(1, Ordering::Relaxed))
                            {
                                self.unit_index(at);
                            }
                            Ok(())
                        });
                    });
                }
            });
        });
    }

    /// The first answer from `first` (in its order), else from any unit (in unit order).
    fn first_answer<'a, T>(
        &'a self,
        first: &[usize],
        find: impl Fn(&'a Index) -> Option<T>,
    ) -> Option<T> {
        if let Some(found) = first.iter().find_map(|&at| find(self.unit_index(at))) {
            return Some(found);
        }
        self.index_all();
        (0..self.units.loaded.len()).find_map(|at| find(self.unit_index(at)))
    }

    /// The position of the unit holding `die`.
    pub(super) fn unit_position(&self, die: DieRef) -> Option<usize> {
        self.units
            .starts
            .partition_point(|&start| start <= die.0)
            .checked_sub(1)
    }

    /// Units to ask about a name: `near`'s (a DIE of the unit the name was met in), the
    /// other units of its crate, then those of the crates the name mentions.
    fn units_for_name(&self, name: &str, near: Option<DieRef>) -> Vec<usize> {
        let near = near.and_then(|die| self.unit_position(die));
        let mut units: Vec<usize> = near.into_iter().collect();
        // A generic item is compiled in the crate that instantiates it: near's.
        if let Some(krate) = near.and_then(|at| self.crate_units_of(at)) {
            add_new(&mut units, krate.iter().copied());
        }
        add_new(&mut units, self.units.directory.units_named_by(name));
        units
    }

    /// A defining DIE of the type with this qualified name (any of its per-unit copies),
    /// looked for where `units_for_name` says first.
    pub fn type_by_name(&self, name: &str, near: Option<DieRef>) -> Option<DieRef> {
        self.first_answer(&self.units_for_name(name, near), |index| {
            index.type_by_name(name)
        })
    }

    /// The qualified name the index gave the type at `die`.
    pub fn indexed_type_name(&self, die: DieRef) -> Option<&str> {
        self.unit_index(self.unit_position(die)?).type_name(die)
    }

    /// Every type name starting with `prefix`, sorted: a search of every unit.
    pub fn type_names_with_prefix(&self, prefix: &str) -> Vec<String> {
        self.index_all();
        let mut names: Vec<String> = (0..self.units.loaded.len())
            .flat_map(|at| {
                self.unit_index(at)
                    .type_names()
                    .filter(|name| name.starts_with(prefix))
                    .map(str::to_string)
                    .collect::<Vec<_>>()
            })
            .collect();
        names.sort_unstable();
        names.dedup();
        names
    }

    /// Whether any unit of the crate `krate` (or, when it has none, any unit) defines a type.
    pub(super) fn has_types(&self, krate: &str) -> bool {
        let units = self
            .units
            .directory
            .by_crate
            .get(krate)
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        self.first_answer(units, |index| (index.type_count() > 0).then_some(()))
            .is_some()
    }

    pub fn subprogram_at(&self, address: u64) -> Option<DieRef> {
        self.units
            .directory
            .units_at(address)
            .into_iter()
            .find_map(|at| self.unit_index(at).subprogram_at(address))
    }

    /// The concrete subprogram whose code contains `address` (unbiased).
    pub fn subprogram_containing(&self, address: u64) -> Option<DieRef> {
        self.units
            .directory
            .units_at(address)
            .into_iter()
            .find_map(|at| self.unit_index(at).subprogram_containing(address))
    }

    /// The qualified path of a subprogram, following its specification/abstract origin
    /// (to other units too), and the DIE that carries it.
    pub fn subprogram_path(&self, die: DieRef) -> Option<(&str, DieRef)> {
        let mut current = die;
        for _ in 0..super::calls::MAX_ORIGIN_HOPS {
            let index = self.unit_index(self.unit_position(current)?);
            if let Some(path) = index.subprogram_path_here(current) {
                return Some((path, current));
            }
            current = index.subprogram_origin(current)?;
        }
        None
    }

    /// The linkage name of the coroutine resume function at this DWARF path, looked for
    /// first in the units its symbols' code is in, then as `units_for_name` says.
    pub fn coroutine_linkage_name(&self, resume_path: &str, near: Option<DieRef>) -> Option<&str> {
        let mut units = self.units_of_body_symbols(resume_path);
        add_new(&mut units, self.units_for_name(resume_path, near));
        self.first_answer(&units, |index| index.coroutine_linkage_name(resume_path))
    }

    /// The units holding the code of the symbols that may be the body (a coroutine's resume
    /// function, a closure) at this DWARF path: those whose demangled path ends in the same
    /// named segment and number of body segments, within the path's module for an inherent
    /// impl. A hint: the DWARF decides.
    fn units_of_body_symbols(&self, body_path: &str) -> Vec<usize> {
        let segments = crate::names::split_path(body_path);
        let Some((key, module)) = body_key(&segments) else {
            return Vec::new();
        };
        let symbols = self
            .units
            .directory
            .body_symbols
            .get_or_init(|| body_symbols(&self.elf.symbols));
        let mut units = Vec::new();
        for (demangled, address) in symbols.get(&key).into_iter().flatten() {
            if demangled.starts_with('<') || demangled.starts_with(&module) {
                add_new(&mut units, self.units.directory.units_at(*address));
            }
        }
        units
    }

    /// The `{vtable_type}` of the `dyn Future`/`Stream`/`Body` vtable at this link-time address.
    pub fn vtable_type(&self, address: u64, traits: &[&str]) -> Option<DieRef> {
        self.first_answer(&self.units.directory.units_at(address), |index| {
            index.vtable_type(address, traits)
        })
    }

    /// The thread-locals whose path starts with `prefix` (`tokio::runtime::context::CONTEXT::`):
    /// those of the first unit holding code of the module it is in where one is a symbol
    /// (rustc places a module's statics with its functions; it also emits decoys, which
    /// have none); else those of the units of the prefix's crate; else of every unit.
    pub fn tls_variables(&self, prefix: &str) -> Vec<TlsVariable> {
        self.tls_variables_searching(prefix, true)
    }

    /// `tls_variables`, without the search of every unit when the units of the prefix's
    /// module and crate hold none: for a thread-local a program need not have.
    pub fn tls_variables_if_linked(&self, prefix: &str) -> Vec<TlsVariable> {
        self.tls_variables_searching(prefix, false)
    }

    fn tls_variables_searching(&self, prefix: &str, everywhere: bool) -> Vec<TlsVariable> {
        let matching = |units: &[usize]| -> Vec<TlsVariable> {
            let variables = units
                .iter()
                .flat_map(|&at| self.unit_index(at).tls_variables());
            variables
                .filter(|variable| variable.path.starts_with(prefix))
                .cloned()
                .collect()
        };
        let segments: Vec<&str> = crate::names::split_path(prefix)
            .into_iter()
            .filter(|segment| !segment.is_empty())
            .collect();
        let module = segments[..segments.len().saturating_sub(1)].join("::");
        // The module's code is in many units (generics, inline copies); its crate's own first.
        let mut module_units = self.units_of_symbols_under(&module);
        let krate = segments.first().copied().unwrap_or_default();
        module_units.sort_by_key(|&at| (&*self.units.directory.crate_of[at] != krate, at));
        for at in module_units {
            let found = matching(&[at]);
            if found
                .iter()
                .any(|variable| variable.is_symbol_in(&self.elf.symbols))
            {
                return found;
            }
        }
        let in_crate = matching(&self.units.directory.units_named_by(prefix));
        if !in_crate.is_empty() || !everywhere {
            return in_crate;
        }
        self.index_all();
        matching(&(0..self.units.loaded.len()).collect::<Vec<_>>())
    }

    /// The program's mutable statics at module level (where a runtime can be kept: behind
    /// a `OnceLock`, a `LazyLock`, a `Mutex`), but the toolchain's (std keeps no tokio
    /// runtime). Only the units that hold them are indexed: those `.debug_aranges` places
    /// the symbols of the writable segments in. A static declared in several units is
    /// listed once.
    pub fn mutable_statics(&self) -> Vec<StaticVariable> {
        let mut units = Vec::new();
        for &address in self.elf.symbols.values() {
            if self.elf.is_writable_static(address) {
                add_new(&mut units, self.units.directory.units_placing(address));
            }
        }
        // Units that claim no address (an optimized build leaves crates whose code was all
        // inlined elsewhere so): those of the program's own crates, not its dependencies'.
        add_new(
            &mut units,
            self.units
                .directory
                .unplaced
                .iter()
                .copied()
                .filter(|&at| self.units.directory.workspace[at]),
        );
        units.retain(|&at| !self.units.directory.toolchain[at]);
        units.sort_unstable();
        let mut seen = rustc_hash::FxHashSet::default();
        units
            .into_iter()
            .flat_map(|at| self.unit_index(at).statics())
            .filter(|variable| self.elf.is_writable_static(variable.address))
            .filter(|variable| seen.insert(variable.address))
            .cloned()
            .collect()
    }

    /// The units holding the code of the symbols whose demangled path starts with `prefix`
    /// (only names holding each of its segments, length-prefixed as both manglings write
    /// them, are demangled).
    fn units_of_symbols_under(&self, prefix: &str) -> Vec<usize> {
        if prefix.is_empty() {
            return Vec::new();
        }
        let segments: Vec<String> = crate::names::split_path(prefix)
            .iter()
            .map(|segment| format!("{}{segment}", segment.len()))
            .collect();
        let mut units = Vec::new();
        for (name, &address) in &self.elf.symbols {
            if address == 0
                || !segments
                    .iter()
                    .all(|segment| name.contains(segment.as_str()))
            {
                continue;
            }
            let demangled = crate::names::demangle(name);
            if demangled
                .strip_prefix('<')
                .unwrap_or(&demangled)
                .starts_with(prefix)
            {
                add_new(&mut units, self.units.directory.units_at(address));
            }
        }
        units.sort_unstable();
        units
    }

    /// Every string of the string sections that contains `needle`: the linkage names of
    /// functions, which every subprogram's `DW_AT_linkage_name` points into, read without
    /// reading any unit.
    pub fn strings_containing(&self, needle: &[u8]) -> Vec<String> {
        let mut found = Vec::new();
        for set in &self.units.sections {
            let Ok(strings) = set.dwarf.debug_str.reader().to_slice() else {
                continue;
            };
            for at in memchr::memmem::find_iter(&strings, needle) {
                let start = strings[..at]
                    .iter()
                    .rposition(|&b| b == 0)
                    .map_or(0, |nul| nul + 1);
                let end = strings[at..]
                    .iter()
                    .position(|&b| b == 0)
                    .map_or(strings.len(), |nul| at + nul);
                if let Ok(text) = std::str::from_utf8(&strings[start..end]) {
                    found.push(text.to_string());
                }
            }
        }
        found
    }

    /// The units to search for every copy of a coroutine body: those its symbols' code is
    /// in and `near`'s, when `found` says they hold only out-of-line copies (unoptimized
    /// code, where each copy has a symbol); else also the units `units_for_name` gives
    /// (optimized code inlines copies into other functions' units), and every unit when
    /// those hold none. `found(unit)`: (copies in the unit, inlined ones among them).
    pub(super) fn units_for_function(
        &self,
        function_path: &str,
        near: Option<DieRef>,
        found: impl Fn(usize) -> (usize, usize),
    ) -> Vec<usize> {
        let mut units = self.units_of_body_symbols(function_path);
        add_new(&mut units, near.and_then(|die| self.unit_position(die)));
        let (copies, inlined) = units.iter().fold((0, 0), |(copies, inlined), &at| {
            let (more, more_inlined) = found(at);
            (copies + more, inlined + more_inlined)
        });
        if copies > 0 && inlined == 0 {
            return units;
        }
        add_new(&mut units, self.units_for_name(function_path, near));
        if units.iter().any(|&at| found(at).0 > 0) {
            return units;
        }
        self.index_all();
        (0..self.units.loaded.len()).collect()
    }

    /// Every unit of the crate that unit `at` belongs to.
    fn crate_units_of(&self, at: usize) -> Option<&[usize]> {
        let krate = self.units.directory.crate_of.get(at)?;
        self.units.directory.by_crate.get(krate).map(Vec::as_slice)
    }

    /// Reads now, on the loading thread, what every first command reads besides the units
    /// indexed at load: the GOT slots.
    pub fn prepare(&self) {
        self.code_slots();
    }
}

/// Appends the units not yet in `units`, keeping the order.
fn add_new(units: &mut Vec<usize>, more: impl IntoIterator<Item = usize>) {
    for unit in more {
        if !units.contains(&unit) {
            units.push(unit);
        }
    }
}

/// Whether a unit is the toolchain's: rustc builds std and its dependencies from
/// `/rustc/<hash>/library/…` and `/rust/deps/…`.
fn is_toolchain_unit(name: &str) -> bool {
    name.starts_with("/rustc/") || name.starts_with("/rust/deps/")
}

/// Whether a unit is of the program's own crates: not the toolchain's, and not a
/// dependency cargo fetched (`…/registry/src/…`, `…/git/checkouts/…`).
fn is_workspace_unit(name: &str) -> bool {
    !is_toolchain_unit(name)
        && !name.contains("/registry/src/")
        && !name.contains("/git/checkouts/")
}

/// The crate a unit belongs to, from its name: rustc names a unit after the crate's root
/// source and its codegen unit (`tokio-1.54.1/src/lib.rs/@/…`, `app/src/main.rs/@/…`,
/// `library/core/src/lib.rs/@/…`; older releases `…/@/tokio.abc123-cgu.0`). Only a hint:
/// a wrong crate costs a slower search, never a wrong answer.
fn crate_of_unit(name: &str) -> String {
    let (root, codegen_unit) = name.split_once("/@/").unwrap_or((name, ""));
    if let Some((krate, _)) = codegen_unit
        .split_once('.')
        .filter(|(krate, _)| !krate.is_empty() && !krate.contains('/'))
    {
        return krate.replace('-', "_");
    }
    let mut parts = root.rsplit('/');
    let file = parts.next().unwrap_or_default();
    let stem = file.strip_suffix(".rs").unwrap_or(file);
    let directory = parts.next().unwrap_or_default();
    let package = match (stem, directory) {
        ("lib" | "main", "src") => parts.next().unwrap_or_default(),
        _ if directory.is_empty() => stem,
        _ => stem,
    };
    without_version(package).replace('-', "_")
}

/// `tokio-1.54.1` -> `tokio`; a name with no version stays as it is.
fn without_version(package: &str) -> &str {
    match package.rsplit_once('-') {
        Some((name, version))
            if version.split('.').next().is_some_and(|major| {
                !major.is_empty() && major.bytes().all(|b| b.is_ascii_digit())
            }) =>
        {
            name
        }
        _ => package,
    }
}

/// The crates a qualified name mentions: each path's first segment, in order, once.
/// `tokio::task::JoinHandle<app::Reply>` -> `tokio`, `app`.
fn crates_named_in(name: &str) -> Vec<&str> {
    let bytes = name.as_bytes();
    let mut crates: Vec<&str> = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let starts_identifier = (bytes[at].is_ascii_alphabetic() || bytes[at] == b'_')
            && (at == 0
                || !(bytes[at - 1].is_ascii_alphanumeric()
                    || matches!(bytes[at - 1], b'_' | b':' | b'#')));
        if !starts_identifier {
            at += 1;
            continue;
        }
        let end = at
            + bytes[at..]
                .iter()
                .take_while(|b| b.is_ascii_alphanumeric() || **b == b'_')
                .count();
        if bytes[end..].starts_with(b"::") && !crates.contains(&&name[at..end]) {
            crates.push(&name[at..end]);
        }
        at = end;
    }
    crates
}

/// Whether a path segment names a closure or coroutine body, in DWARF (`{async_fn#0}`,
/// `{closure#1}`) or in a demangled symbol (`{{closure}}`, v0's `{closure#0}`).
fn is_body_segment(segment: &str) -> bool {
    segment == "{{closure}}"
        || crate::names::is_coroutine_body_name(segment)
        || segment.starts_with("{async_closure#")
}

/// (last named segment, body segments after it) of a body's path, and the module before
/// its first `{impl#N}` (or its whole named prefix); `None` for a path that names no body.
fn body_key(segments: &[&str]) -> Option<((String, usize), String)> {
    let bodies = segments
        .iter()
        .rev()
        .take_while(|segment| is_body_segment(segment))
        .count();
    let named = segments
        .len()
        .checked_sub(bodies + 1)
        .filter(|_| bodies > 0)?;
    let name = segments[named]
        .split('<')
        .next()
        .unwrap_or(segments[named])
        .to_string();
    let module_end = segments
        .iter()
        .position(|segment| segment.starts_with("{impl#"))
        .unwrap_or(named + 1);
    Some(((name, bodies), segments[..module_end].join("::")))
}

/// The `BodySymbols` of a symbol table: only names that mention a closure are demangled.
fn body_symbols(symbols: &FxHashMap<String, u64>) -> BodySymbols {
    let mut bodies: BodySymbols = FxHashMap::default();
    for (name, &address) in symbols {
        if address == 0 || !name.contains("closure") {
            continue;
        }
        let demangled = crate::names::demangle(name);
        let segments = crate::names::split_path(&demangled);
        if let Some((key, _)) = body_key(&segments) {
            bodies
                .entry(key)
                .or_default()
                .push((demangled.clone(), address));
        }
    }
    bodies
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_unit_name_gives_its_crate() {
        let cases = [
            ("/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/tokio-1.54.1/src/lib.rs/@/01abc", "tokio"),
            ("tokio-app/src/main.rs/@/017znqvwypxgrc9lmzf15czmq", "tokio_app"),
            ("/rustc/5980761/library/core/src/lib.rs/@/core.a1b2-cgu.0", "core"),
            ("/rustc/5980761/library/compiler-builtins/compiler-builtins/src/lib.rs/@/x", "compiler_builtins"),
            ("compiler_builtins", "compiler_builtins"),
            ("src/main.rs/@/tokio_app.5e1c2b3-cgu.0", "tokio_app"),
            ("app/src/bin/worker.rs/@/0xyz", "worker"),
            ("/rust/deps/hashbrown-0.16.1/src/lib.rs/@/0q", "hashbrown"),
        ];
        for (name, krate) in cases {
            assert_eq!(crate_of_unit(name), krate, "{name}");
        }
    }

    #[test]
    fn a_body_and_its_symbols_share_a_key() {
        let key = |path: &str| body_key(&crate::names::split_path(path));
        let dwarf = key("tonic::client::grpc::{impl#0}::unary::{async_fn#0}").unwrap();
        assert_eq!(
            dwarf,
            (("unary".to_string(), 1), "tonic::client::grpc".to_string())
        );
        for symbol in [
            "tonic::client::grpc::Grpc<T>::unary::{{closure}}",
            "<tonic::client::grpc::Grpc<_>>::unary::{closure#0}",
        ] {
            assert_eq!(key(symbol).unwrap().0, dwarf.0, "{symbol}");
        }
        assert_eq!(
            key("app::main::{async_block#1}::{closure#0}::{async_closure#0}")
                .unwrap()
                .0,
            ("main".to_string(), 3)
        );
        assert_eq!(key("app::main::{async_block#1}").unwrap().1, "app::main");
        assert_eq!(key("app::run"), None);
        assert_eq!(key("{closure#0}"), None);
    }

    #[test]
    fn a_name_mentions_the_crates_of_its_paths() {
        assert_eq!(
            crates_named_in("tokio::runtime::task::core::Cell<app::Fut, alloc::sync::Arc<tokio::x::H, alloc::alloc::Global>>"),
            ["tokio", "app", "alloc"]
        );
        assert_eq!(
            crates_named_in("<app::Foo as core::future::future::Future>::poll"),
            ["app", "core"]
        );
        assert_eq!(
            crates_named_in("app::run::{impl#3}::go::{async_fn#0}"),
            ["app"]
        );
        assert_eq!(crates_named_in("u64"), Vec::<&str>::new());
    }
}
