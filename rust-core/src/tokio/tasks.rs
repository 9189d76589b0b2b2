//! A runtime's owned tasks: the sharded intrusive lists of task headers, and for each
//! header its id, state bits and the future it runs (typed through the `poll<T, S>`
//! function its vtable points to).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use rustc_hash::{FxHashMap, FxHashSet};

use crate::dwarf::{DebugInfo, DieRef, TypeInfo};
use crate::error::{Error, ErrorKind, Result, ResultExt};
use crate::layouts::rust;
use crate::layouts::tokio::{self as runtime, state_bits};
use crate::memory::{Memory, MemoryExt};
use crate::model::{Location, TaskState};
use crate::names;
use crate::std_values;
use crate::value::{offset, Target, Value};

/// Upper bound on tasks read from one runtime (a corrupt list must not run forever).
pub const MAX_TASKS_PER_RUNTIME: usize = 4_000_000;
/// Links followed between two looks at the budget and the interrupt.
const LINKS_PER_INTERRUPT_CHECK: usize = 4096;
/// Upper bound on shards (tokio caps them at 65536).
pub(crate) const MAX_SHARDS: u64 = 1 << 16;

/// One task header, read but not yet decoded.
#[derive(Debug, Clone)]
pub struct TaskHeader {
    pub address: u64,
    pub id: u64,
    pub state_bits: u64,
    pub vtable: u64,
}

impl TaskHeader {
    /// Why a listed task's header cannot be a live task's: what a freed task's memory looks
    /// like (the allocator's words over its state) when tokio's own invariants show it.
    pub fn freed_problem(&self, future_in_place: bool) -> Option<&'static str> {
        if self.state_bits >> state_bits::REF_COUNT_SHIFT == 0 {
            // The list holds a reference to every task on it.
            return Some(
                "its reference count is 0, yet its runtime lists it (freed or corrupt memory?)",
            );
        }
        // tokio drops the future (or stores the output over it) before it marks a task
        // complete.
        (self.state() == TaskState::Complete && future_in_place).then_some(
            "its state says complete, but its future is still in place (freed or corrupt memory?)",
        )
    }

    pub fn state(&self) -> TaskState {
        let bits = self.state_bits;
        if bits & state_bits::COMPLETE != 0 {
            TaskState::Complete
        } else if bits & state_bits::CANCELLED != 0 {
            TaskState::Cancelled
        } else if bits & state_bits::RUNNING != 0 {
            TaskState::Running
        } else if bits & state_bits::NOTIFIED != 0 {
            TaskState::Scheduled
        } else {
            TaskState::Idle
        }
    }
}

/// The future inside a task: its type and address, or why there is none to decode.
pub enum TaskFuture {
    Running {
        ty: DieRef,
        address: u64,
    },
    /// The future was dropped (output stored or consumed); only its type is known.
    Gone {
        ty: DieRef,
        stage: String,
    },
}

/// Offsets inside a task's vtable and header, from DWARF, read once per command.
struct Layouts {
    header_state: u64,
    header_vtable: u64,
    vtable_poll: u64,
    vtable_trailer_offset: u64,
    vtable_scheduler_offset: u64,
    vtable_id_offset: u64,
    trailer_next: u64,
    trailer_prev: u64,
}

/// Where a task's future lives inside its `Core<T, S>`, per future type.
#[derive(Clone)]
struct CoreLayout {
    /// `Core<T, S>`, whose `scheduler: S` leads to the list that owns the task.
    core: Arc<TypeInfo>,
    future_type: DieRef,
    /// Offset of `Stage<T>` inside `Core<T, S>`, and its layout.
    stage_offset: u64,
    stage: Arc<TypeInfo>,
    /// `Core<T, S>` records where the task was spawned (`tokio_unstable`).
    records_spawn_location: bool,
}

/// Longest spawn-location file name read (a corrupt length must not read megabytes).
const MAX_FILE_NAME: u64 = 4096;

