//! Reading the inferior's memory: one trait, a live `/proc/PID/mem` backend, and a page
//! cache so that a walk over thousands of small fields costs few backend calls.

use std::cell::{Cell, RefCell};
use std::fs::File;
use std::os::unix::fs::FileExt;

use crate::error::{Error, Result};

/// A source of the stopped inferior's memory. Implementations never write.
pub trait Memory {
    /// Fills `buf` from `address`, or fails without partial results.
    fn read(&self, address: u64, buf: &mut [u8]) -> Result<()>;

    /// Drops whatever is cached: the caller is done with a phase whose reads will not
    /// repeat (walking the task lists before decoding the tasks).
    fn release_cache(&self) {}

    /// A reader of the same bytes for another thread, where one can be had: memory that
    /// does not change while it is read (a copy, a core file, a process a debugger keeps
    /// stopped). The task walk then decodes on two threads; other memory (read through a
    /// debugger's own calls) is read by one.
    fn second_reader(&self) -> Option<Box<dyn Memory + Send + '_>> {
        None
    }
}

/// Another thread's reader of memory that several threads may read at once (a core
/// file's map). Either thread releases what both read: a long walk on this one (a list
/// of 166,000 lock waiters across the heap) would otherwise map the whole core.
pub struct SharedReader<'m, M: Memory + Sync + ?Sized>(pub &'m M);

impl<M: Memory + Sync + ?Sized> Memory for SharedReader<'_, M> {
    fn read(&self, address: u64, buf: &mut [u8]) -> Result<()> {
        self.0.read(address, buf)
    }

    fn release_cache(&self) {
        self.0.release_cache();
    }
}

/// Memory of a live local process, read with `pread` on `/proc/PID/mem`.
pub struct ProcessMemory {
    file: File,
}

impl ProcessMemory {
    pub fn open(pid: u32) -> Result<Self> {
        let path = format!("/proc/{pid}/mem");
        let file = File::open(&path).map_err(|error| {
            Error::new(
                crate::error::ErrorKind::Memory,
                format!("cannot open {path}: {error}"),
            )
        })?;
        Ok(ProcessMemory { file })
    }

    /// Another handle on the same process's memory (for another thread's reader).
    pub fn try_clone(&self) -> Result<Self> {
        let file = self.file.try_clone().map_err(|error| {
            Error::new(
                crate::error::ErrorKind::Memory,
                format!("cannot reopen the process's memory: {error}"),
            )
        })?;
        Ok(ProcessMemory { file })
    }
}

impl Memory for ProcessMemory {
    fn read(&self, address: u64, buf: &mut [u8]) -> Result<()> {
        match self.file.read_exact_at(buf, address) {
            Ok(()) => Ok(()),
            Err(_) => Err(Error::memory(address, buf.len())),
        }
    }
}

/// A stopped process's memory, cached by the page (what a debugger's command reads: the
/// debugger keeps every thread stopped while it runs). Unchanging while read, it gives a
/// second thread a reader of its own: another handle, with its own cache.
pub struct StoppedProcess(pub PageCache<ProcessMemory>);

impl Memory for StoppedProcess {
    fn read(&self, address: u64, buf: &mut [u8]) -> Result<()> {
        self.0.read(address, buf)
    }

    fn release_cache(&self) {
        self.0.release_cache();
    }

    fn second_reader(&self) -> Option<Box<dyn Memory + Send + '_>> {
        let handle = self.0.inner().try_clone().ok()?;
        Some(Box::new(PageCache::new(handle)))
    }
}

const PAGE_SIZE: u64 = 4096;
const PAGE: usize = PAGE_SIZE as usize;
/// Pages a cache keeps (4 MiB), by page number: walks read the heap mostly in address
/// order, so few pages are read twice; a cache of every page read held a million tasks'
/// whole heap (730 MB) while their lists were walked.
const CACHED_PAGES: usize = 1024;
/// A slot's tag when it holds no page: no page starts there (pages start at multiples of
/// `PAGE_SIZE`).
const NO_PAGE: u64 = u64::MAX;

/// Caches whole pages of another `Memory`. Valid only while the inferior stays stopped,
/// so one cache lives for one command.
pub struct PageCache<M: Memory> {
    inner: M,
    slots: RefCell<PageSlots>,
    backend_reads: Cell<u64>,
}

