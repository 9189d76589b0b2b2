//! Waiting on tokio's semaphore-based primitives: `Mutex::lock`, `RwLock::read`/`write`,
//! `Semaphore::acquire*`, and a bare `batch_semaphore::Acquire`. Each reports the
//! primitive's address, permits available and needed, and waiters queued. Who holds a
//! lock tokio does not record: `waits/` finds the guards in other tasks' saved locals.

use super::{hex, plural, semaphore_state};
use crate::error::Result;
use crate::future::env::{async_argument, async_self};
use crate::future::outcome::{DecodeContext, Decoded, Outcome};
use crate::layouts::tokio_futures as layout;
use crate::model::{Detail, PermitWait};
use crate::std_values;
use crate::value::Value;

fn waiting(
    kind: fn(PermitWait) -> Detail,
    what: &str,
    primitive: &Value<'_>,
    semaphore: &Value<'_>,
    needed: u64,
) -> Result<Outcome> {
    let (available, closed, waiters) = semaphore_state(semaphore)?;
    let summary = format!(
        "waiting for {what} {} ({}, {}{})",
        hex(primitive.address),
        plural(available, "permit"),
        plural(waiters, "waiter"),
        if closed { ", closed" } else { "" }
    );
    let wait = PermitWait {
        address: primitive.address,
        closed,
        holders: None,
        permits_available: available,
        permits_needed: needed,
        semaphore: semaphore.address,
        waiters,
    };
    Ok(Outcome::Node(Decoded::leaf(kind(wait), summary)))
}

pub fn mutex_lock<'a>(_: &DecodeContext<'a>, value: &Value<'a>) -> Result<Outcome> {
    let mutex = async_self(value)?;
    waiting(
        Detail::MutexLock,
        "Mutex",
        &mutex,
        &mutex.field(layout::MUTEX_SEMAPHORE)?,
        1,
    )
}

pub fn rwlock_read<'a>(_: &DecodeContext<'a>, value: &Value<'a>) -> Result<Outcome> {
    let lock = async_self(value)?;
    waiting(
        Detail::RwlockRead,
        "RwLock (read)",
        &lock,
        &lock.field(layout::RWLOCK_SEMAPHORE)?,
        1,
    )
}

/// A writer needs every permit: `mr`, the most readers.
pub fn rwlock_write<'a>(_: &DecodeContext<'a>, value: &Value<'a>) -> Result<Outcome> {
    let lock = async_self(value)?;
    let needed = lock.field(layout::RWLOCK_MAX_READERS)?.read_uint()?;
    waiting(
        Detail::RwlockWrite,
        "RwLock (write)",
        &lock,
        &lock.field(layout::RWLOCK_SEMAPHORE)?,
        needed,
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
        Detail::SemaphoreAcquire,
        "Semaphore",
        &semaphore,
        &inner,
        needed,
    )
}

/// The future under all of them, met on its own (a custom primitive on tokio's semaphore).
pub fn acquire_leaf<'a>(_: &DecodeContext<'a>, value: &Value<'a>) -> Result<Outcome> {
    let semaphore = std_values::at_path(value, layout::ACQUIRE_SEMAPHORE)?;
    let needed = value.field(layout::ACQUIRE_PERMITS)?.read_uint()?;
    waiting(
        Detail::SemaphoreAcquire,
        "semaphore",
        &semaphore,
        &semaphore,
        needed,
    )
}