/// The result of walking a runtime's task lists.
#[derive(Default)]
pub struct TaskWalk {
    pub addresses: Vec<u64>,
    /// What broke the walk: a damaged list (kind `layout`), each with its path (the shard,
    /// the task it could not follow, ...) and cause.
    pub problems: Vec<Error>,
    /// Tasks already reported in `problems` as unreadable.
    pub unreadable: FxHashSet<u64>,
    /// Shards whose lock a thread holds: it may be adding or removing a task right now.
    pub locked_shards: Vec<usize>,
}

/// What a walk of some of a runtime's shards found (`TaskReader::walk_shards`).
#[derive(Default)]
pub struct ShardsWalked {
    /// In the order walked.
    pub addresses: Vec<u64>,
    /// Each shard's problems, by shard index.
    pub problems: Vec<(usize, Vec<Error>)>,
    pub unreadable: FxHashSet<u64>,
    /// What the walk read, where another thread walked (its own budget counts it).
    pub bytes_read: u64,
}

/// A shard's list for another thread to walk: its index, type and address (a `Value`
/// belongs to one thread's target).
pub type ShardList = (usize, Arc<TypeInfo>, u64);

/// What walks shards on another thread: the shards, and a flag it stops at (the walk was
/// stopped); `None` where no thread or reader could be had.
pub type ShardHelper<'h> =
    Box<dyn FnOnce(&[ShardList], &AtomicBool) -> Option<ShardsWalked> + Send + 'h>;

/// Tasks (tokio's count) from which a runtime's shards are walked by two threads.
pub const TASKS_FOR_TWO_WALKERS: u64 = crate::threads::MANY_TASKS as u64;
/// Bytes a link of the walk reads, at most (a header's vtable word, the vtable's first word
/// and trailer offset, the next pointer): the budget must hold this many per task counted
/// for the shards to be walked by two threads, each spending on its own.
const BYTES_PER_LINK: u64 = 64;

impl TaskWalk {
    /// Takes what a walk of shards found: its tasks in memory order, its problems shard by
    /// shard (as a walk of one shard after another says them).
    fn take(&mut self, walked: ShardsWalked) {
        let ShardsWalked {
            mut addresses,
            mut problems,
            unreadable,
            bytes_read: _,
        } = walked;
        problems.sort_by_key(|(index, _)| *index);
        self.problems
            .extend(problems.into_iter().flat_map(|(_, problems)| problems));
        if addresses.len() >= MAX_TASKS_PER_RUNTIME {
            self.problems.push(Error::layout(format!(
                "stopped after {MAX_TASKS_PER_RUNTIME} tasks (corrupt list?)"
            )));
        }
        addresses.sort_unstable();
        self.addresses = addresses;
        self.unreadable = unreadable;
    }
}

/// Two walks of disjoint shards as one walk of them all, where it would have found the
/// same: no task in both (one walk would have stopped the later shard there) and fewer
/// tasks than one walk stops at.
fn joined(mut mine: ShardsWalked, theirs: ShardsWalked) -> Option<ShardsWalked> {
    let total = mine.addresses.len() + theirs.addresses.len();
    if total >= MAX_TASKS_PER_RUNTIME {
        return None;
    }
    mine.addresses.extend(theirs.addresses);
    mine.addresses.sort_unstable();
    if mine.addresses.windows(2).any(|pair| pair[0] == pair[1]) {
        return None;
    }
    mine.problems.extend(theirs.problems);
    mine.unreadable.extend(theirs.unreadable);
    Some(mine)
}

impl ShardWalk<'_> {
    fn named(&self) -> String {
        format!("task list shard {}", self.index)
    }
}

/// Where the walk of one task list is.
struct ShardWalk<'a> {
    index: usize,
    list: Value<'a>,
    next: u64,
    /// Walking back from the tail, after a link forward broke.
    backward: bool,
    problems: Vec<Error>,
}

/// Walks tasks and caches per-future-type layouts across tasks.
pub struct TaskReader<'a> {
    target: &'a Target<'a>,
    header: Arc<TypeInfo>,
    layouts: Layouts,
    /// `poll` function address (unbiased) -> where that future type sits in its task.
    by_poll_fn: std::cell::RefCell<FxHashMap<u64, Result<CoreLayout>>>,
    /// `&'static Location` -> what it says: tasks spawned at one place share it.
    spawn_locations: std::cell::RefCell<FxHashMap<u64, Option<Arc<Location>>>>,
}

