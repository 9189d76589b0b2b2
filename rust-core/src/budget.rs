//! What one command may spend, and whether the user asked it to stop: a budget of nodes
//! decoded and bytes read (a corrupt or huge process must not keep the debugger busy
//! for minutes), and the debugger's interrupt (Ctrl-C), polled every few milliseconds.

use std::cell::{Cell, RefCell};
use std::time::{Duration, Instant};

use serde::Deserialize;

use crate::error::{Error, ErrorKind, Result};
use crate::format::thousands;
use crate::memory::Memory;

/// The budget of a command that does not set one: at least these, and more for each task
/// tokio says its lists hold (`Budget::expect_tasks`), so that a healthy program of any size
/// is read whole while a corrupt or looping one is still stopped.
pub const DEFAULT_MAX_NODES: u64 = 2_000_000;
pub const DEFAULT_MAX_BYTES: u64 = 1 << 30;
pub const NODES_PER_TASK: u64 = 64;
pub const BYTES_PER_TASK: u64 = 64 << 10;
/// Tasks counted towards the default budget at most: a corrupt count must not lift it
/// without bound (tokio's lists of a real program hold far fewer).
const MAX_EXPECTED_TASKS: u64 = 16_000_000;
/// How often the interrupt is polled: well under the half second a user waits for Ctrl-C.
const INTERRUPT_POLL: Duration = Duration::from_millis(25);
const CLOCK_EVERY: u32 = 64;

/// The limits as the user set them (`--max-nodes`, `--max-bytes`); `None`: the default,
/// which grows with the tasks tokio counts.
#[derive(Debug, Clone, Copy, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Limits {
    #[serde(default)]
    pub nodes: Option<u64>,
    #[serde(default)]
    pub bytes: Option<u64>,
}

/// Whether the user asked to stop (Ctrl-C in the debugger).
pub type InterruptCheck<'a> = dyn Fn() -> bool + 'a;

