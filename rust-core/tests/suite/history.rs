//! Snapshots, `async diff` and `async sample` over the recorded stops (`fuzz/images`): a
//! report and its saved JSON give the same snapshot; a stop compared with itself is all
//! stuck, for as long as the clocks say; a changed progress field, a task gone and a task
//! come are told apart; the sampler's folded stacks add up to the task-samples.

use std::sync::Arc;

use crate::common;
use crate::fuzzing;

use fuzzing::{Harness, PatchedMemory, RequestOptions};
use tokio_async_core::history::snapshot::Marks;
use tokio_async_core::history::{self, saved, store, ProcessKey, Sampler, Snapshot};
use tokio_async_core::inspect::inspect;
use tokio_async_core::model::{Change, ClockSource, Detail, Report, TakenAt, TaskReport};

const ALL: RequestOptions = RequestOptions {
    all: true,
    locals: false,
    group: false,
    wait_edges: false,
};

fn at(unix_secs: f64) -> Option<TakenAt> {
    Some(TakenAt {
        unix_secs,
        source: ClockSource::StopEvent,
    })
}

/// Every recorded stop's report, with all its tasks.
fn recorded_reports() -> Vec<(String, Report)> {
    let harness = Harness::new(&fuzzing::fuzz_dir().join("images"), common::fixture);
    assert!(harness.images.len() >= 8);
    harness
        .images
        .iter()
        .map(|image| {
            let debug = harness.debug_info(&image.program, &image.profile);
            let memory = PatchedMemory { image, writes: &[] };
            let report = inspect(debug, &memory, image.load_bias, &image.request(ALL))
                .unwrap_or_else(|error| panic!("{}: {}", image.name, error.message()));
            (image.name.clone(), report)
        })
        .collect()
}

fn same_marks(a: &Snapshot, b: &Snapshot) -> bool {
    a.tasks().count() == b.tasks().count()
        && a.tasks()
            .zip(b.tasks())
            .all(|(a, b)| a.id == b.id && a.same_as(&b))
}

#[test]
fn every_recorded_report_reads_back_alike() {
    let mut nodes = 0;
    for (name, mut report) in recorded_reports() {
        report.taken_at = at(1000.0);
        let live = Snapshot::of(&report, None);
        let json = serde_json::to_string(&report).unwrap();
        let read =
            saved::snapshot_from_json(&json).unwrap_or_else(|error| panic!("{name}: {error}"));
        assert!(
            same_marks(&live, &read),
            "{name}: the saved report reads otherwise"
        );
        assert_eq!(read.taken_at, report.taken_at, "{name}");
        nodes += live.tasks().map(|task| task.nodes.len()).sum::<usize>();
    }
    assert!(nodes > 500, "only {nodes} nodes compared");
}

#[test]
fn a_stop_against_itself_is_all_stuck_for_the_time_between() {
    for (name, mut report) in recorded_reports() {
        report.taken_at = at(1000.0);
        let before = Snapshot::of(&report, None);
        report.taken_at = at(1041.25);
        let after = Snapshot::of(&report, Some(&before));
        let diff = history::diff(&before, &after, "the previous stop".into());
        assert_eq!(diff.interval_secs, Some(41.25), "{name}");
        assert_eq!(diff.tasks.len(), report.tasks.len(), "{name}");
        for change in &diff.tasks {
            assert_eq!(change.change, Change::Stuck, "{name}: task {}", change.id);
            assert_eq!(change.since, Some(1000.0), "{name}");
            assert_eq!(change.stuck_secs, Some(41.25), "{name}");
        }
        // A third stop still counts from the first.
        report.taken_at = at(1100.0);
        let third = Snapshot::of(&report, Some(&after));
        let diff = history::diff(&after, &third, "the previous stop".into());
        assert!(
            diff.tasks
                .iter()
                .all(|change| change.stuck_secs == Some(100.0)),
            "{name}"
        );
    }
}

#[test]
fn a_new_deadline_moves_a_task_and_tasks_come_and_go() {
    let (_, mut report) = recorded_reports()
        .into_iter()
        .find(|(name, _)| name == "deadlock-app-dev")
        .expect("the deadlock-app stop is recorded");
    report.taken_at = at(10.0);
    let before = Snapshot::of(&report, None);
    // Task 6 sleeps (`sleep_holding`): a later deadline is progress.
    let sleeper = report.tasks.iter_mut().find(|task| task.id == 6).unwrap();
    let sleep = &mut sleeper.root.children[0];
    match sleep.detail_mut() {
        Some(Detail::Sleep(deadline)) => deadline.deadline.as_mut().unwrap().secs += 1,
        other => panic!("task 6 sleeps: {other:?}"),
    }
    let gone = report.tasks.remove(0).id;
    let model = &report.tasks[0];
    let newcomer = TaskReport {
        id: 9999,
        address: model.address,
        state: model.state,
        root: model.root.clone(),
        runtime: model.runtime,
        spawned_at: None,
        error: None,
    };
    report.tasks.push(newcomer);
    report.taken_at = at(12.5);
    let after = Snapshot::of(&report, Some(&before));
    let diff = history::diff(&before, &after, "the previous stop".into());
    let change_of = |id: u64| diff.tasks.iter().find(|change| change.id == id).unwrap();
    let moved = change_of(6);
    assert_eq!(moved.change, Change::Moved);
    let first = moved.first_difference.as_ref().unwrap();
    assert_eq!(first.depth, 1);
    assert!(
        first
            .before
            .as_deref()
            .unwrap()
            .starts_with("sleep (deadline "),
        "{first:?}"
    );
    assert_ne!(first.before, first.after);
    assert_eq!(change_of(gone).change, Change::Finished);
    assert_eq!(change_of(9999).change, Change::New);
    assert_eq!(change_of(7).change, Change::Stuck);
    assert_eq!(change_of(7).stuck_secs, Some(2.5));
    // Stuck first, then moved, new and finished.
    let order: Vec<Change> = diff.tasks.iter().map(|change| change.change).collect();
    let mut sorted = order.clone();
    sorted.sort();
    assert_eq!(order, sorted);
}

