//! What `top` shows, apart from how it is drawn: the tasks of the latest refresh as rows,
//! what the refreshes tell of each (stuck for how long, how often busy), sorted, filtered
//! and grouped as the keys ask.

use std::cmp::Ordering;

use rustc_hash::FxHashMap;

use crate::error::Result;
use crate::groups::group_tasks;
use crate::history::Snapshot;
use crate::model::{
    Detail, FutureNode, Party, Report, Resource, Stranded, StrandedWhy, TaskReport, TaskState,
};
use crate::render::{counted, state_name, where_it_stands, Style};
use crate::selection::{Selection, TaskFilter};

/// The columns, in the order shown; each can be sorted on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Column {
    Id,
    State,
    Runtime,
    Root,
    WaitingAt,
    WaitingOn,
    Stuck,
    Busy,
    Spawned,
}

impl Column {
    pub const ALL: [Column; 9] = [
        Column::Id,
        Column::State,
        Column::Runtime,
        Column::Root,
        Column::WaitingAt,
        Column::WaitingOn,
        Column::Stuck,
        Column::Busy,
        Column::Spawned,
    ];

    pub fn title(self) -> &'static str {
        match self {
            Column::Id => "ID",
            Column::State => "STATE",
            Column::Runtime => "RT",
            Column::Root => "ROOT",
            Column::WaitingAt => "WAITING AT",
            Column::WaitingOn => "WAITING ON",
            Column::Stuck => "STUCK",
            Column::Busy => "BUSY",
            Column::Spawned => "SPAWNED AT",
        }
    }

    /// The next column to sort on (`s`).
    pub fn next(self) -> Column {
        let at = Column::ALL.iter().position(|&column| column == self);
        Column::ALL[at.map_or(0, |at| (at + 1) % Column::ALL.len())]
    }
}

/// One line of the tasks view: a task, or a group of tasks alike (`g`).
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// The task's id, or the group's first.
    pub id: u64,
    /// How many tasks the row stands for (1 but for groups).
    pub count: usize,
    pub state: String,
    /// `rt0`, or `rt0 w1` for a task a worker runs now.
    pub runtime: String,
    pub root: String,
    pub waiting_at: String,
    pub waiting_on: String,
    /// Seconds since the task's tree last changed, as the refreshes saw it.
    pub stuck_secs: Option<f64>,
    /// The share of the refreshes that saw it running or scheduled.
    pub busy: Option<f64>,
    pub spawned_at: String,
}

impl Row {
    pub fn cell(&self, column: Column) -> String {
        match column {
            Column::Id if self.count > 1 => format!("{}×{}", self.id, self.count),
            Column::Id => self.id.to_string(),
            Column::State => self.state.clone(),
            Column::Runtime => self.runtime.clone(),
            Column::Root => self.root.clone(),
            Column::WaitingAt => self.waiting_at.clone(),
            Column::WaitingOn => self.waiting_on.clone(),
            Column::Stuck => self.stuck_secs.map_or("-".into(), duration),
            Column::Busy => self
                .busy
                .map_or("-".into(), |busy| format!("{:.0}%", busy * 100.0)),
            Column::Spawned => self.spawned_at.clone(),
        }
    }

    fn compare(&self, other: &Row, column: Column) -> Ordering {
        let numbers = |a: Option<f64>, b: Option<f64>| {
            a.unwrap_or(-1.0)
                .partial_cmp(&b.unwrap_or(-1.0))
                .unwrap_or(Ordering::Equal)
        };
        match column {
            Column::Id => self.id.cmp(&other.id),
            Column::Stuck => numbers(self.stuck_secs, other.stuck_secs),
            Column::Busy => numbers(self.busy, other.busy),
            _ => self.cell(column).cmp(&other.cell(column)),
        }
        .then(self.id.cmp(&other.id))
    }
}

/// A resource tasks wait on, with who holds it and who waits.
#[derive(Debug, Clone, PartialEq)]
pub struct ResourceRow {
    pub resource: Resource,
    /// Who holds it (a lock's guards, a channel's senders), as the wait-for graph found.
    pub holders: Vec<Party>,
    /// Who waits on it.
    pub waiters: Vec<Party>,
    /// A lock whose guards no task or thread keeps: its waiters are stranded.
    pub no_holder: bool,
    /// What its first waiter read of it: permits free and waiters queued, messages queued
    /// and senders, the awaited task's state (`resource_state`).
    pub state: Option<String>,
}

