//! Typed views of the inferior's memory: a value is an address plus its DWARF type, and
//! every step (field, variant, pointee) is resolved by name from the DWARF layout. What the
//! names are is the layout table's business (`crate::layouts`, followed by `std_values`);
//! this module knows no type but pointers, enums and scalars.

use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, TryLockError};

use rustc_hash::FxHashMap;

use crate::budget::{Budget, Metered};
use crate::dwarf::{DebugInfo, DieRef, TypeInfo, TypeTag};
use crate::error::{Error, ErrorKind, Result};
use crate::memory::{Memory, MemoryExt};

/// What every view needs: the executable's DWARF and the inferior's memory.
pub struct Target<'a> {
    pub debug: &'a DebugInfo,
    pub memory: &'a dyn Memory,
    /// Runtime address minus the executable's link-time address (PIE load bias).
    pub load_bias: u64,
    /// Lengths of intrusive lists already counted, shared with the walk's second thread.
    pub list_lengths: Arc<ListLengths>,
    /// What the command may still spend, and whether it was interrupted (none: no limit).
    pub budget: Option<&'a Budget<'a>>,
    /// How many times a field was found by searching below a value (`Value::search_field`),
    /// the fallback where the layout table has no path: decoders mark what they found so.
    pub field_searches: Cell<u64>,
    /// Where a run of layout-only steps (fields, wrappers) leads from a type: the offset
    /// and type it ends at, or why the type has no such field. Keyed by the type and the
    /// steps' place in the layout table, so each run is worked out once per type.
    pub layout_runs: RefCell<FxHashMap<LayoutRunKey, LayoutRun>>,
    /// Set on a second thread's target: a list another thread is counting now is not
    /// waited for (`list_length`); its task is read again once the count is done.
    defers_busy_lists: Cell<bool>,
    /// Whether a read gave up on such a list since `take_met_busy_list` last asked.
    met_busy_list: Cell<bool>,
}

/// Lengths of intrusive lists already counted, by the list's address: every waiter queued
/// on one Mutex reports the same queue, and counting it once per waiter is quadratic.
/// Shared by the threads of a walk: a queue of 250,000 waiters spread over the heap costs
/// as much to count as reading every page once. Valid while the inferior stays stopped,
/// like the memory.
#[derive(Default)]
pub struct ListLengths {
    by_list: Mutex<FxHashMap<u64, Arc<Mutex<Option<u64>>>>>,
    /// How many times a thread gave up on a list another was counting.
    given_up: AtomicU64,
}

impl ListLengths {
    /// The length of the list at `address`, counted by `count` the first time; a thread
    /// asking while another counts it waits for that count. A failed count is not kept.
    pub fn get_or_count(&self, address: u64, count: impl FnOnce() -> Result<u64>) -> Result<u64> {
        let slot = self.slot(address);
        let length = slot.lock().unwrap_or_else(PoisonError::into_inner);
        Self::known_or_count(length, count)
    }

    /// `get_or_count`, but `None` at once where another thread is counting the list now.
    pub fn get_or_count_unless_busy(
        &self,
        address: u64,
        count: impl FnOnce() -> Result<u64>,
    ) -> Option<Result<u64>> {
        let slot = self.slot(address);
        let length = match slot.try_lock() {
            Ok(length) => length,
            Err(TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
            Err(TryLockError::WouldBlock) => {
                self.given_up.fetch_add(1, Ordering::Relaxed);
                return None;
            }
        };
        Some(Self::known_or_count(length, count))
    }

    /// How many times `get_or_count_unless_busy` gave up.
    pub fn given_up(&self) -> u64 {
        self.given_up.load(Ordering::Relaxed)
    }

    /// The lists asked for so far, by address.
    pub fn lists(&self) -> Vec<u64> {
        let by_list = self.by_list.lock().unwrap_or_else(PoisonError::into_inner);
        let mut lists: Vec<u64> = by_list.keys().copied().collect();
        lists.sort_unstable();
        lists
    }

    fn slot(&self, address: u64) -> Arc<Mutex<Option<u64>>> {
        // A poisoned lock holds lengths counted before the panic, which stay true.
        Arc::clone(
            self.by_list
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .entry(address)
                .or_default(),
        )
    }

    fn known_or_count(
        mut length: MutexGuard<'_, Option<u64>>,
        count: impl FnOnce() -> Result<u64>,
    ) -> Result<u64> {
        if let Some(length) = *length {
            return Ok(length);
        }
        let counted = count()?;
        *length = Some(counted);
        Ok(counted)
    }
}

/// A type and a run of steps of the layout table (its address and length: the table is
/// static, so each run has one).
pub type LayoutRunKey = (DieRef, usize, usize);

/// The offset and type a run of layout-only steps ends at, or the layout's refusal.
pub type LayoutRun = std::result::Result<(u64, Arc<TypeInfo>), Error>;

#[derive(Clone)]
pub struct Value<'a> {
    pub target: &'a Target<'a>,
    pub ty: Arc<TypeInfo>,
    pub address: u64,
}

