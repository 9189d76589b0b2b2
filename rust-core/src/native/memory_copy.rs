//! A copy of a stopped process's writable memory, taken in large reads so that the process
//! is stopped only for as long as the copy takes: everything after (unwinding, the walk,
//! decoding, rendering) reads the copy once the process runs again, and sees the memory
//! of the stop. Only pages the kernel says are there (`/proc/PID/pagemap`: present or
//! swapped) are copied, so the copy costs what the program really uses. What it does not
//! hold (the program's code and read-only data, which do not change) is read from the
//! live process.

use std::cell::RefCell;
use std::fs::File;
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;
use std::sync::{Mutex, PoisonError};

use super::proc;
use crate::error::{Error, ErrorKind, Result};
use crate::memory::{Memory, PageCache, ProcessMemory};

const PAGE_SIZE: u64 = 4096;
const PAGE: usize = PAGE_SIZE as usize;
/// pagemap entry bits: the page is in memory, or in swap.
const PAGE_PRESENT: u64 = 1 << 63;
const PAGE_SWAPPED: u64 = 1 << 62;
/// Pagemap entries read at once (a 2 MiB stretch of address space per read).
const PAGEMAP_BATCH: usize = 512;
/// Pages read from the process in one call before they are packed.
const PAGES_PER_READ: u64 = 64;
/// Pages each reader keeps unpacked, by page number (1 MiB): the walk reads the tasks
/// in memory order, so a page is mostly unpacked once.
const UNPACKED_PAGES: usize = 256;
/// Threads packing the copy while the process is stopped (the caller's among them).
const PACKING_THREADS: usize = 2;

/// A stretch of copied pages: `[start, start + len)` is pages `first_page..` of
/// `segment`.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Run {
    start: u64,
    len: u64,
    segment: usize,
    first_page: usize,
}

impl Run {
    fn end(&self) -> u64 {
        self.start + self.len
    }

    fn pages(&self) -> usize {
        (self.len / PAGE_SIZE) as usize
    }
}

/// The copy, and the live process for what it does not hold (cached by the page: what is
/// read there, vtables and constants, does not change, and is read once per task).
pub struct MemoryCopy {
    copied: Copied,
    unpacked: RefCell<Unpacked>,
    live: PageCache<ProcessMemory>,
}

/// What was copied: the runs, by address, and their pages. Never changed once made, so
/// any number of threads read it.
struct Copied {
    runs: Vec<Run>,
    segments: Vec<Segment>,
}

/// The pages one thread packed, each compressed on its own (LZ4) so that one can be read
/// without the others: a million tasks' 730 MB of heap are kept in about 220 MB, and the
/// room made for them before the stop (every page of which this VM makes slowly) shrinks
/// as much. Packing costs the stop about 0.5 ms a MB on two threads.
struct Segment {
    /// Where each page's bytes end in `bytes`; a page kept `PAGE` bytes long is stored as
    /// it was (it did not compress).
    ends: Vec<u64>,
    bytes: Vec<u8>,
}

/// A second thread's reader of a copy, with its own unpacked pages and cache of the live
/// process.
struct CopyReader<'c> {
    copied: &'c Copied,
    unpacked: RefCell<Unpacked>,
    live: PageCache<ProcessMemory>,
}

/// One reader's unpacked pages, direct-mapped by page number.
struct Unpacked {
    /// Segment and page of each slot (`u64::MAX`: none yet).
    tags: Vec<u64>,
    pages: Vec<u8>,
    /// The address of the page read last and its slot: most reads are of a task's fields,
    /// one after another in the same page, and skip the search for their run.
    last: Option<(u64, usize)>,
}

/// Room for a copy, made before the process is stopped: its pages are touched now, so
/// that the stop costs the copy alone, not the kernel finding and zeroing fresh pages.
/// One room per packing thread.
pub struct CopyRoom {
    pid: u32,
    rooms: Vec<Vec<u8>>,
}

