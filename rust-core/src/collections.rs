//! What std's containers hold, for the searches through what a value owns: which values a
//! container type can hold (from its DWARF: template parameters and layouts, no size
//! assumed) and the values one holds now, at most a given number. `Box`, `Arc`/`Rc` (a
//! value others may reach too), `Vec`, `VecDeque`, boxed and shared slices, arrays,
//! `HashMap`/`HashSet` (hashbrown's table) and `BTreeMap`/`BTreeSet`. The layouts are the
//! table's (`layouts::rust`); the values are read through `std_values`.

use std::sync::Arc;

use crate::dwarf::{DebugInfo, DieRef, TypeInfo, TypeTag};
use crate::error::{Error, Result};
use crate::layouts::rust::{self, btree, hash_table, vec_deque};
use crate::layouts::Path;
use crate::memory::MemoryExt;
use crate::std_values;
use crate::value::{offset, Value};

/// How many control bytes of a hash table are read at once.
const CONTROL_CHUNK: u64 = 512;
/// How many buckets of one hash table are looked at, at most: a map that once held
/// millions keeps its buckets after they empty.
const MAX_BUCKETS_SCANNED: u64 = 1 << 20;
/// How tall a B-tree is, at most: each level multiplies its entries by 6 at least.
const MAX_BTREE_HEIGHT: u64 = 24;
/// How many one-field structs are looked through to find a fat pointer, or a key's value.
const MAX_NEWTYPES: usize = 4;
/// How many bytes of a map's key name it in a path.
const MAX_KEY_BYTES: u64 = 48;

/// How the values a container holds are told apart in a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Naming {
    /// It holds one value (a `Box`, an `Arc`): the path goes on as if it were the value.
    Itself,
    /// By position: a sequence's index, a set's order.
    Position,
    /// By the key a map keeps it under.
    Key,
}

#[derive(Debug, Clone, Copy)]
enum Shape {
    Boxed,
    /// `Arc<T>`, `Rc<T>`: their inner allocation's field that holds the value.
    Shared {
        data: &'static str,
    },
    BoxedSlice,
    SharedSlice {
        data: &'static str,
    },
    Vec,
    VecDeque,
    Array,
    HashTable {
        table: Path,
        keyed: bool,
    },
    BTree {
        set: bool,
    },
}

/// A container type: its shape and the types of what it holds.
#[derive(Debug, Clone)]
pub struct Container {
    shape: Shape,
    /// The types of the values it holds: a map's values (its keys only name them).
    pub holds: Vec<DieRef>,
}

/// One value a container holds.
pub struct Held<'a> {
    /// The key a map keeps it under; none in other containers.
    pub key: Option<Value<'a>>,
    pub value: Value<'a>,
}

/// The values a container holds now.
pub struct Contents<'a> {
    pub held: Vec<Held<'a>>,
    /// How many values it holds: more than `held` where the limit cut them.
    pub len: u64,
    /// The allocation an `Arc` or `Rc` shares, which other pointers may reach too.
    pub shared: Option<Sharing>,
}

/// An `Arc`'s or `Rc`'s allocation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sharing {
    pub at: u64,
    /// How many `Arc`s (`Rc`s) own it now: more than one where others share it.
    pub owners: u64,
}

