//! Rust's own values read through the layout table (`crate::layouts`): paths of steps and
//! their alternatives, options, `Arc`s, slices, `Vec`s, `VecDeque`s, strings and time. The
//! one place that follows `layouts::Step`s; readers above it name a path, never a field.

use std::sync::Arc;

use crate::dwarf::{DebugInfo, TypeInfo, TypeTag};
use crate::error::{Error, Result};
use crate::layouts::{rust, tokio, Path, Paths, Step, Wrapper};
use crate::memory::MemoryExt;
use crate::value::{offset, Value};

/// How many wrappers `Step::Unwrap` (and `Step::To`) looks through at most.
const MAX_WRAPPERS: usize = 16;

/// Why a path could not be followed: the type has no such field (another version's layout:
/// try the path's alternatives), or anything else (memory, a corrupt value: stop there).
enum Failure {
    NoSuchField(Error),
    Other(Error),
}

impl From<Error> for Failure {
    fn from(error: Error) -> Failure {
        Failure::Other(error)
    }
}

/// Follows `path` from `value`: `None` where a `Step::Some` meets a `None`.
pub fn follow<'a>(value: &Value<'a>, path: Path) -> Result<Option<Value<'a>>> {
    follow_path(value, path).map_err(|failure| match failure {
        Failure::NoSuchField(error) | Failure::Other(error) => error,
    })
}

/// Follows the first of `paths` whose fields the value's type has (newest first).
pub fn follow_first<'a>(value: &Value<'a>, paths: Paths) -> Result<Option<Value<'a>>> {
    let mut first_missing = None;
    for path in paths {
        match follow_path(value, path) {
            Ok(found) => return Ok(found),
            Err(Failure::Other(error)) => return Err(error),
            Err(Failure::NoSuchField(error)) => {
                first_missing.get_or_insert(error);
            }
        }
    }
    Err(first_missing.unwrap_or_else(|| Error::layout("no field path given")))
}

/// `follow_first`, or `None` where the type has none of the paths' fields (a field some
/// versions have and others do not).
pub fn follow_if_present<'a>(value: &Value<'a>, paths: Paths) -> Result<Option<Value<'a>>> {
    for path in paths {
        match follow_path(value, path) {
            Ok(found) => return Ok(found),
            Err(Failure::Other(error)) => return Err(error),
            Err(Failure::NoSuchField(_)) => {}
        }
    }
    Ok(None)
}

/// `follow_first`, where the path must lead to a value (no `None` on the way).
pub fn at<'a>(value: &Value<'a>, paths: Paths) -> Result<Value<'a>> {
    follow_first(value, paths)?.ok_or_else(|| none_on_the_way(value))
}

/// `follow`, where the path must lead to a value.
pub fn at_path<'a>(value: &Value<'a>, path: Path) -> Result<Value<'a>> {
    follow(value, path)?.ok_or_else(|| none_on_the_way(value))
}

fn none_on_the_way(value: &Value<'_>) -> Error {
    Error::layout(format!(
        "{} at {:#x} holds None on the way",
        value.ty.name, value.address
    ))
}

