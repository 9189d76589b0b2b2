//! What `/proc` says of a live process: its threads and their names, its mappings, its
//! auxiliary vector, who traces it, and the file it runs.

use std::path::{Path, PathBuf};

use super::core_notes::auxv_pairs;
use super::modules::Mapping;
use crate::error::{Error, ErrorKind, Result};

/// Threads listed at most (a process of 100,000 threads is already beyond a debugger).
const MAX_THREADS: usize = 1 << 16;

fn proc_path(pid: u32, rest: &str) -> PathBuf {
    PathBuf::from(format!("/proc/{pid}/{rest}"))
}

/// Whether process `pid` exists (or is visible to us).
pub fn exists(pid: u32) -> bool {
    proc_path(pid, "").exists()
}

/// The ids of the process's threads, lowest first.
pub fn thread_ids(pid: u32) -> Result<Vec<u64>> {
    let entries = std::fs::read_dir(proc_path(pid, "task")).map_err(|error| {
        Error::new(
            ErrorKind::Binary,
            format!("cannot list the threads of process {pid}: {error}"),
        )
    })?;
    let mut ids: Vec<u64> = entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse().ok())
        .take(MAX_THREADS)
        .collect();
    ids.sort_unstable();
    Ok(ids)
}

/// The thread's name (`comm`), as debuggers show it.
pub fn thread_name(pid: u32, tid: u64) -> Option<String> {
    let name = std::fs::read_to_string(proc_path(pid, &format!("task/{tid}/comm"))).ok()?;
    Some(name.trim_end_matches('\n').to_string())
}

/// A field of `/proc/PID/status`, as written (`TracerPid`, `Uid`, `State`).
pub fn status_field(pid: u32, field: &str) -> Option<String> {
    let status = std::fs::read_to_string(proc_path(pid, "status")).ok()?;
    status.lines().find_map(|line| {
        let (name, value) = line.split_once(':')?;
        (name == field).then(|| value.trim().to_string())
    })
}

/// The process tracing `pid`, if one does (a debugger attached to it).
pub fn tracer(pid: u32) -> Option<u32> {
    status_field(pid, "TracerPid")?
        .parse()
        .ok()
        .filter(|&tracer| tracer != 0)
}

/// A process's command name.
pub fn command_name(pid: u32) -> Option<String> {
    Some(
        std::fs::read_to_string(proc_path(pid, "comm"))
            .ok()?
            .trim_end()
            .to_string(),
    )
}

/// The auxiliary vector: where the program was loaded (`AT_ENTRY`), where the vDSO is.
pub fn auxv(pid: u32) -> Result<Vec<(u64, u64)>> {
    let path = proc_path(pid, "auxv");
    std::fs::read(&path)
        .map(|data| auxv_pairs(&data))
        .map_err(|error| {
            Error::new(
                ErrorKind::Memory,
                format!("cannot read {}: {error}", path.display()),
            )
        })
}

/// The file-backed mappings of `/proc/PID/maps`.
pub fn mappings(pid: u32) -> Vec<Mapping> {
    let Ok(text) = std::fs::read_to_string(proc_path(pid, "maps")) else {
        return Vec::new();
    };
    text.lines().filter_map(parse_maps_line).collect()
}

/// The readable, writable mappings of `/proc/PID/maps`, as `(start, end)`: the heap,
/// anonymous mappings, thread stacks, data segments. Device mappings are left out (a read
/// of one can act on the device); shared memory (`/dev/shm`, `/dev/zero`) is kept.
pub fn writable_regions(pid: u32) -> Result<Vec<(u64, u64)>> {
    let path = proc_path(pid, "maps");
    let text = std::fs::read_to_string(&path).map_err(|error| {
        Error::new(
            ErrorKind::Memory,
            format!("cannot read {}: {error}", path.display()),
        )
    })?;
    Ok(text.lines().filter_map(parse_writable_region).collect())
}

fn parse_writable_region(line: &str) -> Option<(u64, u64)> {
    let line = MapsLine::parse(line)?;
    let perms = line.perms.as_bytes();
    if perms.first() != Some(&b'r') || perms.get(1) != Some(&b'w') {
        return None;
    }
    let shared_memory = line.path.starts_with("/dev/shm/") || line.path.starts_with("/dev/zero");
    if line.path.starts_with("/dev/") && !shared_memory {
        return None;
    }
    Some((line.start, line.end))
}

/// A file-backed mapping.
fn parse_maps_line(line: &str) -> Option<Mapping> {
    let line = MapsLine::parse(line)?;
    if !line.path.starts_with('/') {
        return None;
    }
    Some(Mapping {
        start: line.start,
        end: line.end,
        offset: line.offset,
        // A file deleted since it was mapped.
        path: line.path.trim_end_matches(" (deleted)").to_string(),
    })
}

/// One line of `/proc/PID/maps`: `start-end perms offset dev inode [path]`.
struct MapsLine<'a> {
    start: u64,
    end: u64,
    perms: &'a str,
    offset: u64,
    /// Empty for an anonymous mapping.
    path: &'a str,
}

