//! The DWARF layer against real fixture binaries: coroutine layouts, await-point lines,
//! readable names, the tokio context thread-local, and refusals of unusable binaries.

use crate::common;

use tokio_async_core::dwarf::DebugInfo;
use tokio_async_core::error::ErrorKind;
use tokio_async_core::future::coroutine_function;
use tokio_async_core::tokio::context::find_context_variable;

fn load(profile: &str) -> DebugInfo {
    DebugInfo::load(&common::fixture("tokio-app", profile)).expect("fixture loads")
}

#[test]
fn coroutine_env_has_one_variant_per_state_with_await_lines() {
    let markers = common::await_markers();
    let fns = common::fn_markers();
    for profile in ["dev", "release"] {
        let debug = load(profile);
        let level2 = debug
            .type_named("tokio_app::level2::{async_fn_env#0}")
            .unwrap()
            .expect("level2 env");
        let part = level2
            .variant_part
            .as_ref()
            .expect("coroutine variant part");
        let discriminant = part.discriminant.as_ref().unwrap();
        assert_eq!(discriminant.name, "__state");
        let values: Vec<_> = part.variants.iter().map(|v| v.discr_value).collect();
        assert_eq!(
            values,
            vec![Some(0), Some(1), Some(2), Some(3), Some(4)],
            "{profile}"
        );

        // Suspend1 (discriminant 4) is the `.await` on level3, at the marked line.
        let (line, index) = markers["level2"];
        let suspend = part
            .variants
            .iter()
            .find(|v| v.discr_value == Some(3 + index))
            .unwrap();
        let decl = suspend.member.decl.as_ref().unwrap();
        assert_eq!(
            (decl.file.as_str(), decl.line),
            ("tokio-app/src/main.rs", line),
            "{profile}"
        );
        let suspend_type = debug.type_info(suspend.member.ty.unwrap()).unwrap();
        let awaitee = suspend_type.field("__awaitee").expect("__awaitee");
        assert_eq!(
            debug.type_info(awaitee.ty.unwrap()).unwrap().name,
            "tokio_app::level3::{async_fn_env#0}"
        );

        // An unresumed future reports its fn header line.
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
            fns["child_task"],
            "{profile}"
        );
    }
}

#[test]
fn function_names_read_as_in_rust_backtraces() {
    let debug = load("dev");
    let name =
        |env: &str| coroutine_function(&debug, &debug.type_named(env).unwrap().unwrap()).unwrap();
    assert_eq!(
        name("tokio_app::level1::{async_fn_env#0}"),
        "tokio_app::level1"
    );
    assert_eq!(
        name("tokio_app::{impl#0}::serve::{async_fn_env#0}"),
        "tokio_app::Service::serve"
    );
    assert_eq!(
        name("tokio_app::{impl#1}::call::{async_fn_env#0}"),
        "<tokio_app::Service as tokio_app::Handler>::call"
    );
    assert_eq!(
        name("tokio_app::app_main::{async_fn#0}::{async_block_env#0}"),
        "tokio_app::app_main::{async_block#0}"
    );
    assert_eq!(
        name("tokio_app::main::{async_block_env#2}"),
        "tokio_app::main::{async_block#2}"
    );
    assert_eq!(
        name("tokio_app::app_main::{async_fn#0}::{async_block#1}::{closure#0}::{async_closure_env#0}"),
        "tokio_app::app_main::{async_block#1}::{closure#0}"
    );
}

#[test]
fn says_how_tokio_was_built() {
    // The fixtures' default shape: tokio's `full` features (parking_lot among them).
    let debug = load("dev");
    assert_eq!(
        tokio_async_core::tokio::build_shape(&debug),
        "tokio 1.54.1 built with rt-multi-thread, parking_lot; without taskdump, tracing, tokio_unstable"
    );
}

#[test]
fn finds_the_tokio_context_thread_local() {
    for profile in ["dev", "release"] {
        let debug = load(profile);
        let variable = find_context_variable(&debug).expect("CONTEXT found");
        let storage = debug.type_info(variable.storage_type).unwrap();
        // The real variable, not rustc's same-located decoy typed `Context`.
        assert_eq!(
            storage.name,
            "std::sys::thread_local::native::eager::Storage<tokio::runtime::context::Context>"
        );
        let tls = debug.elf.tls.expect("PT_TLS");
        assert!(variable.tls_offset < tls.memsz, "{profile}");
    }
}

#[test]
fn refuses_binaries_without_types_and_programs_without_tokio() {
    let line_tables = common::fixture("tokio-app", "linetables");
    let error = tokio_async_core::tokio::load_program(&line_tables, &[], None, false)
        .map(|_| ())
        .expect_err("no types");
    assert_eq!(error.kind, ErrorKind::NoDebugInfo);
    assert!(
        error.message().contains("debug = true"),
        "{}",
        error.message()
    );

    let plain = DebugInfo::load(&common::fixture("plain-app", "dev")).unwrap();
    let error = find_context_variable(&plain)
        .map(|_| ())
        .expect_err("not tokio");
    assert_eq!(error.kind, ErrorKind::NotTokio);
}

/// A field's type is looked up once: the layout kept on the field is the shared cache's.
#[test]
fn a_fields_type_is_the_cached_layout_kept_on_the_field() {
    let debug = load("dev");
    let header = debug
        .type_named("tokio::runtime::task::core::Header")
        .unwrap()
        .expect("tokio's task header");
    let state = header.field("state").expect("Header.state");
    let first = debug.field_type(state).unwrap();
    let again = debug.field_type(state).unwrap();
    let cached = debug.type_info(state.ty.unwrap()).unwrap();
    assert!(std::sync::Arc::ptr_eq(&first, &again) && std::sync::Arc::ptr_eq(&first, &cached));
    assert_eq!(first.name, "tokio::runtime::task::state::State");
}