impl<'a> TaskReader<'a> {
    pub fn new(target: &'a Target<'a>) -> Result<Self> {
        let debug = target.debug;
        let header = debug.type_named(runtime::HEADER_TYPE)?.ok_or_else(|| {
            Error::layout(format!("no type {} in the DWARF", runtime::HEADER_TYPE))
        })?;
        let vtable_ty = header
            .field(runtime::HEADER_VTABLE)
            .and_then(|field| field.ty)
            .ok_or_else(|| Error::layout("task Header has no `vtable` field"))?;
        let vtable_pointer = debug.type_info(vtable_ty)?;
        let vtable = debug.type_info(
            vtable_pointer
                .target
                .ok_or_else(|| Error::layout("task Header.vtable is not a pointer"))?,
        )?;
        let trailer = debug.type_named(runtime::TRAILER_TYPE)?.ok_or_else(|| {
            Error::layout(format!("no type {} in the DWARF", runtime::TRAILER_TYPE))
        })?;
        let pointers = target
            .value_of_type(trailer, 0)
            .field(runtime::TRAILER_POINTERS)?;
        let trailer_next = std_values::at(&pointers, runtime::POINTERS_NEXT)?.address;
        let trailer_prev = std_values::at(&pointers, runtime::POINTERS_PREV)?.address;
        let field_offset = |ty: &Arc<TypeInfo>, name: &str| {
            ty.field(name).map(|field| field.offset).ok_or_else(|| {
                Error::layout(format!(
                    "{} has no field `{name}` (unknown tokio layout)",
                    ty.name
                ))
            })
        };
        let layouts = Layouts {
            header_state: field_offset(&header, runtime::HEADER_STATE)?,
            header_vtable: field_offset(&header, runtime::HEADER_VTABLE)?,
            vtable_poll: field_offset(&vtable, runtime::VTABLE_POLL)?,
            vtable_trailer_offset: field_offset(&vtable, runtime::VTABLE_TRAILER_OFFSET)?,
            vtable_scheduler_offset: field_offset(&vtable, runtime::VTABLE_CORE_OFFSET)?,
            vtable_id_offset: field_offset(&vtable, runtime::VTABLE_ID_OFFSET)?,
            trailer_next,
            trailer_prev,
        };
        Ok(TaskReader {
            target,
            header,
            layouts,
            by_poll_fn: Default::default(),
            spawn_locations: Default::default(),
        })
    }

    /// Addresses of every task header in the runtime whose scheduler handle is `handle`,
    /// in memory order, and what could not be read. A task whose links are unreadable
    /// loses only itself: each shard is walked forward from its head and, if that breaks,
    /// back from its tail.
    pub fn task_addresses(&self, handle: &Value<'a>) -> Result<TaskWalk> {
        self.task_addresses_helped(handle, None, None)
    }

    /// `task_addresses`; with `helper`, and tokio counting `counted` tasks (at least
    /// `TASKS_FOR_TWO_WALKERS`), every other shard is walked by the helper's thread while
    /// this one walks the rest. The walk is the one a thread makes alone: where the halves
    /// do not join as it would (a task in two shards, a helper that could not start, a
    /// runaway list), the shards are walked again here.
    pub fn task_addresses_helped(
        &self,
        handle: &Value<'a>,
        counted: Option<u64>,
        helper: Option<ShardHelper<'_>>,
    ) -> Result<TaskWalk> {
        let owned = std_values::at(handle, runtime::HANDLE_OWNED_TASKS)
            .context_with(|| "runtime handle")?;
        let shards = std_values::boxed_slice(
            &std_values::at(&owned, runtime::OWNED_TASKS_SHARDS)?,
            MAX_SHARDS,
        )?;
        let mut walk = TaskWalk::default();
        let mut lists = Vec::with_capacity(shards.len());
        for (shard_index, shard) in shards.iter().enumerate() {
            if std_values::tokio_mutex_locked(shard).ok().flatten() == Some(true) {
                walk.locked_shards.push(shard_index);
            }
            lists.push(std_values::at(shard, runtime::SHARD_LIST)?);
        }
        let helper = helper.filter(|_| lists.len() >= 2 && self.two_walkers_for(counted));
        if let Some(helper) = helper {
            let spent = self.bytes_spent();
            if let Some(walked) = self.walk_in_two(&lists, helper) {
                walk.take(walked);
                return Ok(walk);
            }
            // Walked again below, as if for the first time.
            if let Some(budget) = self.target.budget {
                budget.refund_bytes(self.bytes_spent() - spent);
            }
        }
        self.walk_lists(lists, &mut walk)?;
        Ok(walk)
    }