impl<'a> MapsLine<'a> {
    fn parse(line: &'a str) -> Option<Self> {
        let mut fields = line.splitn(6, ' ');
        let (start, end) = fields.next()?.split_once('-')?;
        let perms = fields.next()?;
        let offset = u64::from_str_radix(fields.next()?, 16).ok()?;
        let _device = fields.next()?;
        let _inode = fields.next()?;
        Some(MapsLine {
            start: u64::from_str_radix(start, 16).ok()?,
            end: u64::from_str_radix(end, 16).ok()?,
            perms,
            offset,
            path: fields.next().unwrap_or("").trim_start(),
        })
    }
}

/// The file the process runs: `/proc/PID/exe`, which reads whatever mount namespace the
/// process lives in and after the file was deleted or replaced; and where its neighbours
/// (a `.debug` file, a `.dwp`) are, when that can be told: its path under the process's
/// own root, if that is the same file.
pub fn executable(pid: u32) -> Result<(PathBuf, Option<PathBuf>)> {
    let link = proc_path(pid, "exe");
    let target = std::fs::read_link(&link).map_err(|error| {
        Error::new(
            ErrorKind::Binary,
            format!("cannot read {}: {error}", link.display()),
        )
    })?;
    let beside = same_file_at(&link, &proc_path(pid, "root").join(strip_root(&target)))
        .or_else(|| same_file_at(&link, &target));
    Ok((link, beside))
}

fn strip_root(path: &Path) -> &Path {
    path.strip_prefix("/").unwrap_or(path)
}

fn same_file_at(running: &Path, candidate: &Path) -> Option<PathBuf> {
    use std::os::unix::fs::MetadataExt;
    let (a, b) = (
        std::fs::metadata(running).ok()?,
        std::fs::metadata(candidate).ok()?,
    );
    (a.dev() == b.dev() && a.ino() == b.ino()).then(|| candidate.to_path_buf())
}

/// The memory the system can give without swapping (`MemAvailable` of `/proc/meminfo`).
pub fn available_memory() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text
        .lines()
        .find(|line| line.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

/// Yama's ptrace scope (`/proc/sys/kernel/yama/ptrace_scope`), where Yama is on.
pub fn ptrace_scope() -> Option<u32> {
    std::fs::read_to_string("/proc/sys/kernel/yama/ptrace_scope")
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// Where a blocked thread is, without stopping it (`/proc/PID/task/TID/syscall`): its
/// stack pointer and pc inside the system call it waits in; `None` while it runs.
pub fn blocked_at(pid: u32, tid: u64) -> Option<(u64, u64)> {
    let text = std::fs::read_to_string(proc_path(pid, &format!("task/{tid}/syscall"))).ok()?;
    let fields: Vec<&str> = text.split_whitespace().collect();
    if fields.len() < 3 || fields[0] == "running" {
        return None;
    }
    let number = |text: &str| u64::from_str_radix(text.trim_start_matches("0x"), 16).ok();
    Some((
        number(fields[fields.len() - 2])?,
        number(fields[fields.len() - 1])?,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_lines_give_file_mappings_only() {
        let line = "7f0c1a200000-7f0c1a228000 r--p 00001000 fe:01 1234   /usr/lib/x86_64-linux-gnu/libc.so.6";
        assert_eq!(
            parse_maps_line(line),
            Some(Mapping {
                start: 0x7f0c1a200000,
                end: 0x7f0c1a228000,
                offset: 0x1000,
                path: "/usr/lib/x86_64-linux-gnu/libc.so.6".into()
            })
        );
        assert_eq!(
            parse_maps_line("7ffd1000-7ffd3000 r-xp 00000000 00:00 0  [vdso]"),
            None
        );
        assert_eq!(
            parse_maps_line("55d0-55e0 r-xp 00000000 fe:01 99 /srv/app (deleted)")
                .map(|mapping| mapping.path),
            Some("/srv/app".into())
        );
    }

    #[test]
    fn writable_regions_leave_out_read_only_and_device_mappings() {
        let region = |line| parse_writable_region(line);
        assert_eq!(
            region("55d0a000-55d2b000 rw-p 00000000 00:00 0          [heap]"),
            Some((0x55d0a000, 0x55d2b000))
        );
        assert_eq!(
            region("7f00-7f10 rw-p 00000000 00:00 0"),
            Some((0x7f00, 0x7f10))
        );
        assert_eq!(
            region("7f00-7f10 r--p 00000000 fe:01 12 /usr/lib/libc.so.6"),
            None
        );
        assert_eq!(region("7f00-7f10 ---p 00000000 00:00 0"), None);
        assert_eq!(
            region("7f00-7f10 rw-s 00000000 00:05 3 /dev/dri/card0"),
            None
        );
        assert_eq!(
            region("7f00-7f10 rw-s 00000000 00:01 7 /dev/zero (deleted)"),
            Some((0x7f00, 0x7f10))
        );
    }

    #[test]
    fn this_process_is_seen_as_it_is() {
        let pid = std::process::id();
        assert!(thread_ids(pid).unwrap().contains(&u64::from(pid)));
        assert!(auxv(pid).unwrap().iter().any(|&(key, _)| key == 9));
        assert!(available_memory().unwrap() > 0);
        assert!(mappings(pid)
            .iter()
            .any(|mapping| mapping.path.contains("libc")));
        let (exe, beside) = executable(pid).unwrap();
        assert_eq!(exe, PathBuf::from(format!("/proc/{pid}/exe")));
        assert!(beside.is_some());
    }
}
