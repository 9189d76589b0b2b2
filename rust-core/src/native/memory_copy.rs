//! A copy of a stopped process's writable memory, taken in large reads so that the process
//! is stopped only for as long as the copy takes: everything after (unwinding, the walk,
//! decoding, rendering) reads the copy once the process runs again, and sees the memory
//! of the stop. Only pages the kernel says are there (`/proc/PID/pagemap`: present or
//! swapped) are copied, so the copy costs what the program really uses. What it does not
//! hold (the program's code and read-only data, which do not change) is read from the
//! live process.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;

use super::proc;
use crate::error::{Error, ErrorKind, Result};
use crate::memory::{Memory, PageCache, ProcessMemory};

const PAGE_SIZE: u64 = 4096;
/// pagemap entry bits: the page is in memory, or in swap.
const PAGE_PRESENT: u64 = 1 << 63;
const PAGE_SWAPPED: u64 = 1 << 62;
/// Pagemap entries read at once (a 2 MiB stretch of address space per read).
const PAGEMAP_BATCH: usize = 512;

/// A stretch of copied memory: `[start, start + len)` is `bytes[offset..offset + len]`.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Run {
    start: u64,
    len: u64,
    offset: usize,
}

impl Run {
    fn end(&self) -> u64 {
        self.start + self.len
    }
}

/// The copy, and the live process for what it does not hold (cached by the page: what is
/// read there, vtables and constants, does not change, and is read once per task).
pub struct MemoryCopy {
    copied: Copied,
    live: PageCache<ProcessMemory>,
}

/// What was copied: the runs, by address, and their bytes. Never changed once made, so
/// any number of threads read it.
struct Copied {
    runs: Vec<Run>,
    bytes: Vec<u8>,
}

/// A second thread's reader of a copy, with its own cache of the live process.
struct CopyReader<'c> {
    copied: &'c Copied,
    live: PageCache<ProcessMemory>,
}

/// Room for a copy, made before the process is stopped: its pages are touched now, so
/// that the stop costs the copy alone, not the kernel finding and zeroing fresh pages.
pub struct CopyRoom {
    pid: u32,
    bytes: Vec<u8>,
}

/// Asks for the room's spare capacity in huge pages where the system gives them on
/// request (`transparent_hugepage` set to `madvise`): a million tasks are read from
/// 730 MB of copy, and with 4 KiB pages nearly every task's first read misses the TLB.
fn advise_huge_pages(bytes: &mut Vec<u8>) {
    const PAGE: usize = 4096;
    let spare = bytes.spare_capacity_mut();
    let start = spare.as_mut_ptr() as usize;
    let aligned = start.next_multiple_of(PAGE);
    let len = (start + spare.len()).saturating_sub(aligned) / PAGE * PAGE;
    if len == 0 {
        return;
    }
    // SAFETY: the range lies within the vector's own allocation, page-aligned; the advice
    // changes how its pages are backed, never their contents (none are written yet). A
    // refusal (no THP in this kernel) leaves ordinary pages.
    unsafe {
        libc::madvise(aligned as *mut libc::c_void, len, libc::MADV_HUGEPAGE);
    }
}

impl CopyRoom {
    /// Room for what `pid`'s writable memory holds now, and some to spare for what it
    /// allocates before the stop. Refused when that would take over half the memory the
    /// system has available.
    pub fn prepare(pid: u32) -> Result<Self> {
        let total = present_bytes(&present_pages(pid)?);
        let wanted = total + total / 8 + (4 << 20);
        if let Some(available) = proc::available_memory() {
            if wanted > available / 2 {
                return Err(Error::new(
                    ErrorKind::Memory,
                    format!(
                        "a copy of its memory would take {} MiB, over half of the {} MiB available",
                        wanted >> 20,
                        available >> 20
                    ),
                ));
            }
        }
        let mut bytes = Vec::new();
        bytes.try_reserve_exact(wanted as usize).map_err(|_| {
            Error::new(
                ErrorKind::Memory,
                format!("cannot hold a copy of {wanted} bytes"),
            )
        })?;
        advise_huge_pages(&mut bytes);
        bytes.resize(wanted as usize, 0);
        bytes.clear();
        Ok(CopyRoom { pid, bytes })
    }

