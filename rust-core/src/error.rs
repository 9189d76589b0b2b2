//! Errors are values with a kind the glue can act on and a one-line message for the user.

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

#[derive(Debug, Clone)]
pub struct Error {
    pub kind: ErrorKind,
    pub message: String,
}

impl Error {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Error {
            kind,
            message: message.into(),
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

    /// Prefixes the message with what was being read, keeping the kind.
    pub fn context(self, what: impl fmt::Display) -> Self {
        Error {
            kind: self.kind,
            message: format!("{what}: {}", self.message),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
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
