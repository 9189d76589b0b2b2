//! Waiting on tokio's semaphore-based primitives: `Mutex::lock`, `RwLock::read`/`write`,
//! `Semaphore::acquire*`, and a bare `batch_semaphore::Acquire`. Each reports the
//! primitive's address, permits available and needed, and waiters queued. Who holds a
//! lock tokio does not record: `waits/` finds the guards in other tasks' saved locals.

use serde_json::json;

use super::{async_argument, async_self, hex, plural, semaphore_state};
use crate::error::Result;
use crate::future::{Decoded, FutureDecoder, Outcome};
use crate::model::NodeKind;
use crate::tokio::compat::leaves;
use crate::value::Value;

fn waiting(
    kind: NodeKind,
    what: &str,
    primitive: &Value<'_>,
    semaphore: &Value<'_>,
    needed: u64,
) -> Result<Outcome> {
    let (available, closed, waiters) = semaphore_state(semaphore)?;
    let detail = json!({
        "address": hex(primitive.address),
        // What the holders' guards and permits point to (`waits/`).
        "semaphore": hex(semaphore.address),
        "permits_available": available,
        "permits_needed": needed,
        "waiters": waiters,
        "closed": closed,
    });
    let summary = format!(
        "waiting for {what} {} ({}, {}{})",
        hex(primitive.address),
        plural(available, "permit"),
        plural(waiters, "waiter"),
        if closed { ", closed" } else { "" }
    );
    Ok(Outcome::Node(Decoded::leaf(kind, detail, summary)))
}

pub fn mutex_lock<'a>(_: &FutureDecoder<'a>, value: &Value<'a>) -> Result<Outcome> {
    let mutex = async_self(value)?;
    waiting(
        NodeKind::MutexLock,
        "Mutex",
        &mutex,
        &mutex.field(leaves::MUTEX_SEMAPHORE)?,
        1,
    )
}

pub fn rwlock_read<'a>(_: &FutureDecoder<'a>, value: &Value<'a>) -> Result<Outcome> {
    let lock = async_self(value)?;
    waiting(
        NodeKind::RwlockRead,
        "RwLock (read)",
        &lock,
        &lock.field(leaves::RWLOCK_SEMAPHORE)?,
        1,
    )
}

/// A writer needs every permit: `mr`, the most readers.
pub fn rwlock_write<'a>(_: &FutureDecoder<'a>, value: &Value<'a>) -> Result<Outcome> {
    let lock = async_self(value)?;
    let needed = lock.field(leaves::RWLOCK_MAX_READERS)?.read_uint()?;
    waiting(
        NodeKind::RwlockWrite,
        "RwLock (write)",
        &lock,
        &lock.field(leaves::RWLOCK_SEMAPHORE)?,
        needed,
    )
}

pub fn semaphore_acquire<'a>(_: &FutureDecoder<'a>, value: &Value<'a>) -> Result<Outcome> {
    let semaphore = async_self(value)?;
    let needed = match async_argument(value, leaves::ACQUIRE_MANY_COUNT) {
        Ok(n) => n.read_uint()?,
        Err(_) => 1,
    };
    waiting(
        NodeKind::SemaphoreAcquire,
        "Semaphore",
        &semaphore,
        &semaphore.field(leaves::SEMAPHORE_INNER)?,
        needed,
    )
}

/// The future under all of them, met on its own (a custom primitive on tokio's semaphore).
pub fn acquire_leaf<'a>(_: &FutureDecoder<'a>, value: &Value<'a>) -> Result<Outcome> {
    let semaphore = value.field(leaves::ACQUIRE_SEMAPHORE)?.pointee()?;
    let needed = value.field(leaves::ACQUIRE_PERMITS)?.read_uint()?;
    waiting(
        NodeKind::SemaphoreAcquire,
        "semaphore",
        &semaphore,
        &semaphore,
        needed,
    )
}