    /// Copies the present pages of every readable, writable mapping of the process, which
    /// must be stopped now (heap, anonymous mappings, thread stacks, data segments). A
    /// device mapping is never read (reading one can act on the device).
    pub fn copy(self) -> Result<MemoryCopy> {
        let CopyRoom { pid, mut bytes } = self;
        let live = ProcessMemory::open(pid)?;
        let runs = present_pages(pid)?;
        let total = present_bytes(&runs) as usize;
        // The room is empty: this grows it only by what the process allocated since it
        // was made, beyond its spare.
        bytes.try_reserve_exact(total).map_err(|_| {
            Error::new(
                ErrorKind::Memory,
                format!("cannot hold a copy of {total} bytes"),
            )
        })?;
        let source = Source::open(pid)?;
        let mut copied = Vec::with_capacity(runs.len());
        for run in runs {
            copy_run(&source, run, &mut bytes, &mut copied);
        }
        // Nothing copied of what is there: reading the copy would read the live process.
        if bytes.is_empty() && total > 0 {
            return Err(Error::new(
                ErrorKind::Memory,
                format!("none of its {total} bytes of writable memory could be copied"),
            ));
        }
        Ok(MemoryCopy {
            copied: Copied {
                runs: copied,
                bytes,
            },
            live: PageCache::new(live),
        })
    }
}

/// The stretches of present pages of `pid`'s readable, writable mappings (offsets unset).
fn present_pages(pid: u32) -> Result<Vec<Run>> {
    let pagemap = File::open(format!("/proc/{pid}/pagemap")).map_err(|error| {
        Error::new(
            ErrorKind::Memory,
            format!("cannot open /proc/{pid}/pagemap: {error}"),
        )
    })?;
    let mut runs = Vec::new();
    for (start, end) in proc::writable_regions(pid)? {
        present_runs(&pagemap, start, end, &mut runs)?;
    }
    Ok(runs)
}

fn present_bytes(runs: &[Run]) -> u64 {
    runs.iter().map(|run| run.len).sum()
}

impl MemoryCopy {
    /// How many bytes were copied.
    pub fn copied_bytes(&self) -> usize {
        self.copied.bytes.len()
    }

    #[cfg(test)]
    fn run_at(&self, address: u64) -> Option<&Run> {
        self.copied.run_at(address)
    }
}

impl Copied {
    /// The run holding `address`, if one does.
    fn run_at(&self, address: u64) -> Option<&Run> {
        let after = self.runs.partition_point(|run| run.start <= address);
        let run = self.runs.get(after.checked_sub(1)?)?;
        (address < run.end()).then_some(run)
    }

    /// Where the first run after `address` starts.
    fn next_run_start(&self, address: u64) -> Option<u64> {
        let after = self.runs.partition_point(|run| run.start <= address);
        self.runs.get(after).map(|run| run.start)
    }
}

/// Appends the stretches of present pages of `[start, end)` to `runs` (offsets unset).
fn present_runs(pagemap: &File, start: u64, end: u64, runs: &mut Vec<Run>) -> Result<()> {
    let mut entries = vec![0u8; PAGEMAP_BATCH * 8];
    let mut page = start / PAGE_SIZE;
    let last = end / PAGE_SIZE;
    while page < last {
        let count = ((last - page) as usize).min(PAGEMAP_BATCH);
        let chunk = &mut entries[..count * 8];
        pagemap.read_exact_at(chunk, page * 8).map_err(|error| {
            Error::new(
                ErrorKind::Memory,
                format!(
                    "cannot read the page map at {:#x}: {error}",
                    page * PAGE_SIZE
                ),
            )
        })?;
        for (index, entry) in chunk.chunks_exact(8).enumerate() {
            let entry = u64::from_le_bytes(entry.try_into().expect("8 bytes"));
            if entry & (PAGE_PRESENT | PAGE_SWAPPED) == 0 {
                continue;
            }
            let address = (page + index as u64) * PAGE_SIZE;
            match runs.last_mut() {
                Some(run) if run.end() == address => run.len += PAGE_SIZE,
                _ => runs.push(Run {
                    start: address,
                    len: PAGE_SIZE,
                    offset: 0,
                }),
            }
        }
        page += count as u64;
    }
    Ok(())
}

