//! Timers: `Sleep` (its deadline, and for a live process the time left), `Interval::tick`,
//! and `Timeout` (its deadline, with the future it limits as child).

use serde_json::{json, Value as Json};

use super::async_self;
use crate::error::{Error, Result};
use crate::future::{Child, Decoded, FutureDecoder, Outcome};
use crate::model::NodeKind;
use crate::tokio::compat::{self, leaves};
use crate::value::Value;

/// A CLOCK_MONOTONIC `Timespec` inside a tokio or std `Instant`.
fn instant(value: &Value<'_>) -> Result<(i64, u32)> {
    let seconds = value.find_field(leaves::INSTANT_SECONDS)?.read_uint()? as i64;
    let nanos = value.find_field(leaves::INSTANT_NANOS)?.read_uint()? as u32;
    if nanos >= 1_000_000_000 {
        return Err(Error::layout(format!(
            "instant with {nanos} nanoseconds (corrupt?)"
        )));
    }
    Ok((seconds, nanos))
}

/// Detail and summary for a deadline: absolute (monotonic seconds) and, live, time left.
fn deadline(decoder: &FutureDecoder<'_>, (seconds, nanos): (i64, u32)) -> (Json, String) {
    let at = seconds as f64 + nanos as f64 / 1e9;
    let remaining = decoder
        .live()
        .now
        .map(|(now_s, now_ns)| at - (now_s as f64 + now_ns as f64 / 1e9));
    let detail = json!({
        "deadline": {"secs": seconds, "nanos": nanos},
        "remaining_secs": remaining.map(|r| (r * 1000.0).round() / 1000.0),
    });
    let text = match remaining {
        Some(left) => format!("until {left:+.1}s"),
        None => format!("until {at:.3}s on the monotonic clock"),
    };
    (detail, text)
}

fn sleep_leaf(
    decoder: &FutureDecoder<'_>,
    sleep: &Value<'_>,
    extra: Option<(&str, Json)>,
) -> Result<Outcome> {
    let (mut detail, text) = deadline(
        decoder,
        instant(&sleep.first_path(leaves::SLEEP_DEADLINE)?)?,
    );
    if let Some((key, value)) = extra {
        detail[key] = value;
    }
    Ok(Outcome::Node(Decoded::leaf(
        NodeKind::Sleep,
        detail,
        format!("Sleep {text}"),
    )))
}

pub fn sleep<'a>(decoder: &FutureDecoder<'a>, value: &Value<'a>) -> Result<Outcome> {
    sleep_leaf(decoder, value, None)
}

/// `Interval::tick()`: the interval's own `Sleep`.
pub fn interval_tick<'a>(decoder: &FutureDecoder<'a>, value: &Value<'a>) -> Result<Outcome> {
    let interval = async_self(value)?;
    let sleep = interval
        .field(leaves::INTERVAL_SLEEP)?
        .first_path(compat::PIN_POINTER)?
        .pointee()?;
    let period = interval.field(leaves::INTERVAL_PERIOD)?;
    let period_secs = period.field(leaves::DURATION_SECONDS)?.read_uint()? as f64
        + period.find_field(leaves::DURATION_NANOS)?.read_uint()? as f64 / 1e9;
    sleep_leaf(decoder, &sleep, Some(("period_secs", json!(period_secs))))
}

/// `tokio::time::Timeout<F>`: its deadline, and F as child.
pub fn timeout<'a>(decoder: &FutureDecoder<'a>, value: &Value<'a>) -> Result<Outcome> {
    let delay = value.field(leaves::TIMEOUT_SLEEP)?;
    // The Sleep is created lazily in some versions: `Option<Sleep>`.
    let sleep = match delay.variant() {
        Ok((variant, payload)) if variant == "Some" => Some(payload.field(compat::TUPLE_FIRST)?),
        Ok(_) if delay.ty.name.starts_with("core::option::Option<") => None,
        _ => Some(delay),
    };
    let (detail, summary) = match sleep {
        Some(sleep) => {
            let (detail, text) = deadline(
                decoder,
                instant(&sleep.first_path(leaves::SLEEP_DEADLINE)?)?,
            );
            (detail, format!("Timeout {text}"))
        }
        None => (
            json!({"deadline": null, "remaining_secs": null}),
            "Timeout (not started)".to_string(),
        ),
    };
    Ok(Outcome::Node(Decoded {
        kind: NodeKind::Timeout,
        detail: Some(detail),
        summary: Some(summary),
        children: vec![Child::of(&value.field(leaves::TIMEOUT_FUTURE)?)],
    }))
}
