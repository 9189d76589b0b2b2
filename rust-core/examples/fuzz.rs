//! The fuzzing campaign (`make fuzz`) and the recorder of its memory images
//! (`make fuzz-images`). The targets and the case format are in `tests/fuzzing`, shared
//! with the test that replays the corpus.
//!
//! - `fuzz record NAME PROGRAM PROFILE STOP_JSON CORE OUT`: runs `inspect` over a core of a
//!   fixture stop (made by tools/fuzz_images.py) and keeps every page it read, as an image.
//! - `fuzz run [--execs N] [--seed S] [--corpus DIR] [TARGET[=N]...]`: runs N generated
//!   cases per target (decoder, task-lists, loader), each a few writes at the places the core
//!   reads on the real stop (or in the binary's sections), with values that break
//!   structures: 0, -1, huge counts, pointers into the image, into other tasks, to
//!   themselves, misaligned, dangling. A panic, or a case over 1 s, is a failure: its case
//!   goes to `fuzz/failures/`. Cases with an outcome not seen before are minimised and
//!   written to the corpus dir (for `fuzz/corpus`).
//! - `fuzz replay CASE...`: runs case files, printing each one's outcome and time.

#[path = "../tests/common/mod.rs"]
mod common;
#[path = "../tests/fuzzing/mod.rs"]
mod fuzzing;

use std::cell::RefCell;
use std::collections::{BTreeSet, HashMap};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use fuzzing::{Case, Harness, Image, PatchedMemory, TargetKind, Tracing, Write, FULL, PAGE};
use tokio_async_core::core_file::CoreFileMemory;
use tokio_async_core::dwarf::DebugInfo;
use tokio_async_core::inspect::{all_task_ids, inspect, Request};
use tokio_async_core::memory::Memory;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("record") if args.len() == 7 => {
            record(&args[1], &args[2], &args[3], &args[4], &args[5], &args[6])
        }
        Some("run") => run(&args[1..]),
        Some("replay") => replay(&args[1..]),
        _ => {
            eprintln!("usage: fuzz record NAME PROGRAM PROFILE STOP_JSON CORE OUT | fuzz run [--execs N] [--seed S] [--corpus DIR] [TARGET[=N]...]");
            std::process::exit(2);
        }
    }
}

// ---------------------------------------------------------------------------------------
// Recording

/// Notes the pages of every read, failed or not.
struct PageRecorder<'a> {
    inner: &'a dyn Memory,
    pages: RefCell<BTreeSet<u64>>,
}

impl Memory for PageRecorder<'_> {
    fn read(&self, address: u64, buf: &mut [u8]) -> tokio_async_core::error::Result<()> {
        let end = address.saturating_add(buf.len().max(1) as u64 - 1);
        let mut page = address & !(PAGE - 1);
        let mut pages = self.pages.borrow_mut();
        while page <= end && pages.len() < 1 << 20 {
            pages.insert(page);
            match page.checked_add(PAGE) {
                Some(next) => page = next,
                None => break,
            }
        }
        self.inner.read(address, buf)
    }
}