/// The cached pages, direct-mapped: page number `n` goes in slot `n % CACHED_PAGES`.
struct PageSlots {
    /// The page each slot holds (its address), or `NO_PAGE`.
    tags: Vec<u64>,
    /// Whether each slot's page read whole; one that did not (partly mapped, or not at
    /// all) is read piece by piece, as asked.
    whole: Vec<bool>,
    /// `CACHED_PAGES` pages, made on the first read: most caches read a few pages.
    bytes: Vec<u8>,
}

impl<M: Memory> PageCache<M> {
    pub fn new(inner: M) -> Self {
        PageCache {
            inner,
            slots: RefCell::new(PageSlots {
                tags: vec![NO_PAGE; CACHED_PAGES],
                whole: vec![false; CACHED_PAGES],
                bytes: Vec::new(),
            }),
            backend_reads: Cell::new(0),
        }
    }

    /// The memory the cache reads from.
    pub fn inner(&self) -> &M {
        &self.inner
    }

    /// How many calls reached the backend (for benchmarks).
    pub fn backend_reads(&self) -> u64 {
        self.backend_reads.get()
    }

    fn count_backend_read(&self) {
        self.backend_reads.set(self.backend_reads.get() + 1);
    }

    /// Runs `f` over the page at `page` (its address), read whole, or `None` where it does
    /// not read whole.
    fn with_page<T>(&self, page: u64, f: impl FnOnce(Option<&[u8]>) -> T) -> T {
        let mut slots = self.slots.borrow_mut();
        let slots = &mut *slots;
        let slot = (page / PAGE_SIZE) as usize % CACHED_PAGES;
        if slots.bytes.is_empty() {
            slots.bytes = vec![0; CACHED_PAGES * PAGE];
        }
        let bytes = &mut slots.bytes[slot * PAGE..(slot + 1) * PAGE];
        if slots.tags[slot] != page {
            self.count_backend_read();
            slots.whole[slot] = self.inner.read(page, bytes).is_ok();
            slots.tags[slot] = page;
        }
        f(slots.whole[slot].then_some(&*bytes))
    }
}

impl<M: Memory> Memory for PageCache<M> {
    fn release_cache(&self) {
        self.slots.borrow_mut().tags.fill(NO_PAGE);
    }

    fn read(&self, address: u64, buf: &mut [u8]) -> Result<()> {
        let end = address
            .checked_add(buf.len() as u64)
            .ok_or_else(|| Error::memory(address, buf.len()))?;
        let mut cursor = address;
        while cursor < end {
            let page = cursor & !(PAGE_SIZE - 1);
            let in_page = (cursor - page) as usize;
            // Not `page + PAGE_SIZE`: the last page of the address space would overflow.
            let take = (end - cursor).min(PAGE_SIZE - in_page as u64) as usize;
            let out = &mut buf[(cursor - address) as usize..][..take];
            let cached = self.with_page(page, |data| match data {
                Some(data) => {
                    out.copy_from_slice(&data[in_page..in_page + take]);
                    true
                }
                None => false,
            });
            if !cached {
                // The page is only partly mapped (or not at all): ask for exactly this piece.
                self.count_backend_read();
                self.inner.read(cursor, out)?;
            }
            cursor += take as u64;
        }
        Ok(())
    }
}

/// Little helpers over any `Memory`.
pub trait MemoryExt: Memory {
    fn read_bytes(&self, address: u64, len: usize) -> Result<Vec<u8>> {
        let mut buf = vec![0u8; len];
        self.read(address, &mut buf)?;
        Ok(buf)
    }

    /// Reads an unsigned little-endian integer of 1, 2, 4 or 8 bytes.
    fn read_uint(&self, address: u64, size: u64) -> Result<u64> {
        let mut buf = [0u8; 8];
        let size = size.min(8) as usize;
        self.read(address, &mut buf[..size])?;
        Ok(u64::from_le_bytes(buf))
    }

    fn read_u64(&self, address: u64) -> Result<u64> {
        self.read_uint(address, 8)
    }
}

impl<M: Memory + ?Sized> MemoryExt for M {}

#[cfg(test)]
pub mod testing {
    use super::*;
    use std::collections::BTreeMap;

    /// Memory made of a few byte ranges, for unit tests.
    #[derive(Default)]
    pub struct SparseMemory {
        pub ranges: BTreeMap<u64, Vec<u8>>,
    }

    impl SparseMemory {
        pub fn put(&mut self, address: u64, bytes: &[u8]) {
            self.ranges.insert(address, bytes.to_vec());
        }
    }

