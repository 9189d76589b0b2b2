//! Waiting on tokio's semaphore-based primitives: `Mutex::lock`, `RwLock::read`/`write`,
//! `Semaphore::acquire*`, and a bare `batch_semaphore::Acquire`. Each reports the
//! primitive's address, permits available, needed, assigned so far and in all, and waiters
//! queued. Who holds a lock tokio does not record: `waits/` finds the guards in other tasks'
//! saved locals and counts their permits against these.

use super::{hex, plural, semaphore_state};
use crate::error::{Error, Result};
use crate::future::env::{active_variant, async_argument, async_self, state_of};
use crate::future::outcome::{DecodeContext, Decoded, Outcome};
use crate::layouts::rust::coroutine;
use crate::layouts::tokio_futures as layout;
use crate::model::{CoroutineState, Detail, PermitWait};
use crate::names;
use crate::std_values;
use crate::value::Value;

/// How many coroutines deep a lock's future keeps its `Acquire` (`lock` → its async block
/// → `acquire` → `Acquire` in tokio 1.54), with room for wrappers of other versions.
const MAX_ACQUIRE_DEPTH: usize = 6;

/// What a lock's waiter is waiting with: the primitive, its batch semaphore, the permits it
/// needs and the lock has in all.
struct Wanted<'v, 'a> {
    kind: fn(PermitWait) -> Detail,
    what: &'static str,
    primitive: &'v Value<'a>,
    semaphore: &'v Value<'a>,
    needed: u64,
    total: Option<u64>,
}

fn waiting(future: &Value<'_>, wanted: Wanted<'_, '_>) -> Result<Outcome> {
    let (available, closed, waiters) = semaphore_state(wanted.semaphore)?;
    let summary = format!(
        "waiting for {} {} ({}, {}{})",
        wanted.what,
        hex(wanted.primitive.address),
        plural(available, "permit"),
        plural(waiters, "waiter"),
        if closed { ", closed" } else { "" }
    );
    let wait = PermitWait {
        address: wanted.primitive.address,
        closed,
        holders: None,
        holders_certainty: None,
        // Unknown, not an error: the node says what it waits for without it.
        permits_assigned: awaited_acquire(future).and_then(|acquire| assigned(&acquire).ok()),
        permits_available: available,
        permits_needed: wanted.needed,
        permits_total: wanted.total,
        semaphore: wanted.semaphore.address,
        waiters,
    };
    Ok(Outcome::Node(Decoded::leaf((wanted.kind)(wait), summary)))
}

pub fn mutex_lock<'a>(_: &DecodeContext<'a>, value: &Value<'a>) -> Result<Outcome> {
    let mutex = async_self(value)?;
    let semaphore = mutex.field(layout::MUTEX_SEMAPHORE)?;
    waiting(
        value,
        Wanted {
            kind: Detail::MutexLock,
            what: "Mutex",
            primitive: &mutex,
            semaphore: &semaphore,
            needed: 1,
            total: Some(layout::MUTEX_PERMITS),
        },
    )
}

pub fn rwlock_read<'a>(_: &DecodeContext<'a>, value: &Value<'a>) -> Result<Outcome> {
    let lock = async_self(value)?;
    let semaphore = lock.field(layout::RWLOCK_SEMAPHORE)?;
    let most_readers = lock.field(layout::RWLOCK_MAX_READERS)?.read_uint()?;
    waiting(
        value,
        Wanted {
            kind: Detail::RwlockRead,
            what: "RwLock (read)",
            primitive: &lock,
            semaphore: &semaphore,
            needed: 1,
            total: Some(most_readers),
        },
    )
}

/// A writer needs every permit: `mr`, the most readers.
pub fn rwlock_write<'a>(_: &DecodeContext<'a>, value: &Value<'a>) -> Result<Outcome> {
    let lock = async_self(value)?;
    let semaphore = lock.field(layout::RWLOCK_SEMAPHORE)?;
    let most_readers = lock.field(layout::RWLOCK_MAX_READERS)?.read_uint()?;
    waiting(
        value,
        Wanted {
            kind: Detail::RwlockWrite,
            what: "RwLock (write)",
            primitive: &lock,
            semaphore: &semaphore,
            needed: most_readers,
            total: Some(most_readers),
        },
    )
}

pub fn semaphore_acquire<'a>(_: &DecodeContext<'a>, value: &Value<'a>) -> Result<Outcome> {
    let semaphore = async_self(value)?;
    let needed = match async_argument(value, layout::ACQUIRE_MANY_COUNT) {
        Ok(n) => n.read_uint()?,
        Err(_) => 1,
    };
    let inner = semaphore.field(layout::SEMAPHORE_INNER)?;
    waiting(
        value,
        Wanted {
            kind: Detail::SemaphoreAcquire,
            what: "Semaphore",
            primitive: &semaphore,
            semaphore: &inner,
            needed,
            total: None,
        },
    )
}

/// The future under all of them, met on its own (a custom primitive on tokio's semaphore).
pub fn acquire_leaf<'a>(_: &DecodeContext<'a>, value: &Value<'a>) -> Result<Outcome> {
    let semaphore = std_values::at_path(value, layout::ACQUIRE_SEMAPHORE)?;
    let needed = value.field(layout::ACQUIRE_PERMITS)?.read_uint()?;
    waiting(
        value,
        Wanted {
            kind: Detail::SemaphoreAcquire,
            what: "semaphore",
            primitive: &semaphore,
            semaphore: &semaphore,
            needed,
            total: None,
        },
    )
}

/// The `batch_semaphore::Acquire` a lock's future awaits: down the awaitees of its
/// suspended coroutines, or the future itself.
fn awaited_acquire<'a>(future: &Value<'a>) -> Option<Value<'a>> {
    let mut future = future.clone();
    for _ in 0..MAX_ACQUIRE_DEPTH {
        if future.ty.name == layout::ACQUIRE_TYPE {
            return Some(future);
        }
        let (instrumented, inner) = layout::INSTRUMENTED_ASYNC_OP;
        if future.ty.name.starts_with(instrumented) {
            future = future.field(inner).ok()?;
            continue;
        }
        names::coroutine_kind(&future.ty.name)?;
        let active = active_variant(&future).ok()?;
        if state_of(active.raw_state).0 != CoroutineState::Suspended {
            return None;
        }
        future = active.fields.field(coroutine::AWAITEE).ok()?;
    }
    None
}

/// The permits tokio has assigned to an acquire future's waiter, toward those it asked for:
/// none until it is queued (first polled without enough permits).
pub fn assigned(acquire: &Value<'_>) -> Result<u64> {
    if acquire.field(layout::ACQUIRE_QUEUED)?.read_uint()? == 0 {
        return Ok(0);
    }
    let wanted = acquire.field(layout::ACQUIRE_PERMITS)?.read_uint()?;
    let remaining = std_values::at(acquire, layout::ACQUIRE_REMAINING)?.read_uint()?;
    wanted
        .checked_sub(remaining)
        .ok_or_else(|| Error::layout("an acquire waiter needs more permits than it asked for"))
}