/// `base + by` for addresses read from the target: a corrupt pointer must give an error,
/// not wrap around (or panic in a debug build).
pub fn offset(base: u64, by: u64) -> Result<u64> {
    base.checked_add(by).ok_or_else(|| {
        Error::layout(format!(
            "address {base:#x} + {by:#x} overflows (a corrupt pointer?)"
        ))
    })
}

/// How deep `find_descendant` looks through nested fields.
const MAX_DESCENT: u32 = 8;
/// How deep `search_field` looks: a socket's fd sits a dozen wrappers down.
const MAX_FIELD_SEARCH_DEPTH: u32 = 16;

impl<'a> Target<'a> {
    pub fn new(debug: &'a DebugInfo, memory: &'a dyn Memory, load_bias: u64) -> Self {
        Target {
            debug,
            memory,
            load_bias,
            list_lengths: Arc::default(),
            budget: None,
            field_searches: Cell::new(0),
            layout_runs: RefCell::default(),
            defers_busy_lists: Cell::new(false),
            met_busy_list: Cell::new(false),
        }
    }

    /// The length of the list at `address`, counted by `count` once per stop (and shared
    /// with the other thread's target). A target deferring busy lists gives up at once
    /// where the other thread counts this list now: a Mutex's 166,000 waiters take a
    /// quarter of a second to count, which the other thread would spend waiting.
    pub fn list_length(&self, address: u64, count: impl FnOnce() -> Result<u64>) -> Result<u64> {
        if !self.defers_busy_lists.get() {
            return self.list_lengths.get_or_count(address, count);
        }
        let counted = self.list_lengths.get_or_count_unless_busy(address, count);
        counted.unwrap_or_else(|| {
            self.met_busy_list.set(true);
            Err(Error::new(
                ErrorKind::Internal,
                format!("the list at {address:#x} is being counted by another thread"),
            ))
        })
    }

    /// Whether lists another thread counts now are given up on (see `list_length`).
    pub fn defer_busy_lists(&self, defer: bool) {
        self.defers_busy_lists.set(defer);
    }

    /// Whether a list was given up on since the last call: what was read meanwhile is
    /// to be read again.
    pub fn take_met_busy_list(&self) -> bool {
        self.met_busy_list.replace(false)
    }

    /// Counts lists together with another target over the same stop (a second thread's).
    pub fn sharing_list_lengths(mut self, lengths: &Arc<ListLengths>) -> Self {
        self.list_lengths = Arc::clone(lengths);
        self
    }

    pub fn with_budget(mut self, budget: &'a Budget<'a>) -> Self {
        self.budget = Some(budget);
        self
    }

    /// False once the command must stop (budget spent, or interrupted).
    pub fn go_on(&self) -> bool {
        self.budget.is_none_or(Budget::go_on)
    }

