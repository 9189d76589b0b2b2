//! For unit tests: programs made of a few DWARF types (written with gimli into a small ELF
//! file, as rustc lays the types out) and memory made of a few pages, so that a decoder or
//! a tokio reader runs over exactly the values a test writes, with no fixture built and no
//! debugger. Another version's layout is another set of types.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;

use gimli::write::{AttributeValue, DwarfUnit, EndianVec, Sections, UnitEntryId};
use gimli::{constants, Encoding, Format, RunTimeEndian};

use crate::dwarf::{DebugInfo, DieRef};
use crate::error::{Error, Result};
use crate::memory::Memory;

/// A type of a synthetic program.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ty(UnitEntryId);

/// A program's DWARF, one type at a time. Qualified names (`tokio::sync::notify::Notify`)
/// become namespaces and a named type, as rustc emits them.
pub struct Program {
    dwarf: DwarfUnit,
    namespaces: HashMap<String, UnitEntryId>,
    named: HashMap<String, Ty>,
    /// ELF symbols (name, address) of statics the program has.
    symbols: Vec<(String, u64)>,
}

impl Default for Program {
    fn default() -> Self {
        Program::new()
    }
}

impl Program {
    pub fn new() -> Program {
        let encoding = Encoding {
            format: Format::Dwarf32,
            version: 4,
            address_size: 8,
        };
        let mut dwarf = DwarfUnit::new(encoding);
        let root = dwarf.unit.root();
        let name = dwarf.strings.add("src/lib.rs/@/testing");
        dwarf
            .unit
            .get_mut(root)
            .set(constants::DW_AT_name, AttributeValue::StringRef(name));
        Program {
            dwarf,
            namespaces: HashMap::new(),
            named: HashMap::new(),
            symbols: Vec::new(),
        }
    }

    /// The type made under this name, if one was.
    pub fn find(&self, name: &str) -> Option<Ty> {
        self.named.get(name).copied()
    }

    /// The type made under this name.
    pub fn named(&self, name: &str) -> Ty {
        *self
            .named
            .get(name)
            .unwrap_or_else(|| panic!("no type {name} in the test program"))
    }

    fn namespace(&mut self, path: &[&str]) -> UnitEntryId {
        let mut parent = self.dwarf.unit.root();
        for depth in 0..path.len() {
            let key = path[..=depth].join("::");
            parent = match self.namespaces.get(&key) {
                Some(&id) => id,
                None => {
                    let id = self.dwarf.unit.add(parent, constants::DW_TAG_namespace);
                    self.set_name(id, path[depth]);
                    self.namespaces.insert(key, id);
                    id
                }
            };
        }
        parent
    }

    fn set_name(&mut self, id: UnitEntryId, name: &str) {
        let name = self.dwarf.strings.add(name);
        self.dwarf
            .unit
            .get_mut(id)
            .set(constants::DW_AT_name, AttributeValue::StringRef(name));
    }

    fn set_size(&mut self, id: UnitEntryId, size: u64) {
        self.dwarf
            .unit
            .get_mut(id)
            .set(constants::DW_AT_byte_size, AttributeValue::Udata(size));
    }

    /// A type named by its qualified name, in its namespaces.
    fn typed(&mut self, tag: constants::DwTag, name: &str) -> Ty {
        let segments = crate::names::split_path(name);
        let (last, scope) = segments.split_last().expect("a name");
        let parent = self.namespace(scope);
        let id = self.dwarf.unit.add(parent, tag);
        self.set_name(id, last);
        let ty = Ty(id);
        self.named.insert(name.to_string(), ty);
        ty
    }

    pub fn base(&mut self, name: &str, size: u64) -> Ty {
        let id = self
            .dwarf
            .unit
            .add(self.dwarf.unit.root(), constants::DW_TAG_base_type);
        self.set_name(id, name);
        self.set_size(id, size);
        let ty = Ty(id);
        self.named.insert(name.to_string(), ty);
        ty
    }

    /// A struct with its fields (name, offset, type).
    pub fn structure(&mut self, name: &str, size: u64, fields: &[(&str, u64, Ty)]) -> Ty {
        let ty = self.typed(constants::DW_TAG_structure_type, name);
        self.set_size(ty.0, size);
        self.fields(ty, fields);
        ty
    }

    /// Adds fields to a struct (made earlier, for types that refer to each other).
    pub fn fields(&mut self, ty: Ty, fields: &[(&str, u64, Ty)]) {
        for &(name, offset, field_type) in fields {
            self.member(ty.0, name, offset, field_type);
        }
    }

    fn member(&mut self, parent: UnitEntryId, name: &str, offset: u64, ty: Ty) -> UnitEntryId {
        let id = self.dwarf.unit.add(parent, constants::DW_TAG_member);
        self.set_name(id, name);
        let entry = self.dwarf.unit.get_mut(id);
        entry.set(constants::DW_AT_type, AttributeValue::UnitRef(ty.0));
        entry.set(
            constants::DW_AT_data_member_location,
            AttributeValue::Udata(offset),
        );
        id
    }

    /// A template type parameter of a type (`T` of `Vec<T>`).
    pub fn template_param(&mut self, of: Ty, name: &str, param: Ty) {
        let id = self
            .dwarf
            .unit
            .add(of.0, constants::DW_TAG_template_type_parameter);
        self.set_name(id, name);
        self.dwarf
            .unit
            .get_mut(id)
            .set(constants::DW_AT_type, AttributeValue::UnitRef(param.0));
    }

    /// A pointer or reference type, by the name rustc gives it (`&u32`, `*mut u8`).
    pub fn pointer(&mut self, name: &str, target: Ty) -> Ty {
        let id = self
            .dwarf
            .unit
            .add(self.dwarf.unit.root(), constants::DW_TAG_pointer_type);
        self.set_name(id, name);
        self.set_size(id, 8);
        self.dwarf
            .unit
            .get_mut(id)
            .set(constants::DW_AT_type, AttributeValue::UnitRef(target.0));
        let ty = Ty(id);
        self.named.insert(name.to_string(), ty);
        ty
    }

