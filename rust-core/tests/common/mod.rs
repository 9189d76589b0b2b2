//! Shared by the integration tests: builds the fixture programs (the same ones the
//! debugger tests use) and reads the expectations marked in their source.

#![allow(dead_code)]

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// Builds `program` in `profile` into the shared fixture target dir; returns its path.
pub fn fixture(program: &str, profile: &str) -> PathBuf {
    built(&[program, profile])
}

/// `program` built by the nightly toolchain with DWARF 5 (and frame pointers), in its own
/// target dir.
pub fn dwarf5_fixture(program: &str, profile: &str) -> PathBuf {
    built(&["--dwarf5", program, profile])
}

/// A fixture as the debugger tests build it (`tools/fixture.py`): one cargo command per
/// target dir for both suites, so that neither rebuilds the other's dependencies. Each is
/// asked once per test binary.
fn built(args: &[&str]) -> PathBuf {
    static BUILT: OnceLock<std::sync::Mutex<HashMap<Vec<String>, PathBuf>>> = OnceLock::new();
    let built = BUILT.get_or_init(Default::default);
    let mut built = built
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let key: Vec<String> = args.iter().map(|arg| arg.to_string()).collect();
    if let Some(path) = built.get(&key) {
        return path.clone();
    }
    let python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".to_string());
    let output = Command::new(python)
        .arg(repo_root().join("tools").join("fixture.py"))
        .args(args)
        // rustup picks the fixtures' toolchain only if cargo's own variables do not pin
        // the one running these tests.
        .env_remove("RUSTC")
        .env_remove("RUSTDOC")
        .env_remove("CARGO")
        .env_remove("RUSTUP_TOOLCHAIN")
        .env_remove("RUSTFLAGS")
        .output()
        .expect("python3 runs tools/fixture.py");
    assert!(
        output.status.success(),
        "building fixture {args:?} failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let path = PathBuf::from(String::from_utf8_lossy(&output.stdout).trim());
    built.insert(key, path.clone());
    path
}

/// `// @await NAME #N` markers of the tokio-app fixture: name -> (line, await index).
pub fn await_markers() -> HashMap<String, (u64, u64)> {
    markers("await")
        .into_iter()
        .map(|(name, (line, index))| (name, (line, index.expect("await markers carry #N"))))
        .collect()
}

/// `// @fn NAME` markers: name -> line.
pub fn fn_markers() -> HashMap<String, u64> {
    markers("fn")
        .into_iter()
        .map(|(name, (line, _))| (name, line))
        .collect()
}

fn markers(kind: &str) -> HashMap<String, (u64, Option<u64>)> {
    let source =
        std::fs::read_to_string(repo_root().join("tests/fixtures/tokio-app/src/main.rs")).unwrap();
    let tag = format!("// @{kind} ");
    let mut found = HashMap::new();
    for (number, line) in source.lines().enumerate() {
        if line.trim_start().starts_with("//!") {
            continue;
        }
        if let Some(position) = line.find(&tag) {
            let mut words = line[position + tag.len()..].split_whitespace();
            let name = words.next().unwrap().to_string();
            let index = words
                .next()
                .and_then(|w| w.strip_prefix('#'))
                .map(|n| n.parse().unwrap());
            found.insert(name, (number as u64 + 1, index));
        }
    }
    found
}
