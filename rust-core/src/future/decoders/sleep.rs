//! Timers: `Sleep` (its deadline, and for a live process the time left), `Interval::tick`,
//! and `Timeout` (its deadline, with the future it limits as child).

use crate::error::Result;
use crate::future::env::async_self;
use crate::future::outcome::{Child, DecodeContext, Decoded, Outcome};
use crate::layouts::tokio_futures as layout;
use crate::model::{Deadline, Detail, MonotonicTime};
use crate::std_values;
use crate::value::Value;

/// The facts and words for a deadline: absolute (monotonic seconds) and, live, time left.
fn deadline(context: &DecodeContext<'_>, (seconds, nanos): (i64, u32)) -> (Deadline, String) {
    let at = seconds as f64 + nanos as f64 / 1e9;
    let remaining = context
        .live
        .now
        .map(|(now_s, now_ns)| at - (now_s as f64 + now_ns as f64 / 1e9));
    let facts = Deadline {
        deadline: Some(MonotonicTime {
            nanos,
            secs: seconds,
        }),
        period_secs: None,
        remaining_secs: remaining.map(milliseconds),
        since_last_tick_secs: None,
    };
    let text = match remaining {
        Some(left) => format!("until {left:+.1}s"),
        None => format!("until {at:.3}s on the monotonic clock"),
    };
    (facts, text)
}

fn milliseconds(secs: f64) -> f64 {
    (secs * 1000.0).round() / 1000.0
}

/// A `Sleep`'s deadline, whichever layout its version has.
fn sleep_deadline(context: &DecodeContext<'_>, sleep: &Value<'_>) -> Result<(Deadline, String)> {
    Ok(deadline(
        context,
        std_values::instant(&std_values::at(sleep, layout::SLEEP_DEADLINE)?)?,
    ))
}

pub fn sleep<'a>(context: &DecodeContext<'a>, value: &Value<'a>) -> Result<Outcome> {
    let (facts, text) = sleep_deadline(context, value)?;
    Ok(Outcome::Node(Decoded::leaf(
        Detail::Sleep(facts),
        format!("Sleep {text}"),
    )))
}

/// `Interval::tick()`: the interval's own `Sleep`.
pub fn interval_tick<'a>(context: &DecodeContext<'a>, value: &Value<'a>) -> Result<Outcome> {
    let interval = async_self(value)?;
    let sleep = std_values::pin_pointer(&interval.field(layout::INTERVAL_SLEEP)?)?.pointee()?;
    let period_secs = std_values::duration_secs(&interval.field(layout::INTERVAL_PERIOD)?)?;
    let (facts, text) = sleep_deadline(context, &sleep)?;
    // The deadline is the next tick: the last one was a period before it.
    let since_last_tick = facts
        .remaining_secs
        .map(|left| milliseconds(period_secs - left));
    let facts = Deadline {
        period_secs: Some(period_secs),
        since_last_tick_secs: since_last_tick,
        ..facts
    };
    let ticked = match since_last_tick {
        Some(ago) => format!(" (an Interval's: last tick {ago:.1}s ago)"),
        None => String::new(),
    };
    Ok(Outcome::Node(Decoded::leaf(
        Detail::Sleep(facts),
        format!("Sleep {text}{ticked}"),
    )))
}

/// `tokio::time::Timeout<F>`: its deadline, and F as child.
pub fn timeout<'a>(context: &DecodeContext<'a>, value: &Value<'a>) -> Result<Outcome> {
    let delay = value.field(layout::TIMEOUT_SLEEP)?;
    // `Option<Sleep>` in newer versions: `None` where the deadline would overflow an
    // Instant (a `Duration::MAX` timeout), which never elapses.
    let sleep = if std_values::is_option(&delay.ty) {
        std_values::option(&delay)?
    } else {
        Some(delay)
    };
    let (facts, summary) = match sleep {
        Some(sleep) => {
            let (facts, text) = sleep_deadline(context, &sleep)?;
            (facts, format!("Timeout {text}"))
        }
        None => (
            Deadline {
                deadline: None,
                period_secs: None,
                remaining_secs: None,
                since_last_tick_secs: None,
            },
            "Timeout (no deadline)".to_string(),
        ),
    };
    let children = vec![Child::of(&value.field(layout::TIMEOUT_FUTURE)?)];
    Ok(Outcome::Node(Decoded::with_children(
        Detail::Timeout(facts),
        summary,
        children,
    )))
}