#[test]
fn the_sampler_adds_every_task_once_per_sample() {
    for (name, report) in recorded_reports() {
        let mut sampler = Sampler::default();
        for _ in 0..3 {
            sampler.add(&report, Arc::new(Snapshot::of(&report, None)));
        }
        let summary = sampler.summary();
        assert_eq!(summary.samples, 3);
        assert_eq!(
            summary.task_samples,
            3 * report.tasks.len() as u64,
            "{name}"
        );
        let folded = sampler.folded();
        let counted: u64 = folded
            .lines()
            .map(|line| {
                let (stack, count) = line.rsplit_once(' ').expect("a count ends each line");
                assert!(!stack.is_empty(), "{name}: {line}");
                count.parse::<u64>().expect("the count is a number")
            })
            .sum();
        assert_eq!(counted, summary.task_samples, "{name}");
        let places: u64 = summary.places.iter().map(|(_, count)| count).sum();
        assert_eq!(places, summary.task_samples, "{name}");
        // Nothing moved between three copies of one stop.
        let mut ids: Vec<u64> = report.tasks.iter().map(|task| task.id).collect();
        ids.sort_unstable();
        assert_eq!(summary.never_moved, ids, "{name}");
    }
}

#[test]
fn the_store_compares_with_the_stop_before_this_one() {
    let key = ProcessKey {
        target: "pid 4242 (history test)".into(),
        build_id: Some("ab".into()),
    };
    let snapshot = |unix_secs| Snapshot::from_marks(at(unix_secs), Marks::default(), None);
    assert!(store::previous(&key, at(1.0)).is_none());
    store::keep(key.clone(), Arc::new(snapshot(1.0)), memory(1));
    // Another command at the same stop has no earlier stop yet.
    assert!(store::previous(&key, at(1.0)).is_none());
    let earlier = store::previous(&key, at(2.0)).expect("the first stop");
    assert_eq!(earlier.taken_at, at(1.0));
    store::keep(key.clone(), Arc::new(snapshot(2.0)), memory(2));
    store::keep(key.clone(), Arc::new(snapshot(2.0)), memory(2));
    assert_eq!(store::previous(&key, at(2.0)).unwrap().taken_at, at(1.0));
    assert_eq!(store::previous(&key, at(3.0)).unwrap().taken_at, at(2.0));
    let other_build = ProcessKey {
        build_id: Some("cd".into()),
        ..key
    };
    assert!(store::previous(&other_build, at(3.0)).is_none());
}

#[test]
fn a_second_command_at_a_stop_takes_the_snapshot_the_first_kept() {
    let key = ProcessKey {
        target: "pid 4243 (history test)".into(),
        build_id: None,
    };
    let snapshot =
        |unix_secs| Arc::new(Snapshot::from_marks(at(unix_secs), Marks::default(), None));
    let first = snapshot(1.0);
    store::keep(key.clone(), first.clone(), memory(1));
    let again = store::this_stop(&key, at(1.0), memory(1).as_deref()).expect("the stop's own");
    assert!(Arc::ptr_eq(&again, &first));
    // Memory written at the stop (`set var`), or a debugger that cannot tell: marked again.
    assert!(store::this_stop(&key, at(1.0), memory(9).as_deref()).is_none());
    assert!(store::this_stop(&key, at(1.0), None).is_none());
    // The next stop has none of its own yet, and compares with this one.
    assert!(store::this_stop(&key, at(2.0), memory(2).as_deref()).is_none());
    assert!(Arc::ptr_eq(
        &store::previous(&key, at(2.0)).unwrap(),
        &first
    ));
    // Counted from a saved report, a stop's snapshot is not what marking it again gives.
    store::keep(key.clone(), snapshot(2.0), None);
    assert!(store::this_stop(&key, at(2.0), memory(2).as_deref()).is_none());
    store::keep(key.clone(), snapshot(2.0), memory(2));
    assert!(store::this_stop(&key, at(2.0), memory(2).as_deref()).is_some());
    // Without a time, no two commands are known to share a stop.
    store::keep(key.clone(), snapshot_without_time(), memory(3));
    assert!(store::this_stop(&key, None, memory(3).as_deref()).is_none());
}

fn snapshot_without_time() -> Arc<Snapshot> {
    Arc::new(Snapshot::from_marks(None, Marks::default(), None))
}

/// A debugger's stop key, as the glue passes it.
fn memory(generation: u32) -> Option<String> {
    Some(format!("(1, 4243, '/app', {generation})"))
}