/// A packing thread's room for `share`: a quarter more than a sample of it packs into,
/// never more than heap pages ever take (the room before any sample).
fn room_for_share(source: Option<&Source>, share: &[Run]) -> Result<Vec<u8>> {
    let bytes = present_bytes(share);
    let most = bytes / 2 + bytes / 16;
    let sampled = source.and_then(|source| packed_share(source, share));
    let packed = sampled.map_or(most, |ratio| {
        (bytes as f64 * ratio * 1.25) as u64 + bytes / 64
    });
    touched_room(packed.min(most) as usize + (2 << 20))
}

/// A touched, empty vector of `capacity` bytes. In ordinary pages: asked for in huge
/// pages (`MADV_HUGEPAGE`), this VM took 1.8-2.2 s instead of 0.1 s to make a million
/// tasks' room (the kernel finds each 2 MB page whole), and reads of the packed copy,
/// through a small cache of unpacked pages, miss the TLB little.
fn touched_room(capacity: usize) -> Result<Vec<u8>> {
    let mut bytes = Vec::new();
    bytes.try_reserve_exact(capacity).map_err(|_| {
        Error::new(
            ErrorKind::Memory,
            format!("cannot hold a copy of {capacity} bytes"),
        )
    })?;
    bytes.resize(capacity, 0);
    bytes.clear();
    Ok(bytes)
}

impl CopyRoom {
    /// Room for what `pid`'s writable memory holds now, packed (as a sample of its pages
    /// packs; what packs worse grows the room during the stop), and some to spare for
    /// what it allocates before the stop. Refused when the memory as it is
    /// would take over half the memory the system has available.
    pub fn prepare(pid: u32) -> Result<Self> {
        let present = present_pages(pid)?;
        let total = present_bytes(&present);
        if let Some(available) = proc::available_memory() {
            if total > available / 2 {
                return Err(Error::new(
                    ErrorKind::Memory,
                    format!(
                        "a copy of its memory could take {} MiB, over half of the {} MiB available",
                        total >> 20,
                        available >> 20
                    ),
                ));
            }
        }
        // Each packing thread's room, sampled and touched by a thread of its own: the
        // kernel zeroes the fresh pages of both at once (a million tasks' room takes
        // most of a second on one thread).
        let source = Source::open(pid).ok();
        let shares = split_runs(&present, PACKING_THREADS);
        let room_for = |share: &[Run]| room_for_share(source.as_ref(), share);
        let rooms = std::thread::scope(|scope| {
            let helpers: Vec<_> = shares[1..]
                .iter()
                .map(|share| {
                    crate::threads::spawn_scoped(scope, "tokio-async-room", move || room_for(share))
                        .ok()
                })
                .collect();
            let mut rooms = vec![room_for(&shares[0])];
            for (share, helper) in shares[1..].iter().zip(helpers) {
                rooms.push(match helper {
                    Some(thread) => thread
                        .join()
                        .unwrap_or_else(|payload| std::panic::resume_unwind(payload)),
                    // No thread to be had: made here.
                    None => room_for(share),
                });
            }
            rooms
        });
        let rooms = rooms.into_iter().collect::<Result<Vec<_>>>()?;
        Ok(CopyRoom { pid, rooms })
    }

    /// Copies the present pages of every readable, writable mapping of the process, which
    /// must be stopped now (heap, anonymous mappings, thread stacks, data segments), on
    /// two threads, each packing its half. A device mapping is never read (reading one
    /// can act on the device).
    pub fn copy(self) -> Result<MemoryCopy> {
        let CopyRoom { pid, rooms } = self;
        let live = ProcessMemory::open(pid)?;
        let present = present_pages(pid)?;
        let total = present_bytes(&present);
        let source = Source::open(pid)?;
        let shares = split_runs(&present, rooms.len());
        // Each share with its room, taken by the thread that packs it: a helper, or this
        // thread where no helper can be had. (Not moved into the helper's closure: a
        // refused spawn would take the room with it.)
        let work: Vec<Mutex<Option<Share>>> = shares
            .into_iter()
            .zip(rooms)
            .map(|share| Mutex::new(Some(share)))
            .collect();
        let take = |index: usize| {
            let (share, room) = work[index]
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take()
                .expect("each share is packed once");
            pack(&source, &share, index, room)
        };
        let packed: Vec<(Vec<Run>, Segment)> = std::thread::scope(|scope| {
            let helpers: Vec<_> = (1..work.len())
                .map(|index| {
                    let take = &take;
                    crate::threads::spawn_scoped(scope, "tokio-async-copy", move || take(index))
                        .ok()
                })
                .collect();
            let mut packed = vec![take(0)];
            for (index, helper) in (1..).zip(helpers) {
                packed.push(match helper {
                    Some(thread) => thread
                        .join()
                        .unwrap_or_else(|payload| std::panic::resume_unwind(payload)),
                    // No thread to be had: packed here.
                    None => take(index),
                });
            }
            packed
        });
        let mut runs = Vec::new();
        let mut segments = Vec::new();
        for (share_runs, mut segment) in packed {
            runs.extend(share_runs);
            // The room's unused part goes back now (a large vector shrinks in place).
            segment.bytes.shrink_to_fit();
            segments.push(segment);
        }
        // Nothing copied of what is there: reading the copy would read the live process.
        if runs.is_empty() && total > 0 {
            return Err(Error::new(
                ErrorKind::Memory,
                format!("none of its {total} bytes of writable memory could be copied"),
            ));
        }
        Ok(MemoryCopy {
            copied: Copied { runs, segments },
            unpacked: RefCell::new(Unpacked::new()),
            live: PageCache::new(live),
        })
    }
}

