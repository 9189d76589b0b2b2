//! Names as a person reads them: function paths as in Rust's own backtraces
//! (`app::Handler::run`, not DWARF's `app::{impl#3}::run`), and short source paths.

/// What kind of coroutine an env type is, judged by rustc's naming.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CoroutineKind {
    AsyncFn,
    AsyncBlock,
    AsyncClosure,
}

impl CoroutineKind {
    pub fn as_str(self) -> &'static str {
        match self {
            CoroutineKind::AsyncFn => "async_fn",
            CoroutineKind::AsyncBlock => "async_block",
            CoroutineKind::AsyncClosure => "async_closure",
        }
    }
}

/// Splits a Rust path at `::` outside of `<...>`, `(...)` and `[...]`.
pub fn split_path(path: &str) -> Vec<&str> {
    let bytes = path.as_bytes();
    let mut depth = 0i32;
    let mut segments = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'<' | b'(' | b'[' => depth += 1,
            // `->` in `fn(A) -> B` closes nothing.
            b'>' if i > 0 && bytes[i - 1] == b'-' => {}
            b'>' | b')' | b']' => depth -= 1,
            b':' if depth == 0 && bytes.get(i + 1) == Some(&b':') => {
                segments.push(&path[start..i]);
                i += 2;
                start = i;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    segments.push(&path[start..]);
    segments
}

/// `{async_fn_env#0}<u64>` -> (`{async_fn_env#0}`, kind).
fn coroutine_segment(segment: &str) -> Option<(&str, CoroutineKind)> {
    let base = segment.split('<').next().unwrap_or(segment);
    let kind = if base.starts_with("{async_fn_env#") {
        CoroutineKind::AsyncFn
    } else if base.starts_with("{async_block_env#") {
        CoroutineKind::AsyncBlock
    } else if base.starts_with("{async_closure_env#") {
        CoroutineKind::AsyncClosure
    } else {
        return None;
    };
    Some((base, kind))
}

/// The coroutine kind of a type name, if it names a coroutine env.
pub fn coroutine_kind(type_name: &str) -> Option<CoroutineKind> {
    let segments = split_path(type_name);
    coroutine_segment(segments.last()?).map(|(_, kind)| kind)
}

/// The name of the function that resumes a coroutine env, generics dropped:
/// `app::run::{async_fn_env#0}<u8>` -> `app::run::{async_fn#0}`.
pub fn resume_function_name(env_type: &str) -> String {
    let path = strip_last_generics(env_type);
    match path.rsplit_once("::") {
        Some((scope, env)) => format!("{scope}::{}", env.replace("_env#", "#")),
        None => path.replace("_env#", "#"),
    }
}

/// A symbol's demangled path without its hash (legacy or v0 mangling; other names as they are).
pub fn demangle(symbol: &str) -> String {
    format!("{:#}", rustc_demangle::demangle(symbol))
}

/// DWARF paths name impl blocks `{impl#N}`; the demangled linkage name of the same function
/// names the type instead (`Mutex<T>`, `<app::Foo as app::Trait>`). The segments after the
/// last `{impl#N}` correspond one to one, so take the demangled prefix before them.
pub fn replace_impl_segments(dwarf_path: &[String], linkage_name: &str) -> Vec<String> {
    let Some(last_impl) = dwarf_path
        .iter()
        .rposition(|segment| segment.starts_with("{impl#"))
    else {
        return dwarf_path.to_vec();
    };
    let demangled = demangle(linkage_name);
    let demangled_segments = split_path(&demangled);
    let tail = &dwarf_path[last_impl + 1..];
    if demangled_segments.len() <= tail.len() {
        return dwarf_path.to_vec();
    }
    let mut head = &demangled_segments[..demangled_segments.len() - tail.len()];
    // v0 mangling (nightly's default) writes an inherent impl's type as `<app::Service>`,
    // where the legacy scheme writes `app::Service`: read both alike.
    let inherent: Vec<&str>;
    if let [only] = head {
        if let Some(inner) = only
            .strip_prefix('<')
            .and_then(|rest| rest.strip_suffix('>'))
        {
            if !inner.contains(" as ") {
                inherent = split_path(inner);
                head = &inherent;
            }
        }
    }
    head.iter()
        .map(|s| s.to_string())
        .chain(tail.iter().cloned())
        .collect()
}

/// Whether a function path names the resume function of a coroutine (or a closure):
/// `app::run::{async_fn#0}`, `app::main::{async_block#1}`, `app::f::{closure#0}`.
pub fn is_coroutine_body_path(path: &str) -> bool {
    is_coroutine_body_name(split_path(path).pop().unwrap_or_default())
}

/// Names rustc gives the resume functions of coroutines and closures.
pub fn is_coroutine_body_name(name: &str) -> bool {
    ["{async_fn#", "{async_block#", "{closure#"]
        .iter()
        .any(|prefix| name.starts_with(prefix))
}

/// `a::b::f<T, U>` -> `a::b::f` (only the last segment's generic arguments).
pub fn strip_last_generics(path: &str) -> String {
    let mut segments: Vec<&str> = split_path(path);
    let last = segments.pop().unwrap_or_default();
    let base = last.split('<').next().unwrap_or(last);
    segments.push(base);
    segments.join("::")
}

/// Where cargo unpacks dependencies: registry sources and git checkouts.
const DEPENDENCY_DIRS: &[&str] = &["/.cargo/registry/src/", "/.cargo/git/checkouts/"];

/// Whether a directory is a dependency's source (not the user's workspace).
pub fn is_dependency_dir(dir: &str) -> bool {
    DEPENDENCY_DIRS.iter().any(|marker| dir.contains(marker))
}

/// Code of the program itself, not of a dependency or the standard library (a full path).
pub fn is_users_own(path: &str) -> bool {
    !is_dependency_dir(path) && !path.starts_with("/rustc/")
}

/// The version of crate `name` in a source path of a dependency:
/// `/root/.cargo/registry/src/index…/tokio-1.54.1/src/lib.rs` -> `1.54.1`.
pub fn crate_version(path: &str, name: &str) -> Option<String> {
    let marker = format!("/{name}-");
    path.match_indices(&marker).find_map(|(at, _)| {
        let rest = &path[at + marker.len()..];
        let version = &rest[..rest.find('/')?];
        let numeric = version.split(['-', '+']).next()?;
        (numeric.split('.').count() == 3
            && numeric.split('.').all(|part| part.parse::<u64>().is_ok()))
        .then(|| version.to_string())
    })
}

/// A source path shortened for display: registry sources from the crate directory on
/// (`tokio-1.54.1/src/time/sleep.rs`), the standard library from `library/` on; paths the
/// DWARF already gives relative to the workspace stay as they are. Files a build script
/// generated keep their package directory on (`app-c804c2a232c6273c/out/reports.rs`), so
/// where the checkout lives does not show.
pub fn short_path(path: &str) -> String {
    if let Some(generated) = build_script_output(path) {
        return generated.to_string();
    }
    if let Some(position) = path.find("/.cargo/registry/src/") {
        let rest = &path[position + "/.cargo/registry/src/".len()..];
        if let Some(slash) = rest.find('/') {
            return rest[slash + 1..].to_string();
        }
    }
    if let Some(position) = path.find("/.cargo/git/checkouts/") {
        let rest = &path[position + "/.cargo/git/checkouts/".len()..];
        let mut parts = rest.splitn(3, '/');
        if let (Some(_), Some(_), Some(inner)) = (parts.next(), parts.next(), parts.next()) {
            return inner.to_string();
        }
    }
    if let Some(rest) = path.strip_prefix("/rustc/") {
        if let Some(slash) = rest.find('/') {
            return rest[slash + 1..].to_string();
        }
    }
    path.to_string()
}

/// `…/target/debug/build/app-c804c2a232c6273c/out/reports.rs` ->
/// `app-c804c2a232c6273c/out/reports.rs`: cargo's `OUT_DIR` layout, `build/<package>-<hash>/out/`.
fn build_script_output(path: &str) -> Option<&str> {
    let mut search_from = 0;
    while let Some(found) = path[search_from..].find("/build/") {
        let package_dir = search_from + found + "/build/".len();
        let rest = &path[package_dir..];
        let directory = rest
            .find('/')
            .map(|slash| (slash, rest[..slash].rsplit_once('-')));
        if let Some((slash, Some((package, hash)))) = directory {
            if !package.is_empty()
                && hash.len() == 16
                && hash.bytes().all(|byte| byte.is_ascii_hexdigit())
                && rest[slash..].starts_with("/out/")
            {
                return Some(rest);
            }
        }
        search_from = package_dir;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_paths_outside_generics() {
        assert_eq!(
            split_path("a::B<c::D, e::F>::g::{async_fn_env#0}<u64>"),
            vec!["a", "B<c::D, e::F>", "g", "{async_fn_env#0}<u64>"]
        );
        assert_eq!(
            split_path("<app::Foo as app::Trait>::run"),
            vec!["<app::Foo as app::Trait>", "run"]
        );
        assert_eq!(
            split_path("tower::ServiceFn<fn(u32) -> app::call::{async_fn_env#0}>"),
            vec!["tower", "ServiceFn<fn(u32) -> app::call::{async_fn_env#0}>"]
        );
        assert_eq!(
            coroutine_kind("tower::ServiceFn<fn(u32) -> app::call::{async_fn_env#0}>"),
            None
        );
    }

    #[test]
    fn impl_segments_take_the_demangled_type() {
        let path: Vec<String> = [
            "tokio",
            "sync",
            "mutex",
            "{impl#10}",
            "lock",
            "{async_fn#0}",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        // _ZN...Mutex$LT$T$GT$4lock28_$u7b$$u7b$closure$u7d$$u7d$17h...E
        let linkage = "_ZN5tokio4sync5mutex14Mutex$LT$T$GT$4lock28_$u7b$$u7b$closure$u7d$$u7d$17h0123456789abcdefE";
        assert_eq!(
            replace_impl_segments(&path, linkage).join("::"),
            "tokio::sync::mutex::Mutex<T>::lock::{async_fn#0}"
        );
    }

    #[test]
    fn inherent_impls_read_alike_in_v0_and_legacy_mangling() {
        let path: Vec<String> = ["tokio_app", "{impl#0}", "serve", "{async_fn#0}"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        // `<tokio_app::Service>::serve::{closure#0}` in v0.
        let v0 = "_RNCNvMCs3NPwzK4SogI_9tokio_appNtB4_7Service5serve0B4_";
        assert_eq!(
            replace_impl_segments(&path, v0).join("::"),
            "tokio_app::Service::serve::{async_fn#0}"
        );
        let legacy =
            "_ZN9tokio_app7Service5serve28_$u7b$$u7b$closure$u7d$$u7d$17h0123456789abcdefE";
        assert_eq!(
            replace_impl_segments(&path, legacy).join("::"),
            "tokio_app::Service::serve::{async_fn#0}"
        );
    }

    #[test]
    fn reads_crate_versions_from_source_paths() {
        let path = "/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/tokio-1.54.1/src/lib.rs/@/tokio.1-cgu.0";
        assert_eq!(crate_version(path, "tokio").as_deref(), Some("1.54.1"));
        assert_eq!(
            crate_version("/x/tokio-stream-0.1.19/src/lib.rs", "tokio"),
            None
        );
        assert_eq!(
            crate_version("/x/tokio-macros-2.6.0/src/lib.rs", "tokio"),
            None
        );
        assert_eq!(
            crate_version("/work/vendor/tokio/src/lib.rs", "tokio"),
            None
        );
    }

    #[test]
    fn shortens_registry_and_std_paths() {
        assert_eq!(
            short_path("/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/tokio-1.54.1/src/time/sleep.rs"),
            "tokio-1.54.1/src/time/sleep.rs"
        );
        assert_eq!(
            short_path("/rustc/59807616e/library/core/src/future/mod.rs"),
            "library/core/src/future/mod.rs"
        );
        assert_eq!(short_path("tokio-app/src/main.rs"), "tokio-app/src/main.rs");
    }

    #[test]
    fn shortens_build_script_output_to_its_package_directory() {
        assert_eq!(
            short_path("/work/x/target/debug/build/services-app-c804c2a232c6273c/out/reports.rs"),
            "services-app-c804c2a232c6273c/out/reports.rs"
        );
        // Not cargo's layout: left alone.
        assert_eq!(
            short_path("/src/build/x/build/tools-1/out/a.rs"),
            "/src/build/x/build/tools-1/out/a.rs"
        );
        assert_eq!(
            short_path("/src/build/app-c804c2a232c6273c/src/a.rs"),
            "/src/build/app-c804c2a232c6273c/src/a.rs"
        );
    }
}
