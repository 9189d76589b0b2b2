//! Futures no decoder knows, searched structurally: their fields, the active variant of
//! enums and what a `Box` (or a `Box<dyn http_body::Body>`, through its vtable) holds, down to
//! the nearest values that are futures themselves (a coroutine, a type with a decoder, a
//! `dyn Future`/`dyn Stream`, a `Pin` of a future, or a type the binary has
//! `poll`/`poll_next` code for). Whether a type can hold a future at all is decided once per
//! type from the DWARF type graph, so buffers, sockets and maps are never walked. No other
//! pointer is followed: shared state behind `Arc`/`Rc` is left to the decoders.

use std::sync::Arc;

use rustc_hash::{FxHashMap, FxHashSet};

use super::decoders::boxed;
use super::outcome::{Child, SearchRoot};
use super::{registry, FutureDecoder};
use crate::dwarf::{DebugInfo, DieRef, TypeInfo, TypeTag};
use crate::error::Result;
use crate::layouts::rust;
use crate::names;
use crate::std_values;
use crate::value::{offset, Value};

/// How many nested fields one search goes through.
const MAX_FIELD_DEPTH: usize = 64;
/// How many values one search looks at (each costs at most one small read).
const MAX_VISITED: usize = 512;
/// How deep the type graph is followed when classifying a type.
const MAX_TYPE_DEPTH: usize = 48;
/// Types with a `Future`/`Stream` impl that only forwards to what they hold: the search
/// looks inside them (the active variant, the boxed value) instead of stopping there.
const CONTAINERS: &[&str] = &[
    "core::option::Option",
    "alloc::boxed::Box",
    "core::pin::Pin",
    "either::Either",
];

/// A future found inside another, with the field path that leads to it.
pub struct Found<'a> {
    pub via: String,
    pub value: Value<'a>,
}

/// What is known about each type, per command.
#[derive(Default)]
pub struct TypeFacts {
    can_hold_future: FxHashMap<DieRef, bool>,
}

impl<'a> FutureDecoder<'a> {
    /// Whether a value of this type is a future the decoder can show as a node.
    pub(super) fn is_future(&self, info: &TypeInfo) -> bool {
        // A plain pointer is followed only as a Box (see `visit`); a boxed body is looked into.
        if info.tag == TypeTag::Pointer || boxed::is_dyn_body(info) {
            return false;
        }
        if info.name.starts_with(rust::PIN_PREFIX) {
            return self.pins_a_future(info);
        }
        let path = names::strip_last_generics(&info.name);
        names::coroutine_kind(&info.name).is_some()
            || boxed::is_dyn_future(info)
            || registry::decoder_for(info).is_some()
            || (!CONTAINERS.contains(&path.as_str()) && self.polled_types.contains(&path))
    }

    /// `Pin<P>` is a future when P is a `dyn Future` or points to a future; a pinned box of
    /// anything else (an I/O object, a body) is searched like any other field.
    fn pins_a_future(&self, pin: &TypeInfo) -> bool {
        let debug = self.target().debug;
        let Some(pointer) = std_values::pin_pointer_type(debug, pin) else {
            return false;
        };
        if boxed::is_dyn_future(&pointer) {
            return true;
        }
        pointer.tag == TypeTag::Pointer
            && pointer
                .target
                .and_then(|target| debug.type_info(target).ok())
                .is_some_and(|pointee| self.is_future(&pointee))
    }

    /// The futures a search root gives, as children.
    pub(super) fn search(&self, root: &SearchRoot) -> Result<Vec<Child>> {
        let value = self.target().value(root.ty, root.address)?;
        if root.itself && self.is_future(&value.ty) {
            return Ok(vec![Child {
                via: Some(root.via.clone()),
                held: root.held,
                ..Child::of(&value)
            }]);
        }
        Ok(self
            .inner_futures(&value)?
            .into_iter()
            .map(|found| Child {
                via: Some(join(&root.via, &found.via)),
                held: root.held,
                ..Child::of(&found.value)
            })
            .collect())
    }