/// Copies `run` in one read (`process_vm_readv`, faster than `/proc/PID/mem` for large
/// reads, and straight into the copy's spare capacity, so no page of it is written twice
/// while the process is stopped); should that fail (a page went away), page by page,
/// keeping the pages that read.
fn copy_run(source: &Source, run: Run, bytes: &mut Vec<u8>, copied: &mut Vec<Run>) {
    let offset = bytes.len();
    if read_into_spare(source, run.start, run.len as usize, bytes) {
        copied.push(Run { offset, ..run });
        return;
    }
    let mut page = run.start;
    while page < run.end() {
        let at = bytes.len();
        if read_into_spare(source, page, PAGE_SIZE as usize, bytes) {
            match copied.last_mut() {
                Some(last) if last.end() == page && last.offset + last.len as usize == at => {
                    last.len += PAGE_SIZE
                }
                _ => copied.push(Run {
                    start: page,
                    len: PAGE_SIZE,
                    offset: at,
                }),
            }
        }
        page += PAGE_SIZE;
    }
}

/// Appends `len` bytes of the process's memory at `address` to `bytes`, whose capacity
/// must hold them: all of them, or none. Read with `process_vm_readv`, in as many calls
/// as it takes (each stops at a page that cannot be read); where that call is refused (a
/// seccomp profile, an old kernel), with `pread` on `/proc/PID/mem`.
fn read_into_spare(source: &Source, address: u64, len: usize, bytes: &mut Vec<u8>) -> bool {
    if bytes.capacity() - bytes.len() < len {
        return false;
    }
    let destination = bytes
        .spare_capacity_mut()
        .as_mut_ptr()
        .cast::<libc::c_void>();
    let mut done = 0;
    while done < len {
        // SAFETY: `done < len` and the spare capacity holds `len` bytes.
        let at = unsafe { destination.add(done) };
        let read = match source.vm_readv {
            true => {
                let local = libc::iovec {
                    iov_base: at,
                    iov_len: len - done,
                };
                let remote = libc::iovec {
                    iov_base: (address as usize + done) as *mut libc::c_void,
                    iov_len: len - done,
                };
                // SAFETY: the kernel writes at most `local.iov_len` bytes into our spare
                // capacity and only reads the other process.
                unsafe { libc::process_vm_readv(source.pid, &local, 1, &remote, 1, 0) }
            }
            false => {
                let Ok(offset) = libc::off_t::try_from(address + done as u64) else {
                    return false;
                };
                // SAFETY: as above, at most `len - done` bytes into our spare capacity.
                unsafe { libc::pread(source.mem.as_raw_fd(), at, len - done, offset) }
            }
        };
        if read <= 0 {
            return false;
        }
        done += read as usize;
    }
    // SAFETY: the `len` bytes after the vector's length were all written just above.
    unsafe { bytes.set_len(bytes.len() + len) };
    true
}

/// Where the copy is read from.
struct Source {
    pid: libc::pid_t,
    /// `/proc/PID/mem`, for where `process_vm_readv` is refused.
    mem: File,
    vm_readv: bool,
}

impl Source {
    fn open(pid: u32) -> Result<Self> {
        let mem = File::open(format!("/proc/{pid}/mem")).map_err(|error| {
            Error::new(
                ErrorKind::Memory,
                format!("cannot open /proc/{pid}/mem: {error}"),
            )
        })?;
        let pid = pid as libc::pid_t;
        // A read of nothing tells whether the call is allowed at all.
        // SAFETY: no iovec, nothing read or written.
        let probe =
            unsafe { libc::process_vm_readv(pid, std::ptr::null(), 0, std::ptr::null(), 0, 0) };
        Ok(Source {
            pid,
            mem,
            vm_readv: probe == 0,
        })
    }
}

impl Memory for MemoryCopy {
    fn read(&self, address: u64, buf: &mut [u8]) -> Result<()> {
        self.copied.read(&self.live, address, buf)
    }

    fn second_reader(&self) -> Option<Box<dyn Memory + Send + '_>> {
        let live = self.live.inner().try_clone().ok()?;
        Some(Box::new(CopyReader {
            copied: &self.copied,
            live: PageCache::new(live),
        }))
    }
}

impl Memory for CopyReader<'_> {
    fn read(&self, address: u64, buf: &mut [u8]) -> Result<()> {
        self.copied.read(&self.live, address, buf)
    }
}