/// The timers tasks wait on: how many, and the soonest due (seconds from the stop).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Timers {
    pub waiting: usize,
    pub soonest_secs: Option<f64>,
}

/// `42s`, `3m05s`, `2h10m`: how long, in the fewest characters that stay exact enough.
pub fn duration(seconds: f64) -> String {
    let whole = seconds.max(0.0).round() as u64;
    match whole {
        0..60 => format!("{whole}s"),
        60..3600 => format!("{}m{:02}s", whole / 60, whole % 60),
        _ => format!("{}h{:02}m", whole / 3600, whole % 3600 / 60),
    }
}

/// `app::handlers::serve` -> `serve`; `tokio::sync::oneshot::Receiver<…>` -> `Receiver<…>`.
pub fn short_name(path: &str) -> String {
    let segments = crate::names::split_path(path);
    match segments.as_slice() {
        [.., parent, last] if last.starts_with('{') => format!("{parent}::{last}"),
        [.., last] => last.to_string(),
        [] => path.to_string(),
    }
}

/// `many-tasks/src/main.rs:67` -> `main.rs:67`.
fn file_name(at: &str) -> &str {
    at.rsplit('/').next().unwrap_or(at)
}

/// What the refreshes so far say of each task.
pub struct Tasks {
    /// The latest refresh's report (every task; filters apply to the rows).
    pub report: Report,
    /// Its snapshot, carrying since when each task has been as it is.
    pub snapshot: Option<Snapshot>,
    /// Per task: the refreshes that saw it, and those that saw it running or scheduled.
    seen: FxHashMap<u64, (u32, u32)>,
    /// Per task: the last refresh that found its tree changed, and the first change.
    moves: FxHashMap<u64, Move>,
    pub refreshes: u64,
}

/// The last change refreshes saw in a task's tree.
#[derive(Debug, Clone, PartialEq)]
pub struct Move {
    /// The refresh that saw it (counted from 1).
    pub refresh: u64,
    /// `Sleep until +1.0s -> Sleep until +1.0s (its progress changed)`, as `async diff`.
    pub what: String,
}

impl Default for Tasks {
    fn default() -> Tasks {
        Tasks {
            report: Report::empty(None),
            snapshot: None,
            seen: FxHashMap::default(),
            moves: FxHashMap::default(),
            refreshes: 0,
        }
    }
}

impl Tasks {
    /// Starts from a saved stop (`--since`): stuck times count from it.
    pub fn since(snapshot: Snapshot) -> Tasks {
        Tasks {
            snapshot: Some(snapshot),
            ..Tasks::default()
        }
    }

    /// Takes in a refresh's report.
    pub fn update(&mut self, report: Report) {
        let snapshot = Snapshot::of(&report, self.snapshot.as_ref());
        self.refreshes += 1;
        if let Some(before) = self.snapshot.take() {
            note_moves(&mut self.moves, self.refreshes, &before, &snapshot);
        }
        let mut seen = FxHashMap::default();
        for task in &report.tasks {
            let (times, busy) = self.seen.get(&task.id).copied().unwrap_or((0, 0));
            let now_busy = matches!(task.state, TaskState::Running | TaskState::Scheduled);
            seen.insert(task.id, (times + 1, busy + u32::from(now_busy)));
        }
        self.moves.retain(|id, _| seen.contains_key(id));
        self.seen = seen;
        self.snapshot = Some(snapshot);
        self.report = report;
    }

    /// The last change refreshes saw in task `id`'s tree, if they saw one.
    pub fn last_move(&self, id: u64) -> Option<&Move> {
        self.moves.get(&id)
    }

    /// The tasks the view's filter selects, as rows sorted on `column` (`descending`), or
    /// grouped by shape (`grouped`).
    pub fn rows(
        &self,
        view: &Selection,
        column: Column,
        descending: bool,
        grouped: bool,
    ) -> Vec<Row> {
        let history = self
            .snapshot
            .as_ref()
            .and_then(|history| view.stuck_for().map(|seconds| (seconds, history)));
        let selected: Vec<&TaskReport> = self
            .report
            .tasks
            .iter()
            .filter(|task| view.selects(task, history))
            .collect();
        let mut rows: Vec<Row> = match grouped {
            false => selected.iter().map(|task| self.row(task)).collect(),
            true => self.group_rows(&selected),
        };
        rows.sort_by(|a, b| a.compare(b, column));
        if descending {
            rows.reverse();
        }
        rows
    }