    pub fn value(&'a self, ty: DieRef, address: u64) -> Result<Value<'a>> {
        Ok(Value {
            target: self,
            ty: self.debug.type_info(ty)?,
            address,
        })
    }

    pub fn value_of_type(&'a self, ty: Arc<TypeInfo>, address: u64) -> Value<'a> {
        Value {
            target: self,
            ty,
            address,
        }
    }
}

impl<'a> Value<'a> {
    pub fn type_name(&self) -> &str {
        &self.ty.name
    }

    /// The field called `name`.
    pub fn field(&self, name: &str) -> Result<Value<'a>> {
        let field = self.ty.field(name).ok_or_else(|| {
            Error::layout(format!(
                "type {} has no field `{name}` (unknown layout)",
                self.ty.name
            ))
        })?;
        if field.ty.is_none() {
            return Err(Error::layout(format!(
                "field `{name}` of {} has no type",
                self.ty.name
            )));
        }
        let address = offset(self.address, field.offset)?;
        Ok(Value {
            target: self.target,
            ty: self.target.debug.field_type(field)?,
            address,
        })
    }

    pub fn has_field(&self, name: &str) -> bool {
        self.ty.field(name).is_some()
    }

    /// The active variant of a Rust enum: its name and its payload struct.
    pub fn variant(&self) -> Result<(String, Value<'a>)> {
        if self.ty.tag == TypeTag::Enumeration {
            let raw = self.read_uint()?;
            let name = self
                .ty
                .enumerators
                .iter()
                .find(|(_, value)| *value == raw)
                .map(|(name, _)| name.clone())
                .ok_or_else(|| {
                    Error::layout(format!("{} holds unknown value {raw}", self.ty.name))
                })?;
            return Ok((name, self.clone()));
        }
        let part = self
            .ty
            .variant_part
            .as_ref()
            .ok_or_else(|| Error::layout(format!("type {} is not an enum", self.ty.name)))?;
        let variant = match &part.discriminant {
            None => part.variants.first(),
            Some(discriminant) => {
                let size = match discriminant.ty {
                    Some(ty) => self.target.debug.type_info(ty)?.size.unwrap_or(8),
                    None => 8,
                };
                let raw = self
                    .target
                    .memory
                    .read_uint(offset(self.address, discriminant.offset)?, size)?;
                part.variants
                    .iter()
                    .find(|variant| variant.discr_value == Some(raw))
                    .or_else(|| {
                        part.variants
                            .iter()
                            .find(|variant| variant.discr_value.is_none())
                    })
            }
        }
        .ok_or_else(|| {
            Error::layout(format!(
                "{} at {:#x} holds no known variant",
                self.ty.name, self.address
            ))
        })?;
        let ty = variant.member.ty.ok_or_else(|| {
            Error::layout(format!(
                "variant {} of {} has no type",
                variant.member.name, self.ty.name
            ))
        })?;
        Ok((
            variant.member.name.clone(),
            self.target
                .value(ty, offset(self.address, variant.member.offset)?)?,
        ))
    }

    /// The variant of an enum, or the type's own name for a non-enum.
    pub fn variant_or_self(&self) -> Result<(String, Value<'a>)> {
        if self.ty.variant_part.is_some() || self.ty.tag == TypeTag::Enumeration {
            self.variant()
        } else {
            Ok((self.ty.name.clone(), self.clone()))
        }
    }

    /// Reads an integer-like value, looking through single-field wrappers
    /// (`NonZero<u64>`, `Cell<usize>`, `AtomicUsize`, `Id(u64)`).
    pub fn read_uint(&self) -> Result<u64> {
        let scalar = self.scalar()?;
        let size = scalar.ty.size.unwrap_or(8);
        if size > 8 {
            return Err(Error::layout(format!("{} is not an integer", self.ty.name)));
        }
        self.target.memory.read_uint(scalar.address, size)
    }

    fn scalar(&self) -> Result<Value<'a>> {
        let mut value = self.clone();
        for _ in 0..MAX_DESCENT {
            match value.ty.tag {
                TypeTag::Base | TypeTag::Pointer | TypeTag::Enumeration => return Ok(value),
                TypeTag::Struct | TypeTag::Union if value.ty.variant_part.is_none() => {
                    let inner = value
                        .ty
                        .fields
                        .iter()
                        .find(|field| field.offset == 0 && field.ty.is_some())
                        .ok_or_else(|| {
                            Error::layout(format!("{} is not a scalar", value.ty.name))
                        })?;
                    value = value.target.value(inner.ty.unwrap(), value.address)?;
                }
                _ => break,
            }
        }
        Err(Error::layout(format!("{} is not a scalar", self.ty.name)))
    }

    /// Reads a (possibly wrapped) thin pointer: `*const T`, `NonNull<T>`, `Box<T>`,
    /// `Option<NonNull<T>>`. Returns the address it holds.
    pub fn read_pointer(&self) -> Result<u64> {
        self.target.memory.read_u64(self.pointer_scalar()?.address)
    }

