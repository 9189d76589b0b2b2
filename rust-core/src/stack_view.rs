//! A thread's stack as a debugger's `bt` should show it in a tokio program: a coroutine's
//! poll frame named as the async fn it runs, tokio's and the standard library's poll glue
//! folded into one frame per run (elided, not lost), the frame that polls a task naming
//! it, and below a `block_on` the chain of futures it has suspended, as frames of their own.

use crate::block_on::find_block_on_frame;
use crate::dwarf::{DebugInfo, FunctionAt};
use crate::inspect::ThreadInput;
use crate::layouts::{rust, tokio as runtime};
use crate::model::{CoroutineState, FutureNode, Local, Report, ThreadReport};
use crate::names;
use crate::stack::{resolve_frames, ResolvedFrame};

/// One thread's stack as `bt` should show it.
pub struct ThreadStack {
    pub tid: u64,
    pub frames: Vec<ViewFrame>,
}

/// The view of each thread's stack, with what `report` (of these threads) says of each.
pub fn stack_views(
    debug: &DebugInfo,
    load_bias: u64,
    threads: &[ThreadInput],
    report: &Report,
) -> Vec<ThreadStack> {
    threads
        .iter()
        .map(|thread| {
            let frames = resolve_frames(debug, load_bias, &thread.frames);
            let known = report.threads.iter().find(|known| known.tid == thread.tid);
            ThreadStack {
                tid: thread.tid,
                frames: view_of_frames(debug, &frames, known),
            }
        })
        .collect()
}

/// One frame of the view, in the order `bt` prints them (innermost first).
#[derive(Debug, Clone)]
pub struct ViewFrame {
    /// The debugger's frame this one is (its level); a suspended frame, which has no
    /// machine frame of its own, names the one it is shown beside.
    pub level: usize,
    pub kind: ViewKind,
    /// What to call it; `None` keeps the debugger's own name.
    pub function: Option<String>,
    /// Where a suspended frame stands (a real frame's is the debugger's own).
    pub file: Option<String>,
    pub line: Option<u64>,
    /// Levels folded into this frame, innermost first.
    pub elided: Vec<usize>,
    /// A suspended coroutine's locals kept across its await.
    pub locals: Vec<Local>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ViewKind {
    /// A frame as the debugger has it.
    Plain,
    /// A coroutine's poll frame (`{async_fn#0}`), named as its async fn.
    Async,
    /// The first frame of a run of poll glue, standing for the run.
    Glue,
    /// The frame inside which a thread blocks on a future.
    BlockOn,
    /// A future the block_on future awaits, suspended: in memory, not on the stack.
    Suspended,
}

impl ViewKind {
    pub fn name(self) -> &'static str {
        match self {
            ViewKind::Plain => "plain",
            ViewKind::Async => "async",
            ViewKind::Glue => "glue",
            ViewKind::BlockOn => "block_on",
            ViewKind::Suspended => "suspended",
        }
    }
}

/// How each machine frame reads, before runs are folded.
#[derive(Debug, Clone, PartialEq)]
enum Role {
    Plain,
    /// Its name as shown, and its function (`app::run`, an async block's whole path).
    Async(String, String),
    Glue,
    /// No DWARF names it (`__rust_try`, libc): glue only between two glue frames.
    Unnamed,
    BlockOn(String),
}

