//! Searches across many units whose answers the commands ask again and again: where a
//! thread-local lives, whether a type of some name exists, which statics a layer above
//! reads, which types have code for a trait's method. Each answer is found once per binary
//! and kept here, by what was asked.

use std::sync::{Arc, Mutex};

use rustc_hash::{FxHashMap, FxHashSet};

use super::{kept, DebugInfo, DieRef, StaticVariable, TlsVariable};
use crate::error::{Error, Result};
use crate::names;

/// Where a thread-local lives in the executable's static TLS block, and its type.
#[derive(Debug, Clone, PartialEq)]
pub struct ThreadLocalPlace {
    pub tls_offset: u64,
    pub storage_type: DieRef,
}

/// How far `DebugInfo::thread_local` looks, and what it takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ThreadLocalSearch {
    /// A thread-local the program must have: every unit if need be, and without a symbol
    /// naming one (the symbols are elsewhere) the first found.
    Required,
    /// A thread-local the program need not link: the units of its module and crate only,
    /// and only a variable a symbol names (the linker leaves decoys of a dropped one).
    IfLinked,
}

/// What `DebugInfo::thread_local` answers.
type ThreadLocalAnswer = Result<Option<ThreadLocalPlace>>;

/// The kept answers.
#[derive(Default)]
pub(super) struct SearchCaches {
    thread_locals: Mutex<FxHashMap<(String, ThreadLocalSearch), ThreadLocalAnswer>>,
    type_names: Mutex<FxHashMap<String, Option<Arc<str>>>>,
    chosen_statics: Mutex<FxHashMap<&'static str, Arc<[StaticVariable]>>>,
    implementing: Mutex<FxHashMap<TraitMethods, Arc<FxHashSet<String>>>>,
}

/// Trait methods as `types_implementing` finds them: a byte string of their mangled
/// linkage names, and the end of the demangled name after the type
/// (` as core::future::future::Future>::poll`).
pub type TraitMethods = &'static [(&'static [u8], &'static str)];

impl DebugInfo {
    /// The thread-local whose path starts with `namespace` (`tokio::runtime::context::CONTEXT::`):
    /// its place and type; `None` where the program has none. rustc emits decoys at the
    /// same location; the real one is the one whose linkage name is a symbol.
    pub fn thread_local(
        &self,
        namespace: &str,
        search: ThreadLocalSearch,
    ) -> Result<Option<ThreadLocalPlace>> {
        kept(
            &self.searches.thread_locals,
            (namespace.to_string(), search),
            || self.find_thread_local(namespace, search),
        )
    }

    fn find_thread_local(
        &self,
        namespace: &str,
        search: ThreadLocalSearch,
    ) -> Result<Option<ThreadLocalPlace>> {
        let candidates: Vec<TlsVariable> = match search {
            ThreadLocalSearch::Required => self.tls_variables(namespace),
            ThreadLocalSearch::IfLinked => self.tls_variables_if_linked(namespace),
        };
        let chosen = candidates
            .iter()
            .find(|variable| variable.is_symbol_in(&self.elf.symbols))
            .or_else(|| {
                candidates
                    .first()
                    .filter(|_| search == ThreadLocalSearch::Required)
            });
        let Some(chosen) = chosen else {
            return Ok(None);
        };
        let tls_offset = chosen
            .linkage_name
            .as_ref()
            .and_then(|name| self.elf.symbols.get(name).copied())
            .or(chosen.tls_offset)
            .ok_or_else(|| {
                Error::layout(format!(
                    "the thread-local {namespace} has no static TLS offset"
                ))
            })?;
        let storage_type = chosen
            .ty
            .ok_or_else(|| Error::layout(format!("the thread-local {namespace} has no type")))?;
        Ok(Some(ThreadLocalPlace {
            tls_offset,
            storage_type,
        }))
    }

    /// A type whose name starts with `prefix`, the first in name order; `None` when no unit
    /// defines one. Indexes every unit the first time.
    pub fn type_name_with_prefix(&self, prefix: &str) -> Option<Arc<str>> {
        kept(&self.searches.type_names, prefix.to_string(), || {
            self.type_names_with_prefix(prefix)
                .into_iter()
                .next()
                .map(Arc::from)
        })
    }

    /// The mutable statics (`mutable_statics`) that `keep` keeps, chosen once per binary
    /// and kept under `choice`, the name of what a layer above reads them for.
    pub fn mutable_statics_chosen(
        &self,
        choice: &'static str,
        keep: impl FnMut(&StaticVariable) -> bool,
    ) -> Arc<[StaticVariable]> {
        kept(&self.searches.chosen_statics, choice, || {
            self.mutable_statics().into_iter().filter(keep).collect()
        })
    }