    /// A C-like enumeration.
    pub fn c_enum(&mut self, name: &str, size: u64, enumerators: &[(&str, u64)]) -> Ty {
        let ty = self.typed(constants::DW_TAG_enumeration_type, name);
        self.set_size(ty.0, size);
        for &(name, value) in enumerators {
            let id = self.dwarf.unit.add(ty.0, constants::DW_TAG_enumerator);
            self.set_name(id, name);
            self.dwarf
                .unit
                .get_mut(id)
                .set(constants::DW_AT_const_value, AttributeValue::Udata(value));
        }
        ty
    }

    /// A Rust enum (or a coroutine env): a struct with a variant part whose discriminant is
    /// at `discriminant` (offset, type), none for a single variant. Each variant is (the
    /// member's name, its discriminant value, none for the dataful variant of a niche, the
    /// fields of its payload struct, named `Enum::Variant`).
    pub fn rust_enum(
        &mut self,
        name: &str,
        size: u64,
        discriminant: Option<(u64, Ty)>,
        variants: &[Variant<'_>],
    ) -> Ty {
        let ty = self.typed(constants::DW_TAG_structure_type, name);
        self.set_size(ty.0, size);
        let part = self.dwarf.unit.add(ty.0, constants::DW_TAG_variant_part);
        if let Some((offset, discriminant_type)) = discriminant {
            let member = self.member(part, "__state", offset, discriminant_type);
            self.dwarf
                .unit
                .get_mut(part)
                .set(constants::DW_AT_discr, AttributeValue::UnitRef(member));
        }
        for variant in variants {
            let payload = self.dwarf.unit.add(ty.0, constants::DW_TAG_structure_type);
            self.set_name(payload, variant.payload_name.unwrap_or(variant.name));
            self.set_size(payload, size);
            for &(field, offset, field_type) in variant.fields {
                self.member(payload, field, offset, field_type);
            }
            let id = self.dwarf.unit.add(part, constants::DW_TAG_variant);
            if let Some(value) = variant.discriminant {
                self.dwarf
                    .unit
                    .get_mut(id)
                    .set(constants::DW_AT_discr_value, AttributeValue::Udata(value));
            }
            self.member(id, variant.name, 0, Ty(payload));
        }
        ty
    }

    /// An array of `len` elements.
    pub fn array(&mut self, element: Ty, len: u64) -> Ty {
        let id = self
            .dwarf
            .unit
            .add(self.dwarf.unit.root(), constants::DW_TAG_array_type);
        self.dwarf
            .unit
            .get_mut(id)
            .set(constants::DW_AT_type, AttributeValue::UnitRef(element.0));
        let range = self.dwarf.unit.add(id, constants::DW_TAG_subrange_type);
        self.dwarf
            .unit
            .get_mut(range)
            .set(constants::DW_AT_count, AttributeValue::Udata(len));
        Ty(id)
    }

    /// A function whose code starts at `address`, with template type parameters (as
    /// tokio's `raw::poll<T, S>`, which a task's vtable points to).
    pub fn function(&mut self, name: &str, address: u64, params: &[(&str, Ty)]) {
        let segments = crate::names::split_path(name);
        let (last, scope) = segments.split_last().expect("a name");
        let parent = self.namespace(scope);
        let id = self.dwarf.unit.add(parent, constants::DW_TAG_subprogram);
        self.set_name(id, last);
        let entry = self.dwarf.unit.get_mut(id);
        entry.set(
            constants::DW_AT_low_pc,
            AttributeValue::Address(gimli::write::Address::Constant(address)),
        );
        entry.set(constants::DW_AT_high_pc, AttributeValue::Udata(16));
        for &(name, param) in params {
            self.template_param(Ty(id), name, param);
        }
    }

    /// Writes the program to a file of its own and loads it as the tool loads executables.
    /// An ELF symbol for a static at `address` (absolute: the test program has no data).
    pub fn symbol(&mut self, name: &str, address: u64) {
        self.symbols.push((name.to_string(), address));
    }

    pub fn load(mut self) -> DebugInfo {
        let mut sections = Sections::new(EndianVec::new(RunTimeEndian::Little));
        self.dwarf.write(&mut sections).expect("DWARF writes");
        let mut object = object::write::Object::new(
            object::BinaryFormat::Elf,
            object::Architecture::X86_64,
            object::Endianness::Little,
        );
        sections
            .for_each(|id, data| -> std::result::Result<(), ()> {
                if !data.slice().is_empty() {
                    let section = object.add_section(
                        Vec::new(),
                        id.name().as_bytes().to_vec(),
                        object::SectionKind::Debug,
                    );
                    object.append_section_data(section, data.slice(), 1);
                }
                Ok(())
            })
            .expect("sections copy");
        for (name, address) in &self.symbols {
            object.add_symbol(object::write::Symbol {
                name: name.as_bytes().to_vec(),
                value: *address,
                size: 8,
                kind: object::SymbolKind::Data,
                scope: object::SymbolScope::Linkage,
                weak: false,
                section: object::write::SymbolSection::Absolute,
                flags: object::SymbolFlags::None,
            });
        }
        let bytes = object.write().expect("ELF writes");
        let path = scratch_file();
        std::fs::write(&path, bytes).expect("test program writes");
        let debug = DebugInfo::load(&path).expect("test program loads");
        // The mapping stays valid: the file's pages are kept until it is unmapped.
        let _ = std::fs::remove_file(&path);
        debug
    }
}

/// One variant of `Program::rust_enum`.
pub struct Variant<'a> {
    pub name: &'a str,
    pub discriminant: Option<u64>,
    pub fields: &'a [(&'a str, u64, Ty)],
    /// The payload struct's name, when not the variant's (`Suspend0` for member `3`).
    pub payload_name: Option<&'a str>,
}