fn record(name: &str, program: &str, profile: &str, stop_json: &str, core: &str, out: &str) {
    let debug = DebugInfo::load(&common::fixture(program, profile)).expect("fixture loads");
    let core = CoreFileMemory::open(Path::new(core)).expect("core opens");
    let stop: serde_json::Value =
        serde_json::from_slice(&std::fs::read(stop_json).expect("stop json"))
            .expect("stop json parses");
    let load_bias = stop["load_bias"].as_u64().expect("load_bias");
    let request: Request = serde_json::from_value(stop["request"].clone()).expect("request parses");
    let recorder = PageRecorder {
        inner: &core,
        pages: RefCell::default(),
    };
    let report = inspect(&debug, &recorder, load_bias, &request).expect("the stop inspects");
    all_task_ids(&debug, &recorder, load_bias, &request).expect("the task ids read");
    let mut pages = rustc_hash::FxHashMap::default();
    for &page in recorder.pages.borrow().iter() {
        let mut data = vec![0u8; PAGE as usize];
        if core.read(page, &mut data).is_ok() {
            pages.insert(page, data.into_boxed_slice());
        }
    }
    let image = Image {
        name: name.to_string(),
        program: program.to_string(),
        profile: profile.to_string(),
        load_bias,
        tasks: report.tasks.len() as u64,
        request: stop["request"].clone(),
        pages,
    };
    let bytes = image.encode();
    std::fs::write(out, &bytes).expect("image writes");
    // The image must give what the stop gave.
    let again = Image::decode(&bytes).expect("image decodes");
    let replayed = inspect(
        &debug,
        &PatchedMemory {
            image: &again,
            writes: &[],
        },
        load_bias,
        &again.request(FULL),
    )
    .expect("image inspects");
    assert_eq!(
        replayed.tasks.len(),
        report.tasks.len(),
        "the image gives the stop's tasks"
    );
    println!(
        "{out}: {} pages ({} KiB encoded), {} threads, {} tasks, {} errors{}",
        again.pages.len(),
        bytes.len() / 1024,
        report.threads.len(),
        report.tasks.len(),
        report.errors.len(),
        report
            .errors
            .iter()
            .map(|e| format!("\n  error: {}", e.message))
            .collect::<String>()
    );
}

/// Runs case files one by one: their outcome and time (to look into a failure).
fn replay(paths: &[String]) {
    let harness = Harness::new(&fuzzing::fuzz_dir().join("images"), common::fixture);
    for path in paths {
        let case =
            Case::parse(&std::fs::read_to_string(path).expect("case reads")).expect("case parses");
        harness.warm(&case);
        let begun = Instant::now();
        let outcome = harness.run(&case);
        println!("{path}: {:.3}s: {outcome:?}", begun.elapsed().as_secs_f64());
    }
}

// ---------------------------------------------------------------------------------------
// The campaign

/// xorshift64*: deterministic for a seed, so a campaign can be run again.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// Values that break sizes and counts.
const HUGE: [u64; 10] = [
    1 << 16,
    (1 << 16) + 1,
    1 << 20,
    1 << 31,
    1 << 32,
    1 << 40,
    1 << 63,
    u64::MAX - 1,
    0x7fff_ffff_ffff_ffff,
    0xffff_ffff,
];

/// Where the core reads on one image's real stop, and what lies there.
struct MemorySeed<'h> {
    image: &'h Image,
    /// Reads of the whole command, and of the task-list walk alone.
    decode_sites: Vec<(u64, usize)>,
    walk_sites: Vec<(u64, usize)>,
    /// Task headers of the stop.
    tasks: Vec<u64>,
    pages: Vec<u64>,
}

impl<'h> MemorySeed<'h> {
    fn new(harness: &Harness, image: &'h Image) -> Self {
        let debug = harness.debug_info(&image.program, &image.profile);
        let memory = PatchedMemory { image, writes: &[] };
        let sites = |run: &dyn Fn(&dyn Memory)| {
            let tracing = Tracing::new(&memory);
            run(&tracing);
            let mut reads = tracing.reads.into_inner();
            reads.sort_unstable();
            reads.dedup();
            reads
        };
        let decode_sites = sites(&|memory| {
            fuzzing::decoder(debug, image, memory);
        });
        let walk_sites = sites(&|memory| {
            fuzzing::task_lists(debug, image, memory, false);
        });
        let report = inspect(debug, &memory, image.load_bias, &image.request(FULL))
            .expect("the image inspects");
        let tasks = report.tasks.iter().map(|t| t.address).collect();
        let mut pages: Vec<u64> = image.pages.keys().copied().collect();
        pages.sort_unstable();
        MemorySeed {
            image,
            decode_sites,
            walk_sites,
            tasks,
            pages,
        }
    }

