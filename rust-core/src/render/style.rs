//! Colour for text output, in the debugger's own styles: the glue reads GDB's `style`
//! settings or LLDB's `use-color` and sends the escape sequences to use, or none when
//! colour is off (not a terminal, JSON, the user's choice).

use serde::Deserialize;

/// Escape sequences that start each styled element; empty ones leave it plain.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Style {
    #[serde(default)]
    pub function: String,
    /// file:line
    #[serde(default)]
    pub file: String,
    /// Task states and coroutine states (`idle`, `(await #1)`).
    #[serde(default)]
    pub state: String,
}

const RESET: &str = "\x1b[0m";

impl Style {
    pub fn function(&self, text: &str) -> String {
        paint(&self.function, text)
    }

    pub fn file(&self, text: &str) -> String {
        paint(&self.file, text)
    }

    pub fn state(&self, text: &str) -> String {
        paint(&self.state, text)
    }
}

fn paint(start: &str, text: &str) -> String {
    let mut out = String::new();
    painted(&mut out, start, |out| out.push_str(text));
    out
}

/// What `write` writes into `out`, between `start` and the reset where there is a style
/// and text (as `paint`, without a string of its own: a table's cells are written so).
pub(super) fn painted(out: &mut String, start: &str, write: impl FnOnce(&mut String)) {
    let before = out.len();
    out.push_str(start);
    let text_at = out.len();
    write(out);
    match (start.is_empty(), out.len() == text_at) {
        (true, _) => {}
        (false, true) => out.truncate(before),
        (false, false) => out.push_str(RESET),
    }
}

/// How many columns `text` takes on a terminal: escape sequences take none.
pub fn visible_width(text: &str) -> usize {
    if !text.contains('\x1b') {
        return text.chars().count();
    }
    let mut width = 0;
    let mut in_escape = false;
    for c in text.chars() {
        match (in_escape, c) {
            (false, '\x1b') => in_escape = true,
            (false, _) => width += 1,
            (true, 'm') => in_escape = false,
            (true, _) => {}
        }
    }
    width
}

/// `text` padded with spaces to `width` visible columns.
pub fn pad(text: &str, width: usize) -> String {
    let padding = width.saturating_sub(visible_width(text));
    format!("{text}{}", " ".repeat(padding))
}

pub use crate::format::thousands;

/// Ids shown in a group's header: all of a few, else the first ones and the last.
const IDS_SHOWN: usize = 6;

/// `3, 5, 9` / `3, 5, 9, 12, 15, 21, … 1023`: ids as tokio prints them, without separators,
/// so that one can be typed back (`async task 1023`).
pub fn id_preview(ids: &[u64]) -> String {
    let shown: Vec<String> = match ids.len() > IDS_SHOWN + 1 {
        true => ids[..IDS_SHOWN]
            .iter()
            .map(u64::to_string)
            .chain([format!("… {}", ids[ids.len() - 1])])
            .collect(),
        false => ids.iter().map(u64::to_string).collect(),
    };
    shown.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_counts_and_ids() {
        assert_eq!(thousands(7), "7");
        assert_eq!(thousands(1023), "1,023");
        assert_eq!(thousands(1_000_000), "1,000,000");
        assert_eq!(id_preview(&[3, 5, 9]), "3, 5, 9");
        assert_eq!(id_preview(&[1, 2, 3, 4, 5, 6, 7]), "1, 2, 3, 4, 5, 6, 7");
        assert_eq!(
            id_preview(&[1, 2, 3, 4, 5, 6, 7, 1023]),
            "1, 2, 3, 4, 5, 6, … 1023"
        );
    }

    #[test]
    fn pads_by_what_shows() {
        let style = Style {
            function: "\x1b[33m".into(),
            ..Default::default()
        };
        let painted = style.function("main");
        assert_eq!(visible_width(&painted), 4);
        assert_eq!(visible_width(&pad(&painted, 6)), 6);
        assert_eq!(style.file("a.rs:1"), "a.rs:1");
    }
}