impl<'a> Variant<'a> {
    pub fn new(
        name: &'a str,
        discriminant: Option<u64>,
        fields: &'a [(&'a str, u64, Ty)],
    ) -> Variant<'a> {
        Variant {
            name,
            discriminant,
            fields,
            payload_name: None,
        }
    }
}

fn scratch_file() -> PathBuf {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    std::env::temp_dir().join(format!(
        "tokio-async-test-program-{}-{n}",
        std::process::id()
    ))
}

/// The DIE of a test program's type, as the loaded program numbers it.
pub fn die_of(debug: &DebugInfo, name: &str) -> DieRef {
    debug
        .type_by_name(name, None)
        .unwrap_or_else(|| panic!("no type {name} in the loaded test program"))
}

const PAGE: u64 = 4096;

/// Memory written a value at a time; anything not written is unreadable.
#[derive(Default)]
pub struct TestMemory {
    pages: BTreeMap<u64, Box<[u8; PAGE as usize]>>,
}

impl TestMemory {
    pub fn write(&mut self, address: u64, bytes: &[u8]) {
        for (i, byte) in bytes.iter().enumerate() {
            let at = address + i as u64;
            let page = self
                .pages
                .entry(at & !(PAGE - 1))
                .or_insert_with(|| Box::new([0; PAGE as usize]));
            page[(at % PAGE) as usize] = *byte;
        }
    }

    pub fn write_u64(&mut self, address: u64, value: u64) {
        self.write(address, &value.to_le_bytes());
    }

    pub fn write_u32(&mut self, address: u64, value: u32) {
        self.write(address, &value.to_le_bytes());
    }

    pub fn write_u8(&mut self, address: u64, value: u8) {
        self.write(address, &[value]);
    }

    /// Makes `len` bytes at `address` readable (zeroes).
    pub fn zero(&mut self, address: u64, len: usize) {
        self.write(address, &vec![0; len]);
    }
}

impl Memory for TestMemory {
    fn read(&self, address: u64, buf: &mut [u8]) -> Result<()> {
        let len = buf.len();
        for (i, byte) in buf.iter_mut().enumerate() {
            let at = address
                .checked_add(i as u64)
                .ok_or_else(|| Error::memory(address, len))?;
            let page = self
                .pages
                .get(&(at & !(PAGE - 1)))
                .ok_or_else(|| Error::memory(address, len))?;
            *byte = page[(at % PAGE) as usize];
        }
        Ok(())
    }
}

/// Common types of std and tokio, made once per program, laid out as rustc 1.95 and
/// tokio 1.54 lay them out (offsets chosen to be plausible, not necessarily rustc's).
impl Program {
    pub fn memo(&mut self, name: &str, make: impl FnOnce(&mut Program) -> Ty) -> Ty {
        if let Some(&ty) = self.named.get(name) {
            return ty;
        }
        let ty = make(self);
        self.named.insert(name.to_string(), ty);
        ty
    }

    pub fn u8(&mut self) -> Ty {
        self.memo("u8", |p| p.base("u8", 1))
    }

    pub fn u32(&mut self) -> Ty {
        self.memo("u32", |p| p.base("u32", 4))
    }

    pub fn u64(&mut self) -> Ty {
        self.memo("u64", |p| p.base("u64", 8))
    }

    pub fn i64(&mut self) -> Ty {
        self.memo("i64", |p| p.base("i64", 8))
    }

    pub fn usize(&mut self) -> Ty {
        self.memo("usize", |p| p.base("usize", 8))
    }

    pub fn bool(&mut self) -> Ty {
        self.memo("bool", |p| p.base("bool", 1))
    }

    /// `NonNull<T>{pointer: *const T}`.
    pub fn non_null(&mut self, target_name: &str, target: Ty) -> Ty {
        let name = format!("core::ptr::non_null::NonNull<{target_name}>");
        self.memo(&name.clone(), |p| {
            let raw = p.pointer(&format!("*const {target_name}"), target);
            p.structure(&name, 8, &[("pointer", 0, raw)])
        })
    }

    /// `Arc<T>{ptr: NonNull<ArcInner<T>{strong, weak, data}>}`, the data at +16.
    pub fn arc(&mut self, data_name: &str, data: Ty, data_size: u64) -> Ty {
        let name = format!("alloc::sync::Arc<{data_name}, alloc::alloc::Global>");
        self.memo(&name.clone(), |p| {
            let usize = p.usize();
            let inner_name = format!("alloc::sync::ArcInner<{data_name}>");
            let inner = p.structure(
                &inner_name,
                16 + data_size,
                &[("strong", 0, usize), ("weak", 8, usize), ("data", 16, data)],
            );
            let ptr = p.non_null(&inner_name, inner);
            let arc = p.structure(&name, 8, &[("ptr", 0, ptr)]);
            p.template_param(arc, "T", data);
            arc
        })
    }

    /// `LocalSet{context: Rc<Context{shared: Arc<Shared>}>}`, 16 bytes, the `Rc` at +0, around
    /// `shared_arc` (an `Arc<tokio::task::local::Shared>`); the `Context` is 8 bytes.
    pub fn local_set(&mut self, shared_arc: Ty) -> Ty {
        let context = self.structure(
            "tokio::task::local::Context",
            8,
            &[("shared", 0, shared_arc)],
        );
        let rc = self.rc("tokio::task::local::Context", context, 8);
        self.structure("tokio::task::local::LocalSet", 16, &[("context", 0, rc)])
    }

