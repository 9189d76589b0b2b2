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
    static BUILT: OnceLock<std::sync::Mutex<HashMap<(String, String), PathBuf>>> = OnceLock::new();
    let built = BUILT.get_or_init(Default::default);
    let mut built = built.lock().unwrap();
    let key = (program.to_string(), profile.to_string());
    if let Some(path) = built.get(&key) {
        return path.clone();
    }
    let target = repo_root().join("target").join("fixtures");
    let status = Command::new(env!("CARGO"))
        .args([
            "build",
            "--quiet",
            "-p",
            program,
            "--profile",
            profile,
            "--target-dir",
        ])
        .arg(&target)
        .current_dir(repo_root().join("tests").join("fixtures"))
        .env_remove("RUSTFLAGS")
        .status()
        .expect("cargo runs");
    assert!(
        status.success(),
        "building fixture {program} ({profile}) failed"
    );
    let dir = match profile {
        "dev" => "debug",
        other => other,
    };
    let path = target.join(dir).join(program);
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
