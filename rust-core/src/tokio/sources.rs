//! The task lists of a program: each runtime's (sharded, with tokio's own count of its
//! tasks) and each LocalSet's (one list, no count), known by the value everything that
//! leads to them shares: a runtime by its flavor's handle, a LocalSet by its `Shared`.
//! Anchors (`anchors.rs`), thread contexts and tasks' schedulers all resolve to one.

use crate::error::Result;
use crate::layouts::{rust, tokio as layout};
use crate::std_values;
use crate::value::{Target, Value};

use super::anchors::Anchor;
use super::context::RuntimeHandle;
use super::tasks::{ShardHelper, TaskHeader, TaskReader, TaskWalk};

/// Which kind of list a source is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SourceKind {
    /// A runtime, of this flavor (`CurrentThread`, `MultiThread`).
    Runtime(String),
    LocalSet,
}

/// A runtime or a LocalSet: `value` is the runtime's flavor handle
/// (`current_thread::Handle`, `multi_thread::Handle`) or the LocalSet's `Shared`.
#[derive(Clone)]
pub struct TaskSource<'a> {
    pub kind: SourceKind,
    pub value: Value<'a>,
}

impl<'a> TaskSource<'a> {
    /// What names the source: the address of its handle or `Shared`.
    pub fn address(&self) -> u64 {
        self.value.address
    }

    pub fn of_runtime(runtime: &RuntimeHandle<'a>) -> TaskSource<'a> {
        TaskSource {
            kind: SourceKind::Runtime(runtime.flavor.clone()),
            value: runtime.handle.clone(),
        }
    }

    /// Its `flavor` in the report: the runtime's scheduler, or `LocalSet`.
    pub fn flavor(&self) -> &str {
        match &self.kind {
            SourceKind::Runtime(flavor) => flavor,
            SourceKind::LocalSet => crate::model::LOCAL_SET_FLAVOR,
        }
    }

    /// The runtime handle of a runtime source (its inject queue, its shutdown).
    pub fn runtime_handle(&self) -> Option<&Value<'a>> {
        matches!(self.kind, SourceKind::Runtime(_)).then_some(&self.value)
    }

    /// The source an anchor leads to; `None` for a task (see `owner_of`).
    pub fn of_anchor(target: &'a Target<'a>, anchor: Anchor) -> Result<Option<TaskSource<'a>>> {
        Ok(Some(match anchor {
            Anchor::LocalSet(ty, address) => {
                let local_set = target.value(ty, address)?;
                local_set_source(std_values::at_path(&local_set, layout::LOCAL_SET_SHARED)?)
            }
            Anchor::RuntimeHandle(ty, address) => {
                let (flavor, payload) = target.value(ty, address)?.variant()?;
                TaskSource {
                    kind: SourceKind::Runtime(flavor),
                    value: std_values::arc_data(&payload.field(rust::TUPLE_FIRST)?)?,
                }
            }
            Anchor::Task(_) => return Ok(None),
        }))
    }

    /// The LocalSet whose `Shared` this is (a thread's `CURRENT`).
    pub fn of_local_shared(shared: Value<'a>) -> TaskSource<'a> {
        local_set_source(shared)
    }

    /// The list that owns a task: its scheduler (`Core.scheduler`) is an `Arc` of its
    /// runtime's handle or of its LocalSet's `Shared`. `None` for a task no list owns (a
    /// blocking task's scheduler is none of these).
    pub fn owner_of(tasks: &TaskReader<'a>, header: &TaskHeader) -> Result<Option<TaskSource<'a>>> {
        let scheduler = tasks.scheduler(header)?;
        if !std_values::is_arc(&scheduler.ty) {
            return Ok(None);
        }
        let shared = std_values::arc_data(&scheduler)?;
        if shared.ty.name == layout::LOCAL_SHARED_TYPE {
            return Ok(Some(local_set_source(shared)));
        }
        Ok(layout::FLAVOR_HANDLE_TYPES
            .iter()
            .find(|(name, _)| shared.ty.name == *name)
            .map(|(_, flavor)| TaskSource {
                kind: SourceKind::Runtime(flavor.to_string()),
                value: shared,
            }))
    }
}

/// Ids tokio gives its task lists: one counter from 1 for runtimes and LocalSets alike.
const MAX_LIST_ID: u64 = 1 << 48;

impl TaskSource<'_> {
    /// Whether this looks like a live runtime or LocalSet: its list's id is one tokio could
    /// have given, and the first task on it says it belongs to it. A stale copy of a handle
    /// (a moved-from local a coroutine keeps), or stack bytes taken for a LocalSet, rarely
    /// pass.
    pub fn is_plausible(&self, tasks: &TaskReader<'_>) -> bool {
        self.check(tasks).unwrap_or(false)
    }

    fn check(&self, tasks: &TaskReader<'_>) -> Result<bool> {
        let (owned, first) = match self.kind {
            SourceKind::Runtime(_) => {
                let owned = std_values::at(&self.value, layout::HANDLE_OWNED_TASKS)?;
                let shards = std_values::boxed_slice(
                    &std_values::at(&owned, layout::OWNED_TASKS_SHARDS)?,
                    super::tasks::MAX_SHARDS,
                )?;
                let mut first = None;
                for shard in shards.iter() {
                    let list = std_values::at(shard, layout::SHARD_LIST)?;
                    let head = list.field(layout::LINKED_LIST_HEAD)?.read_pointer()?;
                    if head != 0 {
                        first = Some(head);
                        break;
                    }
                }
                (owned, first)
            }
            SourceKind::LocalSet => {
                if !shared_by_live_arcs(&self.value)? {
                    return Ok(false);
                }
                let owner = std_values::at(&self.value, layout::LOCAL_SHARED_OWNER)?.read_uint()?;
                if owner == 0 || owner >= MAX_LIST_ID {
                    return Ok(false);
                }
                let owned = std_values::at(&self.value, layout::LOCAL_SHARED_OWNED_TASKS)?;
                let list = std_values::at(&owned, layout::LOCAL_OWNED_LIST)?;
                let head = list.field(layout::LINKED_LIST_HEAD)?.read_pointer()?;
                let tail = list.field(layout::LINKED_LIST_TAIL)?.read_pointer()?;
                if (head == 0) != (tail == 0) {
                    return Ok(false);
                }
                (owned, (head != 0).then_some(head))
            }
        };
        let id = owned.field(layout::OWNED_TASKS_ID)?.read_uint()?;
        if id == 0 || id >= MAX_LIST_ID {
            return Ok(false);
        }
        Ok(match first {
            Some(header) => tasks.owner_id(header)? == Some(id),
            None => true,
        })
    }
}