    /// `Rc<T>{ptr: NonNull<RcInner<T>{strong, weak, value}>}`, the value at +16.
    pub fn rc(&mut self, value_name: &str, value: Ty, value_size: u64) -> Ty {
        let name = format!("alloc::rc::Rc<{value_name}, alloc::alloc::Global>");
        self.memo(&name.clone(), |p| {
            let usize = p.usize();
            let inner_name = format!("alloc::rc::RcInner<{value_name}>");
            let inner = p.structure(
                &inner_name,
                16 + value_size,
                &[
                    ("strong", 0, usize),
                    ("weak", 8, usize),
                    ("value", 16, value),
                ],
            );
            let ptr = p.non_null(&inner_name, inner);
            let rc = p.structure(&name, 8, &[("ptr", 0, ptr)]);
            p.template_param(rc, "T", value);
            rc
        })
    }

    /// `&T`.
    pub fn reference(&mut self, target_name: &str, target: Ty) -> Ty {
        let name = format!("&{target_name}");
        self.memo(&name.clone(), |p| p.pointer(&name, target))
    }

    /// `Option<T>` with its tag at +0 (0: None, 1: Some) and the value at `payload_at`.
    pub fn option(&mut self, payload_name: &str, payload: Ty, payload_at: u64, size: u64) -> Ty {
        let name = format!("core::option::Option<{payload_name}>");
        self.memo(&name.clone(), |p| {
            let tag = p.u64();
            p.rust_enum(
                &name,
                size,
                Some((0, tag)),
                &[
                    Variant::new("None", Some(0), &[]),
                    Variant::new("Some", Some(1), &[("__0", payload_at, payload)]),
                ],
            )
        })
    }

    /// `Option<NonNull<T>>`: a niche, null for None.
    pub fn nullable(&mut self, target_name: &str, target: Ty) -> Ty {
        let name = format!("core::option::Option<core::ptr::non_null::NonNull<{target_name}>>");
        self.memo(&name.clone(), |p| {
            let non_null = p.non_null(target_name, target);
            let tag = p.u64();
            p.rust_enum(
                &name,
                8,
                Some((0, tag)),
                &[
                    Variant::new("None", Some(0), &[]),
                    Variant::new("Some", None, &[("__0", 0, non_null)]),
                ],
            )
        })
    }

    /// tokio's `AtomicUsize{inner: UnsafeCell<AtomicUsize>}`.
    pub fn atomic_usize(&mut self) -> Ty {
        self.memo("tokio::loom::std::atomic_usize::AtomicUsize", |p| {
            let usize = p.usize();
            let std = p.structure("core::sync::atomic::AtomicUsize", 8, &[("v", 0, usize)]);
            let cell = p.structure(
                "core::cell::UnsafeCell<core::sync::atomic::AtomicUsize>",
                8,
                &[("value", 0, std)],
            );
            p.structure(
                "tokio::loom::std::atomic_usize::AtomicUsize",
                8,
                &[("inner", 0, cell)],
            )
        })
    }

    /// tokio's `Mutex<T>`: with the `parking_lot` feature `(PhantomData, lock_api::Mutex{raw,
    /// data: UnsafeCell<T>})`, the data at +8; without, `(std::sync::Mutex{inner, poison,
    /// data: UnsafeCell<T>})`, the data at +8 too.
    pub fn tokio_mutex(
        &mut self,
        data_name: &str,
        data: Ty,
        data_size: u64,
        parking_lot: bool,
    ) -> Ty {
        let cell_name = format!("core::cell::UnsafeCell<{data_name}>");
        let cell = self.memo(&cell_name.clone(), |p| {
            p.structure(&cell_name, data_size, &[("value", 0, data)])
        });
        let u8 = self.u8();
        if parking_lot {
            let name = format!("tokio::loom::std::parking_lot::Mutex<{data_name}>");
            self.memo(&name.clone(), |p| {
                let raw = p.structure("parking_lot::raw_mutex::RawMutex", 1, &[("state", 0, u8)]);
                let lock = p.structure(
                    &format!(
                        "lock_api::mutex::Mutex<parking_lot::raw_mutex::RawMutex, {data_name}>"
                    ),
                    8 + data_size,
                    &[("raw", 0, raw), ("data", 8, cell)],
                );
                let marker = p.structure(
                    &format!(
                        "core::marker::PhantomData<std::sync::poison::mutex::Mutex<{data_name}>>"
                    ),
                    0,
                    &[],
                );
                p.structure(
                    &name,
                    8 + data_size,
                    &[("__0", 0, marker), ("__1", 0, lock)],
                )
            })
        } else {
            let name = format!("tokio::loom::std::mutex::Mutex<{data_name}>");
            self.memo(&name.clone(), |p| {
                let flag = p.structure("std::sync::poison::Flag", 1, &[("failed", 0, u8)]);
                let u32 = p.u32();
                let futex = p.structure(
                    "std::sys::sync::mutex::futex::Mutex",
                    4,
                    &[("futex", 0, u32)],
                );
                let std = p.structure(
                    &format!("std::sync::poison::mutex::Mutex<{data_name}>"),
                    8 + data_size,
                    &[("inner", 0, futex), ("poison", 4, flag), ("data", 8, cell)],
                );
                p.structure(&name, 8 + data_size, &[("__0", 0, std)])
            })
        }
    }

    /// tokio's intrusive `LinkedList<Node>{head, tail}`; a node's `pointers` field is
    /// `Pointers{inner: UnsafeCell<PointersInner{prev, next}>}` (see `linked_list_node`).
    pub fn linked_list(&mut self, node_name: &str, node: Ty) -> Ty {
        let name = format!("tokio::util::linked_list::LinkedList<{node_name}>");
        self.memo(&name.clone(), |p| {
            let link = p.nullable(node_name, node);
            p.structure(&name, 16, &[("head", 0, link), ("tail", 8, link)])
        })
    }