fn follow_path<'a>(
    value: &Value<'a>,
    path: Path,
) -> std::result::Result<Option<Value<'a>>, Failure> {
    let mut current = value.clone();
    let mut rest = path;
    while let Some(step) = rest.first() {
        let layout_only = rest
            .iter()
            .take_while(|step| matches!(step, Step::Field(_) | Step::Unwrap))
            .count();
        if layout_only > 0 {
            current = layout_run(&current, &rest[..layout_only])?;
            rest = &rest[layout_only..];
            continue;
        }
        rest = &rest[1..];
        current = match *step {
            Step::Field(name) => field(&current, name)?,
            Step::Variant(name) => {
                if current.ty.variant_part.is_none() && current.ty.tag != TypeTag::Enumeration {
                    return Err(Failure::NoSuchField(Error::layout(format!(
                        "type {} is not an enum with a variant `{name}` (unknown layout)",
                        current.ty.name
                    ))));
                }
                let (variant, payload) = current.variant()?;
                if variant != name {
                    return Err(Failure::Other(Error::layout(format!(
                        "{} at {:#x} is {variant}, not {name}",
                        current.ty.name, current.address
                    ))));
                }
                payload
            }
            Step::Deref => current.pointee()?,
            Step::Arc => arc_data(&current)?,
            Step::Rc => field(&current.pointee()?, rust::RC_VALUE)?,
            Step::Some => match option(&current)? {
                Some(inner) => inner,
                None => return Ok(None),
            },
            Step::Unwrap => unwrapped(&current)?,
            Step::Locked => {
                let found = wrapper_of(&current.ty.name, tokio::MUTEXES)
                    .or_else(|| wrapper_of(&current.ty.name, rust::STD_MUTEXES));
                let (_, path) = found.ok_or_else(|| {
                    Failure::NoSuchField(Error::layout(format!(
                        "{} is not a Mutex this tool knows (unknown layout)",
                        current.ty.name
                    )))
                })?;
                let mut inner = current.clone();
                for name in path.iter() {
                    inner = field(&inner, name)?;
                }
                unwrapped(&inner)?
            }
            Step::To(type_name) => newtypes_to(&current, type_name)?,
        };
    }
    Ok(Some(current))
}

/// Follows fields and wrappers, which the layout alone decides: worked out once per type
/// (a million tasks' timers are one `Sleep` type), then an offset per value.
fn layout_run<'a>(
    value: &Value<'a>,
    steps: &'static [Step],
) -> std::result::Result<Value<'a>, Failure> {
    let target = value.target;
    let key = (value.ty.die, steps.as_ptr() as usize, steps.len());
    let known = target.layout_runs.borrow().get(&key).cloned();
    let run = match known {
        Some(run) => run,
        None => {
            let mut current = value.clone();
            for step in steps {
                current = match *step {
                    Step::Field(name) => field(&current, name),
                    _ => unwrapped(&current).map_err(Failure::Other),
                }
                .map_err(|failure| match failure {
                    Failure::NoSuchField(error) => {
                        // A layout fact: every value of the type has no such field.
                        target
                            .layout_runs
                            .borrow_mut()
                            .insert(key, Err(error.clone()));
                        Failure::NoSuchField(error)
                    }
                    other => other,
                })?;
            }
            // Fields and wrappers only add offsets: the run ends at the same distance
            // from every value of the type.
            let run = current
                .address
                .checked_sub(value.address)
                .map(|distance| (distance, current.ty.clone()))
                .ok_or_else(|| Error::layout("a field before its value"))?;
            target.layout_runs.borrow_mut().insert(key, Ok(run.clone()));
            return Ok(current);
        }
    };
    let (distance, ty) = run.map_err(Failure::NoSuchField)?;
    Ok(value
        .target
        .value_of_type(ty, offset(value.address, distance)?))
}

fn field<'a>(value: &Value<'a>, name: &str) -> std::result::Result<Value<'a>, Failure> {
    if !value.has_field(name) {
        return Err(Failure::NoSuchField(Error::layout(format!(
            "type {} has no field `{name}` (unknown layout)",
            value.ty.name
        ))));
    }
    Ok(value.field(name)?)
}

fn wrapper_of(type_name: &str, table: &'static [Wrapper]) -> Option<&'static Wrapper> {
    table
        .iter()
        .find(|(prefix, _)| type_name.starts_with(prefix))
}

/// The value inside the cells and wrappers around it (`layouts::Step::Unwrap`).
pub fn unwrapped<'a>(value: &Value<'a>) -> Result<Value<'a>> {
    let mut current = value.clone();
    for _ in 0..MAX_WRAPPERS {
        let found = wrapper_of(&current.ty.name, rust::WRAPPERS)
            .or_else(|| wrapper_of(&current.ty.name, tokio::WRAPPERS));
        let Some((_, path)) = found else {
            return Ok(current);
        };
        for name in path.iter() {
            current = current.field(name)?;
        }
    }
    Err(Error::layout(format!(
        "{} is wrapped more than {MAX_WRAPPERS} deep",
        value.ty.name
    )))
}

