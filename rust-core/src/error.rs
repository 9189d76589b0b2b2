//! Errors are values with a kind the glue can act on, what went wrong (the cause) and what
//! was being read when it did (the path), which the user reads as one line and a report's
//! JSON keeps apart (`model::ReportError`).

use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// The executable has no usable DWARF type information.
    NoDebugInfo,
    /// The program does not contain tokio's runtime.
    NotTokio,
    /// tokio is linked in, but no thread is inside a runtime.
    NoRuntime,
    /// A read of the inferior's memory failed.
    Memory,
    /// A structure did not have the shape this tool expects (unknown layout, corrupt data).
    Layout,
    /// The executable could not be opened or parsed.
    Binary,
    /// The report could not be written where `--output` asked.
    Output,
    /// The command was given arguments it cannot use (a bad regex, an unknown state).
    Usage,
    /// The command spent its budget of nodes or bytes (`budget.rs`).
    Budget,
    /// The user interrupted the command (Ctrl-C).
    Interrupted,
    /// A bug in this tool (a caught panic).
    Internal,
}

impl ErrorKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::NoDebugInfo => "no_debuginfo",
            ErrorKind::NotTokio => "not_tokio",
            ErrorKind::NoRuntime => "no_runtime",
            ErrorKind::Memory => "memory",
            ErrorKind::Layout => "layout",
            ErrorKind::Binary => "binary",
            ErrorKind::Output => "output",
            ErrorKind::Usage => "usage",
            ErrorKind::Budget => "budget",
            ErrorKind::Interrupted => "interrupted",
            ErrorKind::Internal => "internal",
        }
    }
}

/// A failure: its kind, what went wrong where it went wrong (the cause), and what was
/// being read when it did (the path, outermost first: `task 5`, `its future`, ...). Its
/// one line, as the user sees it, is the path then the cause (`message`).
#[derive(Debug, Clone)]
pub struct Error {
    pub kind: ErrorKind,
    cause: String,
    path: Vec<String>,
}

impl Error {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Error {
            kind,
            cause: message.into(),
            path: Vec::new(),
        }
    }

    pub fn layout(message: impl Into<String>) -> Self {
        Error::new(ErrorKind::Layout, message)
    }

    pub fn memory(address: u64, len: usize) -> Self {
        Error::new(
            ErrorKind::Memory,
            format!("cannot read {len} bytes at {address:#x}"),
        )
    }

    /// The error, met while reading `what`: the kind and cause kept, `what` put first on
    /// the path.
    pub fn context(mut self, what: impl fmt::Display) -> Self {
        self.path.insert(0, what.to_string());
        self
    }

    /// The one line the user reads: the path, then the cause.
    pub fn message(&self) -> String {
        self.to_string()
    }

    /// What went wrong, where it went wrong.
    pub fn cause(&self) -> &str {
        &self.cause
    }

    /// What was being read when it went wrong, outermost first.
    pub fn path(&self) -> &[String] {
        &self.path
    }

    /// The error counted as of `kind` (a read that failed in a list: the list is damaged).
    pub fn of_kind(mut self, kind: ErrorKind) -> Self {
        self.kind = kind;
        self
    }

    /// The error with `more` said after its cause (`... (tokio 1.47)`).
    pub fn with_cause_note(mut self, more: impl fmt::Display) -> Self {
        self.cause = format!("{}{more}", self.cause);
        self
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for what in &self.path {
            write!(f, "{what}: ")?;
        }
        f.write_str(&self.cause)
    }
}

impl std::error::Error for Error {}

impl From<gimli::Error> for Error {
    fn from(error: gimli::Error) -> Self {
        Error::new(ErrorKind::Binary, format!("malformed DWARF: {error}"))
    }
}

pub type Result<T> = std::result::Result<T, Error>;

/// Adds context to a `Result` lazily.
pub trait ResultExt<T> {
    fn context_with<D: fmt::Display>(self, what: impl FnOnce() -> D) -> Result<T>;
}

impl<T> ResultExt<T> for Result<T> {
    fn context_with<D: fmt::Display>(self, what: impl FnOnce() -> D) -> Result<T> {
        self.map_err(|error| error.context(what()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An error keeps what was being read apart from its cause, and reads as one line.
    #[test]
    fn an_error_keeps_its_path_and_cause() {
        let error = Error::memory(0x10, 8)
            .context("field `head`")
            .context("runtime 0x1000");
        assert_eq!(error.kind, ErrorKind::Memory);
        assert_eq!(error.cause(), "cannot read 8 bytes at 0x10");
        assert_eq!(error.path(), ["runtime 0x1000", "field `head`"]);
        assert_eq!(
            error.message(),
            "runtime 0x1000: field `head`: cannot read 8 bytes at 0x10"
        );
        let noted = error.with_cause_note(" (tokio 1.47)");
        assert_eq!(noted.cause(), "cannot read 8 bytes at 0x10 (tokio 1.47)");
        assert_eq!(noted.path().len(), 2);
    }
}