    /// tokio's `linked_list::Pointers<Node>`, 16 bytes: prev at +0, next at +8.
    pub fn pointers(&mut self, node_name: &str, node: Ty) -> Ty {
        let name = format!("tokio::util::linked_list::Pointers<{node_name}>");
        self.memo(&name.clone(), |p| {
            let link = p.nullable(node_name, node);
            let inner_name = format!("tokio::util::linked_list::PointersInner<{node_name}>");
            let inner = p.structure(&inner_name, 16, &[("prev", 0, link), ("next", 8, link)]);
            let cell = p.structure(
                &format!("core::cell::UnsafeCell<{inner_name}>"),
                16,
                &[("value", 0, inner)],
            );
            p.structure(&name, 16, &[("inner", 0, cell)])
        })
    }
}

/// More std and tokio types for the decoders' tests.
impl Program {
    /// `Option<T>` where T has a niche: no tag of its own, `None` where the value's first
    /// word is 0 (a null `Arc`, `Box` or reference).
    pub fn niche_option(&mut self, payload_name: &str, payload: Ty, size: u64) -> Ty {
        let name = format!("core::option::Option<{payload_name}>");
        self.memo(&name.clone(), |p| {
            let tag = p.u64();
            p.rust_enum(
                &name,
                size,
                Some((0, tag)),
                &[
                    Variant::new("None", Some(0), &[]),
                    Variant::new("Some", None, &[("__0", 0, payload)]),
                ],
            )
        })
    }

    /// tokio's `UnsafeCell<T>(core::cell::UnsafeCell<T>{value})`.
    pub fn tokio_cell(&mut self, value_name: &str, value: Ty, size: u64) -> Ty {
        let name = format!("tokio::loom::std::unsafe_cell::UnsafeCell<{value_name}>");
        self.memo(&name.clone(), |p| {
            let core = p.structure(
                &format!("core::cell::UnsafeCell<{value_name}>"),
                size,
                &[("value", 0, value)],
            );
            p.structure(&name, size, &[("__0", 0, core)])
        })
    }

    /// `Vec<T>{buf: RawVec{inner: RawVecInner{ptr: Unique<u8>, cap}}, len}`: the pointer at
    /// +8, the length at +16.
    pub fn vec(&mut self, element_name: &str, element: Ty) -> Ty {
        let name = format!("alloc::vec::Vec<{element_name}, alloc::alloc::Global>");
        self.memo(&name.clone(), |p| {
            let usize = p.usize();
            let u8 = p.u8();
            let non_null = p.non_null("u8", u8);
            let unique = p.structure(
                "core::ptr::unique::Unique<u8>",
                8,
                &[("pointer", 0, non_null)],
            );
            let inner = p.structure(
                "alloc::raw_vec::RawVecInner<alloc::alloc::Global>",
                16,
                &[("cap", 0, usize), ("ptr", 8, unique)],
            );
            let raw = p.structure(
                &format!("alloc::raw_vec::RawVec<{element_name}, alloc::alloc::Global>"),
                16,
                &[("inner", 0, inner)],
            );
            let vec = p.structure(&name, 24, &[("buf", 0, raw), ("len", 16, usize)]);
            p.template_param(vec, "T", element);
            vec
        })
    }

    /// `VecDeque<T>{buf: RawVec{inner: RawVecInner{cap, ptr}}, head, len}` as rustc 1.95 lays
    /// it out: the capacity at +0, the pointer at +8, the head at +16, the length at +24.
    pub fn vec_deque(&mut self, element_name: &str, element: Ty) -> Ty {
        let name = format!(
            "alloc::collections::vec_deque::VecDeque<{element_name}, alloc::alloc::Global>"
        );
        self.memo(&name.clone(), |p| {
            let usize = p.usize();
            let u8 = p.u8();
            let non_null = p.non_null("u8", u8);
            let unique = p.memo("core::ptr::unique::Unique<u8>", |p| {
                p.structure(
                    "core::ptr::unique::Unique<u8>",
                    8,
                    &[("pointer", 0, non_null)],
                )
            });
            let inner = p.memo("alloc::raw_vec::RawVecInner<alloc::alloc::Global>", |p| {
                p.structure(
                    "alloc::raw_vec::RawVecInner<alloc::alloc::Global>",
                    16,
                    &[("cap", 0, usize), ("ptr", 8, unique)],
                )
            });
            let raw = p.memo(
                &format!("alloc::raw_vec::RawVec<{element_name}, alloc::alloc::Global>"),
                |p| {
                    p.structure(
                        &format!("alloc::raw_vec::RawVec<{element_name}, alloc::alloc::Global>"),
                        16,
                        &[("inner", 0, inner)],
                    )
                },
            );
            let deque = p.structure(
                &name,
                32,
                &[("buf", 0, raw), ("head", 16, usize), ("len", 24, usize)],
            );
            p.template_param(deque, "T", element);
            deque
        })
    }

    /// A tuple of two values, `(A, B)`, `__0` at +0 and `__1` at `second_at`.
    pub fn pair(&mut self, first: (&str, Ty), second: (&str, Ty), second_at: u64, size: u64) -> Ty {
        let name = format!("({}, {})", first.0, second.0);
        self.memo(&name.clone(), |p| {
            p.structure(
                &name,
                size,
                &[("__0", 0, first.1), ("__1", second_at, second.1)],
            )
        })
    }

