//! DAP's framing: `Content-Length: N\r\n\r\n` and N bytes of JSON.

use std::io::{BufRead, Write};

use serde_json::Value;

/// The next message, or `None` at the end of the stream.
pub fn read_message(input: &mut impl BufRead) -> std::io::Result<Option<Value>> {
    let mut length = None;
    loop {
        let mut line = String::new();
        if input.read_line(&mut line)? == 0 {
            return Ok(None);
        }
        let line = line.trim_end();
        if line.is_empty() {
            if length.is_some() {
                break;
            }
            continue;
        }
        if let Some((name, value)) = line.split_once(':') {
            if name.trim().eq_ignore_ascii_case("content-length") {
                length = value.trim().parse::<usize>().ok();
            }
        }
    }
    let mut body = vec![0; length.unwrap_or(0)];
    input.read_exact(&mut body)?;
    serde_json::from_slice(&body)
        .map(Some)
        .map_err(|error| std::io::Error::new(std::io::ErrorKind::InvalidData, error))
}

pub fn write_message(output: &mut impl Write, message: &Value) -> std::io::Result<()> {
    let body = serde_json::to_vec(message)?;
    write!(output, "Content-Length: {}\r\n\r\n", body.len())?;
    output.write_all(&body)?;
    output.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_round_trip_through_the_framing() {
        let message: Value =
            serde_json::from_str(r#"{"seq": 1, "type": "request", "command": "threads"}"#).unwrap();
        let mut bytes = Vec::new();
        write_message(&mut bytes, &message).unwrap();
        write_message(&mut bytes, &message).unwrap();
        let mut input = std::io::Cursor::new(bytes);
        assert_eq!(read_message(&mut input).unwrap(), Some(message.clone()));
        assert_eq!(read_message(&mut input).unwrap(), Some(message));
        assert_eq!(read_message(&mut input).unwrap(), None);
    }
}