/// The type a path of `Field` and `Unwrap` steps leads to from a value of type `info`,
/// from the layout alone (no memory read); `None` where the path takes another step or
/// the type lacks a field.
pub fn type_along(debug: &DebugInfo, info: &TypeInfo, path: Path) -> Option<Arc<TypeInfo>> {
    let mut current = debug.type_info(info.die).ok()?;
    let field_type = |info: &TypeInfo, name: &str| debug.type_info(info.field(name)?.ty?).ok();
    for step in path {
        current = match *step {
            Step::Field(name) => field_type(&current, name)?,
            Step::Unwrap => {
                for _ in 0..MAX_WRAPPERS {
                    let found = wrapper_of(&current.name, rust::WRAPPERS)
                        .or_else(|| wrapper_of(&current.name, tokio::WRAPPERS));
                    let Some((_, path)) = found else { break };
                    for name in path.iter() {
                        current = field_type(&current, name)?;
                    }
                }
                current
            }
            _ => return None,
        };
    }
    Some(current)
}

/// Whether a tokio `Mutex` is held now (`tokio::MUTEX_LOCKED`); `None` for another type.
pub fn tokio_mutex_locked(value: &Value<'_>) -> Result<Option<bool>> {
    let Some((_, path, mask)) = tokio::MUTEX_LOCKED
        .iter()
        .find(|(prefix, ..)| value.ty.name.starts_with(prefix))
    else {
        return Ok(None);
    };
    let mut state = value.clone();
    for name in path.iter() {
        state = state.field(name)?;
    }
    Ok(Some(state.read_uint()? & mask != 0))
}

/// The one value a cell, a wrapper or a Mutex holds (what `Step::Unwrap` and
/// `Step::Locked` look through); none for a value of any other type.
pub fn wrapped_value<'a>(value: &Value<'a>) -> Result<Option<Value<'a>>> {
    let name = &value.ty.name;
    let found = wrapper_of(name, rust::WRAPPERS)
        .or_else(|| wrapper_of(name, tokio::WRAPPERS))
        .or_else(|| wrapper_of(name, tokio::MUTEXES))
        .or_else(|| wrapper_of(name, rust::STD_MUTEXES));
    let Some((_, path)) = found else {
        return Ok(None);
    };
    let mut inner = value.clone();
    for name in path.iter() {
        inner = inner.field(name)?;
    }
    Ok(Some(inner))
}

/// Down one-field structs to the value of type `type_name` (`layouts::Step::To`).
fn newtypes_to<'a>(value: &Value<'a>, type_name: &str) -> std::result::Result<Value<'a>, Failure> {
    let mut current = value.clone();
    for _ in 0..MAX_WRAPPERS {
        if current.ty.name == type_name {
            return Ok(current);
        }
        match current.ty.fields.as_slice() {
            [only] if current.ty.variant_part.is_none() => {
                let name = only.name.clone();
                current = current.field(&name)?;
            }
            _ => break,
        }
    }
    Err(Failure::NoSuchField(Error::layout(format!(
        "no {type_name} inside {} (unknown layout)",
        value.ty.name
    ))))
}

/// The value behind a trait-object pointer (`Box<dyn T>`, `&mut dyn T`), of its concrete
/// type as its vtable names it; `None` for a value that is no trait-object pointer.
pub fn trait_object<'a>(value: &Value<'a>) -> Result<Option<Value<'a>>> {
    if !(value.has_field(rust::FAT_POINTER_DATA) && value.has_field(rust::FAT_POINTER_VTABLE)) {
        return Ok(None);
    }
    let target = value.target;
    let data = value.field(rust::FAT_POINTER_DATA)?.read_pointer()?;
    let vtable = value.field(rust::FAT_POINTER_VTABLE)?.read_pointer()?;
    let concrete = target
        .debug
        .vtable_type(vtable.wrapping_sub(target.load_bias), &[""])
        .and_then(|vtable_type| target.debug.type_info(vtable_type).ok())
        .and_then(|info| info.containing_type)
        .ok_or_else(|| {
            Error::layout(format!(
                "no DWARF vtable at {vtable:#x}: cannot tell the type of the value behind {}",
                value.ty.name
            ))
        })?;
    target.value(concrete, data).map(Some)
}

