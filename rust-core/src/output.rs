//! Where a report goes: back to the debugger as one string, or straight into a file
//! (`--output FILE`), written as it is encoded so that a 100 MB report is never held twice
//! nor carried through the debugger's console.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use crate::error::{Error, ErrorKind, Result};
use crate::model::{write_report, Report};
use crate::render::{counted, render_text, render_text_to, TextOptions, View};

#[derive(Debug, Clone)]
pub enum Format {
    Text(TextOptions),
    /// The whole report, or with `View::Task` the selected task's entry alone.
    Json(View),
}

fn encoding_error(error: impl std::fmt::Display) -> Error {
    Error::new(ErrorKind::Internal, format!("cannot encode JSON: {error}"))
}

/// The report as the command prints it.
pub fn to_string(report: &Report, format: &Format) -> Result<String> {
    match format {
        Format::Text(options) => Ok(render_text(report, options)),
        Format::Json(View::Task) => serde_json::to_string(&report.tasks.first())
            .map(|json| json + "\n")
            .map_err(encoding_error),
        Format::Json(_) => {
            let mut json = Vec::new();
            write_report(report, &mut json).map_err(encoding_error)?;
            json.push(b'\n');
            String::from_utf8(json).map_err(encoding_error)
        }
    }
}

/// Writes the report to `path` and returns the one line the command prints instead:
/// `wrote 10000 tasks and 3 threads (JSON, 11.9 MB) to /tmp/tasks.json`.
pub fn to_file(report: &Report, format: &Format, path: &Path) -> Result<String> {
    let failed = |error: std::io::Error| {
        Error::new(
            ErrorKind::Output,
            format!("cannot write {}: {error}", path.display()),
        )
    };
    let mut file = File::create(path).map_err(failed)?;
    match format {
        Format::Text(options) => {
            let mut buffered = BufWriter::with_capacity(1 << 20, &mut file);
            render_text_to(report, options, &mut buffered).map_err(failed)?;
            buffered.flush().map_err(failed)?;
        }
        Format::Json(View::Task) => {
            let mut buffered = BufWriter::with_capacity(1 << 20, &mut file);
            serde_json::to_writer(&mut buffered, &report.tasks.first()).map_err(
                |error| match error.io_error_kind() {
                    Some(kind) => failed(kind.into()),
                    None => encoding_error(error),
                },
            )?;
            buffered.write_all(b"\n").map_err(failed)?;
            buffered.flush().map_err(failed)?;
        }
        // Written in large pieces (`write_report`): no buffer between.
        Format::Json(_) => write_report(report, &mut file)
            .and_then(|()| file.write_all(b"\n"))
            .map_err(|error| match error.raw_os_error() {
                Some(_) => failed(error),
                None => encoding_error(error),
            })?,
    }
    let bytes = file.metadata().map_err(failed)?.len();
    let (what, view) = match format {
        Format::Json(view) => ("JSON", *view),
        Format::Text(options) => ("text", options.view),
    };
    let threads = match view {
        View::Task => String::new(),
        _ => format!(" and {}", counted(report.threads.len(), "thread")),
    };
    Ok(format!(
        "wrote {}{threads} ({what}, {:.1} MB) to {}\n",
        counted(report.tasks_selected(), "task"),
        bytes as f64 / 1e6,
        path.display()
    ))
}

/// Writes folded stacks (`a;b;c count` lines, what inferno-flamegraph and speedscope read)
/// to `path`.
pub fn write_folded(folded: &str, path: &Path) -> Result<()> {
    std::fs::write(path, folded).map_err(|error| {
        Error::new(
            ErrorKind::Output,
            format!("cannot write {}: {error}", path.display()),
        )
    })
}

/// Draws the folded stacks as a flamegraph SVG at `path` (the `inferno` crate).
pub fn write_flamegraph(folded: &str, title: &str, path: &Path) -> Result<()> {
    let failed = |error: std::io::Error| {
        Error::new(
            ErrorKind::Output,
            format!("cannot write {}: {error}", path.display()),
        )
    };
    if folded.trim().is_empty() {
        return Err(Error::new(
            ErrorKind::Output,
            format!("no task was sampled: {} not written", path.display()),
        ));
    }
    let file = BufWriter::new(File::create(path).map_err(failed)?);
    let mut options = inferno::flamegraph::Options::default();
    options.title = title.to_string();
    options.count_name = "task-samples".to_string();
    inferno::flamegraph::from_lines(&mut options, folded.lines(), file).map_err(failed)
}
