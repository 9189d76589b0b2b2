//! Where a stripped executable's DWARF went: a separate debug file (`objcopy
//! --only-keep-debug`), found where GDB and LLDB look for it.
//!
//! First the file the debugger loaded (it may have found it in ways not repeated here:
//! debuginfod, `target symbols add`); then by build id, `<debug dir>/.build-id/xx/rest.debug`;
//! by the `.gnu_debuglink` name, next to the executable, in its `.debug/` subdirectory and
//! in `<debug dir>/<executable's dir>/`.
//! A file found by build id must carry that build id; one found by debuglink must have the
//! CRC-32 the link records (and the executable's build id, if both have one).

use std::path::{Path, PathBuf};

use object::Object;

use super::elf;

/// Where distributions install debug files; searched after the debugger's own directories.
pub const SYSTEM_DEBUG_DIR: &str = "/usr/lib/debug";

/// A separate debug file, mapped.
pub struct DebugFile {
    pub path: PathBuf,
    pub map: memmap2::Mmap,
}

/// What a search found, and every place it looked (with why a file there was refused).
pub struct Search {
    pub found: Option<DebugFile>,
    pub looked: Vec<String>,
}

/// What makes a candidate the executable's debug file.
#[derive(Clone, Copy)]
enum Proof<'a> {
    BuildId(&'a [u8]),
    Crc(u32),
    /// Nothing in the executable to check it by: the debugger's choice is taken as it is.
    DebuggersChoice,
}

/// `debugger_file`: the debug file the debugger itself loaded for the executable, however
/// it found it (debuginfod, `target symbols add`), tried first.
pub fn search(
    executable: &Path,
    object: &object::File<'_>,
    debug_dirs: &[PathBuf],
    debugger_file: Option<&Path>,
) -> Search {
    let mut dirs: Vec<PathBuf> = Vec::new();
    for dir in debug_dirs
        .iter()
        .cloned()
        .chain([PathBuf::from(SYSTEM_DEBUG_DIR)])
    {
        if !dir.as_os_str().is_empty() && !dirs.contains(&dir) {
            dirs.push(dir);
        }
    }
    let build_id = object.build_id().ok().flatten().filter(|id| !id.is_empty());
    let debuglink = object.gnu_debuglink().ok().flatten();
    let mut candidates: Vec<(PathBuf, Proof<'_>)> = Vec::new();
    if let Some(path) = debugger_file {
        let proof = match (build_id, debuglink) {
            (Some(id), _) => Proof::BuildId(id),
            (None, Some((_, crc))) => Proof::Crc(crc),
            (None, None) => Proof::DebuggersChoice,
        };
        candidates.push((path.to_path_buf(), proof));
    }
    if let Some(id) = build_id {
        let hex: String = id.iter().map(|byte| format!("{byte:02x}")).collect();
        let (head, rest) = hex.split_at(2);
        for dir in &dirs {
            candidates.push((
                dir.join(".build-id")
                    .join(head)
                    .join(format!("{rest}.debug")),
                Proof::BuildId(id),
            ));
        }
    }
    if let Some((name, crc)) = debuglink {
        let name = Path::new(std::str::from_utf8(name).unwrap_or_default());
        // The link names a file, never a path; anything else is not followed.
        if name.components().count() == 1 {
            let exe_dir = executable.parent().unwrap_or(Path::new("."));
            let exe_dir = std::fs::canonicalize(exe_dir).unwrap_or_else(|_| exe_dir.to_path_buf());
            candidates.push((exe_dir.join(name), Proof::Crc(crc)));
            candidates.push((exe_dir.join(".debug").join(name), Proof::Crc(crc)));
            for dir in &dirs {
                let relative = exe_dir.strip_prefix("/").unwrap_or(&exe_dir);
                candidates.push((dir.join(relative).join(name), Proof::Crc(crc)));
            }
        }
    }
    let mut looked = Vec::new();
    for (path, proof) in candidates {
        match check(&path, proof, build_id) {
            Ok(map) => {
                return Search {
                    found: Some(DebugFile { path, map }),
                    looked,
                }
            }
            Err(None) => looked.push(path.display().to_string()),
            Err(Some(why)) => looked.push(format!("{} ({why})", path.display())),
        }
    }
    Search {
        found: None,
        looked,
    }
}

/// The candidate mapped, if it is the executable's debug file; else why not (`None`: absent).
fn check(
    path: &Path,
    proof: Proof<'_>,
    build_id: Option<&[u8]>,
) -> Result<memmap2::Mmap, Option<String>> {
    let file = std::fs::File::open(path).map_err(|error| match error.kind() {
        std::io::ErrorKind::NotFound => None,
        _ => Some(error.to_string()),
    })?;
    // SAFETY: mapped read-only, like the executable itself (see `DebugInfo::load`).
    let map = unsafe { memmap2::Mmap::map(&file) }.map_err(|error| Some(error.to_string()))?;
    let object =
        object::File::parse(&*map).map_err(|error| Some(format!("not an object file: {error}")))?;
    let own_id = object.build_id().ok().flatten();
    match proof {
        Proof::BuildId(wanted) if own_id != Some(wanted) => {
            return Err(Some("another build id".into()))
        }
        Proof::Crc(wanted) => {
            let crc = crc32fast::hash(&map);
            if crc != wanted {
                return Err(Some(format!(
                    "CRC {crc:#010x}, the debuglink wants {wanted:#010x}"
                )));
            }
            if let (Some(own), Some(wanted)) = (own_id, build_id) {
                if own != wanted {
                    return Err(Some("another build id".into()));
                }
            }
        }
        _ => {}
    }
    if !elf::has_dwarf(&object) {
        return Err(Some("no DWARF in it".into()));
    }
    drop(object);
    Ok(map)
}