/// An `Option`'s value: `Some`'s payload, or `None`.
pub fn option<'a>(value: &Value<'a>) -> Result<Option<Value<'a>>> {
    let (variant, payload) = value.variant()?;
    if variant != rust::SOME {
        return Ok(None);
    }
    payload.field(rust::TUPLE_FIRST).map(Some)
}

/// Whether a type is an `Option`.
pub fn is_option(info: &TypeInfo) -> bool {
    info.name.starts_with(rust::OPTION_PREFIX)
}

/// `Arc<T>` -> the `T` inside its `ArcInner`.
pub fn arc_data<'a>(value: &Value<'a>) -> Result<Value<'a>> {
    value.pointee()?.field(rust::ARC_DATA)
}

/// How many `Arc`s share what `Arc<T>` points to.
pub fn arc_strong_count(value: &Value<'_>) -> Result<u64> {
    value.pointee()?.field(rust::ARC_STRONG)?.read_uint()
}

/// Whether a type is an `Arc`.
pub fn is_arc(info: &TypeInfo) -> bool {
    info.name.starts_with(rust::ARC_PREFIX)
}

/// `Rc<T>` -> the `T` inside its `RcInner`.
pub fn rc_value<'a>(value: &Value<'a>) -> Result<Value<'a>> {
    value.pointee()?.field(rust::RC_VALUE)
}

/// The pointer inside a `Pin<P>`.
pub fn pin_pointer<'a>(value: &Value<'a>) -> Result<Value<'a>> {
    at(value, rust::PIN_POINTER)
}

/// For a `Pin<P>` type: the layout of P (`&mut F`, `Box<F>`, `Box<dyn Future>`, ...).
pub fn pin_pointer_type(debug: &DebugInfo, pin: &TypeInfo) -> Option<Arc<TypeInfo>> {
    if !pin.name.starts_with(rust::PIN_PREFIX) {
        return None;
    }
    let field = rust::PIN_POINTER_FIELDS
        .iter()
        .find_map(|name| pin.field(name))?;
    debug.type_info(field.ty?).ok()
}

/// Elements of a `Box<[T]>` (or `&[T]`), at most `limit` (more is taken for corruption).
pub fn boxed_slice<'a>(value: &Value<'a>, limit: u64) -> Result<Vec<Value<'a>>> {
    let data = value.field(rust::SLICE_DATA)?;
    let length = value.field(rust::SLICE_LENGTH)?.read_uint()?;
    if length > limit {
        return Err(Error::layout(format!(
            "{} claims {length} elements (corrupt?)",
            value.ty.name
        )));
    }
    let base = data.read_pointer()?;
    let element = data
        .ty
        .target
        .ok_or_else(|| Error::layout("slice pointer without element type"))?;
    let element = value.target.debug.type_info(element)?;
    let stride = element
        .size
        .ok_or_else(|| Error::layout(format!("{} has no size", element.name)))?;
    (0..length)
        .map(|i| {
            let address = i
                .checked_mul(stride)
                .ok_or_else(|| Error::layout("slice past the address space"))?;
            Ok(value
                .target
                .value_of_type(element.clone(), offset(base, address)?))
        })
        .collect()
}

/// Whether a type is a `Vec`.
pub fn is_vec(info: &TypeInfo) -> bool {
    info.name.starts_with(rust::VEC_PREFIX)
}

/// The element type of a `Vec<T>` or `VecDeque<T>`.
pub fn element_type(info: &TypeInfo) -> Option<crate::dwarf::DieRef> {
    info.template_param(rust::ELEMENT_PARAM)
}

