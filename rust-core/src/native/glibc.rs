//! Thread pointers without stopping a thread (`--nonblocking`): glibc keeps every thread's
//! `struct pthread` on two lists in ld.so's `_rtld_global` (`_dl_stack_used`,
//! `_dl_stack_user`), and exports for libthread_db where the fields involved are, as
//! `_thread_db_*` descriptors (three u32: size, count, offset) in libc's dynamic symbols.
//! On x86-64 a thread's pointer (`fs_base`) is the address of its `struct pthread`. (The
//! debugger glue reads the same lists for LLDB 14, `thread_pointers.py`.)

use rustc_hash::FxHashMap;

use object::{Object, ObjectSymbol};

use super::modules::Modules;
use crate::error::{Error, ErrorKind, Result};
use crate::memory::{Memory, MemoryExt};

/// Threads walked at most on each list.
const MAX_THREADS: usize = 1 << 16;

const PTHREAD_TID: &str = "_thread_db_pthread_tid";
const PTHREAD_LIST: &str = "_thread_db_pthread_list";
const LIST_NEXT: &str = "_thread_db_list_t_next";
const STACK_LISTS: [&str; 2] = [
    "_thread_db_rtld_global__dl_stack_used",
    "_thread_db_rtld_global__dl_stack_user",
];
const RTLD_GLOBAL: &str = "_rtld_global";

fn failed(why: impl Into<String>) -> Error {
    Error::new(ErrorKind::Binary, why.into())
}

/// The runtime address of a dynamic symbol of any loaded file.
fn symbol_address(modules: &Modules, name: &str) -> Option<u64> {
    modules.iter().find_map(|module| {
        let cfi = module.cfi.as_ref()?;
        let object = object::File::parse(cfi.data()).ok()?;
        let symbol = object
            .dynamic_symbols()
            .chain(object.symbols())
            .find(|symbol| symbol.is_definition() && symbol.name() == Ok(name))?;
        symbol.address().checked_add(module.bias)
    })
}

/// `{tid: thread pointer}` for every thread glibc lists.
pub fn thread_pointers(modules: &Modules, memory: &dyn Memory) -> Result<FxHashMap<u64, u64>> {
    let offset = |name: &str| -> Result<u64> {
        let address = symbol_address(modules, name).ok_or_else(|| {
            failed(format!(
                "glibc's {name} is not found (not glibc, or glibc linked statically, which keeps no thread list \
                 descriptors)"
            ))
        })?;
        let mut descriptor = [0u8; 12];
        memory.read(address, &mut descriptor)?;
        Ok(u64::from(u32::from_le_bytes(
            descriptor[8..12].try_into().expect("4 bytes"),
        )))
    };
    let (tid_at, list_at, next_at) = (
        offset(PTHREAD_TID)?,
        offset(PTHREAD_LIST)?,
        offset(LIST_NEXT)?,
    );
    let rtld_global = symbol_address(modules, RTLD_GLOBAL)
        .ok_or_else(|| failed("ld.so's _rtld_global is not found"))?;
    let mut threads = FxHashMap::default();
    for list in STACK_LISTS {
        let head = rtld_global
            .checked_add(offset(list)?)
            .ok_or_else(|| failed("glibc's thread list is out of range"))?;
        let mut node = memory.read_u64(head.wrapping_add(next_at))?;
        let mut seen = 0;
        while node != head && seen < MAX_THREADS {
            seen += 1;
            let descriptor = node.wrapping_sub(list_at);
            let tid = memory.read_uint(descriptor.wrapping_add(tid_at), 4)?;
            threads.insert(tid, descriptor);
            node = memory.read_u64(node.wrapping_add(next_at))?;
        }
    }
    Ok(threads)
}
