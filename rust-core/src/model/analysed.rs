//! What linking and the wait analysis read of a task the report leaves out (`--name`,
//! `--state`, `async task N`, `--group` over a million tasks): a record of about 150 bytes
//! per task (measured on a service's waiters) in place of its tree (a 136-byte report,
//! nodes of 72 and a 112-byte detail each: about 460), which `waits::trim` makes and
//! `waits` and `links` read as they read a tree. Never written out.

use std::sync::Arc;

use thin_vec::ThinVec;

use super::{Detail, Holding, Location, NodeKind, ResourceKind, TaskState};

/// A task the report leaves out, as the analysis reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct AnalysedTask {
    pub id: u64,
    pub runtime: u64,
    pub state: TaskState,
    /// Running, or not read whole: what it holds is not known (`TaskReport::may_hide_holdings`).
    pub may_hide_holdings: bool,
    pub root: AnalysedNode,
}

/// A node of a left-out task's tree that the analysis reads, or that leads to one.
#[derive(Debug, Clone, PartialEq)]
pub struct AnalysedNode {
    pub kind: NodeKind,
    /// Polled now: free to go on.
    pub running: bool,
    /// A branch the walk passes by (a `select!` branch that finished).
    pub finished_branch: bool,
    /// It could not be read: what it holds is not known.
    pub unread: bool,
    /// The await line the nodes below are suspended at (a coroutine's, or one of the
    /// coroutines above it that the record leaves out).
    pub await_line: Option<Arc<Location>>,
    /// What the analysis reads of its detail.
    pub fact: Option<Box<Fact>>,
    /// What it holds, and where (its own location).
    pub held: Option<Box<Held>>,
    pub children: ThinVec<AnalysedNode>,
}

/// The guards, permits and handles a node keeps, and where it keeps them.
#[derive(Debug, Clone, PartialEq)]
pub struct Held {
    pub at: Option<Arc<Location>>,
    pub holds: Vec<Holding>,
}

/// What the wait analysis and linking read of a node's detail: the one place that says
/// which details they read.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Fact {
    /// Waits for permits of a lock's semaphore (a Mutex, an RwLock, a Semaphore).
    Lock {
        kind: ResourceKind,
        address: u64,
        semaphore: u64,
        available: u64,
        total: Option<u64>,
        assigned: Option<u64>,
    },
    /// Receives from a channel (`waits`: nothing is queued and it is open), whose shared
    /// state counts `senders` where it counts them.
    Channel {
        kind: ResourceKind,
        address: u64,
        waits: bool,
        senders: Option<u64>,
    },
    /// Waits on a Notify (`waits`: no permit is stored).
    Notify { address: u64, waits: bool },
    /// A `JoinHandle` waiting for a task.
    Joins {
        task_id: u64,
        task_address: u64,
        task_state: TaskState,
    },
    /// Keeps the sender of a oneshot channel, named by its shared state (a tower Buffer
    /// worker's queued request, a hyper client connection's response callback).
    HoldsSender(u64),
}

impl Fact {
    /// The fact of a node's detail; none for a detail the analysis does not read.
    pub fn of(detail: &Detail) -> Option<Fact> {
        let lock = |kind, wait: &super::PermitWait| Fact::Lock {
            kind,
            address: wait.address,
            semaphore: wait.semaphore,
            available: wait.permits_available,
            total: wait.permits_total,
            assigned: wait.permits_assigned,
        };
        Some(match detail {
            Detail::MutexLock(wait) => lock(ResourceKind::Mutex, wait),
            Detail::RwlockRead(wait) | Detail::RwlockWrite(wait) => {
                lock(ResourceKind::Rwlock, wait)
            }
            Detail::SemaphoreAcquire(wait) => lock(ResourceKind::Semaphore, wait),
            Detail::MpscRecv(wait) => Fact::Channel {
                kind: ResourceKind::Mpsc,
                address: wait.address,
                waits: wait.queued == 0 && !wait.closed,
                senders: Some(wait.senders),
            },
            Detail::OneshotRecv(wait) => Fact::Channel {
                kind: ResourceKind::Oneshot,
                address: wait.address?,
                waits: wait.value_sent != Some(true) && !wait.closed,
                senders: Some(1),
            },
            Detail::BroadcastRecv(wait) => Fact::Channel {
                kind: ResourceKind::Broadcast,
                address: wait.address,
                waits: wait.queued == 0 && !wait.closed,
                senders: Some(wait.senders),
            },
            Detail::WatchChanged(wait) => Fact::Channel {
                kind: ResourceKind::Watch,
                address: wait.address,
                waits: wait.version_seen == wait.version_current && !wait.closed,
                senders: None,
            },
            Detail::Notified(wait) => Fact::Notify {
                address: wait.address,
                waits: !wait.permit_stored,
            },
            Detail::JoinHandle(target) => Fact::Joins {
                task_id: target.task_id,
                task_address: target.task_address,
                task_state: target.task_state,
            },
            Detail::HttpClientConnection(connection) => {
                Fact::HoldsSender(connection.holds_sender_of?)
            }
            Detail::TowerBufferWorker(worker) => Fact::HoldsSender(worker.holds_sender_of?),
            _ => return None,
        })
    }

    /// The oneshot channel whose sender the node keeps.
    pub fn sender_held(&self) -> Option<u64> {
        match *self {
            Fact::HoldsSender(channel) => Some(channel),
            _ => None,
        }
    }
}
