//! Long task lists are read by two threads where the memory allows it (a copy of a
//! process, a core file): the report is the one a single thread makes, byte for byte, also
//! where the budget stops the walk in the first half, in the second, or inside a task.

use crate::common;
use crate::fuzzing;

use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use fuzzing::{Harness, PatchedMemory, RequestOptions};
use tokio_async_core::budget::Limits;
use tokio_async_core::error::Result;
use tokio_async_core::future::LiveProcess;
use tokio_async_core::inspect::inspect;
use tokio_async_core::memory::{Memory, SharedReader};
use tokio_async_core::output::{self, Format};
use tokio_async_core::render::{TextOptions, View};
use tokio_async_core::task_decode::{
    DecoderSettings, Kept, ReadElsewhere, SecondThread, TASKS_FOR_TWO_THREADS,
};
use tokio_async_core::value::ListLengths;

/// The same memory, for one thread only.
struct OneThread<'a>(&'a dyn Memory);

impl Memory for OneThread<'_> {
    fn read(&self, address: u64, buf: &mut [u8]) -> Result<()> {
        self.0.read(address, buf)
    }
}

const EVERY_TASK: RequestOptions = RequestOptions {
    all: true,
    locals: true,
    group: false,
    wait_edges: true,
};

fn groups_as_text() -> Format {
    Format::Text(TextOptions {
        locals: true,
        view: View::Backtrace,
        style: Default::default(),
    })
}

/// Where a walk stopped: "… at task N of M (in memory order) …".
fn stopped_at(why: &str) -> Option<(u64, u64)> {
    let (_, after) = why.split_once(" at task ")?;
    let (at, after) = after.split_once(" of ")?;
    let (of, _) = after.split_once(' ')?;
    Some((at.parse().ok()?, of.parse().ok()?))
}

#[test]
fn two_threads_report_what_one_does_whatever_stops_the_walk() {
    let harness = Harness::new(&fuzzing::fuzz_dir().join("images"), common::fixture);
    let mut long_lists = 0;
    let mut stopped_in_second_half = 0;
    for image in &harness.images {
        let debug = harness.debug_info(&image.program, &image.profile);
        let memory = PatchedMemory { image, writes: &[] };
        let report = |memory: &dyn Memory, limits: Limits| {
            let mut request = image.request(EVERY_TASK);
            request.limits = limits;
            inspect(debug, memory, image.load_bias, &request).map(|report| {
                let json = output::to_string(&report, &Format::Json(View::Backtrace)).unwrap();
                (json, report)
            })
        };
        let Ok((_, whole)) = report(&OneThread(&memory), Limits::default()) else {
            continue;
        };
        let longest = whole
            .runtimes
            .iter()
            .map(|runtime| runtime.tasks_read)
            .max();
        if longest.unwrap_or(0) < TASKS_FOR_TWO_THREADS as u64 {
            continue;
        }
        long_lists += 1;
        let budgets = [None, Some(40), Some(150), Some(400)];
        for nodes in budgets {
            for bytes in [None, Some(4_000)] {
                let limits = Limits { nodes, bytes };
                let one = report(&OneThread(&memory), limits).map(|done| done.0);
                let two = report(&memory, limits);
                if let Ok((_, report)) = &two {
                    stopped_in_second_half += report
                        .runtimes
                        .iter()
                        .filter_map(|runtime| stopped_at(runtime.missing.as_deref()?))
                        .filter(|&(at, of)| of >= TASKS_FOR_TWO_THREADS as u64 && at > of / 2)
                        .count();
                }
                let two = two.map(|done| done.0);
                assert_eq!(
                    one.as_ref().map_err(|error| error.message()),
                    two.as_ref().map_err(|error| error.message()),
                    "{}: {limits:?}",
                    image.name
                );
                // Grouped as they are read (`--group` as text): the groups of the tasks the
                // walk took, also where the second thread read past where it stopped.
                let groups = |memory: &dyn Memory| {
                    let mut request = image.request(EVERY_TASK);
                    request.limits = limits;
                    request.group = true;
                    request.only_groups = true;
                    inspect(debug, memory, image.load_bias, &request)
                        .map(|report| output::to_string(&report, &groups_as_text()).unwrap())
                        .map_err(|error| error.message())
                };
                assert_eq!(
                    groups(&OneThread(&memory)),
                    groups(&memory),
                    "{}: {limits:?}: --group",
                    image.name
                );
            }
        }
    }
    assert!(
        long_lists >= 4,
        "only {long_lists} recorded stops have a long list"
    );
    assert!(
        stopped_in_second_half > 0,
        "no budget stopped a walk in a list's second half"
    );
}