/// The view of one thread's stack. `thread` is what the report says of it (none for a
/// thread tokio does not know); its block_on future's suspended chain is spliced in
/// just inside the `block_on` frame.
pub fn view_of_frames(
    debug: &DebugInfo,
    frames: &[ResolvedFrame<'_>],
    thread: Option<&ThreadReport>,
) -> Vec<ViewFrame> {
    let paths: Vec<Option<String>> = frames
        .iter()
        .map(|frame| {
            frame
                .function
                .as_ref()
                .map(|function| readable_path(debug, function))
        })
        .collect();
    let block_on = find_block_on_frame(frames).map(|(index, _)| index);
    view_of_stack(&paths, block_on, thread)
}

/// A function's path without generic arguments; a coroutine body's `{impl#N}` segments
/// named by their type, as its linkage name says (`LocalSet::run_until`).
fn readable_path(debug: &DebugInfo, function: &FunctionAt) -> String {
    let path = without_generics(&function.path);
    if !path.contains("{impl#") || !names::is_coroutine_body_path(&path) {
        return path;
    }
    let segments: Vec<String> = names::split_path(&path)
        .iter()
        .map(|s| s.to_string())
        .collect();
    match debug.coroutine_linkage_name(&path, Some(function.die)) {
        Some(linkage) => {
            without_generics(&names::replace_impl_segments(&segments, linkage).join("::"))
        }
        None => path,
    }
}

/// `view_of_frames` over each frame's function path (generics dropped; none where no
/// DWARF names it), innermost first, and the level of the `block_on` frame.
pub fn view_of_stack(
    paths: &[Option<String>],
    block_on: Option<usize>,
    thread: Option<&ThreadReport>,
) -> Vec<ViewFrame> {
    let roles = roles_of(paths, block_on);
    let polled_task = thread
        .and_then(|thread| thread.current_task)
        .and_then(|task| task_poll_frame(paths).map(|level| (level, task)));
    let (suspended, splice_at) = match thread {
        Some(thread) => suspended_part(thread, &roles, block_on),
        None => (Vec::new(), None),
    };
    let mut view = Vec::new();
    let mut level = 0;
    while level < roles.len() {
        if Some(level) == splice_at && !suspended.is_empty() {
            // Beside the last frame shown inside, whose level is printed already (elided
            // ones are not, with `bt -hide`): these print without a level.
            let beside = view.last().map_or(level, |shown: &ViewFrame| shown.level);
            view.extend(suspended.iter().map(|node| suspended_frame(node, beside)));
        }
        let (frame, next) = match &roles[level] {
            Role::Glue => {
                let end = glue_run_end(&roles, level);
                let frame = match polled_task.filter(|(poll, _)| (level..end).contains(poll)) {
                    // The frame that polls the task stands for the run, and names it.
                    Some((poll, task)) => {
                        let mut frame = glue_frame(paths, poll, level..end);
                        frame.function = frame.function.map(|name| format!("{name} [task {task}]"));
                        frame
                    }
                    None => glue_frame(paths, level, level..end),
                };
                (frame, end)
            }
            role => (plain_frame(level, role), level + 1),
        };
        view.push(frame);
        level = next;
    }
    view
}

fn roles_of(paths: &[Option<String>], block_on: Option<usize>) -> Vec<Role> {
    let mut roles: Vec<Role> = paths
        .iter()
        .enumerate()
        .map(|(level, path)| {
            let Some(path) = path else {
                return Role::Unnamed;
            };
            if Some(level) == block_on {
                Role::BlockOn(path.clone())
            } else if let Some(name) = async_name(path) {
                Role::Async(name, async_path(path))
            } else if is_glue(path) {
                Role::Glue
            } else {
                Role::Plain
            }
        })
        .collect();
    for level in 0..roles.len() {
        if roles[level] == Role::Unnamed {
            let between_glue = level > 0
                && roles[level - 1] == Role::Glue
                && roles.get(level + 1) == Some(&Role::Glue);
            roles[level] = if between_glue {
                Role::Glue
            } else {
                Role::Plain
            };
        }
    }
    roles
}

/// The first level after the glue run starting at `start`.
fn glue_run_end(roles: &[Role], start: usize) -> usize {
    (start..roles.len())
        .find(|&level| roles[level] != Role::Glue)
        .unwrap_or(roles.len())
}

fn plain_frame(level: usize, role: &Role) -> ViewFrame {
    let (kind, function) = match role {
        Role::Async(name, _) => (ViewKind::Async, Some(name.clone())),
        Role::BlockOn(path) => (ViewKind::BlockOn, Some(path.clone())),
        _ => (ViewKind::Plain, None),
    };
    ViewFrame {
        level,
        kind,
        function,
        file: None,
        line: None,
        elided: Vec::new(),
        locals: Vec::new(),
    }
}

/// The glue frames `run` as the one at `shown`, named without generic arguments.
fn glue_frame(paths: &[Option<String>], shown: usize, run: std::ops::Range<usize>) -> ViewFrame {
    ViewFrame {
        level: shown,
        kind: ViewKind::Glue,
        function: paths[shown].clone(),
        file: None,
        line: None,
        elided: run.filter(|&level| level != shown).collect(),
        locals: Vec::new(),
    }
}

/// The innermost frame that polls one task (tokio's harness).
fn task_poll_frame(paths: &[Option<String>]) -> Option<usize> {
    paths.iter().position(|path| {
        path.as_deref()
            .is_some_and(|path| runtime::TASK_POLL_FUNCTIONS.contains(&path))
    })
}

/// What of the block_on future is suspended, innermost first, and the level it is shown
/// at: its chain (each node's first child down to the leaf) below the deepest node on
/// the stack, shown inside that node's frame; the whole chain, inside the `block_on`
/// frame, when none is. Nothing when the core saw it run (its children may be stale).
fn suspended_part<'r>(
    thread: &'r ThreadReport,
    roles: &[Role],
    block_on: Option<usize>,
) -> (Vec<&'r FutureNode>, Option<usize>) {
    let root = match (&thread.block_on_future, thread.own_block_on_future()) {
        (Some(waiting), _) => waiting,
        (None, Some(own)) => own,
        (None, None) => return (Vec::new(), None),
    };
    let mut chain = vec![root];
    while let Some(child) = chain.last().and_then(|node| node.children.first()) {
        chain.push(child);
    }
    if chain.iter().any(|node| node.running()) {
        return (Vec::new(), None);
    }
    // The innermost node a frame polls now, and that frame.
    let on_stack = chain.iter().enumerate().rev().find_map(|(depth, node)| {
        let function = async_path(node.function()?);
        roles
            .iter()
            .position(|role| matches!(role, Role::Async(_, path) if *path == function))
            .map(|level| (depth, level))
    });
    let (below, splice_at) = match on_stack {
        Some((depth, level)) => (depth + 1, Some(level)),
        None => (0, block_on),
    };
    let mut suspended = chain.split_off(below);
    // Innermost first, as a stack reads.
    suspended.reverse();
    (suspended, splice_at)
}