impl Copied {
    /// Reads the copy, and `live` for what it does not hold.
    fn read(&self, live: &dyn Memory, address: u64, buf: &mut [u8]) -> Result<()> {
        let end = address
            .checked_add(buf.len() as u64)
            .ok_or_else(|| Error::memory(address, buf.len()))?;
        let mut cursor = address;
        while cursor < end {
            let out_at = (cursor - address) as usize;
            let take = match self.run_at(cursor) {
                Some(run) => {
                    let take = (end - cursor).min(run.end() - cursor) as usize;
                    let from = run.offset + (cursor - run.start) as usize;
                    buf[out_at..out_at + take].copy_from_slice(&self.bytes[from..from + take]);
                    take
                }
                None => {
                    // Not copied: code and read-only data, which the process does not
                    // change; or no memory at all, which the live read reports.
                    let upto = self
                        .next_run_start(cursor)
                        .map_or(end, |next| next.min(end));
                    let take = (upto - cursor) as usize;
                    live.read(cursor, &mut buf[out_at..out_at + take])
                        .map_err(|_| Error::memory(address, buf.len()))?;
                    take
                }
            };
            cursor += take as u64;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// This process's own memory, copied: a heap value reads back from the copy after it
    /// changed, and code (not copied) still reads.
    #[test]
    fn the_copy_keeps_the_memory_of_the_moment_it_was_taken() {
        let value = Box::new(0x1122_3344_5566_7788u64);
        let address = &*value as *const u64 as u64;
        let copy = CopyRoom::prepare(std::process::id())
            .and_then(CopyRoom::copy)
            .unwrap();
        assert!(copy.run_at(address).is_some());
        let changed = Box::into_raw(value);
        // SAFETY: `changed` is the box's own pointer, written once and freed below.
        unsafe {
            std::ptr::write_volatile(changed, 0);
        }
        let mut bytes = [0u8; 8];
        copy.read(address, &mut bytes).unwrap();
        assert_eq!(u64::from_le_bytes(bytes), 0x1122_3344_5566_7788);
        // A second thread's reader reads the same copy.
        let second = copy.second_reader().unwrap();
        let (second, mut again) = std::thread::scope(|scope| {
            scope
                .spawn(move || {
                    let mut again = [0u8; 8];
                    second.read(address, &mut again).unwrap();
                    (second, again)
                })
                .join()
                .unwrap()
        });
        assert_eq!(again, bytes);
        // SAFETY: made by `Box::into_raw` above and not freed since.
        drop(unsafe { Box::from_raw(changed) });
        let code = the_copy_keeps_the_memory_of_the_moment_it_was_taken as fn() as usize as u64;
        assert!(copy.run_at(code).is_none());
        copy.read(code, &mut bytes).unwrap();
        second.read(code, &mut again).unwrap();
        assert_eq!(again, bytes);
        assert!(copy.read(0x10, &mut bytes).is_err());
    }

    /// Where `process_vm_readv` is refused, the same bytes come through `/proc/PID/mem`.
    #[test]
    fn both_ways_of_reading_give_the_same_bytes() {
        let value: Box<[u8]> = (0..=255u8).cycle().take(3 * 4096).collect();
        let address = value.as_ptr() as u64;
        let mut source = Source::open(std::process::id()).unwrap();
        let read = |source: &Source| {
            let mut bytes = Vec::with_capacity(value.len());
            assert!(read_into_spare(source, address, value.len(), &mut bytes));
            bytes
        };
        assert!(source.vm_readv);
        assert_eq!(read(&source), &value[..]);
        source.vm_readv = false;
        assert_eq!(read(&source), &value[..]);
        // Too little room: nothing is read.
        let mut small = Vec::with_capacity(16);
        assert!(!read_into_spare(&source, address, value.len(), &mut small));
        assert!(small.is_empty());
    }

    /// Memory the process gained between the room and the stop, beyond the room's spare,
    /// is copied too.
    #[test]
    fn the_copy_grows_past_its_room() {
        let room = CopyRoom::prepare(std::process::id()).unwrap();
        let spare = room.bytes.capacity();
        let grown = vec![7u8; spare + (16 << 20)];
        let copy = room.copy().unwrap();
        let last = grown.as_ptr() as u64 + grown.len() as u64 - 1;
        let mut byte = [0u8; 1];
        assert!(copy.run_at(last).is_some());
        copy.read(last, &mut byte).unwrap();
        assert_eq!(byte[0], 7);
        assert!(copy.copied_bytes() > grown.len());
    }
}