/// A packing thread's runs and the room it packs them into.
type Share = (Vec<Run>, Vec<u8>);

/// `runs` cut into `shares` stretches of about as many pages each, in address order (a
/// run may be cut in two).
fn split_runs(runs: &[Run], shares: usize) -> Vec<Vec<Run>> {
    let pages: usize = runs.iter().map(Run::pages).sum();
    let each = pages.div_ceil(shares.max(1)).max(1);
    let mut split = vec![Vec::new()];
    let mut room = each;
    for &run in runs {
        let mut rest = run;
        while rest.len > 0 {
            if room == 0 {
                split.push(Vec::new());
                room = each;
            }
            let take = rest.pages().min(room);
            let len = take as u64 * PAGE_SIZE;
            split
                .last_mut()
                .expect("one share")
                .push(Run { len, ..rest });
            rest.start += len;
            rest.len -= len;
            room -= take;
        }
    }
    split.resize(shares.max(1), Vec::new());
    split
}

/// Copies and packs the pages of `runs` into `room`: read in large reads
/// (`process_vm_readv`, faster than `/proc/PID/mem`); should one fail (a page went
/// away), page by page, keeping the pages that read.
fn pack(source: &Source, runs: &[Run], segment: usize, room: Vec<u8>) -> (Vec<Run>, Segment) {
    let pages = runs.iter().map(Run::pages).sum();
    let mut packer = Packer {
        index: segment,
        segment: Segment {
            ends: Vec::with_capacity(pages),
            bytes: room,
        },
        runs: Vec::new(),
        packed_page: vec![0; lz4_flex::block::get_maximum_output_size(PAGE)],
    };
    let mut read = Vec::with_capacity(PAGES_PER_READ as usize * PAGE);
    for run in runs {
        let mut at = run.start;
        while at < run.end() {
            let len = (run.end() - at).min(PAGES_PER_READ * PAGE_SIZE);
            read.clear();
            if read_into_spare(source, at, len as usize, &mut read) {
                packer.add(at, &read);
            } else {
                for page in (at..at + len).step_by(PAGE) {
                    read.clear();
                    if read_into_spare(source, page, PAGE, &mut read) {
                        packer.add(page, &read);
                    }
                }
            }
            at += len;
        }
    }
    (packer.runs, packer.segment)
}

/// Packs pages into one segment, and says where they came from.
struct Packer {
    index: usize,
    segment: Segment,
    runs: Vec<Run>,
    packed_page: Vec<u8>,
}

impl Packer {
    /// Adds the whole pages of `bytes`, read at `address`.
    fn add(&mut self, address: u64, bytes: &[u8]) {
        for (number, page) in bytes.chunks_exact(PAGE).enumerate() {
            let at = address + (number * PAGE) as u64;
            let packed = lz4_flex::block::compress_into(page, &mut self.packed_page)
                .ok()
                .filter(|&len| len < PAGE)
                .map_or(page, |len| &self.packed_page[..len]);
            self.segment.bytes.extend_from_slice(packed);
            let page_number = self.segment.ends.len();
            self.segment.ends.push(self.segment.bytes.len() as u64);
            match self.runs.last_mut() {
                Some(last) if last.end() == at && last.first_page + last.pages() == page_number => {
                    last.len += PAGE_SIZE
                }
                _ => self.runs.push(Run {
                    start: at,
                    len: PAGE_SIZE,
                    segment: self.index,
                    first_page: page_number,
                }),
            }
        }
    }
}