fn suspended_frame(node: &FutureNode, beside: usize) -> ViewFrame {
    let location = node.location.as_deref();
    ViewFrame {
        level: beside,
        kind: ViewKind::Suspended,
        function: Some(node_title(node)),
        file: location.map(|location| location.path.to_string()),
        line: location.map(|location| location.line),
        elided: Vec::new(),
        locals: node.locals().to_vec(),
    }
}

/// A node as one frame's name: `async fn app::run (await #2)`, or what a leaf waits for.
fn node_title(node: &FutureNode) -> String {
    let label = crate::render::label(node.kind);
    if !label.is_empty() {
        let name = node.function().unwrap_or(node.type_name());
        let state = match (node.state, node.await_point()) {
            (Some(CoroutineState::Suspended), Some(point)) => format!(" (await #{point})"),
            (Some(CoroutineState::Unresumed), _) => " (not started)".to_string(),
            _ => String::new(),
        };
        return format!("{label}{}{state}", async_path(name));
    }
    let branches = match node.children.len() {
        0 | 1 => String::new(),
        count => format!(" (branch 1 of {count} shown)"),
    };
    let what = node.summary.as_deref().unwrap_or_else(|| node.type_name());
    format!("{what}{branches}")
}

/// `app::run::{async_fn#0}` -> `async fn app::run`; an async block keeps its segment.
fn async_name(path: &str) -> Option<String> {
    let segments = names::split_path(path);
    let last = segments.last()?;
    if last.starts_with("{async_fn#") {
        Some(format!(
            "async fn {}",
            segments[..segments.len() - 1].join("::")
        ))
    } else if last.starts_with("{async_block#") {
        Some(format!("async block {path}"))
    } else if last.starts_with("{async_closure#") {
        Some(format!("async closure {path}"))
    } else {
        None
    }
}