    fn original(&self, address: u64, width: usize) -> u64 {
        let mut value = 0u64;
        for i in (0..width).rev() {
            value = (value << 8) | self.image.byte(address + i as u64).unwrap_or(0) as u64;
        }
        value
    }

    /// A value for `width` bytes at `address`, one of the ways structures break.
    fn value(&self, rng: &mut Rng, address: u64, width: usize, walk: bool) -> u64 {
        let original = self.original(address, width);
        let task = |rng: &mut Rng| {
            if self.tasks.is_empty() {
                0
            } else {
                *rng.pick(&self.tasks)
            }
        };
        let choice = if walk { rng.below(18) } else { rng.below(16) };
        match choice {
            0 => 0,
            1 => u64::MAX,
            2 => original ^ (1 << rng.below(width * 8)),
            3 => {
                let shift = rng.below(width) * 8;
                (original & !(0xff << shift)) | ((rng.next() & 0xff) << shift)
            }
            4 => rng.next() % 300,
            5 => *rng.pick(&HUGE),
            // A pointer somewhere into the image, or at a place the core reads.
            6 => rng.pick(&self.pages) + ((rng.next() % PAGE) & !7),
            7 => rng.pick(&self.decode_sites).0,
            // Misaligned, or a little off.
            8 => original.wrapping_add(1 + rng.next() % 7),
            9 => original.wrapping_add(((rng.next() % 64) * 8).wrapping_sub(256)),
            // Itself: a list whose link points at the link.
            10 => address,
            // Another task (a cycle), or inside one.
            11 => task(rng).wrapping_add(if rng.chance(70) {
                0
            } else {
                rng.next() % 0x200
            }),
            // Dangling: unmapped, or just past a page the image has.
            12 => {
                if rng.chance(50) {
                    0x1000 + (rng.next() % 0xffff) * 8
                } else {
                    rng.pick(&self.pages) + PAGE - 1 - rng.next() % 8
                }
            }
            13 => rng.next(),
            // The value of another place the core reads.
            14 => {
                let (other, len) = *rng.pick(&self.decode_sites);
                self.original(other, len.min(8))
            }
            15 => original.wrapping_sub(1),
            // The walk's own shapes: its task, itself, a huge count.
            16 => task(rng),
            _ => *rng.pick(&[u64::MAX, 1 << 16, (1 << 16) + 1, 1 << 32, 4_000_001]),
        }
    }

    fn case(&self, rng: &mut Rng, target: TargetKind) -> Case {
        let walk = target == TargetKind::TaskLists;
        let sites = if walk {
            &self.walk_sites
        } else {
            &self.decode_sites
        };
        let most = if rng.chance(70) { 2 } else { 6 };
        let count = 1 + rng.below(most);
        let mut writes = Vec::new();
        for _ in 0..count {
            if !walk && rng.chance(8) {
                // Havoc: random bytes over a stretch the core reads.
                let (address, len) = *rng.pick(sites);
                let length = 1 + rng.below(len.clamp(8, 96));
                writes.push(Write {
                    address,
                    bytes: (0..length).map(|_| rng.next() as u8).collect(),
                });
                continue;
            }
            let (address, width) = if !walk && rng.chance(10) {
                // Anywhere in a page the stop touched.
                (rng.pick(&self.pages) + rng.next() % PAGE, 1 + rng.below(8))
            } else {
                let (address, len) = *rng.pick(sites);
                if len <= 8 {
                    (address, len)
                } else {
                    let word = rng.below(len / 8) as u64 * 8;
                    (
                        address + word,
                        if rng.chance(30) {
                            1
                        } else {
                            8.min(len - word as usize)
                        },
                    )
                }
            };
            let value = self.value(rng, address, width, walk);
            writes.push(Write {
                address,
                bytes: value.to_le_bytes()[..width].to_vec(),
            });
        }
        Case {
            target,
            subject: self.image.name.clone(),
            writes,
            truncate: None,
        }
    }
}

