//! Debug information where real builds put it: split DWARF (`.dwp`, `.dwo`), a separate
//! debug file (debuglink, build id), compressed sections, DWARF 5. Each variant of the
//! tokio-app fixture must give the DWARF layer the same answers as the plain dev build.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use tokio_async_core::dwarf::DebugInfo;
use tokio_async_core::error::ErrorKind;
use tokio_async_core::tokio::context::find_context_variable;

/// What the layers above ask the DWARF layer about the fixture, in a comparable form: every
/// fixture type's layout (fields, offsets, field types, enum variants, declaration lines),
/// the tokio context thread-local, the lines of calls in coroutine bodies, and the tokio version.
fn answers(debug: &DebugInfo) -> Vec<String> {
    let mut out = Vec::new();
    for name in debug.type_names_with_prefix("tokio_app::") {
        let info = debug.type_named(&name).unwrap().unwrap();
        let type_name = |die| {
            debug
                .type_info(die)
                .map(|t| t.name.clone())
                .unwrap_or_default()
        };
        out.push(format!(
            "type {name} size {:?} target {:?}",
            info.size,
            info.target.map(type_name)
        ));
        for field in &info.fields {
            out.push(format!(
                "  field {} +{} {:?} {:?}",
                field.name,
                field.offset,
                field.ty.map(type_name),
                field.decl
            ));
        }
        for variant in info.variant_part.iter().flat_map(|part| &part.variants) {
            let member = &variant.member;
            out.push(format!(
                "  variant {:?} {} {:?} {:?}",
                variant.discr_value,
                member.name,
                member.ty.map(type_name),
                member.decl
            ));
        }
    }
    let context = find_context_variable(debug).expect("tokio CONTEXT found");
    out.push(format!(
        "context +{} {}",
        context.tls_offset,
        debug.type_info(context.storage_type).unwrap().name
    ));
    let level2 = debug
        .type_by_name("tokio_app::level2::{async_fn_env#0}", None)
        .expect("level2's env");
    let mut calls: Vec<String> = debug
        .call_sites_in("tokio_app::level2::{async_fn#0}", level2)
        .iter()
        .map(|site| format!("call at {:?}", site.location))
        .collect();
    calls.sort();
    calls.dedup();
    assert!(!calls.is_empty(), "the call scan found calls");
    out.extend(calls);
    out.push(format!(
        "tokio {:?}",
        tokio_async_core::tokio::version(debug)
    ));
    out
}

fn assert_same_answers(variant: &Path, expected: &[String]) {
    let debug = DebugInfo::load(variant)
        .unwrap_or_else(|error| panic!("{}: {}", variant.display(), error.message()));
    assert!(debug.load_problems.is_empty(), "{:?}", debug.load_problems);
    let got = answers(&debug);
    for (got, expected) in got.iter().zip(expected) {
        assert_eq!(got, expected, "{}", variant.display());
    }
    assert_eq!(got.len(), expected.len(), "{}", variant.display());
}

fn dev_answers() -> Vec<String> {
    let debug = DebugInfo::load(&common::fixture("tokio-app", "dev")).unwrap();
    let answers = answers(&debug);
    assert!(answers.len() > 100, "the fixture has its types");
    answers
}

#[test]
fn split_dwarf_packed_and_unpacked_give_the_dev_answers() {
    let expected = dev_answers();
    for profile in ["split-packed", "split-unpacked"] {
        assert_same_answers(&common::fixture("tokio-app", profile), &expected);
    }
}

/// A scratch directory under the fixture target dir, emptied.
fn scratch(name: &str) -> PathBuf {
    let dir = common::repo_root()
        .join("target")
        .join("fixtures")
        .join("debug-files-rust")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn run(program: &str, args: &[&std::ffi::OsStr]) {
    let status = Command::new(program)
        .args(args)
        .status()
        .unwrap_or_else(|error| panic!("{program}: {error}"));
    assert!(status.success(), "{program} {args:?}");
}

fn build_id_path(binary: &Path) -> String {
    let output = Command::new("readelf")
        .arg("-n")
        .arg(binary)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&output.stdout);
    let id = text
        .lines()
        .find_map(|line| line.trim().strip_prefix("Build ID: "))
        .expect("the fixture has a build id");
    format!(".build-id/{}/{}.debug", &id[..2], &id[2..])
}