/// How many elements a `Vec<T>` holds.
pub fn vec_len(vec: &Value<'_>) -> Result<u64> {
    vec.field(rust::VEC_LENGTH)?.read_uint()
}

/// Elements of a `Vec<T>`, at most `limit` (more is taken for corruption).
pub fn vec_elements<'a>(vec: &Value<'a>, limit: u64) -> Result<Vec<Value<'a>>> {
    let length = vec_len(vec)?;
    if length > limit {
        return Err(Error::layout(format!(
            "{} at {:#x} claims {length} elements (corrupt?)",
            vec.ty.name, vec.address
        )));
    }
    elements(vec, length)
}

/// The first elements of a `Vec<T>`, at most `count`.
pub fn vec_first_elements<'a>(vec: &Value<'a>, count: u64) -> Result<Vec<Value<'a>>> {
    elements(vec, vec_len(vec)?.min(count))
}

/// The first `length` elements of a `Vec<T>` (its length already read and bounded).
fn elements<'a>(vec: &Value<'a>, length: u64) -> Result<Vec<Value<'a>>> {
    let element = element_type(&vec.ty)
        .ok_or_else(|| Error::layout(format!("{} names no element type", vec.ty.name)))?;
    let base = at(vec, rust::VEC_POINTER)?.read_pointer()?;
    let element = vec.target.debug.type_info(element)?;
    let stride = element
        .size
        .ok_or_else(|| Error::layout(format!("{} has no size", element.name)))?;
    (0..length)
        .map(|i| {
            let address = i
                .checked_mul(stride)
                .and_then(|at| base.checked_add(at))
                .ok_or_else(|| {
                    Error::layout(format!(
                        "{} at {:#x}: element {i} lies past the address space",
                        vec.ty.name, vec.address
                    ))
                })?;
            Ok(vec.target.value_of_type(element.clone(), address))
        })
        .collect()
}

/// Elements of a `VecDeque<T>`, front first, at most `limit` (more is taken for corruption).
pub fn vec_deque_items<'a>(deque: &Value<'a>, limit: u64) -> Result<Vec<Value<'a>>> {
    let (items, len) = vec_deque_first_items(deque, limit)?;
    if len > limit {
        return Err(Error::layout(format!(
            "{} claims {len} elements (corrupt?)",
            deque.ty.name
        )));
    }
    Ok(items)
}

/// The first elements of a `VecDeque<T>`, front first, at most `count`, and how many it
/// holds.
pub fn vec_deque_first_items<'a>(deque: &Value<'a>, count: u64) -> Result<(Vec<Value<'a>>, u64)> {
    use rust::vec_deque;
    let head = deque.field(vec_deque::HEAD)?.read_uint()?;
    let len = deque.field(vec_deque::LEN)?.read_uint()?;
    let capacity = at(deque, vec_deque::CAPACITY)?.read_uint()?;
    if len > capacity || (len > 0 && head >= capacity) {
        return Err(Error::layout(format!(
            "{} claims {len} elements from {head} in {capacity} slots (corrupt?)",
            deque.ty.name
        )));
    }
    let base = at(deque, vec_deque::POINTER)?.read_pointer()?;
    let element = element_type(&deque.ty)
        .ok_or_else(|| Error::layout(format!("{} names no element type", deque.ty.name)))?;
    let element = deque.target.debug.type_info(element)?;
    let stride = element
        .size
        .ok_or_else(|| Error::layout(format!("{} has no size", element.name)))?;
    let items = (0..len.min(count))
        .map(|i| {
            let slot = head.checked_add(i).map(|at| at % capacity);
            let address = slot
                .ok_or_else(|| {
                    Error::layout(format!(
                        "{} head {head} past the address space",
                        deque.ty.name
                    ))
                })?
                .checked_mul(stride)
                .and_then(|at| base.checked_add(at))
                .ok_or_else(|| {
                    Error::layout(format!(
                        "{} slot {slot:?} past the address space",
                        deque.ty.name
                    ))
                })?;
            Ok(deque.target.value_of_type(element.clone(), address))
        })
        .collect::<Result<_>>()?;
    Ok((items, len))
}

