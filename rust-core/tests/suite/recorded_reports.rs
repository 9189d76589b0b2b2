//! The reports of every recorded stop (`fuzz/images/*.img`), byte for byte: JSON and text,
//! as `async bt all full --json`, `async bt all --group`, `async tasks` and `async waits`
//! print them, compared with `fuzz/reports/NAME.txt`. A change to the core that changes
//! what a user sees on a stop shows here as a diff; one meant to change it records the
//! reports again with `TOKIO_ASYNC_RECORD_REPORTS=1 cargo test --test recorded_reports`
//! (also after `make fuzz-images`), and the diff goes into the commit.

use crate::common;
use crate::fuzzing;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use fuzzing::{Harness, Image, PatchedMemory, RequestOptions};
use tokio_async_core::inspect::inspect;
use tokio_async_core::output::{self, Format};
use tokio_async_core::render::{TextOptions, View};

/// What varies between machines, not between builds of the core: where cargo keeps the
/// registry's sources and where this checkout is.
fn machine_independent(text: &str) -> String {
    let mut text = text.replace(&common::repo_root().display().to_string(), "$REPO");
    let home = std::env::var("CARGO_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|_| Path::new(&std::env::var("HOME").unwrap_or_default()).join(".cargo"));
    text = text.replace(
        &home.join("registry").join("src").display().to_string(),
        "$REGISTRY",
    );
    text
}

/// The report sections of one stop, in one text.
fn reports(harness: &Harness, image: &Image) -> String {
    let debug = harness.debug_info(&image.program, &image.profile);
    let memory = PatchedMemory { image, writes: &[] };
    let mut out = String::new();
    let mut section = |title: &str, options: RequestOptions, format: Format| {
        let _ = writeln!(out, "=== {title}");
        match inspect(debug, &memory, image.load_bias, &image.request(options)) {
            Ok(report) => out.push_str(
                &output::to_string(&report, &format).unwrap_or_else(|error| error.message()),
            ),
            Err(error) => {
                let _ = writeln!(out, "error ({}): {}", error.kind.as_str(), error.message());
            }
        }
    };
    let text = |view| {
        Format::Text(TextOptions {
            locals: false,
            view,
            style: Default::default(),
        })
    };
    let full = RequestOptions {
        all: true,
        locals: true,
        group: false,
        wait_edges: false,
    };
    let plain = RequestOptions {
        all: true,
        locals: false,
        group: false,
        wait_edges: false,
    };
    let grouped = RequestOptions {
        all: true,
        locals: false,
        group: true,
        wait_edges: false,
    };
    let waits = RequestOptions {
        all: true,
        locals: false,
        group: false,
        wait_edges: true,
    };
    let running = RequestOptions {
        all: false,
        locals: false,
        group: false,
        wait_edges: false,
    };
    section(
        "async backtrace all full --json",
        full,
        Format::Json(View::Backtrace),
    );
    section("async waits --json", waits, Format::Json(View::Waits));
    section(
        "async backtrace --json",
        running,
        Format::Json(View::Backtrace),
    );
    section(
        "async backtrace all full",
        full,
        Format::Text(TextOptions {
            locals: true,
            view: View::Backtrace,
            style: Default::default(),
        }),
    );
    section("async backtrace all", plain, text(View::Backtrace));
    section(
        "async backtrace all --group",
        grouped,
        text(View::Backtrace),
    );
    section("async tasks", plain, text(View::Tasks));
    section("async tasks --group", grouped, text(View::Tasks));
    section("async waits", waits, text(View::Waits));
    machine_independent(&out)
}

/// Where two texts first differ: the line, and a little of each around that place (a JSON
/// report is one long line).
fn first_difference(recorded: &str, now: &str) -> String {
    let at = recorded
        .bytes()
        .zip(now.bytes())
        .position(|(a, b)| a != b)
        .unwrap_or(recorded.len().min(now.len()));
    let line = recorded[..at].matches('\n').count() + 1;
    let excerpt = |text: &str| {
        let start = text.floor_char_boundary(at.saturating_sub(80));
        let end = text.ceil_char_boundary((at + 80).min(text.len()));
        text[start..end].replace('\n', "⏎")
    };
    format!(
        "line {line}:\n  recorded: …{}…\n  now:      …{}…",
        excerpt(recorded),
        excerpt(now)
    )
}

#[test]
fn every_recorded_stop_reports_as_recorded() {
    let harness = Harness::new(&fuzzing::fuzz_dir().join("images"), common::fixture);
    assert!(
        harness.images.len() >= 8,
        "only {} recorded stops",
        harness.images.len()
    );
    let dir = fuzzing::fuzz_dir().join("reports");
    let record = std::env::var_os("TOKIO_ASYNC_RECORD_REPORTS").is_some();
    let mut differing = Vec::new();
    for image in &harness.images {
        let path = dir.join(format!("{}.txt", image.name));
        let now = reports(&harness, image);
        // Every fixture's layouts are in the table: nothing was found by a field search.
        assert!(
            !now.contains("\"field_search\""),
            "{}: a field search was needed",
            image.name
        );
        if record {
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(&path, &now).unwrap();
            continue;
        }
        let recorded = std::fs::read_to_string(&path).unwrap_or_else(|error| {
            panic!(
                "{}: {error} (record it: TOKIO_ASYNC_RECORD_REPORTS=1)",
                path.display()
            )
        });
        if recorded != now {
            differing.push(format!(
                "{}: {}",
                image.name,
                first_difference(&recorded, &now)
            ));
        }
    }
    assert!(
        differing.is_empty(),
        "reports differ from fuzz/reports:\n{}",
        differing.join("\n")
    );
}