    fn bytes_spent(&self) -> u64 {
        self.target.budget.map_or(0, |budget| budget.spent().1)
    }

    /// Whether `counted` tasks are worth two threads, and the budget holds what walking
    /// them costs (each thread spends on its own, so neither can stop where one would).
    fn two_walkers_for(&self, counted: Option<u64>) -> bool {
        let Some(counted) = counted.filter(|&counted| counted >= TASKS_FOR_TWO_WALKERS) else {
            return false;
        };
        let needed = counted.saturating_mul(2).saturating_mul(BYTES_PER_LINK);
        self.target
            .budget
            .is_none_or(|budget| budget.holds(0, needed))
    }

    /// Walks the even shards here and the odd ones with `helper`; `None` where the two
    /// walks do not join as one walk would have walked them, or either failed.
    fn walk_in_two(&self, lists: &[Value<'a>], helper: ShardHelper<'_>) -> Option<ShardsWalked> {
        let (mine, theirs): (Vec<_>, Vec<_>) = lists
            .iter()
            .cloned()
            .enumerate()
            .partition(|(index, _)| index % 2 == 0);
        let theirs: Vec<ShardList> = theirs
            .into_iter()
            .map(|(index, list)| (index, list.ty, list.address))
            .collect();
        let stopped = AtomicBool::new(false);
        let (mine, theirs) = std::thread::scope(|scope| {
            let helper = crate::threads::spawn_scoped(scope, "tokio-async-list", || {
                crate::panics::on_helper_thread(|| helper(&theirs, &stopped))
            });
            let Ok(helper) = helper else {
                return (None, None);
            };
            let mine = self.walk_shards(mine, &|| {
                let stop = !self.target.go_on();
                if stop {
                    stopped.store(true, Ordering::Relaxed);
                }
                stop
            });
            if mine.is_err() {
                // The helper stops with this thread; the walk alone says what failed first.
                stopped.store(true, Ordering::Relaxed);
            }
            let theirs = match helper.join() {
                Ok(Ok(theirs)) => theirs,
                Ok(Err(caught)) => crate::panics::resume(caught),
                Err(payload) => std::panic::resume_unwind(payload),
            };
            (mine.ok(), theirs)
        });
        let (Some(mine), Some(theirs)) = (mine, theirs) else {
            return None;
        };
        if let Some(budget) = self.target.budget {
            // It fits (`two_walkers_for`), unless the walk was stopped meanwhile.
            budget.spend_as_decoded_elsewhere(0, theirs.bytes_read);
        }
        joined(mine, theirs)
    }

    /// The tasks a LocalSet owns (its `Shared.local_state.owned`): one list, not shards.
    pub fn local_set_task_addresses(&self, shared: &Value<'a>) -> Result<TaskWalk> {
        let owned = std_values::at(shared, runtime::LOCAL_SHARED_OWNED_TASKS)?;
        let list = std_values::at(&owned, runtime::LOCAL_OWNED_LIST)?;
        let mut walk = TaskWalk::default();
        self.walk_lists(vec![list], &mut walk)?;
        Ok(walk)
    }

    /// Walks intrusive task lists (shard `index` is `lists[index]`) one link of each in
    /// turn: tokio puts task N in shard N mod shards, each shard newest first, so the
    /// walks move down the heap side by side and each page of it is read about once
    /// (shard by shard, a million tasks' heap would be read once per shard).
    fn walk_lists(&self, lists: Vec<Value<'a>>, walk: &mut TaskWalk) -> Result<()> {
        let walked = self.walk_shards(lists.into_iter().enumerate().collect(), &|| {
            !self.target.go_on()
        })?;
        walk.take(walked);
        Ok(())
    }

    /// Walks the shards `(index, list)` as `walk_lists` does; `stop` is asked every few
    /// thousand links whether to stop.
    pub fn walk_shards(
        &self,
        lists: Vec<(usize, Value<'a>)>,
        stop: &dyn Fn() -> bool,
    ) -> Result<ShardsWalked> {
        let mut seen = FxHashSet::default();
        let mut shards = lists
            .into_iter()
            .map(|(index, list)| {
                let head = list.field(runtime::LINKED_LIST_HEAD)?.read_pointer()?;
                Ok(ShardWalk {
                    index,
                    list,
                    next: head,
                    backward: false,
                    problems: Vec::new(),
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let mut walked = ShardsWalked::default();
        let mut walking: Vec<usize> = (0..shards.len()).collect();
        while !walking.is_empty() {
            let mut failed = None;
            walking.retain(|&index| {
                match self.step(&mut shards[index], &mut seen, &mut walked, stop) {
                    Ok(more) => more,
                    Err(error) => {
                        failed.get_or_insert(error);
                        false
                    }
                }
            });
            if let Some(error) = failed {
                return Err(error);
            }
            if walked.addresses.len() >= MAX_TASKS_PER_RUNTIME {
                break;
            }
        }
        walked.problems = shards
            .into_iter()
            .map(|shard| (shard.index, shard.problems))
            .collect();
        Ok(walked)
    }

    /// Takes one link of `shard`'s walk; false when it is over.
    fn step(
        &self,
        shard: &mut ShardWalk<'a>,
        seen: &mut FxHashSet<u64>,
        walk: &mut ShardsWalked,
        stop: &dyn Fn() -> bool,
    ) -> Result<bool> {
        let at = shard.next;
        if at == 0 || walk.addresses.len() >= MAX_TASKS_PER_RUNTIME || !seen.insert(at) {
            return Ok(false);
        }
        if walk
            .addresses
            .len()
            .is_multiple_of(LINKS_PER_INTERRUPT_CHECK)
        {
            self.release_pages();
            if stop() {
                let stopped = Error::layout("stopped walking (interrupted or out of budget)");
                shard.problems.push(stopped.context(shard.named()));
                return Ok(false);
            }
        }
        walk.addresses.push(at);
        let link_offset = match shard.backward {
            false => self.layouts.trailer_next,
            true => self.layouts.trailer_prev,
        };
        let link = self.read_vtable(at).and_then(|vtable| {
            let trailer = self
                .target
                .memory
                .read_u64(offset(vtable, self.layouts.vtable_trailer_offset)?)?;
            self.target
                .memory
                .read_u64(offset(offset(at, trailer)?, link_offset)?)
        });
        match link {
            Ok(next) => shard.next = next,
            Err(error) => {
                let broken = error
                    .of_kind(ErrorKind::Layout)
                    .context(format!("cannot follow the task at {at:#x}"))
                    .context(shard.named());
                shard.problems.push(broken);
                walk.unreadable.insert(at);
                if shard.backward {
                    return Ok(false);
                }
                shard.backward = true;
                shard.next = shard
                    .list
                    .field(runtime::LINKED_LIST_TAIL)?
                    .read_pointer()?;
            }
        }
        Ok(true)
    }

    /// A million tasks' headers span a core's whole heap: the pages read so far leave the
    /// RSS as the walk goes, not once it is over.
    #[cold]
    #[inline(never)]
    fn release_pages(&self) {
        self.target.memory.release_cache();
    }

    fn read_vtable(&self, header: u64) -> Result<u64> {
        let vtable = self
            .target
            .memory
            .read_u64(offset(header, self.layouts.header_vtable)?)?;
        if vtable == 0 {
            return Err(Error::layout(format!(
                "task {header:#x} has a null vtable (freed?)"
            )));
        }
        // A vtable is static data: reading its first word proves the pointer is sane.
        self.target
            .memory
            .read_u64(vtable)
            .context_with(|| format!("vtable of task {header:#x}"))?;
        Ok(vtable)
    }

    pub fn read_header(&self, address: u64) -> Result<TaskHeader> {
        let state_bits = self
            .target
            .memory
            .read_u64(offset(address, self.layouts.header_state)?)?;
        let vtable = self.read_vtable(address)?;
        let id_offset = self
            .target
            .memory
            .read_u64(offset(vtable, self.layouts.vtable_id_offset)?)?;
        let id = self.target.memory.read_u64(offset(address, id_offset)?)?;
        Ok(TaskHeader {
            address,
            id,
            state_bits,
            vtable,
        })
    }

    /// The id of the list that owns the task (`Header.owner_id`); `None` before it is bound.
    pub fn owner_id(&self, address: u64) -> Result<Option<u64>> {
        let header = self.target.value_of_type(self.header.clone(), address);
        match std_values::option(&std_values::at(&header, runtime::HEADER_OWNER_ID)?)? {
            Some(id) => Ok(Some(id.read_uint()?)),
            None => Ok(None),
        }
    }

    /// Where the future type of a task sits in its task, from the `poll<T, S>` instance its
    /// vtable points to.
    fn layout_of(&self, header: &TaskHeader) -> Result<CoreLayout> {
        let poll = self
            .target
            .memory
            .read_u64(offset(header.vtable, self.layouts.vtable_poll)?)?;
        self.core_layout(poll.wrapping_sub(self.target.load_bias))
    }

    /// Where a task's `Core<T, S>` is.
    fn core_address(&self, header: &TaskHeader) -> Result<u64> {
        let core_offset = self
            .target
            .memory
            .read_u64(offset(header.vtable, self.layouts.vtable_scheduler_offset)?)?;
        offset(header.address, core_offset)
    }

    /// The task's future, typed from the `poll<T, S>` instance its vtable points to.
    pub fn future(&self, header: &TaskHeader) -> Result<TaskFuture> {
        let layout = self.layout_of(header)?;
        let stage = self.target.value_of_type(
            layout.stage,
            offset(self.core_address(header)?, layout.stage_offset)?,
        );
        let (variant, payload) = stage.variant()?;
        if variant != runtime::STAGE_RUNNING {
            return Ok(TaskFuture::Gone {
                ty: layout.future_type,
                stage: variant.to_lowercase(),
            });
        }
        let future = payload.field(rust::TUPLE_FIRST)?;
        Ok(TaskFuture::Running {
            ty: layout.future_type,
            address: future.address,
        })
    }

    /// The task's scheduler (`Core.scheduler`): an `Arc` of the handle of the runtime that
    /// owns it, or of its LocalSet's `Shared`.
    pub fn scheduler(&self, header: &TaskHeader) -> Result<Value<'a>> {
        let layout = self.layout_of(header)?;
        self.target
            .value_of_type(layout.core, self.core_address(header)?)
            .field(runtime::CORE_SCHEDULER)
    }

    /// Where the task was spawned, in builds whose tokio records it (`tokio_unstable`).
    pub fn spawn_location(&self, header: &TaskHeader) -> Result<Option<Arc<Location>>> {
        let layout = self.layout_of(header)?;
        if !layout.records_spawn_location {
            return Ok(None);
        }
        let field = self
            .target
            .value_of_type(layout.core, self.core_address(header)?)
            .field(runtime::CORE_SPAWNED_AT)?;
        let pointer = field.read_pointer()?;
        if let Some(known) = self.spawn_locations.borrow().get(&pointer) {
            return Ok(known.clone());
        }
        let location = field.pointee()?;
        let (data, length) =
            std_values::text_bytes(&std_values::at(&location, rust::LOCATION_FILE)?)?;
        let line = location.field(rust::LOCATION_LINE)?.read_uint()?;
        let read = if length <= MAX_FILE_NAME {
            self.target.memory.read_bytes(data, length as usize).ok()
        } else {
            None
        };
        let spawned_at = read
            .and_then(|bytes| String::from_utf8(bytes).ok())
            .map(|file| {
                Arc::new(Location::new(
                    names::short_path(&file).into(),
                    line,
                    file.into(),
                ))
            });
        self.spawn_locations
            .borrow_mut()
            .insert(pointer, spawned_at.clone());
        Ok(spawned_at)
    }

    fn core_layout(&self, poll: u64) -> Result<CoreLayout> {
        if let Some(cached) = self.by_poll_fn.borrow().get(&poll) {
            return cached.clone();
        }
        let result = self.find_core_layout(poll);
        self.by_poll_fn.borrow_mut().insert(poll, result.clone());
        result
    }

    fn find_core_layout(&self, poll: u64) -> Result<CoreLayout> {
        let debug = self.target.debug;
        let params = debug.subprogram_template_params(poll)?.ok_or_else(|| {
            Error::new(
                ErrorKind::Layout,
                format!("no DWARF for the task's poll function at {poll:#x} (is the debug info complete?)"),
            )
        })?;
        let find = |name: &str| {
            params
                .iter()
                .find(|(param, _)| param == name)
                .map(|(_, die)| *die)
        };
        let (future_ty, scheduler_ty) = match (
            find(runtime::POLL_FUTURE_PARAM),
            find(runtime::POLL_SCHEDULER_PARAM),
        ) {
            (Some(t), Some(s)) => (t, s),
            _ => {
                return Err(Error::layout(format!(
                    "poll function at {poll:#x} has no T and S parameters"
                )))
            }
        };
        let future_name = debug.type_info(future_ty)?.name.clone();
        let scheduler_name = debug.type_info(scheduler_ty)?.name.clone();
        let core_name = format!(
            "{}{future_name}, {scheduler_name}>",
            runtime::CORE_TYPE_PREFIX
        );
        let core = debug
            .type_named_near(&core_name, Some(future_ty))?
            .ok_or_else(|| Error::layout(format!("no type {core_name} in the DWARF")))?;
        let stage = std_values::at(
            &self.target.value_of_type(core.clone(), 0),
            runtime::CORE_STAGE,
        )?;
        Ok(CoreLayout {
            records_spawn_location: core.field(runtime::CORE_SPAWNED_AT).is_some(),
            core,
            future_type: future_ty,
            stage_offset: stage.address,
            stage: stage.ty,
        })
    }
}

/// Where task N's wake shows: its header's state word and the bit a wake sets.
#[derive(Debug, Clone)]
pub struct WakeWatch {
    pub address: u64,
    pub size: u64,
    pub notified_mask: u64,
    pub notified_now: bool,
    /// A thread that wakes the task runs one of these (part of a function's path).
    pub waking_functions: Vec<&'static str>,
}

/// Task `id`'s wake watch, from its header at `task_address`: where its state word is, and
/// the bit a wake sets in it.
pub fn wake_watch(
    debug: &DebugInfo,
    memory: &dyn Memory,
    task_address: u64,
    id: u64,
) -> Result<WakeWatch> {
    let header = debug
        .type_named(runtime::HEADER_TYPE)?
        .ok_or_else(|| Error::layout(format!("no type {} in the DWARF", runtime::HEADER_TYPE)))?;
    let offset = header
        .field(runtime::HEADER_STATE)
        .map(|field| field.offset)
        .ok_or_else(|| {
            Error::layout(format!(
                "{} has no field `{}`",
                runtime::HEADER_TYPE,
                runtime::HEADER_STATE
            ))
        })?;
    let address = task_address.checked_add(offset).ok_or_else(|| {
        Error::new(
            ErrorKind::Layout,
            format!("task {id}'s header address overflows"),
        )
    })?;
    let word = memory.read_uint(address, 8)?;
    Ok(WakeWatch {
        address,
        size: 8,
        notified_mask: state_bits::NOTIFIED,
        notified_now: word & state_bits::NOTIFIED != 0,
        waking_functions: runtime::WAKE_TRANSITIONS.to_vec(),
    })
}