/// Holds every list in `lists` as if this thread were counting them (`held` is passed once
/// they all are) until a reader gave up on one; then says the lengths `known` counted.
fn hold_while_counting(
    lengths: &ListLengths,
    lists: &[u64],
    known: &ListLengths,
    held: &Barrier,
) -> Result<u64> {
    let Some((&first, rest)) = lists.split_first() else {
        held.wait();
        let waited = Instant::now();
        while lengths.given_up() == 0 && waited.elapsed() < Duration::from_secs(30) {
            std::thread::sleep(Duration::from_millis(1));
        }
        return Ok(0);
    };
    lengths.get_or_count(first, || {
        hold_while_counting(lengths, rest, known, held)?;
        known.get_or_count(first, || panic!("list {first:#x} was counted before"))
    })
}

/// The second thread does not wait for a list the walk's thread is counting (a Mutex's
/// waiters): it reads that task again once the count is done, and reads what it reads
/// where the other thread had counted the list before.
#[test]
fn a_task_meeting_a_list_being_counted_is_read_again_as_it_is() {
    let harness = Harness::new(&fuzzing::fuzz_dir().join("images"), common::fixture);
    let image = harness
        .images
        .iter()
        .find(|image| image.name == "many-tasks-dev")
        .expect("the recorded stop of many-tasks");
    let debug = harness.debug_info(&image.program, &image.profile);
    let memory = PatchedMemory { image, writes: &[] };
    let whole = inspect(
        debug,
        &OneThread(&memory),
        image.load_bias,
        &image.request(EVERY_TASK),
    )
    .expect("the stop reads");
    let source = whole.runtimes[0].address;
    let mut addresses: Vec<u64> = whole
        .tasks
        .iter()
        .filter(|task| task.runtime == source)
        .map(|task| task.address)
        .collect();
    addresses.sort_unstable();
    let keep = |task| Kept::Shown(task);
    let read = |lengths: &Arc<ListLengths>| -> Vec<String> {
        let second = SecondThread {
            debug,
            memory: Box::new(SharedReader(&memory)),
            load_bias: image.load_bias,
            settings: DecoderSettings {
                live: LiveProcess {
                    pid: None,
                    now: None,
                },
                with_locals: true,
            },
            list_lengths: Arc::clone(lengths),
            keep: &keep,
        };
        let running = Default::default();
        let tasks = second.read(source, &addresses, &running, &AtomicBool::new(false));
        tasks
            .into_iter()
            .map(|task| match task {
                ReadElsewhere::Read {
                    task: Kept::Shown(task),
                    errors,
                    anchors,
                    spent,
                } => format!(
                    "{} {errors:?} {} {spent:?}",
                    serde_json::to_string(&task).unwrap(),
                    anchors.len()
                ),
                ReadElsewhere::Read { .. } => "left out".into(),
                ReadElsewhere::Running => "running".into(),
                ReadElsewhere::Unreadable { error, .. } => error.message(),
            })
            .collect()
    };
    // What it reads where another thread counted the lists (its tasks spend nothing on
    // them): the lists are counted by a first read.
    let counted = Arc::new(ListLengths::default());
    read(&counted);
    let expected = read(&counted);
    let lists = counted.lists();
    assert!(!lists.is_empty(), "no task of many-tasks counts a list");
    let busy = Arc::new(ListLengths::default());
    let held = Barrier::new(2);
    let read_meanwhile = std::thread::scope(|scope| {
        let holder = scope.spawn(|| hold_while_counting(&busy, &lists, &counted, &held));
        held.wait();
        let read_meanwhile = read(&busy);
        holder.join().unwrap().unwrap();
        read_meanwhile
    });
    assert!(busy.given_up() > 0, "no task met a list being counted");
    assert_eq!(read_meanwhile.len(), expected.len());
    for (index, (got, want)) in read_meanwhile.iter().zip(&expected).enumerate() {
        assert_eq!(got, want, "task {index} of {}", expected.len());
    }
}