impl Container {
    /// The container a type is, if it is one of std's.
    pub fn of(debug: &DebugInfo, info: &TypeInfo) -> Option<Container> {
        let name = info.name.as_str();
        let param = |name| info.template_param(name).into_iter().collect();
        let (shape, holds) = if info.tag == TypeTag::Array {
            (Shape::Array, info.target.into_iter().collect())
        } else if name.starts_with(rust::BOX_PREFIX) {
            if info.tag == TypeTag::Pointer {
                (Shape::Boxed, info.target.into_iter().collect())
            } else if name.starts_with(rust::BOX_SLICE_PREFIX) {
                let data = debug.type_info(info.field(rust::SLICE_DATA)?.ty?).ok()?;
                (Shape::BoxedSlice, data.target.into_iter().collect())
            } else {
                // A `Box<dyn Trait>`: what it holds is known only through its vtable.
                return None;
            }
        } else if name.starts_with(rust::ARC_SLICE_PREFIX) {
            let data = rust::ARC_DATA;
            (Shape::SharedSlice { data }, param(rust::ELEMENT_PARAM))
        } else if name.starts_with(rust::RC_SLICE_PREFIX) {
            let data = rust::RC_VALUE;
            (Shape::SharedSlice { data }, param(rust::ELEMENT_PARAM))
        } else if name.starts_with(rust::ARC_PREFIX) {
            let data = rust::ARC_DATA;
            (Shape::Shared { data }, param(rust::ELEMENT_PARAM))
        } else if name.starts_with(rust::RC_PREFIX) {
            let data = rust::RC_VALUE;
            (Shape::Shared { data }, param(rust::ELEMENT_PARAM))
        } else if name.starts_with(rust::VEC_PREFIX) {
            (Shape::Vec, param(rust::ELEMENT_PARAM))
        } else if name.starts_with(vec_deque::PREFIX) {
            (Shape::VecDeque, param(rust::ELEMENT_PARAM))
        } else if let Some(&(_, keyed, table)) = hash_table::TABLES
            .iter()
            .find(|(prefix, ..)| name.starts_with(prefix))
        {
            let holds = param(if keyed {
                rust::VALUE_PARAM
            } else {
                rust::ELEMENT_PARAM
            });
            (Shape::HashTable { table, keyed }, holds)
        } else if name.starts_with(btree::MAP_PREFIX) {
            (Shape::BTree { set: false }, param(rust::VALUE_PARAM))
        } else if name.starts_with(btree::SET_PREFIX) {
            (Shape::BTree { set: true }, param(rust::ELEMENT_PARAM))
        } else {
            return None;
        };
        Some(Container { shape, holds })
    }

    pub fn naming(&self) -> Naming {
        match self.shape {
            Shape::Boxed | Shape::Shared { .. } => Naming::Itself,
            Shape::HashTable { keyed: true, .. } | Shape::BTree { set: false } => Naming::Key,
            _ => Naming::Position,
        }
    }

    /// Whether what it holds is shared with others: an `Arc`'s or `Rc`'s.
    pub fn is_shared(&self) -> bool {
        matches!(self.shape, Shape::Shared { .. } | Shape::SharedSlice { .. })
    }

    /// The values `value` (of this container's type) holds, at most `limit` of them.
    pub fn contents<'a>(&self, value: &Value<'a>, limit: u64) -> Result<Contents<'a>> {
        let contents = match self.shape {
            Shape::Boxed => match value.read_pointer()? {
                0 => Contents::of(Vec::new()),
                _ => Contents::of(vec![value.pointee()?]),
            },
            Shape::Shared { data } => {
                let inner = value.pointee()?;
                Contents {
                    shared: Some(Sharing::of(&inner)?),
                    ..Contents::of(vec![inner.field(data)?])
                }
            }
            Shape::BoxedSlice => {
                let data = value.field(rust::SLICE_DATA)?;
                let element = data.ty.target.ok_or_else(|| no_element_type(value))?;
                let element = value.target.debug.type_info(element)?;
                let len = value.field(rust::SLICE_LENGTH)?.read_uint()?;
                sequence(value, data.read_pointer()?, element, len, limit)?
            }
            Shape::SharedSlice { data } => shared_slice(value, data, limit)?,
            Shape::Vec => {
                let len = std_values::vec_len(value)?;
                let capacity = std_values::at(value, rust::VEC_CAPACITY)?.read_uint()?;
                if len > capacity {
                    return Err(Error::layout(format!(
                        "{} at {:#x} claims {len} elements in room for {capacity} (corrupt?)",
                        value.ty.name, value.address
                    )));
                }
                let held = std_values::vec_first_elements(value, limit)?;
                Contents {
                    len,
                    ..Contents::of(held)
                }
            }
            Shape::VecDeque => {
                let (held, len) = std_values::vec_deque_first_items(value, limit)?;
                Contents {
                    len,
                    ..Contents::of(held)
                }
            }
            Shape::Array => {
                let element = value.ty.target.ok_or_else(|| no_element_type(value))?;
                let element = value.target.debug.type_info(element)?;
                let len = value
                    .ty
                    .array_len
                    .ok_or_else(|| Error::layout(format!("{} has no length", value.ty.name)))?;
                sequence(value, value.address, element, len, limit)?
            }
            Shape::HashTable { table, keyed } => {
                hash_table(&std_values::at_path(value, table)?, keyed, limit)?
            }
            Shape::BTree { set } => btree_entries(value, set, limit)?,
        };
        Ok(contents)
    }
}

