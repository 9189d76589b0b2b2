//! Where the stepping commands stop, from the DWARF of the stepping-app fixture: each
//! coroutine's resume function entries and the registers holding its address there, the
//! line its dispatch is written on, what a line awaits, and what an optimized build lacks.

use crate::common;

use object::{Object, ObjectSymbol};
use tokio_async_core::dwarf::DebugInfo;
use tokio_async_core::stepping::{awaitees_at_line, coroutine_at, has_returned};

fn step_markers() -> std::collections::HashMap<String, u64> {
    let source = std::fs::read_to_string(
        common::repo_root().join("tests/fixtures/stepping-app/src/main.rs"),
    )
    .unwrap();
    let mut found = std::collections::HashMap::new();
    for (number, line) in source.lines().enumerate() {
        for tag in ["// @step ", "// @fn "] {
            if let Some(position) = line.find(tag) {
                let name = line[position + tag.len()..]
                    .split_whitespace()
                    .next()
                    .unwrap();
                found.insert(name.to_string(), number as u64 + 1);
            }
        }
    }
    found
}

/// The address of the resume function of `stepping_app::NAME` from the symbol table
/// (legacy mangling: `stepping_app::NAME::{{closure}}`).
fn resume_symbol(path: &std::path::Path, name: &str) -> u64 {
    let bytes = std::fs::read(path).unwrap();
    let file = object::File::parse(&*bytes).unwrap();
    let wanted = format!("stepping_app::{name}::{{{{closure}}}}");
    let found: Vec<u64> = file
        .symbols()
        .filter(|symbol| {
            symbol
                .name()
                .is_ok_and(|mangled| format!("{:#}", rustc_demangle::demangle(mangled)) == wanted)
        })
        .map(|symbol| symbol.address())
        .collect();
    assert_eq!(found.len(), 1, "{wanted}: {found:x?}");
    found[0]
}

#[test]
fn a_debug_build_stops_at_each_resume_function_with_the_argument_registers() {
    let path = common::fixture("stepping-app", "dev");
    let debug = DebugInfo::load(&path).unwrap();
    let markers = step_markers();
    for name in ["level1", "level2", "level3"] {
        let env = debug
            .type_named(&format!("stepping_app::{name}::{{async_fn_env#0}}"))
            .unwrap()
            .unwrap();
        let coroutine = coroutine_at(&debug, &env, 0x7000_0000, 0x1000);
        assert_eq!(coroutine.function, format!("stepping_app::{name}"));
        assert_eq!(coroutine.declared_line, Some(markers[name]));
        assert_eq!(
            coroutine.declared_file.as_deref(),
            Some("stepping-app/src/main.rs")
        );
        assert_eq!(coroutine.unstoppable, None);
        // One out-of-line copy, at its symbol (plus the load bias); the address is in the
        // first argument register, or the second when the return value is indirect.
        assert_eq!(coroutine.stops.len(), 1, "{:?}", coroutine.stops);
        assert_eq!(
            coroutine.stops[0].address,
            resume_symbol(&path, name) + 0x1000
        );
        assert_eq!(coroutine.stops[0].registers, ["rdi", "rsi"]);
        assert_eq!(
            (coroutine.state_size, coroutine.state_offset.is_some()),
            (1, true)
        );
    }
}

#[test]
fn what_a_line_awaits() {
    let debug = DebugInfo::load(&common::fixture("stepping-app", "dev")).unwrap();
    let markers = step_markers();
    let level3 = debug
        .type_named("stepping_app::level3::{async_fn_env#0}")
        .unwrap()
        .unwrap();
    let size = level3.size.unwrap();
    // An async fn of tokio's, inside level3's own state.
    let (awaited, lock) = awaitees_at_line(&debug, &level3, 0x5000, markers["lock"], 0).unwrap();
    assert!(awaited.unwrap().ends_with("lock::{async_fn_env#0}<u64>"));
    assert_eq!(lock.len(), 1);
    assert_eq!(lock[0].function, "tokio::sync::mutex::Mutex<T>::lock");
    assert!(
        (0x5000..0x5000 + size).contains(&lock[0].address),
        "{:#x}",
        lock[0].address
    );
    assert!(!lock[0].stops.is_empty());
    // A future that is no async fn; a line that awaits nothing.
    let (awaited, none) = awaitees_at_line(&debug, &level3, 0x5000, markers["sleep"], 0).unwrap();
    assert_eq!(
        (awaited.as_deref(), none.len()),
        (Some("tokio::time::sleep::Sleep"), 0)
    );
    let (awaited, none) = awaitees_at_line(&debug, &level3, 0x5000, markers["bump"], 0).unwrap();
    assert_eq!((awaited, none.len()), (None, 0));
    // level2's line awaits level3, at the start of its state's variant for that await.
    let level2 = debug
        .type_named("stepping_app::level2::{async_fn_env#0}")
        .unwrap()
        .unwrap();
    let (_, call) = awaitees_at_line(&debug, &level2, 0x9000, markers["call3"], 0).unwrap();
    assert_eq!(call.len(), 1);
    assert_eq!(call[0].function, "stepping_app::level3");
}

#[test]
fn a_release_build_says_when_a_resume_function_was_inlined_away() {
    let debug = DebugInfo::load(&common::fixture("stepping-app", "release")).unwrap();
    let level3 = debug
        .type_named("stepping_app::level3::{async_fn_env#0}")
        .unwrap()
        .unwrap();
    let coroutine = coroutine_at(&debug, &level3, 0x7000_0000, 0);
    assert!(coroutine.stops.is_empty());
    assert_eq!(
        coroutine.unstoppable.as_deref(),
        Some(
            "stepping_app::level3's resume function is inlined into its callers in this build, \
             and the debug info does not say where the coroutine's address is at their start; \
             rebuild with less optimization (opt-level 1) to follow it"
        )
    );
}

#[test]
fn the_returned_state_is_discriminant_one() {
    assert!(has_returned(&[1]));
    assert!(!has_returned(&[0]));
    assert!(!has_returned(&[3]));
    assert!(has_returned(&[1, 0]));
}