    fn pointer_scalar(&self) -> Result<Value<'a>> {
        let mut value = self.clone();
        for _ in 0..MAX_DESCENT {
            if value.ty.tag == TypeTag::Pointer {
                return Ok(value);
            }
            if value.ty.variant_part.is_some() {
                // Option<NonNull<T>>: the dataful variant holds the pointer.
                let part = value.ty.variant_part.as_ref().unwrap();
                let some = part
                    .variants
                    .iter()
                    .find(|variant| variant.discr_value.is_none())
                    .ok_or_else(|| {
                        Error::layout(format!("{} is not a nullable pointer", value.ty.name))
                    })?;
                let ty = some
                    .member
                    .ty
                    .ok_or_else(|| Error::layout("variant without type"))?;
                value = value
                    .target
                    .value(ty, offset(value.address, some.member.offset)?)?;
                continue;
            }
            let inner = value
                .ty
                .fields
                .iter()
                .find(|field| {
                    field.ty.is_some() && field.offset == 0 && !field.name.starts_with("_marker")
                })
                .ok_or_else(|| Error::layout(format!("{} is not a pointer", value.ty.name)))?;
            value = value.target.value(inner.ty.unwrap(), value.address)?;
        }
        Err(Error::layout(format!("{} is not a pointer", self.ty.name)))
    }

    /// The pointee type of a (possibly wrapped) thin pointer.
    pub fn pointer_target(&self) -> Result<DieRef> {
        let pointer = self.pointer_scalar()?;
        pointer.ty.target.ok_or_else(|| {
            Error::layout(format!("pointer {} has no pointee type", pointer.ty.name))
        })
    }

    /// The value a (possibly wrapped) pointer points to, typed by the pointer's DWARF.
    pub fn pointee(&self) -> Result<Value<'a>> {
        let pointer = self.pointer_scalar()?;
        let address = self.target.memory.read_u64(pointer.address)?;
        if address == 0 {
            return Err(Error::layout(format!("null pointer in {}", self.ty.name)));
        }
        let target = pointer.ty.target.ok_or_else(|| {
            Error::layout(format!("pointer {} has no pointee type", pointer.ty.name))
        })?;
        self.target.value(target, address)
    }

    /// The first value below this one, breadth first through fields and active variants,
    /// whose type `wanted` accepts: like `search_field`, a fallback, marked (counted) when
    /// it finds one.
    pub fn search_type(&self, what: &str, wanted: &dyn Fn(&TypeInfo) -> bool) -> Result<Value<'a>> {
        self.search(&|_, ty| wanted(ty))
            .ok_or_else(|| Error::layout(format!("no {what} inside {}", self.ty.name)))?
    }

    /// The nearest field named `name` below this value (breadth-first, through enum
    /// payloads): the fallback for a layout the table does not have. It can bind the wrong
    /// field, so each use is counted (`Target::field_searches`) and what a decoder finds
    /// with it is marked in the output.
    pub fn search_field(&self, name: &str) -> Result<Value<'a>> {
        self.search(&|field, _| field == name)
            .ok_or_else(|| Error::layout(format!("no field `{name}` inside {}", self.ty.name)))?
    }

    /// Breadth first through fields and active variants, the first value whose field name
    /// and type `found` accepts; `None` when none within `MAX_FIELD_SEARCH_DEPTH`. Counted
    /// when found: what a node says it then says by a search.
    fn search(&self, found: &dyn Fn(&str, &TypeInfo) -> bool) -> Option<Result<Value<'a>>> {
        let mut frontier = vec![self.clone()];
        for _ in 0..MAX_FIELD_SEARCH_DEPTH {
            let mut next = Vec::new();
            for value in frontier {
                for field in &value.ty.fields {
                    let Some(ty) = field.ty else { continue };
                    let child = match offset(value.address, field.offset)
                        .and_then(|address| value.target.value(ty, address))
                    {
                        Ok(child) => child,
                        Err(error) => return Some(Err(error)),
                    };
                    if found(&field.name, &child.ty) {
                        self.target
                            .field_searches
                            .set(self.target.field_searches.get() + 1);
                        return Some(Ok(child));
                    }
                    next.push(child);
                }
                if value.ty.variant_part.is_some() {
                    if let Ok((_, payload)) = value.variant() {
                        next.push(payload);
                    }
                }
            }
            frontier = next;
        }
        None
    }
}