/// A fixture binary and where in it the loader reads what.
struct BinarySeed {
    program: String,
    profile: String,
    len: u64,
    /// (name, file offset, size) of every section with bytes in the file.
    sections: Vec<(String, u64, u64)>,
    /// The ELF header, program headers and section headers.
    headers: Vec<(u64, u64)>,
}

impl BinarySeed {
    fn new(harness: &Harness, program: &str, profile: &str) -> Self {
        use object::read::elf::{ElfFile64, FileHeader};
        use object::{Object, ObjectSection};
        let bytes = harness.binary(program, profile);
        let elf = ElfFile64::<object::Endianness>::parse(bytes).expect("fixture is ELF");
        let header = elf.elf_header();
        let endian = elf.endian();
        let headers = vec![
            (0, 64),
            (header.e_phoff(endian), header.e_phnum(endian) as u64 * 56),
            (header.e_shoff(endian), header.e_shnum(endian) as u64 * 64),
        ];
        let sections = elf
            .sections()
            .filter_map(|section| {
                let (offset, size) = section.file_range()?;
                (size > 0).then(|| (section.name().unwrap_or("").to_string(), offset, size))
            })
            .collect();
        BinarySeed {
            program: program.into(),
            profile: profile.into(),
            len: bytes.len() as u64,
            sections,
            headers,
        }
    }

    fn case(&self, rng: &mut Rng) -> Case {
        let debug: Vec<&(String, u64, u64)> = self
            .sections
            .iter()
            .filter(|(name, _, _)| name.starts_with(".debug_"))
            .collect();
        let other: Vec<&(String, u64, u64)> = self
            .sections
            .iter()
            .filter(|(name, _, _)| !name.starts_with(".debug_"))
            .collect();
        let mut writes = Vec::new();
        let most = if rng.chance(70) { 2 } else { 8 };
        for _ in 0..1 + rng.below(most) {
            let (start, size) = match rng.below(100) {
                0..=69 => {
                    let (_, offset, size) = rng.pick(&debug);
                    // The starts of sections (unit headers, abbreviations) matter most.
                    (
                        *offset,
                        if rng.chance(20) {
                            (*size).min(256)
                        } else {
                            *size
                        },
                    )
                }
                70..=84 => *rng.pick(&self.headers),
                85..=94 => {
                    let (_, offset, size) = rng.pick(&other);
                    (*offset, *size)
                }
                _ => (0, self.len),
            };
            let address = start + rng.next() % size.max(1);
            let bytes: Vec<u8> = match rng.below(10) {
                0..=2 => vec![rng.next() as u8],
                3..=4 => vec![*rng.pick(&[0u8, 1, 0x7f, 0x80, 0xff, 0x40, 0x3f])],
                5 => (0u32.wrapping_sub(1 + rng.below(3) as u32))
                    .to_le_bytes()
                    .to_vec(),
                6 => (*rng.pick(&[
                    0u32,
                    0x7fff_ffff,
                    0x8000_0000,
                    0xffff_ffff,
                    0x10,
                    0x1000_0000,
                ]))
                .to_le_bytes()
                .to_vec(),
                7 => (*rng.pick(&HUGE)).to_le_bytes().to_vec(),
                // An unterminated LEB128 or string.
                8 => vec![*rng.pick(&[0x80u8, 0xff]); 1 + rng.below(24)],
                _ => (0..2 + rng.below(31)).map(|_| rng.next() as u8).collect(),
            };
            writes.push(Write { address, bytes });
        }
        let truncate = rng.chance(2).then(|| rng.next() % self.len);
        Case {
            target: TargetKind::Loader,
            subject: format!("{} {}", self.program, self.profile),
            writes,
            truncate,
        }
    }
}