pub struct Budget<'a> {
    limits: Limits,
    /// The limits in force: those set, or the defaults grown with the tasks expected.
    max_nodes: Cell<u64>,
    max_bytes: Cell<u64>,
    expected_tasks: Cell<u64>,
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
            max_nodes: Cell::new(limits.nodes.unwrap_or(DEFAULT_MAX_NODES)),
            max_bytes: Cell::new(limits.bytes.unwrap_or(DEFAULT_MAX_BYTES)),
            expected_tasks: Cell::new(0),
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
                nodes: Some(u64::MAX),
                bytes: Some(u64::MAX),
            },
            None,
        )
    }

    /// Notes `count` more tasks to decode (what tokio counts in a list about to be read):
    /// the limits the user did not set grow by a share per task.
    pub fn expect_tasks(&self, count: u64) {
        let expected = self
            .expected_tasks
            .get()
            .saturating_add(count)
            .min(MAX_EXPECTED_TASKS);
        self.expected_tasks.set(expected);
        if self.limits.nodes.is_none() {
            self.max_nodes
                .set(DEFAULT_MAX_NODES.max(expected.saturating_mul(NODES_PER_TASK)));
        }
        if self.limits.bytes.is_none() {
            self.max_bytes
                .set(DEFAULT_MAX_BYTES.max(expected.saturating_mul(BYTES_PER_TASK)));
        }
    }

    /// How the limit in force came to be, for the message that says it was reached.
    fn which_limit(&self, set: Option<u64>, per_task: u64, flag: &str) -> String {
        match set {
            Some(_) => format!("the budget; {flag} N raises it"),
            None => format!(
                "the budget for {} tasks, {} a task; {flag} N raises it",
                thousands(self.expected_tasks.get()),
                thousands(per_task)
            ),
        }
    }

    /// Counts one decoded node; false once the command must stop.
    pub fn spend_node(&self) -> bool {
        self.nodes.set(self.nodes.get().saturating_add(1));
        if self.nodes.get() > self.max_nodes.get() {
            self.stop_with(Error::new(
                ErrorKind::Budget,
                format!(
                    "stopped after {} nodes ({})",
                    thousands(self.max_nodes.get()),
                    self.which_limit(self.limits.nodes, NODES_PER_TASK, "--max-nodes")
                ),
            ));
        }
        self.go_on()
    }

    fn spend_bytes(&self, count: usize) -> bool {
        self.bytes
            .set(self.bytes.get().saturating_add(count as u64));
        if self.bytes.get() > self.max_bytes.get() {
            self.stop_with(Error::new(
                ErrorKind::Budget,
                format!(
                    "stopped after reading {} bytes ({})",
                    thousands(self.max_bytes.get()),
                    self.which_limit(self.limits.bytes, BYTES_PER_TASK, "--max-bytes")
                ),
            ));
        }
        self.go_on()
    }

    /// The nodes and bytes spent so far.
    pub fn spent(&self) -> (u64, u64) {
        (self.nodes.get(), self.bytes.get())
    }

    /// Takes back `bytes` spent on reads whose results were dropped, to be read again (a
    /// walk by two threads that did not join as one).
    pub fn refund_bytes(&self, bytes: u64) {
        self.bytes.set(self.bytes.get().saturating_sub(bytes));
    }

    /// Whether `nodes` and `bytes` more would fit the limits in force.
    pub fn holds(&self, nodes: u64, bytes: u64) -> bool {
        self.nodes.get().saturating_add(nodes) <= self.max_nodes.get()
            && self.bytes.get().saturating_add(bytes) <= self.max_bytes.get()
    }

    /// Spends what a task decoded on another thread, with a budget of its own, spent
    /// there, as if it had been decoded here: true when it fits. When it would not fit (or
    /// the walk is stopped) nothing is spent, and the task is decoded here again, so that
    /// the budget stops the walk at the very node it would have alone.
    pub fn spend_as_decoded_elsewhere(&self, nodes: u64, bytes: u64) -> bool {
        if !self.holds(nodes, bytes) || !self.go_on() {
            return false;
        }
        self.nodes.set(self.nodes.get() + nodes);
        self.bytes.set(self.bytes.get() + bytes);
        true
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

    /// What another thread spent is taken whole or not at all: the walk decodes a task
    /// again where it would not fit, so the budget stops inside it as it would have.
    #[test]
    fn what_another_thread_spent_is_taken_only_where_it_fits() {
        let budget = Budget::new(
            Limits {
                nodes: Some(10),
                bytes: Some(100),
            },
            None,
        );
        assert!(budget.spend_as_decoded_elsewhere(4, 40));
        assert_eq!(budget.spent(), (4, 40));
        assert!(!budget.spend_as_decoded_elsewhere(7, 0));
        assert!(!budget.spend_as_decoded_elsewhere(0, 61));
        assert_eq!(budget.spent(), (4, 40));
        assert!(budget.spend_as_decoded_elsewhere(6, 60));
        assert!(budget.go_on());
        assert!(!budget.spend_node());
        assert!(!budget.spend_as_decoded_elsewhere(0, 0));
    }

    #[test]
    fn stops_when_spent_or_interrupted() {
        let budget = Budget::new(
            Limits {
                nodes: Some(3),
                bytes: Some(100),
            },
            None,
        );
        budget.expect_tasks(1_000_000);
        assert!(budget.spend_node() && budget.spend_node() && budget.spend_node());
        assert!(!budget.spend_node());
        assert_eq!(
            budget.stopped().map(|error| error.message()).as_deref(),
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

    #[test]
    fn the_default_grows_with_the_tasks_tokio_counts_and_stays_bounded() {
        let budget = Budget::new(Limits::default(), None);
        assert_eq!(budget.max_nodes.get(), DEFAULT_MAX_NODES);
        // A million tasks, three lists: every node of every task fits.
        budget.expect_tasks(600_000);
        budget.expect_tasks(400_000);
        budget.expect_tasks(100);
        assert_eq!(budget.max_nodes.get(), 1_000_100 * NODES_PER_TASK);
        assert_eq!(budget.max_bytes.get(), 1_000_100 * BYTES_PER_TASK);
        // A corrupt count lifts it only so far.
        budget.expect_tasks(u64::MAX);
        assert_eq!(budget.max_nodes.get(), MAX_EXPECTED_TASKS * NODES_PER_TASK);
        budget.nodes.set(budget.max_nodes.get());
        assert!(!budget.spend_node());
        assert_eq!(
            budget.stopped().map(|error| error.message()).as_deref(),
            Some(
                "stopped after 1,024,000,000 nodes (the budget for 16,000,000 tasks, 64 a task; \
                 --max-nodes N raises it)"
            )
        );
    }
}