/// Runs `read` on a target of a program's `memory` as commands read it: the executable's
/// own sections from its file where the memory lacks them (`WithExecutable`), and where
/// there is a budget, every read metered by it and the walk's stops asked of it.
pub fn on_program<R>(
    debug: &DebugInfo,
    memory: &dyn Memory,
    load_bias: u64,
    budget: Option<&Budget<'_>>,
    read: impl FnOnce(&Target<'_>) -> R,
) -> R {
    let memory = WithExecutable {
        inner: memory,
        debug,
        load_bias,
    };
    let Some(budget) = budget else {
        return read(&Target::new(debug, &memory, load_bias));
    };
    let metered = Metered {
        inner: &memory,
        budget,
    };
    read(&Target::new(debug, &metered, load_bias).with_budget(budget))
}

/// Another `Memory`, and where it cannot read, what the executable's file says is there
/// (`DebugInfo::executable_memory`): a kernel core leaves out unmodified file-backed pages
/// (`.rodata`, where string literals live), and LLDB does not fill them in from the
/// executable as GDB does; LLDB's minidumps but the full style leave out the relocated
/// relro pages (vtables) too.
pub struct WithExecutable<'a, M: Memory + ?Sized> {
    pub inner: &'a M,
    pub debug: &'a DebugInfo,
    pub load_bias: u64,
}

impl<M: Memory + ?Sized> Memory for WithExecutable<'_, M> {
    fn release_cache(&self) {
        self.inner.release_cache();
    }

    fn read(&self, address: u64, buf: &mut [u8]) -> Result<()> {
        self.inner.read(address, buf).or_else(|error| {
            address
                .checked_sub(self.load_bias)
                .and_then(|link_address| {
                    self.debug
                        .executable_memory(link_address, self.load_bias, buf)
                })
                .ok_or(error)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};

    /// Two threads asking for one list's length count it once, the one waiting for the
    /// other's count; a count that failed is tried again.
    #[test]
    fn a_list_is_counted_once_by_the_threads_of_a_walk() {
        let lengths = ListLengths::default();
        let counts = AtomicU32::new(0);
        let count = || {
            counts.fetch_add(1, Ordering::SeqCst);
            std::thread::sleep(std::time::Duration::from_millis(20));
            Ok(250_000)
        };
        let (first, second) = std::thread::scope(|scope| {
            let other = scope.spawn(|| lengths.get_or_count(0x1000, count));
            let here = lengths.get_or_count(0x1000, count);
            (here.unwrap(), other.join().unwrap().unwrap())
        });
        assert_eq!((first, second), (250_000, 250_000));
        assert_eq!(counts.load(Ordering::SeqCst), 1);

        let failed = lengths.get_or_count(0x2000, || Err(Error::memory(0x2000, 8)));
        assert!(failed.is_err());
        assert_eq!(lengths.get_or_count(0x2000, || Ok(3)).unwrap(), 3);
        assert_eq!(lengths.get_or_count(0x2000, || Ok(4)).unwrap(), 3);
    }

    /// A second thread's target does not wait for a list the other thread is counting:
    /// it says so (an error, and `take_met_busy_list` once), and gets the length once the
    /// count is done; a target that does not defer waits for it.
    #[test]
    fn a_deferring_target_gives_up_on_a_list_being_counted() {
        let debug = crate::testing::Program::new().load();
        let memory = crate::testing::TestMemory::default();
        let lengths = Arc::new(ListLengths::default());
        let target = Target::new(&debug, &memory, 0).sharing_list_lengths(&lengths);
        target.defer_busy_lists(true);
        let (counting, counted) = (std::sync::Barrier::new(2), std::sync::Barrier::new(2));
        std::thread::scope(|scope| {
            let other = scope.spawn(|| {
                lengths.get_or_count(0x1000, || {
                    counting.wait();
                    counted.wait();
                    Ok(166_666)
                })
            });
            counting.wait();
            // Asserted once the other thread is let go: a failure must not hang the test.
            let while_counted = target.list_length(0x1000, || Ok(1));
            let met = (target.take_met_busy_list(), target.take_met_busy_list());
            counted.wait();
            assert!(while_counted.is_err());
            assert_eq!(met, (true, false));
            assert_eq!(other.join().unwrap().unwrap(), 166_666);
        });
        assert_eq!(target.list_length(0x1000, || Ok(1)).unwrap(), 166_666);
        assert!(!target.take_met_busy_list());
        target.defer_busy_lists(false);
        assert_eq!(target.list_length(0x2000, || Ok(7)).unwrap(), 7);
    }
}