/// A coroutine function's name without its `{async_fn#0}` segment.
fn async_path(function: &str) -> String {
    let path = without_generics(function);
    match path.rsplit_once("::") {
        Some((scope, last)) if last.starts_with("{async_fn#") => scope.to_string(),
        _ => path,
    }
}

fn is_glue(path: &str) -> bool {
    let path = path.trim_start_matches('<');
    runtime::POLL_GLUE_MODULES
        .iter()
        .chain(rust::CALL_GLUE_MODULES)
        .any(|module| path.starts_with(module))
}

/// A path without any generic arguments: `a::B<T>::f<U>` -> `a::B::f`; a trait impl's
/// keeps its `<Type as Trait>`, each without them.
pub fn without_generics(path: &str) -> String {
    if let Some((qualified_self, rest)) = leading_angle_group(path) {
        if let Some((self_type, as_trait)) = qualified_self.split_once(" as ") {
            return format!(
                "<{} as {}>{}",
                without_generics(self_type),
                without_generics(as_trait),
                without_generics(rest)
            );
        }
    }
    let mut kept = String::with_capacity(path.len());
    let mut depth = 0usize;
    let mut previous = '\0';
    for char in path.chars() {
        match char {
            '<' => depth += 1,
            '>' if previous != '-' => depth = depth.saturating_sub(1),
            _ if depth == 0 => kept.push(char),
            _ => {}
        }
        previous = char;
    }
    kept
}