    /// std's `HashMap<K, V>{base: hashbrown::HashMap{table: RawTable<(K, V)>{table:
    /// RawTableInner{ctrl, bucket_mask, growth_left, items}}, hash_builder}}` as rustc 1.95
    /// lays it out: the control bytes' pointer at +0, the mask at +8, the items at +24.
    /// `entry` is the `(K, V)` tuple.
    pub fn hash_map(&mut self, key: (&str, Ty), value: (&str, Ty), entry: Ty) -> Ty {
        let (key_name, value_name) = (key.0, value.0);
        let name = format!(
            "std::collections::hash::map::HashMap<{key_name}, {value_name}, std::hash::random::RandomState, alloc::alloc::Global>"
        );
        self.memo(&name.clone(), |p| {
            let usize = p.usize();
            let u8 = p.u8();
            let ctrl = p.non_null("u8", u8);
            let inner = p.memo("hashbrown::raw::RawTableInner", |p| {
                p.structure(
                    "hashbrown::raw::RawTableInner",
                    32,
                    &[
                        ("ctrl", 0, ctrl),
                        ("bucket_mask", 8, usize),
                        ("growth_left", 16, usize),
                        ("items", 24, usize),
                    ],
                )
            });
            let table = p.structure(
                &format!(
                    "hashbrown::raw::RawTable<({key_name}, {value_name}), alloc::alloc::Global>"
                ),
                32,
                &[("table", 0, inner)],
            );
            p.template_param(table, "T", entry);
            let base = p.structure(
                &format!(
                    "hashbrown::map::HashMap<{key_name}, {value_name}, std::hash::random::RandomState, alloc::alloc::Global>"
                ),
                48,
                &[("table", 0, table)],
            );
            let map = p.structure(&name, 48, &[("base", 0, base)]);
            p.template_param(map, "K", key.1);
            p.template_param(map, "V", value.1);
            map
        })
    }

    /// `BTreeMap<K, V>{root: Option<NodeRef{node, height}>, length}` as rustc 1.95 lays it
    /// out for a key of 4 bytes and a value of 8: the root's node at +0 (null: none), its
    /// height at +8, the length at +16; `LeafNode{parent, vals: [MaybeUninit<V>; 11], keys:
    /// [MaybeUninit<K>; 11], parent_idx, len: u16}` of 144 bytes, vals at +8, keys at +96, len
    /// at +142; `InternalNode{data: LeafNode, edges: [MaybeUninit<NonNull<LeafNode>>; 12]}`,
    /// the edges at +144.
    pub fn btree_map(&mut self, key: (&str, Ty), value: (&str, Ty)) -> Ty {
        let (key_name, value_name) = (key.0, value.0);
        let name = format!(
            "alloc::collections::btree::map::BTreeMap<{key_name}, {value_name}, alloc::alloc::Global>"
        );
        self.memo(&name.clone(), |p| {
            let usize = p.usize();
            let u16 = p.memo("u16", |p| p.base("u16", 2));
            let nodes = format!("{key_name}, {value_name}");
            let leaf_name = format!("alloc::collections::btree::node::LeafNode<{nodes}>");
            let internal_name = format!("alloc::collections::btree::node::InternalNode<{nodes}>");
            let leaf = p.structure(&leaf_name, 144, &[]);
            let internal = p.structure(&internal_name, 240, &[]);
            let parent = p.nullable(&internal_name, internal);
            let uninit = |p: &mut Program, name: &str, ty: Ty, size: u64| {
                let uninit_name = format!("core::mem::maybe_uninit::MaybeUninit<{name}>");
                p.memo(&uninit_name.clone(), |p| {
                    p.structure(&uninit_name, size, &[("value", 0, ty)])
                })
            };
            let value_slot = uninit(p, value_name, value.1, 8);
            let key_slot = uninit(p, key_name, key.1, 4);
            let values = p.array(value_slot, 11);
            let keys = p.array(key_slot, 11);
            p.fields(
                leaf,
                &[
                    ("parent", 0, parent),
                    ("vals", 8, values),
                    ("keys", 96, keys),
                    ("len", 142, u16),
                ],
            );
            let edge = p.non_null(&leaf_name, leaf);
            let edge_slot = uninit(
                p,
                &format!("core::ptr::non_null::NonNull<{leaf_name}>"),
                edge,
                8,
            );
            let edges = p.array(edge_slot, 12);
            p.fields(internal, &[("data", 0, leaf), ("edges", 144, edges)]);
            let node_ref = p.structure(
                &format!(
                    "alloc::collections::btree::node::NodeRef<alloc::collections::btree::node::marker::Owned, {nodes}, alloc::collections::btree::node::marker::LeafOrInternal>"
                ),
                16,
                &[("node", 0, edge), ("height", 8, usize)],
            );
            let root = p.niche_option("NodeRef", node_ref, 16);
            let map = p.structure(&name, 24, &[("root", 0, root), ("length", 16, usize)]);
            p.template_param(map, "K", key.1);
            p.template_param(map, "V", value.1);
            map
        })
    }

    /// `Box<[T]>{data_ptr: *const T, length}`.
    pub fn boxed_slice(&mut self, element_name: &str, element: Ty) -> Ty {
        let name = format!("alloc::boxed::Box<[{element_name}], alloc::alloc::Global>");
        self.memo(&name.clone(), |p| {
            let usize = p.usize();
            let data = p.pointer(&format!("*const {element_name}"), element);
            p.structure(&name, 16, &[("data_ptr", 0, data), ("length", 8, usize)])
        })
    }

    /// `Box<T>`, a thin pointer.
    /// `Box<dyn_name>`, 16 bytes: the data pointer, then the vtable (a `&[usize; 4]`), of
    /// the trait object type `dyn_name` (`(dyn core::future::future::Future<Output=()> +
    /// core::marker::Send)`); `vtable` makes each concrete type's vtable.
    pub fn boxed_dyn(&mut self, dyn_name: &str) -> Ty {
        let usize = self.usize();
        let array = self.array(usize, 4);
        let vtable = self.pointer("&[usize; 4]", array);
        let dyn_type = self.structure(dyn_name, 0, &[]);
        let data = self.pointer(&format!("*mut {dyn_name}"), dyn_type);
        self.structure(
            &format!("alloc::boxed::Box<{dyn_name}, alloc::alloc::Global>"),
            16,
            &[("pointer", 0, data), ("vtable", 8, vtable)],
        )
    }

    pub fn boxed(&mut self, target_name: &str, target: Ty) -> Ty {
        let name = format!("alloc::boxed::Box<{target_name}, alloc::alloc::Global>");
        self.memo(&name.clone(), |p| p.pointer(&name, target))
    }

