//! Thread pointers without a register: glibc keeps every thread's `struct pthread` on two
//! lists in ld.so's `_rtld_global` (`_dl_stack_used`, `_dl_stack_user`), and exports for
//! libthread_db where the fields involved are, as `_thread_db_*` descriptors (three u32:
//! size, count, offset). On x86-64 a thread's pointer (`fs_base`) is the address of its
//! `struct pthread`. Used by `--nonblocking` (no thread is stopped to read a register) and
//! by the glue for LLDB 14 (no `fs_base` register) and LLDB's minidumps (a wrong one).

use rustc_hash::{FxHashMap, FxHashSet};

use object::{Object, ObjectSymbol};

use super::modules::Modules;
use crate::error::{Error, ErrorKind, Result};
use crate::memory::{Memory, MemoryExt};

/// Threads walked at most on each list.
const MAX_THREADS: usize = 1 << 16;

const DESCRIPTORS: [&str; 5] = [
    PTHREAD_TID,
    PTHREAD_LIST,
    LIST_NEXT,
    STACK_LISTS[0],
    STACK_LISTS[1],
];
const PTHREAD_TID: &str = "_thread_db_pthread_tid";
const PTHREAD_LIST: &str = "_thread_db_pthread_list";
const LIST_NEXT: &str = "_thread_db_list_t_next";
const STACK_LISTS: [&str; 2] = [
    "_thread_db_rtld_global__dl_stack_used",
    "_thread_db_rtld_global__dl_stack_user",
];
const RTLD_GLOBAL: &str = "_rtld_global";
/// A static glibc's own list, a plain variable: it has no descriptors.
const STATIC_STACK_USED: &str = "_dl_stack_used";

fn failed(why: impl Into<String>) -> Error {
    Error::new(ErrorKind::Binary, why.into())
}

/// Where glibc's symbols are, and its constant data (a core may hold none of libc's
/// read-only pages: they come from the file).
pub struct Glibc<'a> {
    pub symbol_address: &'a dyn Fn(&str) -> Option<u64>,
    pub read_static: &'a dyn Fn(u64, usize) -> Option<Vec<u8>>,
}

/// `{tid: thread pointer}` for every thread glibc lists; `memory` is the program's.
pub fn thread_pointers_of(glibc: &Glibc<'_>, memory: &dyn Memory) -> Result<FxHashMap<u64, u64>> {
    let mut offsets = FxHashMap::default();
    for name in DESCRIPTORS {
        let data = (glibc.symbol_address)(name)
            .and_then(|address| (glibc.read_static)(address, 12))
            .filter(|data| data.len() >= 12);
        let Some(data) = data else {
            if (glibc.symbol_address)(RTLD_GLOBAL).is_none()
                && (glibc.symbol_address)(STATIC_STACK_USED).is_some()
            {
                return Err(failed(
                    "glibc is linked statically, and keeps no _thread_db_* descriptors to read its thread list by",
                ));
            }
            return Err(failed(format!(
                "glibc's {name} is not readable (not glibc, or no libc symbols)"
            )));
        };
        let offset = u32::from_le_bytes(data[8..12].try_into().expect("4 bytes"));
        offsets.insert(name, u64::from(offset));
    }
    let rtld_global = (glibc.symbol_address)(RTLD_GLOBAL)
        .ok_or_else(|| failed("ld.so's _rtld_global is not found"))?;
    let pointer_at = |address: u64| {
        memory
            .read_u64(address)
            .map_err(|_| failed(format!("cannot read glibc's thread list at {address:#x}")))
    };
    let mut threads = FxHashMap::default();
    for list in STACK_LISTS {
        let head = rtld_global.wrapping_add(offsets[list]);
        let mut node = pointer_at(head.wrapping_add(offsets[LIST_NEXT]))?;
        let mut seen = FxHashSet::default();
        while node != head && seen.len() < MAX_THREADS && seen.insert(node) {
            let descriptor = node.wrapping_sub(offsets[PTHREAD_LIST]);
            let tid = memory
                .read_uint(descriptor.wrapping_add(offsets[PTHREAD_TID]), 4)
                .map_err(|_| failed("cannot read a thread id in glibc's thread list"))?;
            threads.insert(tid, descriptor);
            node = pointer_at(node.wrapping_add(offsets[LIST_NEXT]))?;
        }
    }
    Ok(threads)
}

/// The runtime address of a defined symbol of any loaded file.
fn symbol_address(modules: &Modules, name: &str) -> Option<u64> {
    modules.iter().find_map(|module| {
        let file = module.cfi.as_ref()?;
        let object = object::File::parse(file.data()).ok()?;
        let symbol = object
            .dynamic_symbols()
            .chain(object.symbols())
            .find(|symbol| symbol.is_definition() && symbol.name() == Ok(name))?;
        symbol.address().checked_add(module.bias)
    })
}

/// `thread_pointers_of` with the symbols of the files mapped into a live process.
pub fn thread_pointers(modules: &Modules, memory: &dyn Memory) -> Result<FxHashMap<u64, u64>> {
    let symbol = |name: &str| symbol_address(modules, name);
    let read_static = |address: u64, size: usize| memory.read_bytes(address, size).ok();
    let glibc = Glibc {
        symbol_address: &symbol,
        read_static: &read_static,
    };
    thread_pointers_of(&glibc, memory)
}

/// Whether `value` can be an x86-64 thread pointer: the TLS ABI keeps the pointer's own
/// value at its address (`%fs:0`). LLDB's minidumps give `fs_base` as 0xffff.
pub fn is_thread_pointer(value: u64, memory: &dyn Memory) -> bool {
    value != 0 && memory.read_u64(value).is_ok_and(|at| at == value)
}