    impl Memory for SparseMemory {
        fn read(&self, address: u64, buf: &mut [u8]) -> Result<()> {
            let (start, bytes) = self
                .ranges
                .range(..=address)
                .next_back()
                .ok_or_else(|| Error::memory(address, buf.len()))?;
            let offset = (address - start) as usize;
            if offset + buf.len() > bytes.len() {
                return Err(Error::memory(address, buf.len()));
            }
            buf.copy_from_slice(&bytes[offset..offset + buf.len()]);
            Ok(())
        }
    }

    #[test]
    fn a_released_page_cache_reads_again() {
        let mut sparse = SparseMemory::default();
        sparse.put(0x1000, &[7u8; 4096]);
        let cache = PageCache::new(sparse);
        let mut byte = [0u8; 1];
        cache.read(0x1000, &mut byte).unwrap();
        cache.read(0x1001, &mut byte).unwrap();
        assert_eq!(cache.backend_reads(), 1);
        cache.release_cache();
        assert!(cache.slots.borrow().tags.iter().all(|&tag| tag == NO_PAGE));
        cache.read(0x1002, &mut byte).unwrap();
        assert_eq!((byte[0], cache.backend_reads()), (7, 2));
    }

    /// Two pages that share a slot take turns in it: each read gets its own page's bytes,
    /// and a page that does not read whole is not served from the slot another left.
    #[test]
    fn pages_sharing_a_slot_each_read_their_own_bytes() {
        let apart = (CACHED_PAGES * PAGE) as u64;
        let mut sparse = SparseMemory::default();
        sparse.put(0x1000, &[1u8; PAGE]);
        sparse.put(0x1000 + apart, &[2u8; PAGE]);
        // Partly mapped: only its first half.
        sparse.put(0x1000 + 2 * apart, &[3u8; PAGE / 2]);
        let cache = PageCache::new(sparse);
        let read = |address: u64| {
            let mut byte = [0u8; 1];
            cache.read(address, &mut byte).map(|()| byte[0])
        };
        assert_eq!(read(0x1010).unwrap(), 1);
        assert_eq!(read(0x1010 + apart).unwrap(), 2);
        assert_eq!(read(0x1010).unwrap(), 1);
        assert_eq!(cache.backend_reads(), 3);
        // The partial page: its mapped half by the piece, its other half not at all.
        assert_eq!(read(0x1010 + 2 * apart).unwrap(), 3);
        assert!(read(0x1000 + 2 * apart + PAGE as u64 - 8).is_err());
        assert_eq!(read(0x1010 + apart).unwrap(), 2);
    }

    #[test]
    fn page_cache_reads_across_pages_and_falls_back_on_partial_pages() {
        let mut sparse = SparseMemory::default();
        sparse.put(0x1ff0, &(0u8..64).collect::<Vec<_>>());
        let cache = PageCache::new(sparse);
        let mut buf = [0u8; 32];
        cache.read(0x1ff8, &mut buf).unwrap();
        assert_eq!(buf[0], 8);
        assert_eq!(buf[31], 39);
        assert!(cache.read(0x2030, &mut [0u8; 16]).is_err());
        // A pointer read from the target can point into the last page of the address space.
        assert!(cache.read(u64::MAX - 200, &mut [0u8; 1]).is_err());
    }

    /// A stopped process gives a second thread a reader of its own, which reads what the
    /// first reads (here, this test's own memory, which does not change).
    #[test]
    fn a_stopped_process_reads_the_same_on_a_second_reader() {
        static BYTES: [u8; 6000] = {
            let mut bytes = [0u8; 6000];
            let mut index = 0;
            while index < bytes.len() {
                bytes[index] = (index % 251) as u8;
                index += 1;
            }
            bytes
        };
        let memory = StoppedProcess(PageCache::new(
            ProcessMemory::open(std::process::id()).unwrap(),
        ));
        let second = memory.second_reader().expect("a second reader");
        let address = BYTES.as_ptr() as u64;
        let mut first_read = vec![0u8; 6000];
        memory.read(address, &mut first_read).unwrap();
        let second_read = std::thread::scope(|scope| {
            scope
                .spawn(move || {
                    let mut bytes = vec![0u8; 6000];
                    second.read(address, &mut bytes).map(|()| bytes)
                })
                .join()
                .unwrap()
        })
        .unwrap();
        assert_eq!(first_read, BYTES);
        assert_eq!(second_read, BYTES);
    }
}