    fn row(&self, task: &TaskReport) -> Row {
        let plain = Style::default();
        let [root, waiting_at, waiting_on] = where_it_stands(&task.root, &plain);
        // Narrow for a terminal: the task view has the whole names.
        let root = short_name(&root);
        let waiting_at = match waiting_at.split_once(" at ") {
            Some((function, at)) => format!("{} {}", short_name(function), file_name(at)),
            None => short_name(&waiting_at),
        };
        let busy = self
            .seen
            .get(&task.id)
            .filter(|(times, _)| *times > 0)
            .map(|&(times, busy)| f64::from(busy) / f64::from(times));
        Row {
            id: task.id,
            count: 1,
            state: state_name(task.state).to_string(),
            runtime: self.runtime_of(task),
            root,
            waiting_at,
            waiting_on,
            stuck_secs: self
                .snapshot
                .as_ref()
                .and_then(|snapshot| snapshot.stuck_secs(task.id)),
            busy,
            spawned_at: task
                .spawned_at
                .as_ref()
                .map_or("-".into(), |at| format!("{}:{}", at.file, at.line)),
        }
    }

    /// One row per shape: the first task's, its count, and the longest stuck of them.
    fn group_rows(&self, selected: &[&TaskReport]) -> Vec<Row> {
        let by_id: FxHashMap<u64, &TaskReport> =
            selected.iter().map(|task| (task.id, *task)).collect();
        group_tasks(selected.iter().copied())
            .into_iter()
            .filter_map(|group| {
                let first = by_id.get(group.tasks.first()?)?;
                let members = group.tasks.iter().filter_map(|id| by_id.get(id));
                let rows: Vec<Row> = members.map(|task| self.row(task)).collect();
                let stuck = rows
                    .iter()
                    .filter_map(|row| row.stuck_secs)
                    .reduce(f64::max);
                let busy = rows.iter().filter_map(|row| row.busy).reduce(f64::max);
                let states = group
                    .states
                    .iter()
                    .map(|count| format!("{} {}", count.count, state_name(count.state)))
                    .collect::<Vec<_>>()
                    .join(", ");
                Some(Row {
                    count: group.count,
                    state: states,
                    stuck_secs: stuck,
                    busy,
                    ..self.row(first)
                })
            })
            .collect()
    }

    /// `rt0` (runtimes numbered as the report lists them), with the worker running it.
    fn runtime_of(&self, task: &TaskReport) -> String {
        let index = self
            .report
            .runtimes
            .iter()
            .position(|runtime| runtime.address == task.runtime);
        let runtime = index.map_or_else(|| format!("{:#x}", task.runtime), |at| format!("rt{at}"));
        let worker = self
            .report
            .threads
            .iter()
            .find(|thread| thread.current_task == Some(task.id))
            .and_then(|thread| thread.worker);
        match worker {
            Some(worker) => format!("{runtime} w{worker}"),
            None => runtime,
        }
    }

    pub fn task(&self, id: u64) -> Option<&TaskReport> {
        self.report.tasks.iter().find(|task| task.id == id)
    }

    /// The resources tasks wait on (from their leaves), with the wait-for graph's holders
    /// and waiters, by kind and address; and the timers.
    pub fn resources(&self) -> (Vec<ResourceRow>, Timers) {
        let mut timers = Timers::default();
        let mut waited: Vec<(Resource, Party, Option<String>)> = Vec::new();
        for task in &self.report.tasks {
            for_each_leaf(&task.root, &mut |leaf| {
                if let Some(resource) = crate::waits::resource_waited(leaf) {
                    let state = leaf.detail().and_then(resource_state);
                    waited.push((resource, Party::Task(task.id), state));
                }
                if let Some(Detail::Sleep(deadline)) = leaf.detail() {
                    timers.waiting += 1;
                    timers.soonest_secs = match (timers.soonest_secs, deadline.remaining_secs) {
                        (Some(soonest), Some(remaining)) => Some(soonest.min(remaining)),
                        (soonest, remaining) => soonest.or(remaining),
                    };
                }
            });
        }
        let mut rows: FxHashMap<Resource, ResourceRow> = FxHashMap::default();
        fn entry(
            rows: &mut FxHashMap<Resource, ResourceRow>,
            resource: Resource,
        ) -> &mut ResourceRow {
            rows.entry(resource).or_insert_with(|| ResourceRow {
                resource,
                holders: Vec::new(),
                waiters: Vec::new(),
                no_holder: false,
                state: None,
            })
        }
        for (resource, waiter, state) in waited {
            let row = entry(&mut rows, resource);
            row.waiters.push(waiter);
            row.state = row.state.take().or(state);
        }
        for edge in self.report.waits.iter().flatten() {
            let row = entry(&mut rows, edge.resource);
            row.waiters.push(edge.from);
            if !edge.possible {
                row.holders.push(edge.to);
            }
        }
        for stranded in &self.report.stranded {
            if let StrandedWhy::NoHolder { resource } = stranded.why {
                entry(&mut rows, resource).no_holder = true;
            }
        }
        let mut rows: Vec<ResourceRow> = rows.into_values().collect();
        for row in &mut rows {
            for parties in [&mut row.holders, &mut row.waiters] {
                parties.sort();
                parties.dedup();
            }
        }
        // The most waited on first.
        rows.sort_by(|a, b| {
            (b.waiters.len().cmp(&a.waiters.len())).then(a.resource.cmp(&b.resource))
        });
        (rows, timers)
    }