impl<'a> Contents<'a> {
    /// Just these values, none of them under a key.
    fn of(values: Vec<Value<'a>>) -> Contents<'a> {
        Contents {
            len: values.len() as u64,
            held: values
                .into_iter()
                .map(|value| Held { key: None, value })
                .collect(),
            shared: None,
        }
    }
}

impl Sharing {
    /// The sharing of an `ArcInner` (`RcInner`).
    fn of(inner: &Value<'_>) -> Result<Sharing> {
        Ok(Sharing {
            at: inner.address,
            owners: inner.field(rust::ARC_STRONG)?.read_uint()?,
        })
    }
}

fn no_element_type(value: &Value<'_>) -> Error {
    Error::layout(format!("{} names no element type", value.ty.name))
}

/// `len` elements of type `element` from `base`, the first `limit` of them.
fn sequence<'a>(
    container: &Value<'a>,
    base: u64,
    element: Arc<TypeInfo>,
    len: u64,
    limit: u64,
) -> Result<Contents<'a>> {
    let stride = element
        .size
        .ok_or_else(|| Error::layout(format!("{} has no size", element.name)))?;
    let held = (0..len.min(limit))
        .map(|index| {
            let address = index
                .checked_mul(stride)
                .and_then(|at| base.checked_add(at))
                .ok_or_else(|| {
                    Error::layout(format!(
                        "{} at {:#x}: element {index} lies past the address space",
                        container.ty.name, container.address
                    ))
                })?;
            Ok(container.target.value_of_type(element.clone(), address))
        })
        .collect::<Result<_>>()?;
    Ok(Contents {
        len,
        ..Contents::of(held)
    })
}

/// An `Arc<[T]>`'s or `Rc<[T]>`'s elements: its fat pointer leads to the inner allocation,
/// whose `data` field is typed as the first element.
fn shared_slice<'a>(value: &Value<'a>, data: &str, limit: u64) -> Result<Contents<'a>> {
    let mut fat = value.clone();
    for _ in 0..MAX_NEWTYPES {
        if fat.has_field(rust::SLICE_DATA) {
            break;
        }
        let Some(first) = fat.ty.fields.first().map(|field| field.name.clone()) else {
            break;
        };
        fat = fat.field(&first)?;
    }
    let pointer = fat.field(rust::SLICE_DATA)?;
    let inner_type = pointer.ty.target.ok_or_else(|| no_element_type(value))?;
    let allocation = value.target.value(inner_type, pointer.read_pointer()?)?;
    let first = allocation.field(data)?;
    let len = fat.field(rust::SLICE_LENGTH)?.read_uint()?;
    Ok(Contents {
        shared: Some(Sharing::of(&allocation)?),
        ..sequence(value, first.address, first.ty.clone(), len, limit)?
    })
}

