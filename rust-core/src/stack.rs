//! A thread's stack as the debugger gives it (pcs, inlined flags, file:line, a few locals),
//! with each frame's function named from DWARF rather than by the debugger.

use std::fmt;

use rustc_hash::FxHashMap;
use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde::Deserialize;

use crate::dwarf::{DebugInfo, FunctionAt};
use crate::names;

/// One frame as the debugger shows it. Inlined calls are frames of their own that share
/// the pc of the physical frame below them.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FrameInput {
    pub pc: u64,
    /// The stack pointer in this frame (inlined frames share their physical frame's).
    #[serde(default)]
    pub sp: Option<u64>,
    /// The frame pointer (`rbp`), given with the stack pointer.
    #[serde(default)]
    pub fp: Option<u64>,
    #[serde(default)]
    pub inlined: bool,
    pub file: Option<String>,
    pub line: Option<u64>,
    /// Locals the glue was asked for (see `block_on_frames`): name -> their bytes.
    #[serde(default)]
    pub locals: FxHashMap<String, LocalBytes>,
    /// Locals that could not be read: name -> why.
    #[serde(default)]
    pub local_errors: FxHashMap<String, String>,
}

/// A local's bytes as the debugger read them: bytes from the glue; in hex where a stop was
/// recorded as JSON (`fuzz/images`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LocalBytes(pub Vec<u8>);

impl LocalBytes {
    /// The first eight bytes as a little-endian `u64` (a pointer), where there are eight.
    pub fn pointer(&self) -> Option<u64> {
        let first: [u8; 8] = self.0.get(..8)?.try_into().ok()?;
        Some(u64::from_le_bytes(first))
    }
}

impl<'de> Deserialize<'de> for LocalBytes {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(LocalBytesVisitor)
    }
}

struct LocalBytesVisitor;

impl<'de> Visitor<'de> for LocalBytesVisitor {
    type Value = LocalBytes;

    fn expecting(&self, out: &mut fmt::Formatter<'_>) -> fmt::Result {
        out.write_str("a local's bytes, or them in hex")
    }

    fn visit_bytes<E: de::Error>(self, bytes: &[u8]) -> Result<LocalBytes, E> {
        Ok(LocalBytes(bytes.to_vec()))
    }

    fn visit_byte_buf<E: de::Error>(self, bytes: Vec<u8>) -> Result<LocalBytes, E> {
        Ok(LocalBytes(bytes))
    }

    fn visit_str<E: de::Error>(self, hex: &str) -> Result<LocalBytes, E> {
        parse_hex(hex)
            .map(LocalBytes)
            .ok_or_else(|| E::invalid_value(de::Unexpected::Str(hex), &self))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<LocalBytes, A::Error> {
        let mut bytes = Vec::with_capacity(seq.size_hint().unwrap_or(8));
        while let Some(byte) = seq.next_element::<u8>()? {
            bytes.push(byte);
        }
        Ok(LocalBytes(bytes))
    }
}

fn parse_hex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) || !text.is_ascii() {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).ok())
        .collect()
}

/// A frame with the function it runs, as DWARF names it.
pub struct ResolvedFrame<'f> {
    pub input: &'f FrameInput,
    pub function: Option<FunctionAt>,
}

impl ResolvedFrame<'_> {
    /// The function's path without the generic arguments of its last segment.
    pub fn path_without_generics(&self) -> Option<String> {
        self.function
            .as_ref()
            .map(|function| names::strip_last_generics(&function.path))
    }
}

/// Names each frame's function from its pc. The debugger lists inlined calls as frames
/// sharing one pc, innermost first, ending with the physical (not inlined) frame; DWARF
/// gives the same chain outermost first.
pub fn resolve_frames<'f>(
    debug: &DebugInfo,
    load_bias: u64,
    frames: &'f [FrameInput],
) -> Vec<ResolvedFrame<'f>> {
    let mut resolved = Vec::with_capacity(frames.len());
    let mut group_start = 0;
    for end in 0..frames.len() {
        if frames[end].inlined && end + 1 < frames.len() {
            continue;
        }
        let group = &frames[group_start..=end];
        // Return addresses point after the call; look up the call itself. GDB gives every
        // frame of a group the physical pc; LLDB gives inlined frames other addresses and
        // the true pc only to the innermost, so that one is used.
        let adjust = if group_start == 0 { 0 } else { 1 };
        let pc = frames[group_start]
            .pc
            .wrapping_sub(load_bias)
            .wrapping_sub(adjust);
        let chain = debug.functions_at(pc).unwrap_or_default();
        for (i, input) in group.iter().enumerate() {
            let function = if i + 1 == group.len() {
                chain.first().cloned()
            } else {
                chain
                    .len()
                    .checked_sub(1 + i)
                    .filter(|&index| index > 0)
                    .map(|index| chain[index].clone())
            };
            resolved.push(ResolvedFrame { input, function });
        }
        group_start = end + 1;
    }
    resolved
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(json: &str) -> serde_json::Result<FrameInput> {
        serde_json::from_str(json)
    }

    #[test]
    fn a_locals_bytes_come_in_hex_or_as_bytes_and_read_as_a_pointer() {
        let hex =
            frame(r#"{"pc": 1, "file": null, "line": null, "locals": {"f": "1032547698badcfe"}}"#);
        let listed = frame(
            r#"{"pc": 1, "file": null, "line": null, "locals": {"f": [16, 50, 84, 118, 152, 186, 220, 254]}}"#,
        );
        for input in [hex.unwrap(), listed.unwrap()] {
            assert_eq!(input.locals["f"].pointer(), Some(0xfedc_ba98_7654_3210));
        }
        let short = frame(r#"{"pc": 1, "file": null, "line": null, "locals": {"f": "1032"}}"#);
        assert_eq!(short.unwrap().locals["f"].pointer(), None);
    }

    #[test]
    fn hex_that_is_not_hex_is_refused_with_the_text() {
        for bad in ["123", "zz", "aé1"] {
            let json =
                format!(r#"{{"pc": 1, "file": null, "line": null, "locals": {{"f": "{bad}"}}}}"#);
            let error = frame(&json).unwrap_err().to_string();
            assert!(error.contains(bad), "{error}");
        }
    }
}