    /// Why task `id` can never go on, where the analysis found it stranded.
    pub fn stranded(&self, id: u64) -> Option<&Stranded> {
        self.report
            .stranded
            .iter()
            .find(|stranded| stranded.task == id)
    }

    /// The tasks among task `id`'s neighbours, those it waits for first, each once: what
    /// its view lets one choose and open.
    pub fn task_neighbours(&self, id: u64) -> Vec<u64> {
        let (waits_for, waited_by) = self.neighbours(id);
        let mut tasks: Vec<u64> = Vec::new();
        for party in waits_for.into_iter().chain(waited_by) {
            if let Party::Task(task) = party {
                if !tasks.contains(&task) {
                    tasks.push(task);
                }
            }
        }
        tasks
    }

    /// Who task `id` waits for, and who waits for it: the wait-for graph's neighbours.
    pub fn neighbours(&self, id: u64) -> (Vec<Party>, Vec<Party>) {
        let edges = self.report.waits.iter().flatten();
        let mut waits_for: Vec<Party> = edges
            .clone()
            .filter(|edge| edge.from == Party::Task(id))
            .map(|edge| edge.to)
            .collect();
        let mut waited_by: Vec<Party> = edges
            .filter(|edge| edge.to == Party::Task(id))
            .map(|edge| edge.from)
            .collect();
        for parties in [&mut waits_for, &mut waited_by] {
            parties.sort();
            parties.dedup();
        }
        (waits_for, waited_by)
    }
}

/// A resource's state as a waiter's leaf read it, as tokio-console's resources show it:
/// `0 of 1 free, 2 queued` for a lock, `3 queued, 2 senders` for a channel.
fn resource_state(detail: &Detail) -> Option<String> {
    let closed = |closed: bool| if closed { ", closed" } else { "" };
    let count = |count: u64, word: &str| counted(count as usize, word);
    let queued = |queued: u64, senders: u64, is_closed: bool| {
        format!(
            "{queued} queued, {}{}",
            count(senders, "sender"),
            closed(is_closed)
        )
    };
    Some(match detail {
        Detail::MutexLock(wait)
        | Detail::RwlockRead(wait)
        | Detail::RwlockWrite(wait)
        | Detail::SemaphoreAcquire(wait) => {
            let free = match wait.permits_total {
                Some(total) => format!("{} of {total} free", wait.permits_available),
                None => format!("{} free", wait.permits_available),
            };
            format!("{free}, {} queued{}", wait.waiters, closed(wait.closed))
        }
        Detail::MpscRecv(wait) => queued(wait.queued, wait.senders, wait.closed),
        Detail::BroadcastRecv(wait) => queued(wait.queued, wait.senders, wait.closed),
        Detail::OneshotRecv(wait) => {
            let sent = match wait.value_sent {
                Some(true) => "sent",
                _ => "nothing sent",
            };
            format!("{sent}{}", closed(wait.closed))
        }
        Detail::WatchChanged(wait) => format!(
            "version {}, {}{}",
            wait.version_current,
            count(wait.receivers, "receiver"),
            closed(wait.closed)
        ),
        Detail::Notified(wait) => {
            let stored = if wait.permit_stored {
                ", a permit stored"
            } else {
                ""
            };
            format!("{} waiting{stored}", wait.waiters)
        }
        Detail::JoinHandle(target) => state_name(target.task_state).to_string(),
        _ => return None,
    })
}