/// The full buckets of a hashbrown `RawTable`, in bucket order, at most `limit`: a map's
/// values under their keys, a set's elements.
fn hash_table<'a>(table: &Value<'a>, keyed: bool, limit: u64) -> Result<Contents<'a>> {
    let target = table.target;
    let items = std_values::at_path(table, hash_table::ITEMS)?.read_uint()?;
    if items == 0 {
        return Ok(Contents::of(Vec::new()));
    }
    let mask = std_values::at_path(table, hash_table::BUCKET_MASK)?.read_uint()?;
    let buckets = mask
        .checked_add(1)
        .filter(|buckets| buckets.is_power_of_two() && items <= *buckets)
        .ok_or_else(|| {
            Error::layout(format!(
                "{} at {:#x} claims {items} entries in {mask:#x}+1 buckets (corrupt?)",
                table.ty.name, table.address
            ))
        })?;
    let control = std_values::at_path(table, hash_table::CTRL)?.read_pointer()?;
    let bucket_type = table
        .ty
        .template_param(rust::ELEMENT_PARAM)
        .ok_or_else(|| no_element_type(table))?;
    let bucket_type = target.debug.type_info(bucket_type)?;
    let size = bucket_type
        .size
        .ok_or_else(|| Error::layout(format!("{} has no size", bucket_type.name)))?;
    let wanted = items.min(limit);
    let mut held = Vec::new();
    let mut start = 0;
    while start < buckets.min(MAX_BUCKETS_SCANNED) && (held.len() as u64) < wanted {
        let chunk = CONTROL_CHUNK.min(buckets - start);
        let bytes = target
            .memory
            .read_bytes(offset(control, start)?, chunk as usize)?;
        for (index, byte) in (start..).zip(bytes) {
            if byte & hash_table::EMPTY_OR_DELETED_BIT != 0 {
                continue;
            }
            // Bucket `index` ends where the control bytes' `index` bytes before do.
            let address = index
                .checked_add(1)
                .and_then(|count| count.checked_mul(size))
                .and_then(|back| control.checked_sub(back))
                .ok_or_else(|| {
                    Error::layout(format!(
                        "{} at {:#x}: bucket {index} lies before the address space",
                        table.ty.name, table.address
                    ))
                })?;
            let bucket = target.value_of_type(bucket_type.clone(), address);
            held.push(match keyed {
                true => Held {
                    key: Some(bucket.field(rust::TUPLE_FIRST)?),
                    value: bucket.field(rust::TUPLE_SECOND)?,
                },
                false => Held {
                    key: None,
                    value: bucket.field(rust::TUPLE_FIRST)?,
                },
            });
            if held.len() as u64 == wanted {
                break;
            }
        }
        start += chunk;
    }
    Ok(Contents {
        held,
        len: items,
        shared: None,
    })
}

/// A `BTreeMap`'s values under their keys (a `BTreeSet`'s elements) in key order, at most
/// `limit`.
fn btree_entries<'a>(value: &Value<'a>, set: bool, limit: u64) -> Result<Contents<'a>> {
    let map = if set {
        value.field(btree::SET_MAP)?
    } else {
        value.clone()
    };
    let len = map.field(btree::LENGTH)?.read_uint()?;
    let Some(root) = std_values::follow(&map, btree::ROOT)? else {
        return Ok(Contents::of(Vec::new()));
    };
    let height = root.field(btree::HEIGHT)?.read_uint()?;
    if height > MAX_BTREE_HEIGHT {
        return Err(Error::layout(format!(
            "{} at {:#x} is {height} levels tall (corrupt?)",
            value.ty.name, value.address
        )));
    }
    let node = root.field(btree::NODE)?;
    let leaf_type = value.target.debug.type_info(node.pointer_target()?)?;
    // The parent pointer's type is the internal node's: no memory is read for it.
    let internal_type = value
        .target
        .value_of_type(leaf_type.clone(), 0)
        .field(btree::PARENT)?
        .pointer_target()?;
    let mut walk = BTreeWalk {
        leaf_type,
        internal_type,
        set,
        limit,
        // Every node but the root holds five entries or more.
        nodes_left: len.min(limit).saturating_add(MAX_BTREE_HEIGHT + 1),
        held: Vec::new(),
    };
    walk.node(value, node.read_pointer()?, height)?;
    Ok(Contents {
        held: walk.held,
        len,
        shared: None,
    })
}

struct BTreeWalk<'a> {
    leaf_type: Arc<TypeInfo>,
    internal_type: DieRef,
    set: bool,
    limit: u64,
    nodes_left: u64,
    held: Vec<Held<'a>>,
}

