//! Replays the fuzzing corpus (`fuzz/corpus/*/*.case`, see `tests/fuzzing`): every case
//! that `make fuzz` kept, and every case that once made the core panic, must still run to
//! a report or an error, without a panic and without hanging.

use crate::common;
use crate::fuzzing;

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use fuzzing::{Case, Harness, TargetKind};

/// Far above what any case takes in a debug build: past it, the case hangs.
const HANG: Duration = Duration::from_secs(60);

enum Event {
    /// Every fixture is built and loaded: from now on a slow case is a hang.
    Ready,
    Started(PathBuf),
    /// The case, its panic message if it panicked, and how long it took.
    Finished(PathBuf, Option<String>, Duration),
}

fn corpus() -> Vec<PathBuf> {
    let mut cases = Vec::new();
    for target in TargetKind::ALL {
        let dir = fuzzing::fuzz_dir().join("corpus").join(target.name());
        for entry in
            std::fs::read_dir(&dir).unwrap_or_else(|error| panic!("{}: {error}", dir.display()))
        {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|ext| ext == "case") {
                cases.push(path);
            }
        }
    }
    cases.sort();
    cases
}

#[test]
fn the_fuzz_corpus_runs_without_panics_or_hangs() {
    let cases = corpus();
    for target in TargetKind::ALL {
        let count = cases
            .iter()
            .filter(|path| path.parent().unwrap().ends_with(target.name()))
            .count();
        assert!(
            count >= 10,
            "only {count} {} cases in fuzz/corpus",
            target.name()
        );
    }
    // The cases run on a thread of their own, so that a case that loops fails the test
    // instead of stalling it.
    let (sender, receiver) = mpsc::channel();
    let paths = cases.clone();
    std::thread::spawn(move || {
        let harness = Harness::new(&fuzzing::fuzz_dir().join("images"), common::fixture);
        // Build and load every fixture first: a cold build is not a hang.
        for image in &harness.images {
            harness.debug_info(&image.program, &image.profile);
        }
        if sender.send(Event::Ready).is_err() {
            return;
        }
        // An image that no longer gives its stop's tasks was made from an older fixture:
        // its cases still run, but land on less of what the core reads.
        for image in &harness.images {
            let path = PathBuf::from(format!("{} (unchanged)", image.name));
            if sender.send(Event::Started(path.clone())).is_err() {
                return;
            }
            let started = Instant::now();
            let result = catch_unwind(AssertUnwindSafe(|| {
                let memory = fuzzing::PatchedMemory { image, writes: &[] };
                fuzzing::decoder(
                    harness.debug_info(&image.program, &image.profile),
                    image,
                    &memory,
                )
            }));
            let message = match result {
                Ok(outcome) => {
                    if !outcome.contains(&format!(" {} tasks (0 failing)", image.tasks))
                        || !outcome.ends_with("; ")
                    {
                        eprintln!("note: image {} is stale (now: {outcome}); `make fuzz-images` records it again", image.name);
                    }
                    None
                }
                Err(payload) => {
                    harness.forget_debug_info();
                    Some(panic_message(payload))
                }
            };
            if sender
                .send(Event::Finished(path, message, started.elapsed()))
                .is_err()
            {
                return;
            }
        }
        for path in paths {
            if sender.send(Event::Started(path.clone())).is_err() {
                return;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            if let Ok(case) = Case::parse(&text) {
                harness.warm(&case);
            }
            let started = Instant::now();
            let result = catch_unwind(AssertUnwindSafe(|| {
                let case = Case::parse(&text).unwrap_or_else(|error| panic!("bad case: {error}"));
                harness.run(&case).unwrap_or_else(|error| panic!("{error}"))
            }));
            let message = result.err().map(|payload| {
                // A panic may have poisoned the cached DWARF's locks.
                harness.forget_debug_info();
                panic_message(payload)
            });
            if sender
                .send(Event::Finished(path, message, started.elapsed()))
                .is_err()
            {
                return;
            }
        }
    });
    let mut failures = Vec::new();
    let mut slowest = (Duration::ZERO, PathBuf::new());
    let mut running = PathBuf::new();
    let mut finished = 0;
    let images = std::fs::read_dir(fuzzing::fuzz_dir().join("images"))
        .unwrap()
        .filter(|entry| {
            entry
                .as_ref()
                .is_ok_and(|entry| entry.path().extension().is_some_and(|ext| ext == "img"))
        })
        .count();
    assert!(
        matches!(receiver.recv(), Ok(Event::Ready)),
        "the fixtures did not load"
    );
    while finished < cases.len() + images {
        let (path, message, took) = match receiver.recv_timeout(HANG) {
            Ok(Event::Ready) => continue,
            Ok(Event::Started(path)) => {
                running = path;
                continue;
            }
            Ok(Event::Finished(path, message, took)) => (path, message, took),
            Err(mpsc::RecvTimeoutError::Timeout) => {
                panic!("{} ran for over {HANG:?}", running.display())
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                panic!("the replay stopped at {}", running.display())
            }
        };
        finished += 1;
        if let Some(message) = message {
            failures.push(format!("{}: {message}", path.display()));
        }
        if took > slowest.0 {
            slowest = (took, path);
        }
    }
    eprintln!(
        "{} images and {} cases; slowest {:.2}s: {}",
        images,
        cases.len(),
        slowest.0.as_secs_f64(),
        slowest.1.display()
    );
    assert!(
        failures.is_empty(),
        "{} images or cases panicked:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

fn panic_message(payload: Box<dyn std::any::Any + Send>) -> String {
    payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "a panic".into())
}

#[test]
fn cases_read_back_as_written() {
    let text = "decoder some-image\nwrite 0x7f00 ff00\nwrite 0x10 01\n";
    let case = Case::parse(text).unwrap();
    assert_eq!(case.to_text(), text);
    let loader = "loader tokio-app dev\nwrite 0x40 80808080\ntruncate 0x1000\n";
    assert_eq!(Case::parse(loader).unwrap().to_text(), loader);
    assert!(Case::parse("nonsense x\n").is_err());
}