/// What one target's run gave.
#[derive(Default)]
struct Tally {
    execs: u64,
    busy: Duration,
    slowest: Duration,
    slowest_case: Option<Case>,
    panics: u64,
    slow: u64,
    kept: u64,
}

/// The panic messages of this process, kept by the hook (the default hook would print
/// each, with a backtrace, many times over).
static PANICS: Mutex<Vec<String>> = Mutex::new(Vec::new());

fn run(args: &[String]) {
    let mut execs: u64 = 10_000;
    let mut seed: u64 = 1;
    let mut corpus: Option<PathBuf> = None;
    let mut targets = Vec::new();
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        match arg.as_str() {
            "--execs" => {
                execs = rest
                    .next()
                    .and_then(|n| n.replace('_', "").parse().ok())
                    .expect("--execs N")
            }
            "--seed" => seed = rest.next().and_then(|n| n.parse().ok()).expect("--seed S"),
            "--corpus" => corpus = Some(PathBuf::from(rest.next().expect("--corpus DIR"))),
            spec => {
                // TARGET or TARGET=EXECS.
                let (name, count) = spec
                    .split_once('=')
                    .map_or((spec, None), |(name, count)| (name, Some(count)));
                let target =
                    TargetKind::named(name).unwrap_or_else(|| panic!("unknown target {name}"));
                let count =
                    count.map(|count| count.replace('_', "").parse::<u64>().expect("TARGET=EXECS"));
                targets.push((target, count));
            }
        }
    }
    if targets.is_empty() {
        targets = TargetKind::ALL
            .iter()
            .map(|&target| (target, None))
            .collect();
    }
    std::panic::set_hook(Box::new(|info| {
        let location = info
            .location()
            .map(|l| format!("{}:{}", l.file(), l.line()))
            .unwrap_or_default();
        let message = info
            .payload()
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| info.payload().downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default();
        PANICS
            .lock()
            .unwrap()
            .push(format!("{location}: {message}"));
    }));
    let fuzz_dir = fuzzing::fuzz_dir();
    let failures = fuzz_dir.join("failures");
    let harness = Harness::new(&fuzz_dir.join("images"), common::fixture);
    assert!(
        !harness.images.is_empty(),
        "no images in {} (make fuzz-images)",
        fuzz_dir.join("images").display()
    );
    let mut results = Vec::new();
    for (target, count) in targets {
        let execs = count.unwrap_or(execs);
        let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ (target as u64 + 1));
        let started = Instant::now();
        let memory_seeds: Vec<MemorySeed> = match target {
            TargetKind::Loader => Vec::new(),
            _ => harness
                .images
                .iter()
                .map(|image| MemorySeed::new(&harness, image))
                .collect(),
        };
        // Every binary that has an image: a load is then followed by inspecting its stop.
        let mut binaries: Vec<(String, String)> = harness
            .images
            .iter()
            .map(|image| (image.program.clone(), image.profile.clone()))
            .collect();
        binaries.sort();
        binaries.dedup();
        let binary_seeds: Vec<BinarySeed> = match target {
            TargetKind::Loader => binaries
                .iter()
                .map(|(program, profile)| BinarySeed::new(&harness, program, profile))
                .collect(),
            _ => Vec::new(),
        };
        println!(
            "{}: seeds ready in {:.1}s",
            target.name(),
            started.elapsed().as_secs_f64()
        );
        let mut tally = Tally::default();
        // (subject, outcome) -> how often it came, and the first case that gave it.
        let mut candidates: HashMap<(String, String), (u64, Case)> = HashMap::new();
        let mut last_report = Instant::now();
        for exec in 0..execs {
            let case = match target {
                TargetKind::Loader => {
                    binary_seeds[exec as usize % binary_seeds.len()].case(&mut rng)
                }
                _ => memory_seeds[exec as usize % memory_seeds.len()].case(&mut rng, target),
            };
            harness.warm(&case);
            let begun = Instant::now();
            let result = catch_unwind(AssertUnwindSafe(|| harness.run(&case)));
            let took = begun.elapsed();
            tally.execs += 1;
            tally.busy += took;
            if took > tally.slowest {
                tally.slowest = took;
                tally.slowest_case = Some(case.clone());
            }
            let failed = match &result {
                Err(_) => {
                    tally.panics += 1;
                    let message = PANICS.lock().unwrap().last().cloned().unwrap_or_default();
                    println!(
                        "PANIC in {} ({}): {message}\n{}",
                        target.name(),
                        case.subject,
                        case.to_text()
                    );
                    // A panic may leave the cached DWARF's locks poisoned: load it again.
                    harness.forget_debug_info();
                    Some(("panic", format!("# panic: {message}\n")))
                }
                Ok(_) if took > Duration::from_secs(1) => {
                    tally.slow += 1;
                    println!(
                        "SLOW {} ({:.2}s): {}",
                        target.name(),
                        took.as_secs_f64(),
                        case.to_text()
                    );
                    Some(("slow", format!("# took {:.2}s\n", took.as_secs_f64())))
                }
                Ok(_) => None,
            };
            if let Some((kind, note)) = failed {
                let case = if kind == "panic" {
                    minimise_panic(&harness, case.clone())
                } else {
                    case.clone()
                };
                std::fs::create_dir_all(&failures).unwrap();
                let path = failures.join(format!(
                    "{}-{kind}-{}.case",
                    target.name(),
                    hash(&case.to_text())
                ));
                std::fs::write(&path, note + &case.to_text()).unwrap();
            }
            if let Ok(Ok(outcome)) = result {
                let full = candidates.len() >= MAX_CANDIDATES;
                match candidates.entry((case.subject.clone(), outcome)) {
                    std::collections::hash_map::Entry::Occupied(mut seen) => seen.get_mut().0 += 1,
                    std::collections::hash_map::Entry::Vacant(new) if !full => {
                        new.insert((1, case));
                    }
                    _ => {}
                }
            }
            if last_report.elapsed() > Duration::from_secs(60) {
                last_report = Instant::now();
                println!(
                    "  {}: {} execs, {:.0}/s, slowest {:.1} ms, {} panics, {} slow, {} kept",
                    target.name(),
                    tally.execs,
                    tally.execs as f64 / started.elapsed().as_secs_f64(),
                    tally.slowest.as_secs_f64() * 1e3,
                    tally.panics,
                    tally.slow,
                    tally.kept
                );
            }
        }
        let wall = started.elapsed();
        if let Some(dir) = &corpus {
            let choosing = Instant::now();
            tally.kept = keep_rarest(&harness, target, candidates, &dir.join(target.name()));
            println!(
                "{}: {} cases kept in {} ({:.0}s)",
                target.name(),
                tally.kept,
                dir.display(),
                choosing.elapsed().as_secs_f64()
            );
        }
        println!(
            "{}: {} execs in {:.0}s ({:.0} exec/s), slowest {:.1} ms, {} panics, {} over 1 s, {} cases kept",
            target.name(),
            tally.execs,
            wall.as_secs_f64(),
            tally.execs as f64 / wall.as_secs_f64(),
            tally.slowest.as_secs_f64() * 1e3,
            tally.panics,
            tally.slow,
            tally.kept
        );
        if let Some(case) = &tally.slowest_case {
            println!("  slowest case:\n{}", indent(&case.to_text()));
        }
        results.push((target, tally, wall));
    }
    println!("\n| target | executions | exec/s | slowest input | panics | over 1 s |\n|---|---:|---:|---:|---:|---:|");
    let (mut total, mut panics, mut slow, mut slowest) = (0, 0, 0, Duration::ZERO);
    for (target, tally, wall) in &results {
        println!(
            "| {} | {} | {:.0} | {:.1} ms | {} | {} |",
            target.name(),
            tally.execs,
            tally.execs as f64 / wall.as_secs_f64(),
            tally.slowest.as_secs_f64() * 1e3,
            tally.panics,
            tally.slow
        );
        total += tally.execs;
        panics += tally.panics;
        slow += tally.slow;
        slowest = slowest.max(tally.slowest);
    }
    println!(
        "| total | {total} | | {:.1} ms | {panics} | {slow} |",
        slowest.as_secs_f64() * 1e3
    );
    if panics + slow > 0 {
        println!("failing cases are in {}", failures.display());
        std::process::exit(1);
    }
}