/// Where the bytes of a `&str`, `String`, `NonNull<str>` or `*const str` are, and how many.
pub fn text_bytes(value: &Value<'_>) -> Result<(u64, u64)> {
    let slice = if value.ty.name == rust::STRING_TYPE {
        let vec = value.field(rust::STRING_BYTES)?;
        return Ok((at(&vec, rust::VEC_POINTER)?.read_pointer()?, vec_len(&vec)?));
    } else if value.has_field(rust::SLICE_DATA) {
        value.clone()
    } else {
        // `NonNull<str>{pointer: *const str}`.
        at_path(value, &[Step::Field(rust::FAT_POINTER_DATA)])?
    };
    Ok((
        slice.field(rust::SLICE_DATA)?.read_pointer()?,
        slice.field(rust::SLICE_LENGTH)?.read_uint()?,
    ))
}

/// The text of a `&str` or `String`, at most `limit` bytes of it (lossy UTF-8), and
/// whether it was cut.
pub fn text(value: &Value<'_>, limit: u64) -> Result<(String, bool)> {
    let (pointer, length) = text_bytes(value)?;
    let shown = length.min(limit);
    let bytes = value.target.memory.read_bytes(pointer, shown as usize)?;
    Ok((String::from_utf8_lossy(&bytes).into_owned(), shown < length))
}

/// Whether a type is a string this module reads (`&str`, `String`).
pub fn is_text(info: &TypeInfo) -> bool {
    info.name == rust::STR_TYPE || info.name == rust::STRING_TYPE
}

/// A tokio or std `Instant`: its CLOCK_MONOTONIC (seconds, nanoseconds).
pub fn instant(value: &Value<'_>) -> Result<(i64, u32)> {
    let timespec = match follow_first(value, rust::TOKIO_INSTANT_TIMESPEC) {
        Ok(Some(timespec)) => timespec,
        _ => at(value, rust::STD_INSTANT_TIMESPEC)?,
    };
    let seconds = timespec.field(rust::TIMESPEC_SECONDS)?.read_uint()?;
    let seconds = i64::try_from(seconds)
        .map_err(|_| Error::layout(format!("instant with {seconds} seconds (corrupt?)")))?;
    let nanos = below_a_second(
        timespec.field(rust::TIMESPEC_NANOS)?.read_uint()?,
        "instant",
    )?;
    Ok((seconds, nanos))
}

/// A `Duration` in seconds.
pub fn duration_secs(value: &Value<'_>) -> Result<f64> {
    let seconds = value.field(rust::DURATION_SECONDS)?.read_uint()?;
    let nanos = below_a_second(value.field(rust::DURATION_NANOS)?.read_uint()?, "duration")?;
    Ok(seconds as f64 + f64::from(nanos) / 1e9)
}

/// A nanoseconds field, checked whole before it is narrowed: a corrupt 0x1_0000_0005
/// must not read as 5.
fn below_a_second(nanos: u64, what: &str) -> Result<u32> {
    match u32::try_from(nanos) {
        Ok(nanos) if nanos < 1_000_000_000 => Ok(nanos),
        _ => Err(Error::layout(format!(
            "{what} with {nanos} nanoseconds (corrupt?)"
        ))),
    }
}