/// `<X as Y>::rest` -> (`X as Y`, `::rest`).
fn leading_angle_group(path: &str) -> Option<(&str, &str)> {
    let body = path.strip_prefix('<')?;
    let mut depth = 1usize;
    let mut previous = '<';
    for (at, char) in body.char_indices() {
        match char {
            '<' => depth += 1,
            '>' if previous != '-' => {
                depth -= 1;
                if depth == 0 {
                    return Some((&body[..at], &body[at + 1..]));
                }
            }
            _ => {}
        }
        previous = char;
    }
    None
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::model::{Location, NodeKind, NodeNames, ThreadRole};

    fn paths(names: &[&str]) -> Vec<Option<String>> {
        names
            .iter()
            .map(|name| (!name.is_empty()).then(|| name.to_string()))
            .collect()
    }

    fn thread(current_task: Option<u64>, block_on: Option<FutureNode>) -> ThreadReport {
        ThreadReport {
            tid: 1,
            name: None,
            role: ThreadRole::BlockOn,
            worker: None,
            current_task,
            state: None,
            queue: None,
            future: if current_task.is_none() {
                block_on.clone()
            } else {
                None
            },
            block_on_future: if current_task.is_some() {
                block_on
            } else {
                None
            },
            blocking_function: None,
            blocking_task: None,
            block_on_copies: None,
            runtime: None,
            local_set: None,
            error: None,
        }
    }

    /// An async fn's coroutine, or an async block's (`function` ends in its segment).
    fn async_fn(function: &str, line: u64, child: Option<FutureNode>) -> FutureNode {
        let (kind, names) = match function.strip_suffix("::{async_block#1}") {
            Some(scope) => (
                NodeKind::AsyncBlock,
                NodeNames::new(
                    format!("{scope}::{{async_block_env#1}}"),
                    Some(function.into()),
                ),
            ),
            None => (
                NodeKind::AsyncFn,
                NodeNames::new(
                    format!("{function}::{{async_fn_env#0}}"),
                    Some(format!("{function}::{{async_fn#0}}").into()),
                ),
            ),
        };
        let mut node = FutureNode::named(kind, Arc::new(names), 0x1000 + line);
        node.state = Some(CoroutineState::Suspended);
        node.set_await_point(Some(0));
        node.location = Some(Arc::new(Location::new(
            "src/main.rs".into(),
            line,
            "/app/src/main.rs".into(),
        )));
        node.children.extend(child);
        node
    }

    fn leaf(summary: &str) -> FutureNode {
        let mut node = FutureNode::new(NodeKind::Notified, "tokio::sync::notify::Notified", 0x2000);
        node.summary = Some(summary.into());
        node
    }

    /// What each frame reads as: (level, function or `-` for the debugger's own, elided).
    fn shown(view: &[ViewFrame]) -> Vec<(usize, String, Vec<usize>)> {
        view.iter()
            .map(|frame| {
                let function = frame.function.clone().unwrap_or_else(|| "-".into());
                (frame.level, function, frame.elided.clone())
            })
            .collect()
    }

    /// A worker running task 9 (tokio-app's runner, dev build; frames cut short).
    const WORKER: &[&str] = &[
        "tokio_app::tokio_async_checkpoint",
        "tokio_app::busy_work",
        "tokio_app::runner::{async_fn#0}",
        "tokio::runtime::task::core::Core::poll::{closure#0}",
        "tokio::runtime::task::harness::poll_future",
        "core::panic::unwind_safe::AssertUnwindSafe::call_once",
        "std::panicking::catch_unwind::do_call",
        "",
        "std::panicking::catch_unwind",
        "tokio::runtime::task::harness::Harness::poll_inner",
        "tokio::runtime::task::harness::Harness::poll",
        "tokio::runtime::task::raw::poll",
        "tokio::runtime::scheduler::multi_thread::worker::Context::run_task",
        "std::thread::local::LocalKey::with",
        "tokio::runtime::scheduler::multi_thread::worker::run",
        "",
        "",
    ];

    #[test]
    fn a_worker_names_its_async_fn_and_the_task_it_polls_and_folds_the_glue() {
        let view = view_of_stack(&paths(WORKER), None, Some(&thread(Some(9), None)));
        assert_eq!(
            shown(&view),
            vec![
                (0, "-".into(), vec![]),
                (1, "-".into(), vec![]),
                (2, "async fn tokio_app::runner".into(), vec![]),
                (
                    10,
                    "tokio::runtime::task::harness::Harness::poll [task 9]".into(),
                    vec![3, 4, 5, 6, 7, 8, 9, 11, 12, 13, 14]
                ),
                (15, "-".into(), vec![]),
                (16, "-".into(), vec![]),
            ]
        );
        // Every level is shown or folded into one that is: nothing is lost.
        let mut levels: Vec<usize> = view
            .iter()
            .flat_map(|f| [f.level].into_iter().chain(f.elided.clone()))
            .collect();
        levels.sort();
        assert_eq!(levels, (0..WORKER.len()).collect::<Vec<_>>());
    }

    /// The main thread parked in `block_on` (dev build; frames cut short).
    const PARKED: &[&str] = &[
        "",
        "parking_lot::condvar::Condvar::wait",
        "tokio::loom::std::parking_lot::Condvar::wait",
        "tokio::runtime::park::Inner::park",
        "tokio::runtime::park::CachedParkThread::park",
        "tokio::runtime::park::CachedParkThread::block_on",
        "tokio::runtime::runtime::Runtime::block_on",
        "tokio_app::main",
    ];

    #[test]
    fn a_parked_block_on_shows_the_chain_it_suspended_innermost_first() {
        let chain = async_fn(
            "app::main::{async_block#1}",
            30,
            Some(async_fn("app::serve", 20, Some(leaf("waiting for Notify")))),
        );
        let view = view_of_stack(&paths(PARKED), Some(5), Some(&thread(None, Some(chain))));
        assert_eq!(
            shown(&view),
            vec![
                (0, "-".into(), vec![]),
                (1, "-".into(), vec![]),
                (
                    2,
                    "tokio::loom::std::parking_lot::Condvar::wait".into(),
                    vec![3, 4]
                ),
                (2, "waiting for Notify".into(), vec![]),
                (2, "async fn app::serve (await #0)".into(), vec![]),
                (
                    2,
                    "async block app::main::{async_block#1} (await #0)".into(),
                    vec![]
                ),
                (
                    5,
                    "tokio::runtime::park::CachedParkThread::block_on".into(),
                    vec![]
                ),
                (
                    6,
                    "tokio::runtime::runtime::Runtime::block_on".into(),
                    vec![]
                ),
                (7, "-".into(), vec![]),
            ]
        );
        let serve = &view[4];
        assert_eq!(
            (serve.kind, serve.file.as_deref(), serve.line),
            (ViewKind::Suspended, Some("/app/src/main.rs"), Some(20))
        );
    }

    #[test]
    fn a_chain_the_stack_runs_part_of_is_spliced_below_its_deepest_running_frame() {
        // A LocalSet's run_until polls a task now; the future it awaits stays suspended.
        let frames = paths(&[
            "app::task::{async_fn#0}",
            "tokio::runtime::task::harness::Harness::poll",
            "tokio::task::local::LocalSet::run_until::{async_fn#0}",
            "tokio::runtime::park::CachedParkThread::block_on",
        ]);
        let chain = async_fn(
            "tokio::task::local::LocalSet::run_until",
            9,
            Some(async_fn("app::main_loop", 40, None)),
        );
        let view = view_of_stack(&frames, Some(3), Some(&thread(Some(4), Some(chain))));
        assert_eq!(
            shown(&view),
            vec![
                (0, "async fn app::task".into(), vec![]),
                (
                    1,
                    "tokio::runtime::task::harness::Harness::poll [task 4]".into(),
                    vec![]
                ),
                (1, "async fn app::main_loop (await #0)".into(), vec![]),
                (
                    2,
                    "async fn tokio::task::local::LocalSet::run_until".into(),
                    vec![]
                ),
                (
                    3,
                    "tokio::runtime::park::CachedParkThread::block_on".into(),
                    vec![]
                ),
            ]
        );
    }

    #[test]
    fn a_block_on_future_the_core_saw_running_adds_no_frames() {
        let mut chain = async_fn("app::run", 9, None);
        chain.set_running(true);
        let view = view_of_stack(&paths(PARKED), Some(5), Some(&thread(None, Some(chain))));
        assert!(view.iter().all(|frame| frame.kind != ViewKind::Suspended));
    }

    #[test]
    fn names_read_without_generics_or_coroutine_segments() {
        assert_eq!(
            without_generics("tokio::runtime::task::core::Core<T, S>::poll::{closure#0}<F>"),
            "tokio::runtime::task::core::Core::poll::{closure#0}"
        );
        assert_eq!(without_generics("a::f<fn(u8) -> u8>"), "a::f");
        assert_eq!(
            without_generics(
                "<tokio::task::local::RunUntil<T> as core::future::future::Future>::poll<F>"
            ),
            "<tokio::task::local::RunUntil as core::future::future::Future>::poll"
        );
        assert_eq!(
            async_name("app::run::{async_fn#0}").as_deref(),
            Some("async fn app::run")
        );
        assert_eq!(
            async_name("app::main::{async_block#2}").as_deref(),
            Some("async block app::main::{async_block#2}")
        );
        assert_eq!(async_name("app::main::{closure#0}"), None);
        assert_eq!(async_path("app::run::{async_fn#0}"), "app::run");
    }

    #[test]
    fn poll_glue_is_tokio_and_std_plumbing_only() {
        assert!(is_glue("tokio::runtime::task::harness::poll_future"));
        assert!(is_glue(
            "<core::pin::Pin as core::future::future::Future>::poll"
        ));
        assert!(is_glue("std::panicking::catch_unwind::do_call"));
        assert!(!is_glue("tokio::sync::mutex::Mutex::lock"));
        assert!(!is_glue("app::handler"));
        assert!(!is_glue("parking_lot::condvar::Condvar::wait"));
    }
}