    /// The nearest futures inside `value`'s fields (not `value` itself).
    pub(crate) fn inner_futures(&self, value: &Value<'a>) -> Result<Vec<Found<'a>>> {
        let mut search = Search {
            found: Vec::new(),
            visited: 0,
        };
        self.search_fields(value, "", 0, &mut search)?;
        Ok(search.found)
    }

    fn search_fields(
        &self,
        value: &Value<'a>,
        via: &str,
        depth: usize,
        search: &mut Search<'a>,
    ) -> Result<()> {
        if depth > MAX_FIELD_DEPTH {
            return Ok(());
        }
        for field in &value.ty.fields {
            let Some(ty) = field.ty else { continue };
            if !self.can_hold_future(ty, 0) {
                continue;
            }
            let child = value
                .target
                .value(ty, offset(value.address, field.offset)?)?;
            self.visit(child, &join(via, &field.name), depth, search)?;
        }
        if value.ty.variant_part.is_some() {
            let (variant, payload) = value.variant()?;
            if self.can_hold_future(payload.ty.die, 0) {
                self.search_fields(&payload, &join(via, &variant), depth + 1, search)?;
            }
        }
        Ok(())
    }

    fn visit(
        &self,
        value: Value<'a>,
        via: &str,
        depth: usize,
        search: &mut Search<'a>,
    ) -> Result<()> {
        search.visited += 1;
        if search.visited > MAX_VISITED {
            return Ok(());
        }
        if self.is_future(&value.ty) {
            search.found.push(Found {
                via: via.to_string(),
                value,
            });
            return Ok(());
        }
        if boxed::is_dyn_body(&value.ty) {
            if boxed::is_null(&value)? {
                return Ok(());
            }
            let (concrete, data) = boxed::concrete(&self.context, &value)?;
            return self.visit(value.target.value(concrete, data)?, via, depth + 1, search);
        }
        if value.ty.tag == TypeTag::Pointer {
            // Only a Box reaches here (see `can_hold_future`); an empty one holds nothing.
            if value.read_pointer()? == 0 {
                return Ok(());
            }
            return self.visit(value.pointee()?, via, depth + 1, search);
        }
        self.search_fields(&value, via, depth + 1, search)
    }

    /// Whether a value of this type can contain a future: it is one, or one of its fields,
    /// enum variants or boxed values can. Cycles in the type graph count as "no".
    pub fn can_hold_future(&self, ty: DieRef, depth: usize) -> bool {
        if let Some(&known) = self.type_facts.borrow().can_hold_future.get(&ty) {
            return known;
        }
        if depth > MAX_TYPE_DEPTH {
            return false;
        }
        self.type_facts
            .borrow_mut()
            .can_hold_future
            .insert(ty, false);
        let Ok(info) = self.target().debug.type_info(ty) else {
            return false;
        };
        // What a boxed body holds is known only at run time.
        let holds = if self.is_future(&info) || boxed::is_dyn_body(&info) {
            true
        } else {
            match info.tag {
                TypeTag::Pointer => {
                    info.name.starts_with(rust::BOX_PREFIX)
                        && info
                            .target
                            .is_some_and(|target| self.can_hold_future(target, depth + 1))
                }
                TypeTag::Struct => {
                    info.fields
                        .iter()
                        .filter_map(|field| field.ty)
                        .any(|field| self.can_hold_future(field, depth + 1))
                        || info.variant_part.as_ref().is_some_and(|part| {
                            part.variants
                                .iter()
                                .filter_map(|variant| variant.member.ty)
                                .any(|v| self.can_hold_future(v, depth + 1))
                        })
                }
                _ => false,
            }
        };
        self.type_facts
            .borrow_mut()
            .can_hold_future
            .insert(ty, holds);
        holds
    }
}

struct Search<'a> {
    found: Vec<Found<'a>>,
    visited: usize,
}

fn join(via: &str, name: &str) -> String {
    if via.is_empty() {
        name.to_string()
    } else {
        format!("{via}.{name}")
    }
}

/// The types the binary has `Future::poll` or `Stream::poll_next` code for (their paths
/// without generic arguments), from the linkage names in its string sections: worked out
/// once per binary and kept with it.
pub struct PolledTypes(FxHashSet<String>);

impl PolledTypes {
    pub fn contains(&self, type_path: &str) -> bool {
        self.0.contains(type_path)
    }
}

pub fn polled_types(debug: &DebugInfo) -> Arc<PolledTypes> {
    debug.memo(|| {
        let mut types = FxHashSet::default();
        for (needle, _) in rust::POLL_IMPLS {
            for linkage_name in debug.strings_containing(needle) {
                let demangled = names::demangle(&linkage_name);
                let Some(inner) = demangled.strip_prefix('<') else {
                    continue;
                };
                if let Some(ty) = rust::POLL_IMPLS
                    .iter()
                    .find_map(|(_, suffix)| inner.strip_suffix(suffix))
                {
                    types.insert(names::strip_last_generics(ty));
                }
            }
        }
        PolledTypes(types)
    })
}