impl<'a> BTreeWalk<'a> {
    /// The entries of the node at `address`, `height` levels above the leaves, and of the
    /// nodes below it, in key order: edge 0, key 0, edge 1, ..., key len-1, edge len.
    fn node(&mut self, map: &Value<'a>, address: u64, height: u64) -> Result<()> {
        let target = map.target;
        self.nodes_left = self.nodes_left.checked_sub(1).ok_or_else(|| {
            Error::layout(format!(
                "{} at {:#x} has more nodes than entries (corrupt?)",
                map.ty.name, map.address
            ))
        })?;
        let node = target.value_of_type(self.leaf_type.clone(), address);
        let len = node.field(btree::LEN)?.read_uint()?;
        let keys = node.field(btree::KEYS)?;
        let values = node.field(btree::VALS)?;
        let room = keys.ty.array_len.unwrap_or(0);
        if len > room {
            return Err(Error::layout(format!(
                "{} at {:#x}: a node at {address:#x} claims {len} entries in room for {room} (corrupt?)",
                map.ty.name, map.address
            )));
        }
        let edges = match height {
            0 => None,
            _ => Some(
                target
                    .value(self.internal_type, address)?
                    .field(btree::EDGES)?,
            ),
        };
        for index in 0..=len {
            if self.held.len() as u64 >= self.limit {
                return Ok(());
            }
            if let Some(edges) = &edges {
                let child = std_values::unwrapped(&element(edges, index)?)?.read_pointer()?;
                self.node(map, child, height - 1)?;
            }
            if index < len && (self.held.len() as u64) < self.limit {
                let key = std_values::unwrapped(&element(&keys, index)?)?;
                self.held.push(match self.set {
                    true => Held {
                        key: None,
                        value: key,
                    },
                    false => Held {
                        key: Some(key),
                        value: std_values::unwrapped(&element(&values, index)?)?,
                    },
                });
            }
        }
        Ok(())
    }
}

/// Element `index` of an array value, which must have that many.
fn element<'a>(array: &Value<'a>, index: u64) -> Result<Value<'a>> {
    let len = array.ty.array_len.unwrap_or(0);
    if index >= len {
        return Err(Error::layout(format!(
            "element {index} of an array of {len} at {:#x} (corrupt?)",
            array.address
        )));
    }
    let element = array.ty.target.ok_or_else(|| no_element_type(array))?;
    let element = array.target.debug.type_info(element)?;
    let stride = element
        .size
        .ok_or_else(|| Error::layout(format!("{} has no size", element.name)))?;
    let address = index
        .checked_mul(stride)
        .ok_or_else(|| Error::layout("array element past the address space"))
        .and_then(|at| offset(array.address, at))?;
    Ok(array.target.value_of_type(element, address))
}

/// A map's key as a path names it (`queues["orders"]`), when it is a number, a string, a `char`, a `bool` or a
/// fieldless enum (or a newtype of one): `7`, `"orders"`, `Quit`.
pub fn key_name(key: &Value<'_>) -> Option<String> {
    let mut key = key.clone();
    for _ in 0..MAX_NEWTYPES {
        match key.ty.fields.as_slice() {
            [only] if key.ty.tag == TypeTag::Struct && key.ty.variant_part.is_none() => {
                if key.ty.name == rust::STRING_TYPE {
                    break;
                }
                let name = only.name.clone();
                key = key.field(&name).ok()?;
            }
            _ => break,
        }
    }
    if key.ty.name == rust::STRING_TYPE || key.ty.name == rust::STR_TYPE {
        let (text, cut) = std_values::text(&key, MAX_KEY_BYTES).ok()?;
        return Some(format!("{text:?}{}", if cut { "…" } else { "" }));
    }
    match key.ty.tag {
        TypeTag::Enumeration => key.variant().ok().map(|(name, _)| name),
        TypeTag::Base => {
            let raw = key.read_uint().ok()?;
            let size = key.ty.size?;
            let name = key.ty.name.as_str();
            match name {
                "bool" => Some((raw != 0).to_string()),
                "char" => char::from_u32(raw as u32).map(|c| format!("{c:?}")),
                _ if name.starts_with('i') && (1..=8).contains(&size) => {
                    let shift = 64 - 8 * size;
                    Some((((raw << shift) as i64) >> shift).to_string())
                }
                _ if name.starts_with('u') => Some(raw.to_string()),
                _ => None,
            }
        }
        _ => None,
    }
}
