//! What one command may spend, and whether the user asked it to stop: a budget of nodes
//! decoded and bytes read (a corrupt or huge process must not keep the debugger busy
//! for minutes), and the debugger's interrupt (Ctrl-C), polled every few milliseconds.

use std::cell::{Cell, RefCell};
use std::time::{Duration, Instant};

use serde::Deserialize;

use crate::error::{Error, ErrorKind, Result};
use crate::format::thousands;
use crate::memory::Memory;

pub const DEFAULT_MAX_NODES: u64 = 2_000_000;
pub const DEFAULT_MAX_BYTES: u64 = 1 << 30;
/// How often the interrupt is polled: well under the half second a user waits for Ctrl-C.
const INTERRUPT_POLL: Duration = Duration::from_millis(25);
const CLOCK_EVERY: u32 = 64;

/// The limits as the glue sends them (`--max-nodes`, `--max-bytes`).
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Limits {
    #[serde(default = "default_nodes")]
    pub nodes: u64,
    #[serde(default = "default_bytes")]
    pub bytes: u64,
}

fn default_nodes() -> u64 {
    DEFAULT_MAX_NODES
}

fn default_bytes() -> u64 {
    DEFAULT_MAX_BYTES
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            nodes: DEFAULT_MAX_NODES,
            bytes: DEFAULT_MAX_BYTES,
        }
    }
}

/// Whether the user asked to stop (Ctrl-C in the debugger).
pub type InterruptCheck<'a> = dyn Fn() -> bool + 'a;

pub struct Budget<'a> {
    limits: Limits,
    nodes: Cell<u64>,
    bytes: Cell<u64>,
    interrupted: Option<&'a InterruptCheck<'a>>,
    last_poll: Cell<Instant>,
    /// Calls of `go_on`, to read the clock in only one of every `CLOCK_EVERY`.
    steps: Cell<u32>,
    /// Why the command stopped early, once it has.
    stop: RefCell<Option<Error>>,
}

impl<'a> Budget<'a> {
    pub fn new(limits: Limits, interrupted: Option<&'a InterruptCheck<'a>>) -> Self {
        Budget {
            limits,
            nodes: Cell::new(0),
            bytes: Cell::new(0),
            interrupted,
            last_poll: Cell::new(Instant::now()),
            steps: Cell::new(0),
            stop: RefCell::new(None),
        }
    }

    pub fn unlimited() -> Budget<'static> {
        Budget::new(
            Limits {
                nodes: u64::MAX,
                bytes: u64::MAX,
            },
            None,
        )
    }

    /// Counts one decoded node; false once the command must stop.
    pub fn spend_node(&self) -> bool {
        self.nodes.set(self.nodes.get().saturating_add(1));
        if self.nodes.get() > self.limits.nodes {
            self.stop_with(Error::new(
                ErrorKind::Budget,
                format!(
                    "stopped after {} nodes (the budget; --max-nodes N raises it)",
                    thousands(self.limits.nodes)
                ),
            ));
        }
        self.go_on()
    }

    fn spend_bytes(&self, count: usize) -> bool {
        self.bytes
            .set(self.bytes.get().saturating_add(count as u64));
        if self.bytes.get() > self.limits.bytes {
            self.stop_with(Error::new(
                ErrorKind::Budget,
                format!(
                    "stopped after reading {} bytes (the budget; --max-bytes N raises it)",
                    thousands(self.limits.bytes)
                ),
            ));
        }
        self.go_on()
    }

    /// False once the command must stop: the budget is spent or the user interrupted.
    pub fn go_on(&self) -> bool {
        if self.stop.borrow().is_some() {
            return false;
        }
        // Reading the clock costs as much as a small read from the cache: look every
        // `CLOCK_EVERY` steps, a few microseconds apart.
        let steps = self.steps.get().wrapping_add(1);
        self.steps.set(steps);
        if let Some(interrupted) = self
            .interrupted
            .filter(|_| steps.is_multiple_of(CLOCK_EVERY))
        {
            let now = Instant::now();
            if now.duration_since(self.last_poll.get()) >= INTERRUPT_POLL {
                self.last_poll.set(now);
                if interrupted() {
                    self.stop_with(Error::new(ErrorKind::Interrupted, "interrupted"));
                }
            }
        }
        self.stop.borrow().is_none()
    }

    fn stop_with(&self, error: Error) {
        let mut stop = self.stop.borrow_mut();
        if stop.is_none() {
            *stop = Some(error);
        }
    }

    /// Why the command stopped early, if it did.
    pub fn stopped(&self) -> Option<Error> {
        self.stop.borrow().clone()
    }
}

/// Memory that counts what it reads against a budget, and fails once it is spent.
pub struct Metered<'b, M: Memory + ?Sized> {
    pub inner: &'b M,
    pub budget: &'b Budget<'b>,
}

impl<M: Memory + ?Sized> Memory for Metered<'_, M> {
    fn read(&self, address: u64, buf: &mut [u8]) -> Result<()> {
        if !self.budget.spend_bytes(buf.len()) {
            return Err(self
                .budget
                .stopped()
                .unwrap_or_else(|| Error::new(ErrorKind::Budget, "stopped")));
        }
        self.inner.read(address, buf)
    }

    fn release_cache(&self) {
        self.inner.release_cache();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stops_when_spent_or_interrupted() {
        let budget = Budget::new(
            Limits {
                nodes: 3,
                bytes: 100,
            },
            None,
        );
        assert!(budget.spend_node() && budget.spend_node() && budget.spend_node());
        assert!(!budget.spend_node());
        assert_eq!(
            budget.stopped().map(|error| error.message).as_deref(),
            Some("stopped after 3 nodes (the budget; --max-nodes N raises it)")
        );

        let always: &InterruptCheck<'_> = &|| true;
        let budget = Budget::new(Limits::default(), Some(always));
        budget.last_poll.set(Instant::now() - INTERRUPT_POLL);
        let went_on: Vec<bool> = (0..CLOCK_EVERY).map(|_| budget.go_on()).collect();
        assert_eq!(
            went_on.iter().filter(|&&went_on| went_on).count(),
            CLOCK_EVERY as usize - 1
        );
        assert_eq!(
            budget.stopped().map(|error| error.kind),
            Some(ErrorKind::Interrupted)
        );
    }
}