    /// `Pin<P>{__pointer: P}`.
    pub fn pin(&mut self, pointer_name: &str, pointer: Ty, size: u64) -> Ty {
        let name = format!("core::pin::Pin<{pointer_name}>");
        self.memo(&name.clone(), |p| {
            p.structure(&name, size, &[("__pointer", 0, pointer)])
        })
    }

    /// `tokio::time::Instant{std: std::time::Instant(sys::Instant{t: Timespec{tv_sec,
    /// tv_nsec}})}`, 16 bytes.
    pub fn tokio_instant(&mut self) -> Ty {
        self.memo("tokio::time::instant::Instant", |p| {
            let i64 = p.i64();
            let u32 = p.u32();
            let nanos = p.structure("core::num::niche_types::Nanoseconds", 4, &[("__0", 0, u32)]);
            let timespec = p.structure(
                "std::sys::pal::unix::time::Timespec",
                16,
                &[("tv_sec", 0, i64), ("tv_nsec", 8, nanos)],
            );
            let sys = p.structure("std::sys::time::unix::Instant", 16, &[("t", 0, timespec)]);
            let std = p.structure("std::time::Instant", 16, &[("__0", 0, sys)]);
            p.structure("tokio::time::instant::Instant", 16, &[("std", 0, std)])
        })
    }

    /// `core::future::pending::Pending<()>`, a future of no size that never completes.
    pub fn pending(&mut self) -> Ty {
        self.memo("core::future::pending::Pending<()>", |p| {
            p.structure("core::future::pending::Pending<()>", 0, &[])
        })
    }

    /// `&str{data_ptr, length}`.
    pub fn str_ref(&mut self) -> Ty {
        self.memo("&str", |p| {
            let u8 = p.u8();
            let usize = p.usize();
            let data = p.pointer("*const u8", u8);
            p.structure("&str", 16, &[("data_ptr", 0, data), ("length", 8, usize)])
        })
    }

    /// A `<T as Trait>::{vtable}` variable at `address`, naming T.
    pub fn vtable(&mut self, concrete_name: &str, concrete: Ty, trait_path: &str, address: u64) {
        let root = self.dwarf.unit.root();
        let vtable_type = self.dwarf.unit.add(root, constants::DW_TAG_structure_type);
        self.set_name(
            vtable_type,
            &format!("<{concrete_name} as {trait_path}>::{{vtable_type}}"),
        );
        self.set_size(vtable_type, 32);
        self.dwarf.unit.get_mut(vtable_type).set(
            constants::DW_AT_containing_type,
            AttributeValue::UnitRef(concrete.0),
        );
        let variable = self.dwarf.unit.add(root, constants::DW_TAG_variable);
        self.set_name(
            variable,
            &format!("<{concrete_name} as {trait_path}>::{{vtable}}"),
        );
        let mut location = gimli::write::Expression::new();
        location.op_addr(gimli::write::Address::Constant(address));
        let entry = self.dwarf.unit.get_mut(variable);
        entry.set(constants::DW_AT_type, AttributeValue::UnitRef(vtable_type));
        entry.set(constants::DW_AT_location, AttributeValue::Exprloc(location));
    }
}

impl TestMemory {
    /// The bytes of a string written at `address`.
    pub fn write_str(&mut self, address: u64, text: &str) {
        self.write(address, text.as_bytes());
    }
}

/// tokio's tasks, as a program lays them out: a `Header` (32 bytes: state, queue_next,
/// vtable, owner_id), its `Core<T, S>` right after it (scheduler, task id, then the stage:
/// a u32 tag and the future at +8), and its `Trailer` (`owned` pointers, waker) where the
/// vtable says, reached through a static `Vtable` whose `poll` is the address of a
/// `raw::poll<T, S>` function.
pub struct TaskTypes {
    pub header: Ty,
    /// The address of the vtable and of `poll<T, S>` for the future type given.
    pub vtable: u64,
    pub poll: u64,
}

/// Where the parts of a task lie from its header.
pub const TASK_CORE: u64 = 32;
pub const TASK_STAGE: u64 = TASK_CORE + 16;
pub const TASK_TRAILER: u64 = 128;

impl Program {
    /// Header, Vtable, Trailer, and the Core of a task running `future` on scheduler `S`.
    pub fn task_types(&mut self, future_name: &str, future: Ty, future_size: u64) -> TaskTypes {
        let usize = self.usize();
        let scheduler_name = "alloc::sync::Arc<tokio::runtime::scheduler::current_thread::Handle, alloc::alloc::Global>";
        let scheduler = self.structure(scheduler_name, 8, &[("ptr", 0, usize)]);
        self.task_types_scheduled_by(future_name, future, future_size, scheduler_name, scheduler)
    }