/// A thread-local's value where its std storage says it is alive; `None` before its first
/// use and after its thread's exit.
pub fn thread_local<'a>(storage: &Value<'a>) -> Result<Option<Value<'a>>> {
    if let Some(state) = follow_if_present(storage, rust::TLS_STORAGE_STATE)? {
        let (state, _) = state.variant()?;
        if state != rust::TLS_ALIVE {
            return Ok(None);
        }
    }
    at(storage, rust::TLS_STORAGE_VALUE).map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layouts::Step::{Field, Unwrap};
    use crate::testing::{die_of, Program, TestMemory};
    use crate::value::Target;

    /// A nanoseconds field is checked before it is narrowed to 32 bits.
    #[test]
    fn corrupt_nanoseconds_are_refused_whole() {
        let mut program = Program::new();
        let (i64, u64) = (program.i64(), program.u64());
        let timespec = program.structure(
            "std::sys::pal::unix::time::Timespec",
            16,
            &[("tv_sec", 0, i64), ("tv_nsec", 8, u64)],
        );
        let inner = program.structure(
            "std::sys::pal::unix::time::Instant",
            16,
            &[("t", 0, timespec)],
        );
        program.structure("std::time::Instant", 16, &[("__0", 0, inner)]);
        program.structure(
            "core::time::Duration",
            16,
            &[("secs", 0, u64), ("nanos", 8, u64)],
        );
        let debug = program.load();
        let mut memory = TestMemory::default();
        memory.write_u64(0x1000, 12);
        memory.write_u64(0x1008, 500_000_000);
        memory.write_u64(0x2000, 12);
        memory.write_u64(0x2008, 0x1_0000_0005);
        memory.write_u64(0x3008, 1_000_000_000);
        let target = Target::new(&debug, &memory, 0);
        let instant_at = |address| {
            instant(
                &target
                    .value(die_of(&debug, "std::time::Instant"), address)
                    .unwrap(),
            )
        };
        assert_eq!(instant_at(0x1000).unwrap(), (12, 500_000_000));
        let refused = instant_at(0x2000).unwrap_err();
        assert!(
            refused.message().contains("4294967301 nanoseconds"),
            "{}",
            refused.message()
        );
        assert!(instant_at(0x3000).is_err());
        let duration_at = |address| {
            duration_secs(
                &target
                    .value(die_of(&debug, "core::time::Duration"), address)
                    .unwrap(),
            )
        };
        assert_eq!(duration_at(0x1000).unwrap(), 12.5);
        assert!(duration_at(0x2000).is_err());
    }

    const INNER_COUNT: Path = &[Field("inner"), Unwrap, Field("count")];
    const MISSING: Path = &[Field("outer"), Field("count")];

    /// Fields and wrappers are worked out once per type: a second value of the type reads
    /// at the same distance, and a field the type lacks is refused alike both times, so a
    /// path's alternatives are still tried.
    #[test]
    fn a_run_of_fields_is_resolved_once_per_type() {
        let mut program = Program::new();
        let u64 = program.u64();
        let cell = program.structure("core::cell::UnsafeCell<u64>", 8, &[("value", 0, u64)]);
        let inner = program.structure("app::Inner", 16, &[("count", 8, cell)]);
        program.structure("app::Outer", 24, &[("flag", 0, u64), ("inner", 8, inner)]);
        let debug = program.load();
        let mut memory = TestMemory::default();
        memory.write_u64(0x1000 + 16, 7);
        memory.write_u64(0x2000 + 16, 9);
        let target = Target::new(&debug, &memory, 0);
        let outer = die_of(&debug, "app::Outer");
        let read = |address| {
            let value = target.value(outer, address).unwrap();
            follow_first(&value, &[MISSING, INNER_COUNT])
                .unwrap()
                .map(|count| (count.address, count.read_uint().unwrap()))
        };
        assert_eq!(read(0x1000), Some((0x1010, 7)));
        assert_eq!(read(0x2000), Some((0x2010, 9)));
        // Two runs, each kept once: the path without its field, and the one that leads.
        let runs = target.layout_runs.borrow();
        assert!(
            runs.values().any(Result::is_err),
            "the missing field is kept as a refusal"
        );
        assert_eq!(runs.values().filter(|run| run.is_ok()).count(), 1);
        drop(runs);
        let value = target.value(outer, 0x1000).unwrap();
        let refused = follow(&value, MISSING).err().expect("no `outer` field");
        assert!(
            refused.message().contains("has no field `outer`"),
            "{}",
            refused.message()
        );
    }
}