#[test]
fn separate_debug_files_by_debuglink_and_by_build_id() {
    let expected = dev_answers();
    let dev = common::fixture("tokio-app", "dev");
    let dir = scratch("separate");
    let binary = dir.join("tokio-app");
    let debug_file = dir.join("tokio-app.debug");
    std::fs::copy(&dev, &binary).unwrap();
    run(
        "objcopy",
        &[
            "--only-keep-debug".as_ref(),
            binary.as_os_str(),
            debug_file.as_os_str(),
        ],
    );
    run("strip", &["--strip-debug".as_ref(), binary.as_os_str()]);
    let link = format!("--add-gnu-debuglink={}", debug_file.display());
    run("objcopy", &[link.as_ref(), binary.as_os_str()]);

    // Next to the executable, found by its debuglink.
    assert_same_answers(&binary, &expected);
    let debug = DebugInfo::load(&binary).unwrap();
    assert_eq!(debug.debug_file.as_deref(), Some(debug_file.as_path()));

    // In its .debug/ subdirectory.
    std::fs::create_dir(dir.join(".debug")).unwrap();
    std::fs::rename(&debug_file, dir.join(".debug/tokio-app.debug")).unwrap();
    assert_same_answers(&binary, &expected);

    // A debug file whose CRC does not match is refused, and the error names where it looked.
    let other = dir.join(".debug/tokio-app.debug");
    let mut bytes = std::fs::read(&other).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    std::fs::write(&other, &bytes).unwrap();
    let error = DebugInfo::load_searching(&binary, &[dir.join("no-such-dir")])
        .map(|_| ())
        .expect_err("CRC mismatch");
    assert_eq!(error.kind, ErrorKind::NoDebugInfo);
    assert!(
        error.message().contains("tokio-app.debug (CRC 0x"),
        "{}",
        error.message()
    );
    assert!(
        error
            .message()
            .contains(&format!("{}/no-such-dir/.build-id/", dir.display())),
        "{}",
        error.message()
    );

    // By build id under a debug directory given by the debugger (all symbols stripped too).
    let by_id = scratch("separate-build-id");
    let stripped = by_id.join("tokio-app");
    std::fs::copy(&dev, &stripped).unwrap();
    let debug_dir = by_id.join("debug");
    let target = debug_dir.join(build_id_path(&stripped));
    std::fs::create_dir_all(target.parent().unwrap()).unwrap();
    run(
        "objcopy",
        &[
            "--only-keep-debug".as_ref(),
            stripped.as_os_str(),
            target.as_os_str(),
        ],
    );
    run("strip", &["--strip-all".as_ref(), stripped.as_os_str()]);
    let debug = DebugInfo::load_searching(&stripped, std::slice::from_ref(&debug_dir)).unwrap();
    assert_eq!(debug.debug_file.as_deref(), Some(target.as_path()));
    // Symbols (the CONTEXT thread-local's linkage name) came from the debug file.
    assert_eq!(answers(&debug), expected);
    let error = DebugInfo::load(&stripped)
        .map(|_| ())
        .expect_err("not in the system's dir");
    assert!(
        error
            .message()
            .contains("no separate debug file at /usr/lib/debug/.build-id/"),
        "{}",
        error.message()
    );
}

#[test]
fn compressed_debug_sections_zlib_and_zstd() {
    let expected = dev_answers();
    let dev = common::fixture("tokio-app", "dev");
    let dir = scratch("compressed");
    for kind in ["zlib", "zstd"] {
        let binary = dir.join(format!("tokio-app-{kind}"));
        let flag = format!("--compress-debug-sections={kind}");
        run(
            "objcopy",
            &[flag.as_ref(), dev.as_os_str(), binary.as_os_str()],
        );
        let header = Command::new("readelf")
            .arg("-t")
            .arg(&binary)
            .output()
            .unwrap();
        let wanted = if kind == "zlib" { "ZLIB" } else { "ZSTD" };
        assert!(
            String::from_utf8_lossy(&header.stdout).contains(wanted),
            "objcopy compressed with {kind}"
        );
        assert_same_answers(&binary, &expected);
    }
}

/// The fixture built by the nightly toolchain with `-Zdwarf-version=5`, in its own target dir.
fn dwarf5_fixture(profile: &str) -> PathBuf {
    common::dwarf5_fixture("tokio-app", profile)
}

#[test]
fn dwarf5_units_give_layouts_lines_and_the_context() {
    let binary = dwarf5_fixture("dev");
    // Sections only DWARF 5 has (std's own units stay DWARF 4: it is not rebuilt).
    let sections = Command::new("readelf")
        .arg("-S")
        .arg("-W")
        .arg(&binary)
        .output()
        .unwrap();
    let sections = String::from_utf8_lossy(&sections.stdout);
    for section in [
        ".debug_str_offsets",
        ".debug_rnglists",
        ".debug_line_str",
        ".debug_loclists",
    ] {
        assert!(
            sections.contains(&format!(" {section} ")),
            "a DWARF 5 build has {section}"
        );
    }
    let debug = DebugInfo::load(&binary).unwrap();
    let markers = common::await_markers();
    let fns = common::fn_markers();
    let level2 = debug
        .type_named("tokio_app::level2::{async_fn_env#0}")
        .unwrap()
        .expect("level2 env");
    let part = level2
        .variant_part
        .as_ref()
        .expect("coroutine variant part");
    let (line, index) = markers["level2"];
    let suspend = part
        .variants
        .iter()
        .find(|v| v.discr_value == Some(3 + index))
        .unwrap();
    let decl = suspend.member.decl.as_ref().unwrap();
    assert_eq!(
        (decl.file.as_str(), decl.line),
        ("tokio-app/src/main.rs", line)
    );
    let child = debug
        .type_named("tokio_app::child_task::{async_fn_env#0}")
        .unwrap()
        .unwrap();
    let unresumed = child
        .variant_part
        .as_ref()
        .unwrap()
        .variants
        .iter()
        .find(|v| v.discr_value == Some(0))
        .unwrap();
    assert_eq!(
        unresumed.member.decl.as_ref().unwrap().line,
        fns["child_task"]
    );
    // Same answers as the stable dev build for every fixture type and the context; the
    // compilers differ, so only the call lines (codegen) may differ.
    let expected: Vec<String> = dev_answers()
        .into_iter()
        .filter(|line| !line.starts_with("call at"))
        .collect();
    let got: Vec<String> = answers(&debug)
        .into_iter()
        .filter(|line| !line.starts_with("call at"))
        .collect();
    assert_eq!(got, expected);
}

#[test]
fn dwarf5_split_units_give_the_dwarf5_answers() {
    // DWARF 5's own split form: DW_UT_skeleton units naming .dwo files by DW_AT_dwo_name.
    let expected = answers(&DebugInfo::load(&dwarf5_fixture("dev")).unwrap());
    assert_same_answers(&dwarf5_fixture("split-unpacked"), &expected);
}