/// Whether `data`, kept in an `ArcInner`, has counts an `Arc` in use has: at least one
/// strong and one weak reference, and not absurdly many.
fn shared_by_live_arcs(data: &Value<'_>) -> Result<bool> {
    let debug = data.target.debug;
    let inner_name = format!("{}{}>", rust::ARC_INNER_PREFIX, data.ty.name);
    let Some(inner) = debug.type_named(&inner_name)? else {
        // Nothing to check by: the other checks decide.
        return Ok(true);
    };
    let Some(at) = inner.field(rust::ARC_DATA).map(|field| field.offset) else {
        return Ok(true);
    };
    let Some(start) = data.address.checked_sub(at) else {
        return Ok(false);
    };
    let inner = data.target.value_of_type(inner, start);
    let live = |name| -> Result<bool> {
        let count = inner.field(name)?.read_uint()?;
        Ok((1..MAX_REFERENCES).contains(&count))
    };
    Ok(live(rust::ARC_STRONG)? && live(rust::ARC_WEAK)?)
}

/// More references than any program holds: a count read from garbage.
const MAX_REFERENCES: u64 = 1 << 32;

fn local_set_source(shared: Value<'_>) -> TaskSource<'_> {
    TaskSource {
        kind: SourceKind::LocalSet,
        value: shared,
    }
}

/// A source's tasks as read, beside what tokio says of them.
#[derive(Default)]
pub struct TaskList {
    pub walk: TaskWalk,
    /// The tasks tokio counts in it (a runtime's `OwnedTasks` count); `None` where it
    /// keeps none (a LocalSet) or the count could not be read.
    pub counted: Option<u64>,
    /// The list is closed: its owner is shutting its tasks down.
    pub closed: Option<bool>,
}

impl<'a> TaskReader<'a> {
    /// Every task of `source`, with tokio's count and whether the list is closed.
    pub fn task_list(&self, source: &TaskSource<'a>) -> Result<TaskList> {
        self.task_list_helped(source, None)
    }

    /// `task_list`, a runtime's shards walked with `helper` where it has many tasks
    /// (`task_addresses_helped`).
    pub fn task_list_helped(
        &self,
        source: &TaskSource<'a>,
        helper: Option<ShardHelper<'_>>,
    ) -> Result<TaskList> {
        match source.kind {
            SourceKind::Runtime(_) => {
                let owned = std_values::at(&source.value, layout::HANDLE_OWNED_TASKS)?;
                let counted = std_values::at(&owned, layout::OWNED_TASKS_COUNT)
                    .and_then(|count| count.read_uint())
                    .ok();
                let closed = std_values::at_path(&owned, layout::OWNED_TASKS_CLOSED)
                    .and_then(|closed| closed.read_uint())
                    .ok()
                    .map(|closed| closed != 0);
                Ok(TaskList {
                    walk: self.task_addresses_helped(&source.value, counted, helper)?,
                    counted,
                    closed,
                })
            }
            SourceKind::LocalSet => {
                let owned = std_values::at(&source.value, layout::LOCAL_SHARED_OWNED_TASKS)?;
                let closed = std_values::at(&owned, layout::LOCAL_OWNED_CLOSED)
                    .and_then(|closed| closed.read_uint())
                    .ok()
                    .map(|closed| closed != 0);
                Ok(TaskList {
                    walk: self.local_set_task_addresses(&source.value)?,
                    counted: None,
                    closed,
                })
            }
        }
    }
}