impl Segment {
    /// Unpacks page `page` into `out` (`PAGE` bytes).
    fn unpack(&self, page: usize, out: &mut [u8]) -> Result<()> {
        let start = match page {
            0 => 0,
            _ => self.ends[page - 1] as usize,
        };
        let end = self.ends[page] as usize;
        let packed = &self.bytes[start..end];
        if packed.len() == PAGE {
            out.copy_from_slice(packed);
            return Ok(());
        }
        match lz4_flex::block::decompress_into(packed, out) {
            Ok(PAGE) => Ok(()),
            _ => Err(Error::new(
                ErrorKind::Memory,
                format!("page {page} of the copy does not unpack"),
            )),
        }
    }
}

impl Unpacked {
    fn new() -> Self {
        Unpacked {
            tags: vec![u64::MAX; UNPACKED_PAGES],
            pages: vec![0; UNPACKED_PAGES * PAGE],
            last: None,
        }
    }

    /// The bytes at `address` if they lie in the page read last.
    fn in_last_page(&self, address: u64, len: usize) -> Option<&[u8]> {
        let (start, slot) = self.last?;
        let within = address.checked_sub(start)? as usize;
        let end = within.checked_add(len).filter(|&end| end <= PAGE)?;
        Some(&self.pages[slot * PAGE + within..slot * PAGE + end])
    }

    /// Page `page` of `segments[segment]`, unpacked; it starts at `address`.
    fn page(
        &mut self,
        segments: &[Segment],
        segment: usize,
        page: usize,
        address: u64,
    ) -> Result<&[u8]> {
        let slot = page % UNPACKED_PAGES;
        let tag = ((segment as u64) << 48) | page as u64;
        let out = &mut self.pages[slot * PAGE..(slot + 1) * PAGE];
        if self.tags[slot] != tag {
            // Marked empty first: a page that fails to unpack is not left as another's.
            self.tags[slot] = u64::MAX;
            self.last = None;
            segments[segment].unpack(page, out)?;
            self.tags[slot] = tag;
        }
        self.last = Some((address, slot));
        Ok(out)
    }
}

/// The stretches of present pages of `pid`'s readable, writable mappings (pages unset).
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

/// One page in this many is packed before the stop, to size the copy's room.
const SAMPLED_EVERY: usize = 64;

/// What share of its size a page of `runs` packs into, from every `SAMPLED_EVERY`th page
/// read while the process runs (about 20 ms for 700 MB): the room then takes what the copy
/// will, not the most heap pages ever take, and this VM makes each MB of room slowly.
/// `None` where too few pages read to tell.
fn packed_share(source: &Source, runs: &[Run]) -> Option<f64> {
    let mut page = Vec::with_capacity(PAGE);
    let mut packed_page = vec![0; lz4_flex::block::get_maximum_output_size(PAGE)];
    let (mut sampled, mut packed) = (0usize, 0usize);
    let pages = runs
        .iter()
        .flat_map(|run| (run.start..run.end()).step_by(PAGE))
        .step_by(SAMPLED_EVERY);
    for address in pages {
        page.clear();
        if !read_into_spare(source, address, PAGE, &mut page) {
            continue;
        }
        sampled += 1;
        packed += lz4_flex::block::compress_into(&page, &mut packed_page)
            .ok()
            .filter(|&len| len < PAGE)
            .unwrap_or(PAGE);
    }
    (sampled >= 16).then(|| packed as f64 / (sampled * PAGE) as f64)
}

impl MemoryCopy {
    /// How many bytes were copied.
    pub fn copied_bytes(&self) -> usize {
        self.copied
            .segments
            .iter()
            .map(|segment| segment.ends.len() * PAGE)
            .sum()
    }