/// Calls `visit` on each leaf of the tree (a node without children).
fn for_each_leaf<'a>(node: &'a FutureNode, visit: &mut dyn FnMut(&'a FutureNode)) {
    if node.children.is_empty() {
        visit(node);
    }
    for child in &node.children {
        for_each_leaf(child, visit);
    }
}

/// Keeps, for each task that moved between two refreshes, what `async diff` says of it.
fn note_moves(moves: &mut FxHashMap<u64, Move>, refresh: u64, before: &Snapshot, after: &Snapshot) {
    let changes = crate::history::diff(before, after, String::new());
    for change in changes.tasks {
        let Some(first) = change.first_difference else {
            continue;
        };
        let what = format!(
            "{} -> {}",
            first.before.as_deref().unwrap_or("(nothing)"),
            first.after.as_deref().unwrap_or("(nothing)")
        );
        moves.insert(change.id, Move { refresh, what });
    }
}

/// What `/` was given, as the command line's filters (`--name R --state S
/// --waiting-on K`); a bare word is a `--name`.
pub fn parse_filter(text: &str) -> Result<Selection> {
    let words: Vec<String> = text.split_whitespace().map(str::to_string).collect();
    let filter = match words.first() {
        None => TaskFilter::default(),
        Some(first) if !first.starts_with("--") => TaskFilter {
            name: Some(words.join(" ")),
            ..TaskFilter::default()
        },
        Some(_) => crate::command::arguments::parse(crate::render::View::Tasks, &words, "")?.filter,
    };
    Selection::new(&filter)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{
        Empty, FoundBy, FutureNode, NodeKind, NotifyWait, OneshotWait, PermitWait, RuntimeReport,
    };

    fn task(id: u64, function: &str, state: TaskState) -> TaskReport {
        let mut leaf = FutureNode::new(NodeKind::Sleep, "tokio::time::sleep::Sleep", 0x100 + id);
        leaf.summary = Some(format!("Sleep until +{id}.0s").into());
        let mut root = FutureNode::new(NodeKind::Future, function, 0x9000 + id);
        root.children.push(leaf);
        TaskReport {
            id,
            address: 0x7000 + id,
            state,
            root,
            runtime: 0x100,
            spawned_at: None,
            error: None,
        }
    }

    fn report(tasks: Vec<TaskReport>) -> Report {
        let mut report = Report::empty(None);
        report.tasks = tasks;
        report.runtimes = vec![RuntimeReport {
            address: 0x100,
            flavor: "multi_thread".into(),
            found_by: FoundBy::ThreadContext { thread: 1 },
            task_count: None,
            tasks_read: 0,
            missing: None,
            tokio_version: None,
            inject: None,
            shutting_down: None,
        }];
        report
    }

    fn everything() -> Selection {
        parse_filter("").unwrap()
    }

    #[test]
    fn busy_is_the_share_of_refreshes_that_saw_a_task_running_or_scheduled() {
        let mut tasks = Tasks::default();
        tasks.update(report(vec![
            task(1, "app::a", TaskState::Idle),
            task(2, "app::b", TaskState::Running),
        ]));
        tasks.update(report(vec![
            task(1, "app::a", TaskState::Scheduled),
            task(2, "app::b", TaskState::Running),
        ]));
        tasks.update(report(vec![
            task(1, "app::a", TaskState::Idle),
            task(2, "app::b", TaskState::Idle),
            task(3, "app::c", TaskState::Idle),
        ]));
        let rows = tasks.rows(&everything(), Column::Id, false, false);
        let busy: Vec<String> = rows.iter().map(|row| row.cell(Column::Busy)).collect();
        assert_eq!(busy, ["33%", "67%", "0%"]);
        assert_eq!(rows[0].runtime, "rt0");
        assert_eq!(rows[0].root, "a");
        assert_eq!(rows[0].waiting_on, "Sleep until +1.0s");
    }

    #[test]
    fn rows_sort_on_any_column_either_way_and_filter_as_the_command_line_does() {
        let mut tasks = Tasks::default();
        tasks.update(report(vec![
            task(1, "app::zeta", TaskState::Idle),
            task(2, "app::alpha", TaskState::Scheduled),
            task(3, "app::alpha", TaskState::Idle),
        ]));
        let ids = |rows: Vec<Row>| rows.iter().map(|row| row.id).collect::<Vec<_>>();
        assert_eq!(
            ids(tasks.rows(&everything(), Column::Root, false, false)),
            [2, 3, 1]
        );
        assert_eq!(
            ids(tasks.rows(&everything(), Column::Root, true, false)),
            [1, 3, 2]
        );
        assert_eq!(
            ids(tasks.rows(&everything(), Column::State, false, false)),
            [1, 3, 2]
        );
        assert_eq!(
            ids(tasks.rows(&parse_filter("alpha").unwrap(), Column::Id, false, false)),
            [2, 3]
        );
        let idle = parse_filter("--name alpha --state idle").unwrap();
        assert_eq!(ids(tasks.rows(&idle, Column::Id, false, false)), [3]);
        assert!(parse_filter("--state sleepy").is_err());
        let groups = tasks.rows(&everything(), Column::Id, false, true);
        assert_eq!(
            groups
                .iter()
                .map(|row| (row.cell(Column::Id), row.state.clone()))
                .collect::<Vec<_>>(),
            [
                ("1".to_string(), "1 idle".to_string()),
                ("2×2".to_string(), "1 idle, 1 scheduled".to_string())
            ]
        );
    }

    #[test]
    fn a_task_whose_tree_changed_keeps_the_refresh_and_the_first_change() {
        let mut tasks = Tasks::default();
        tasks.update(report(vec![
            task(1, "app::a", TaskState::Idle),
            task(2, "app::b", TaskState::Idle),
        ]));
        tasks.update(report(vec![
            task(1, "app::a", TaskState::Idle),
            task(2, "app::b", TaskState::Idle),
        ]));
        assert_eq!(tasks.last_move(1), None);
        let mut moved = task(1, "app::a", TaskState::Idle);
        moved.root.children[0] =
            FutureNode::new(NodeKind::YieldNow, "tokio::task::YieldNow", 0x300);
        tasks.update(report(vec![moved, task(2, "app::b", TaskState::Idle)]));
        let last = tasks.last_move(1).expect("task 1 moved");
        assert_eq!(last.refresh, 3);
        assert_eq!(last.what, "sleep -> yield_now");
        assert_eq!(tasks.last_move(2), None);
        // A task gone takes its history with it.
        tasks.update(report(vec![task(2, "app::b", TaskState::Idle)]));
        assert_eq!(tasks.last_move(1), None);
    }

    #[test]
    fn names_are_cut_to_their_last_segment() {
        assert_eq!(short_name("many_tasks::handle_request"), "handle_request");
        assert_eq!(
            short_name("tokio::sync::oneshot::Receiver<…>"),
            "Receiver<…>"
        );
        assert_eq!(
            short_name("app::main::{async_block#1}"),
            "main::{async_block#1}"
        );
        assert_eq!(file_name("many-tasks/src/main.rs:67"), "main.rs:67");
    }

    #[test]
    fn a_resource_states_what_its_waiters_read_of_it() {
        let permits = |total, closed| PermitWait {
            address: 0x10,
            closed,
            holders: None,
            holders_certainty: None,
            permits_assigned: Some(0),
            permits_available: 0,
            permits_needed: 1,
            permits_total: total,
            semaphore: 0x10,
            waiters: 2,
        };
        let notify = NotifyWait {
            address: 0x20,
            notifiers: None,
            permit_stored: true,
            state: "waiting".into(),
            waiters: 1,
        };
        let oneshot = OneshotWait {
            address: Some(0x30),
            closed: true,
            sender_task: None,
            senders_held_by: None,
            value_sent: Some(false),
        };
        let states: Vec<Option<String>> = [
            Detail::MutexLock(permits(Some(1), false)),
            Detail::SemaphoreAcquire(permits(None, true)),
            Detail::Notified(notify),
            Detail::OneshotRecv(oneshot),
            Detail::YieldNow(Empty {}),
        ]
        .iter()
        .map(resource_state)
        .collect();
        assert_eq!(
            states,
            vec![
                Some("0 of 1 free, 2 queued".to_string()),
                Some("0 free, 2 queued, closed".to_string()),
                Some("1 waiting, a permit stored".to_string()),
                Some("nothing sent, closed".to_string()),
                None
            ]
        );
    }

    #[test]
    fn durations_are_short() {
        assert_eq!(duration(0.4), "0s");
        assert_eq!(duration(59.6), "1m00s");
        assert_eq!(duration(185.0), "3m05s");
        assert_eq!(duration(7800.0), "2h10m");
    }
}