/// Outcomes remembered per target (beyond, only those already seen are counted).
const MAX_CANDIDATES: usize = 200_000;

/// Cases kept per image (or per binary for the loader).
fn kept_per_subject(target: TargetKind) -> usize {
    match target {
        TargetKind::Decoder => 30,
        TargetKind::TaskLists => 20,
        // Each loads a whole binary: seconds in a debug build.
        TargetKind::Loader => 4,
    }
}

/// Writes to `dir` the cases of the rarest outcomes of each subject, minimised: rare
/// outcomes are the paths random writes seldom reach. Returns how many.
fn keep_rarest(
    harness: &Harness,
    target: TargetKind,
    candidates: HashMap<(String, String), (u64, Case)>,
    dir: &Path,
) -> u64 {
    let mut by_subject: HashMap<String, Vec<(u64, String, Case)>> = HashMap::new();
    for ((subject, outcome), (count, case)) in candidates {
        by_subject
            .entry(subject)
            .or_default()
            .push((count, outcome, case));
    }
    std::fs::create_dir_all(dir).unwrap();
    let mut kept = 0;
    for (_, mut outcomes) in by_subject {
        outcomes.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
        // The rarest loader outcomes are load errors; a binary that loads with mutated
        // DWARF, and whose tasks are then read through it, is the deeper path: half of
        // the loader's cases are of that kind.
        if target == TargetKind::Loader {
            let (loaded, failed): (Vec<_>, Vec<_>) = outcomes
                .into_iter()
                .partition(|(_, outcome, _)| outcome.starts_with("loaded"));
            let half = kept_per_subject(target) / 2;
            outcomes = loaded.into_iter().take(half).chain(failed).collect();
        }
        for (_, outcome, case) in outcomes.into_iter().take(kept_per_subject(target)) {
            let text = minimise(harness, case, &outcome).to_text();
            std::fs::write(dir.join(format!("{}.case", hash(&text))), text).unwrap();
            kept += 1;
        }
    }
    kept
}