    /// The types (paths without generic arguments) the binary has code for one of
    /// `methods` of, from the linkage names in its string sections.
    pub fn types_implementing(&self, methods: TraitMethods) -> Arc<FxHashSet<String>> {
        kept(&self.searches.implementing, methods, || {
            let mut types = FxHashSet::default();
            for (needle, _) in methods {
                for linkage_name in self.strings_containing(needle) {
                    let demangled = names::demangle(&linkage_name);
                    let Some(inner) = demangled.strip_prefix('<') else {
                        continue;
                    };
                    if let Some(ty) = methods
                        .iter()
                        .find_map(|(_, suffix)| inner.strip_suffix(suffix))
                    {
                        types.insert(names::strip_last_generics(ty));
                    }
                }
            }
            Arc::new(types)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;
    use crate::testing::Program;

    const NAMESPACE: &str = "app::STATE::";

    fn program_with(variables: impl FnOnce(&mut Program)) -> DebugInfo {
        let mut program = Program::new();
        variables(&mut program);
        program.load()
    }

    #[test]
    fn a_thread_local_is_the_one_a_symbol_names_else_a_decoy_only_where_required() {
        let decoy_and_real = program_with(|program| {
            let u64 = program.u64();
            program.thread_local("app::STATE::decoy::VAL", u64, 0x10);
            program.linked_thread_local(
                "app::STATE::VAL",
                u64,
                0x40,
                "_ZN3app5STATE3VAL17h0123456789abcdefE",
            );
        });
        let real = decoy_and_real
            .thread_local(NAMESPACE, ThreadLocalSearch::Required)
            .unwrap()
            .unwrap();
        assert_eq!(real.tls_offset, 0x40);
        assert_eq!(
            decoy_and_real
                .thread_local(NAMESPACE, ThreadLocalSearch::IfLinked)
                .unwrap(),
            Some(real.clone()),
        );

        let only_decoy = program_with(|program| {
            let u64 = program.u64();
            program.thread_local("app::STATE::VAL", u64, 0x10);
        });
        let found = only_decoy.thread_local(NAMESPACE, ThreadLocalSearch::Required);
        assert_eq!(found.unwrap().map(|place| place.tls_offset), Some(0x10));
        let found = only_decoy.thread_local(NAMESPACE, ThreadLocalSearch::IfLinked);
        assert_eq!(found.unwrap(), None);
        let found = only_decoy.thread_local("app::OTHER::", ThreadLocalSearch::Required);
        assert_eq!(found.unwrap(), None);
    }

    #[test]
    fn a_thread_local_without_a_type_is_a_layout_error_each_time_asked() {
        let debug = program_with(|program| program.untyped_thread_local("app::STATE::VAL", 0x10));
        for _ in 0..2 {
            let error = debug
                .thread_local(NAMESPACE, ThreadLocalSearch::Required)
                .unwrap_err();
            assert_eq!(error.kind, ErrorKind::Layout);
            assert_eq!(error.message(), "the thread-local app::STATE:: has no type");
        }
    }

    #[test]
    fn a_type_by_prefix_is_the_first_by_name_or_none() {
        let debug = program_with(|program| {
            program.structure("app::Core<b>", 8, &[]);
            program.structure("app::Core<a>", 8, &[]);
        });
        assert_eq!(
            debug.type_name_with_prefix("app::Core<").as_deref(),
            Some("app::Core<a>")
        );
        assert_eq!(debug.type_name_with_prefix("app::Missing"), None);
        assert_eq!(debug.type_name_with_prefix("app::Missing"), None);
    }

    #[test]
    fn types_implementing_a_method_are_read_from_linkage_names_without_generics() {
        const POLL: TraitMethods = &[(b"4poll", " as core::future::future::Future>::poll")];
        let debug = program_with(|program| {
            program.linked_function(
                "poll",
                "_ZN68_$LT$app..Wait$LT$u8$GT$$u20$as$u20$core..future..future..Future$GT$4poll17h0123456789abcdefE",
            );
            program.linked_function("pull", "_ZN3app4pull17h0123456789abcdefE");
        });
        let types = debug.types_implementing(POLL);
        assert_eq!(types.iter().collect::<Vec<_>>(), ["app::Wait"]);
        assert!(Arc::ptr_eq(&types, &debug.types_implementing(POLL)));
    }
}