    /// How many bytes they were packed in.
    pub fn packed_bytes(&self) -> usize {
        self.copied
            .segments
            .iter()
            .map(|segment| segment.bytes.len())
            .sum()
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

/// Appends the stretches of present pages of `[start, end)` to `runs` (pages unset).
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
                    segment: 0,
                    first_page: 0,
                }),
            }
        }
        page += count as u64;
    }
    Ok(())
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
        self.copied.read(&self.unpacked, &self.live, address, buf)
    }

    fn second_reader(&self) -> Option<Box<dyn Memory + Send + '_>> {
        let live = self.live.inner().try_clone().ok()?;
        Some(Box::new(CopyReader {
            copied: &self.copied,
            unpacked: RefCell::new(Unpacked::new()),
            live: PageCache::new(live),
        }))
    }
}

impl Memory for CopyReader<'_> {
    fn read(&self, address: u64, buf: &mut [u8]) -> Result<()> {
        self.copied.read(&self.unpacked, &self.live, address, buf)
    }
}

impl Copied {
    /// Reads the copy, unpacking its pages into `unpacked`, and `live` for what it does
    /// not hold.
    fn read(
        &self,
        unpacked: &RefCell<Unpacked>,
        live: &dyn Memory,
        address: u64,
        buf: &mut [u8],
    ) -> Result<()> {
        let end = address
            .checked_add(buf.len() as u64)
            .ok_or_else(|| Error::memory(address, buf.len()))?;
        if let Some(bytes) = unpacked.borrow().in_last_page(address, buf.len()) {
            buf.copy_from_slice(bytes);
            return Ok(());
        }
        let mut cursor = address;
        while cursor < end {
            let out_at = (cursor - address) as usize;
            let take = match self.run_at(cursor) {
                Some(run) => {
                    // Runs are whole pages: the rest of this page is in the run.
                    let within = cursor - run.start;
                    let in_page = (within % PAGE_SIZE) as usize;
                    let take = (end - cursor).min((PAGE - in_page) as u64) as usize;
                    let page = run.first_page + (within / PAGE_SIZE) as usize;
                    let mut unpacked = unpacked.borrow_mut();
                    let bytes = unpacked
                        .page(&self.segments, run.segment, page, cursor - in_page as u64)
                        .map_err(|_| Error::memory(address, buf.len()))?;
                    buf[out_at..out_at + take].copy_from_slice(&bytes[in_page..in_page + take]);
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

    /// Reads served from the page read last are that page's, at their offset, not a page's
    /// that took its slot since (one `UNPACKED_PAGES` further), nor cut at its end.
    #[test]
    fn the_page_read_last_is_the_one_a_read_gets() {
        let pages = UNPACKED_PAGES + 2;
        let mut bytes = vec![0u8; (pages + 1) * PAGE];
        let first = (bytes.as_ptr() as usize).next_multiple_of(PAGE) - bytes.as_ptr() as usize;
        let byte = |at: usize| (at % 251) as u8;
        for (at, value) in bytes[first..].iter_mut().enumerate() {
            *value = byte(at);
        }
        let start = bytes[first..].as_ptr() as u64;
        let copy = CopyRoom::prepare(std::process::id())
            .and_then(CopyRoom::copy)
            .unwrap();
        let read_is_right = |page: usize, offset: usize, len: usize| {
            let at = page * PAGE + offset;
            let mut out = vec![0u8; len];
            copy.read(start + at as u64, &mut out).unwrap();
            out == (at..at + len).map(byte).collect::<Vec<u8>>()
        };
        assert!(read_is_right(0, 8, 8));
        assert!(read_is_right(0, 16, 8));
        // The same slot, another page; then the first page again.
        assert!(read_is_right(UNPACKED_PAGES, 8, 8));
        assert!(read_is_right(0, 24, 8));
        // Across the end of the page read last, then the next page.
        assert!(read_is_right(0, PAGE - 4, 8));
        assert!(read_is_right(1, 0, 4));
        drop(bytes);
    }

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

    /// Bytes that do not pack (xorshift).
    fn noise(len: usize) -> Vec<u8> {
        let mut state = 0x2545_F491_4F6C_DD1Du64;
        (0..len)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                state as u8
            })
            .collect()
    }

    /// Memory the process gained between the room and the stop, beyond the room's spare,
    /// is copied too.
    #[test]
    fn the_copy_grows_past_its_room() {
        let room = CopyRoom::prepare(std::process::id()).unwrap();
        let spare: usize = room.rooms.iter().map(Vec::capacity).sum();
        // Bytes that do not pack: a room made for packed pages is outgrown.
        let grown = noise(spare + (16 << 20));
        let copy = room.copy().unwrap();
        let last = grown.as_ptr() as u64 + grown.len() as u64 - 1;
        let mut byte = [0u8; 1];
        assert!(copy.run_at(last).is_some());
        copy.read(last, &mut byte).unwrap();
        assert_eq!(byte[0], grown[grown.len() - 1]);
        assert!(copy.copied_bytes() > grown.len());
        assert!(copy.packed_bytes() > grown.len());
    }

    /// Pages that pack and pages that do not read back whole, across page and run
    /// boundaries, on both threads' shares, and after another page took their slot.
    #[test]
    fn packed_pages_read_back_as_they_were() {
        let pages = 2 * UNPACKED_PAGES + 3;
        let noise = noise(pages * PAGE);
        let bytes: Vec<u8> = (0..pages * PAGE)
            .map(|index| match (index / PAGE) % 3 {
                0 => 0,
                1 => (index % 251) as u8,
                _ => noise[index],
            })
            .collect();
        let start = bytes.as_ptr() as u64;
        let copy = CopyRoom::prepare(std::process::id())
            .and_then(CopyRoom::copy)
            .unwrap();
        assert!(copy.copied.segments.len() == PACKING_THREADS);
        let mut whole = vec![0u8; bytes.len()];
        copy.read(start, &mut whole).unwrap();
        assert!(whole == bytes);
        // Straddling pages, and a page and the one UNPACKED_PAGES after it in turn.
        for (offset, len) in [
            (PAGE - 3, 10),
            (7, PAGE),
            (UNPACKED_PAGES * PAGE + 5, 3),
            (5, 3),
        ] {
            let mut part = vec![0u8; len];
            copy.read(start + offset as u64, &mut part).unwrap();
            assert_eq!(part, bytes[offset..offset + len]);
        }
    }

    /// The sample that sizes the room reads this process's pages as they pack: one byte
    /// repeated to next to nothing, noise to whole pages; too few pages tell nothing.
    #[test]
    fn a_sample_of_pages_says_how_they_pack() {
        let whole_pages = |bytes: &[u8]| {
            let start = (bytes.as_ptr() as u64).next_multiple_of(PAGE_SIZE);
            let end = (bytes.as_ptr() as u64 + bytes.len() as u64) / PAGE_SIZE * PAGE_SIZE;
            vec![Run {
                start,
                len: end - start,
                segment: 0,
                first_page: 0,
            }]
        };
        let source = Source::open(std::process::id()).unwrap();
        let repeated = vec![1u8; 2048 * PAGE];
        let share = packed_share(&source, &whole_pages(&repeated)).unwrap();
        assert!(share < 0.05, "{share}");
        let noise = noise(2048 * PAGE);
        let share = packed_share(&source, &whole_pages(&noise)).unwrap();
        assert!(share > 0.99, "{share}");
        assert_eq!(
            packed_share(&source, &whole_pages(&noise[..8 * PAGE])),
            None
        );
    }

    /// Runs are cut into shares of as many pages each, in address order.
    #[test]
    fn runs_are_shared_out_by_pages() {
        let run = |start: u64, pages: u64| Run {
            start,
            len: pages * PAGE_SIZE,
            segment: 0,
            first_page: 0,
        };
        let shares = split_runs(&[run(0x10000, 3), run(0x40000, 5)], 2);
        assert_eq!(
            shares,
            vec![
                vec![run(0x10000, 3), run(0x40000, 1)],
                vec![run(0x41000, 4)],
            ]
        );
        assert_eq!(split_runs(&[], 2), vec![Vec::new(), Vec::new()]);
        assert_eq!(
            split_runs(&[run(0, 1)], 2),
            vec![vec![run(0, 1)], Vec::new()]
        );
    }
}