/// The case with every write that does not change the outcome taken out.
fn minimise(harness: &Harness, mut case: Case, outcome: &str) -> Case {
    let mut i = 0;
    while i < case.writes.len() {
        let mut smaller = case.clone();
        smaller.writes.remove(i);
        let same = catch_unwind(AssertUnwindSafe(|| harness.run(&smaller)))
            .ok()
            .and_then(|r| r.ok())
            .as_deref()
            == Some(outcome);
        if same {
            case = smaller;
        } else {
            i += 1;
        }
    }
    case
}

/// A panicking case with every write it panics without taken out.
fn minimise_panic(harness: &Harness, mut case: Case) -> Case {
    let mut i = 0;
    while i < case.writes.len() {
        let mut smaller = case.clone();
        smaller.writes.remove(i);
        if catch_unwind(AssertUnwindSafe(|| harness.run(&smaller))).is_err() {
            harness.forget_debug_info();
            case = smaller;
        } else {
            i += 1;
        }
    }
    case
}

fn hash(text: &str) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in text.bytes() {
        hash = (hash ^ byte as u64).wrapping_mul(0x100_0000_01b3);
    }
    format!("{hash:016x}")
}

fn indent(text: &str) -> String {
    text.lines().map(|line| format!("    {line}\n")).collect()
}
