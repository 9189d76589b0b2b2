//! The version table: every name and field path this tool relies on, in one place. How
//! rustc lays out Rust's own values (`rust`), how tokio's runtime keeps its tasks (`tokio`),
//! tokio's futures and what holds them (`tokio_futures`), and the libraries whose futures
//! are decoded (`libraries`). Nothing outside this module spells a field name.
//!
//! Where versions or build options differ, the table holds each alternative once and the
//! DWARF picks: a path's alternatives are tried newest first, and wrapper types are looked
//! through by their DWARF name (`rust::WRAPPERS`, `tokio::MUTEXES`). docs/layouts.md says
//! which version changed what. This module is data only; `crate::std_values` follows it.

pub mod libraries;
pub mod rust;
pub mod tokio;
pub mod tokio_futures;

/// One step from a value toward what a path names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// The field of this name.
    Field(&'static str),
    /// The payload of the enum variant of this name, which must be the active one.
    Variant(&'static str),
    /// Through a pointer, reference or `Box` to what it points to.
    Deref,
    /// Through an `Arc` to the value it shares.
    Arc,
    /// Through an `Rc` to the value it shares.
    Rc,
    /// Into an `Option`'s `Some`: the path ends in nothing where it is `None`.
    Some,
    /// Through the cells and wrappers that hold one value (`UnsafeCell`, `Cell`, `RefCell`,
    /// `ManuallyDrop`, tokio's loom cells: `rust::WRAPPERS`, `tokio::WRAPPERS`), as many as
    /// the value is wrapped in.
    Unwrap,
    /// Into what a tokio `Mutex` guards (`tokio::MUTEXES`: parking_lot's or std's, by the
    /// `parking_lot` feature), or a std `Mutex` (`rust::STD_MUTEXES`).
    Locked,
    /// Through one-field structs (newtypes) down to the value of the type of this name:
    /// std's sockets and files wrap their `OwnedFd` in a few, more or fewer by type.
    To(&'static str),
}

/// A path of steps.
pub type Path = &'static [Step];

/// A path and the paths other versions take instead, newest first: the first one whose
/// fields the DWARF has is followed.
pub type Paths = &'static [Path];

/// A wrapper type (by name prefix) and the field path to the value it holds.
pub type Wrapper = (&'static str, &'static [&'static str]);
