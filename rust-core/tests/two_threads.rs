//! Long task lists are read by two threads where the memory allows it (a copy of a
//! process, a core file): the report is the one a single thread makes, byte for byte, also
//! where the budget stops the walk in the first half, in the second, or inside a task.

mod common;
mod fuzzing;

use fuzzing::{Harness, PatchedMemory, RequestOptions};
use tokio_async_core::budget::Limits;
use tokio_async_core::error::Result;
use tokio_async_core::inspect::inspect;
use tokio_async_core::memory::Memory;
use tokio_async_core::output::{self, Format};
use tokio_async_core::render::{TextOptions, View};
use tokio_async_core::task_decode::TASKS_FOR_TWO_THREADS;

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
                    one.as_ref().map_err(|error| &error.message),
                    two.as_ref().map_err(|error| &error.message),
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
                        .map_err(|error| error.message)
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