    /// `task_types` for tasks whose scheduler `S` is `scheduler` (an `Arc` of a runtime's
    /// handle or of a LocalSet's `Shared`, for the tests of which list owns a task).
    pub fn task_types_scheduled_by(
        &mut self,
        future_name: &str,
        future: Ty,
        future_size: u64,
        scheduler_name: &str,
        scheduler: Ty,
    ) -> TaskTypes {
        let usize = self.usize();
        let u32 = self.u32();
        let header = self.structure("tokio::runtime::task::core::Header", 32, &[]);
        let vtable_fields: Vec<(&str, u64, Ty)> = [
            "poll",
            "schedule",
            "dealloc",
            "try_read_output",
            "drop_join_handle_slow",
            "drop_abort_handle",
            "shutdown",
            "trailer_offset",
            "scheduler_offset",
            "id_offset",
        ]
        .iter()
        .enumerate()
        .map(|(i, name)| (*name, i as u64 * 8, usize))
        .collect();
        let vtable = self.structure("tokio::runtime::task::raw::Vtable", 80, &vtable_fields);
        let vtable_ref = self.reference("tokio::runtime::task::raw::Vtable", vtable);
        let state = self.structure(
            "tokio::runtime::task::state::State",
            8,
            &[("val", 0, usize)],
        );
        let next = self.nullable("tokio::runtime::task::core::Header", header);
        let u64 = self.u64();
        let non_zero = self.structure("core::num::nonzero::NonZero<u64>", 8, &[("__0", 0, u64)]);
        let owner_name = "core::option::Option<core::num::nonzero::NonZero<u64>>";
        let owner = self.niche_option("core::num::nonzero::NonZero<u64>", non_zero, 8);
        let owner_id = self.tokio_cell(owner_name, owner, 8);
        self.fields(
            header,
            &[
                ("state", 0, state),
                ("queue_next", 8, next),
                ("vtable", 16, vtable_ref),
                ("owner_id", 24, owner_id),
            ],
        );
        let pointers = self.pointers("tokio::runtime::task::core::Header", header);
        self.structure(
            "tokio::runtime::task::core::Trailer",
            32,
            &[("owned", 0, pointers)],
        );
        let stage_name = format!("tokio::runtime::task::core::Stage<{future_name}>");
        let stage = self.rust_enum(
            &stage_name,
            8 + future_size,
            Some((0, u32)),
            &[
                Variant::new("Running", Some(0), &[("__0", 8, future)]),
                Variant::new("Finished", Some(1), &[]),
                Variant::new("Consumed", Some(2), &[]),
            ],
        );
        let cell = self.tokio_cell(&stage_name, stage, 8 + future_size);
        let core_stage = self.structure(
            &format!("tokio::runtime::task::core::CoreStage<{future_name}>"),
            8 + future_size,
            &[("stage", 0, cell)],
        );
        let id = self.structure("tokio::runtime::task::id::Id", 8, &[("__0", 0, usize)]);
        self.structure(
            &format!("tokio::runtime::task::core::Core<{future_name}, {scheduler_name}>"),
            24 + future_size,
            &[
                ("scheduler", 0, scheduler),
                ("task_id", 8, id),
                ("stage", 16, core_stage),
            ],
        );
        let poll = 0x10_0000;
        self.function(
            &format!("tokio::runtime::task::raw::poll<{future_name}, {scheduler_name}>"),
            poll,
            &[("T", future), ("S", scheduler)],
        );
        TaskTypes {
            header,
            vtable: 0x20_0000,
            poll,
        }
    }

    /// A `#[thread_local]` at `tls_offset` in the static TLS block.
    pub fn thread_local(&mut self, path: &str, ty: Ty, tls_offset: u64) {
        self.thread_local_variable(path, Some(ty), tls_offset);
    }

    /// A `#[thread_local]` whose DWARF has no type.
    pub fn untyped_thread_local(&mut self, path: &str, tls_offset: u64) {
        self.thread_local_variable(path, None, tls_offset);
    }

    /// A `#[thread_local]` as rustc emits the real one beside its decoys: with a linkage
    /// name that an ELF symbol (at its TLS offset) has.
    pub fn linked_thread_local(&mut self, path: &str, ty: Ty, tls_offset: u64, linkage_name: &str) {
        let variable = self.thread_local_variable(path, Some(ty), tls_offset);
        self.set_linkage_name(variable, linkage_name);
        self.symbol(linkage_name, tls_offset);
    }

    /// A function known only by its linkage name (in `.debug_str`, where rustc's are).
    pub fn linked_function(&mut self, name: &str, linkage_name: &str) {
        let root = self.dwarf.unit.root();
        let function = self.dwarf.unit.add(root, constants::DW_TAG_subprogram);
        self.set_name(function, name);
        self.set_linkage_name(function, linkage_name);
    }

    fn set_linkage_name(&mut self, id: UnitEntryId, linkage_name: &str) {
        let name = self.dwarf.strings.add(linkage_name);
        self.dwarf.unit.get_mut(id).set(
            constants::DW_AT_linkage_name,
            AttributeValue::StringRef(name),
        );
    }

    fn thread_local_variable(
        &mut self,
        path: &str,
        ty: Option<Ty>,
        tls_offset: u64,
    ) -> UnitEntryId {
        let segments = crate::names::split_path(path);
        let (last, scope) = segments.split_last().expect("a path");
        let parent = self.namespace(scope);
        let variable = self.dwarf.unit.add(parent, constants::DW_TAG_variable);
        self.set_name(variable, last);
        let mut location = gimli::write::Expression::new();
        location.op_constu(tls_offset);
        location.op(constants::DW_OP_GNU_push_tls_address);
        let entry = self.dwarf.unit.get_mut(variable);
        if let Some(ty) = ty {
            entry.set(constants::DW_AT_type, AttributeValue::UnitRef(ty.0));
        }
        entry.set(constants::DW_AT_location, AttributeValue::Exprloc(location));
        variable
    }
}

impl TestMemory {
    /// The static vtable of `types`.
    pub fn write_vtable(&mut self, types: &TaskTypes) {
        self.zero(types.vtable, 80);
        self.write_u64(types.vtable, types.poll);
        self.write_u64(types.vtable + 56, TASK_TRAILER);
        self.write_u64(types.vtable + 64, TASK_CORE);
        self.write_u64(types.vtable + 72, TASK_CORE + 8);
    }

    /// A task at `header` with this id and state word, running a future of `future_size`
    /// bytes (its stage `Running`); `next`: the next task on its owner's list.
    pub fn write_task(&mut self, types: &TaskTypes, header: u64, id: u64, state: u64, next: u64) {
        self.zero(header, TASK_TRAILER as usize + 32);
        self.write_u64(header, state);
        self.write_u64(header + 16, types.vtable);
        self.write_u64(header + TASK_CORE + 8, id);
        self.write_u64(header + TASK_TRAILER + 8, next);
    }
}
