//! The fuzzing harness, shared by the corpus replay test (`tests/suite/fuzz_corpus.rs`) and the
//! campaign runner (`examples/fuzz.rs`, `make fuzz`).
//!
//! - An *image* is the memory a real fixture stop showed the core: every 4 KiB page that
//!   `inspect` read there, with the request (threads, thread pointers, frames) and the load
//!   bias of that stop (`fuzz/images/*.img`, made by `make fuzz-images`).
//! - A *case* is a patch over an image (writes at addresses) or over a fixture binary
//!   (writes at file offsets, a truncation), in a small text file (`fuzz/corpus/*/*.case`).
//! - A *target* runs a case: `decoder` and `task-lists` run the core over the patched
//!   image, `loader` loads the patched binary. A target may fail or report errors; it must
//!   never panic, nor take long.

#![allow(dead_code)]

use std::cell::RefCell;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::io::Read as _;
use std::path::{Path, PathBuf};

use rustc_hash::FxHashMap;
use tokio_async_core::dwarf::DebugInfo;
use tokio_async_core::error::{Error, Result};
use tokio_async_core::future::FutureDecoder;
use tokio_async_core::inspect::{inspect, Request};
use tokio_async_core::memory::{Memory, SharedReader};
use tokio_async_core::model::Report;
use tokio_async_core::output::{self, Format};
use tokio_async_core::render::{TextOptions, View};
use tokio_async_core::tokio::context::{find_context_variable, read_thread_context};
use tokio_async_core::tokio::tasks::{TaskFuture, TaskReader};
use tokio_async_core::tokio::workers::{current_thread_queue, inject_queue, worker_core};
use tokio_async_core::value::{Target, WithExecutable};

pub const PAGE: u64 = 4096;
const IMAGE_MAGIC: &str = "tokio-async fuzz image 1";

/// Memory of one fixture stop, page by page.
pub struct Image {
    pub name: String,
    /// The fixture program and cargo profile it was taken from.
    pub program: String,
    pub profile: String,
    pub load_bias: u64,
    /// How many tasks the stop reported when the image was made.
    pub tasks: u64,
    /// The request of the stop as the glue made it (JSON).
    pub request: serde_json::Value,
    pub pages: FxHashMap<u64, Box<[u8]>>,
}

impl Image {
    /// The file format: a magic line, a JSON line (everything but the pages), then each
    /// page as its address (u64 LE) and its 512 words as runs: (zero words: u16, literal
    /// words: u16, the literal words), until 512 words are covered. Stops are mostly zeros.
    pub fn encode(&self) -> Vec<u8> {
        let header = serde_json::json!({
            "name": self.name,
            "program": self.program,
            "profile": self.profile,
            "load_bias": self.load_bias,
            "tasks": self.tasks,
            "request": self.request,
        });
        let mut out = format!("{IMAGE_MAGIC}\n{header}\n").into_bytes();
        let mut addresses: Vec<u64> = self.pages.keys().copied().collect();
        addresses.sort_unstable();
        for address in addresses {
            out.extend_from_slice(&address.to_le_bytes());
            let words: Vec<u64> = self.pages[&address]
                .chunks(8)
                .map(|w| u64::from_le_bytes(w.try_into().unwrap()))
                .collect();
            let mut i = 0;
            while i < words.len() {
                let zeros = words[i..].iter().take_while(|&&w| w == 0).count();
                let start = i + zeros;
                let literals = words[start..]
                    .iter()
                    .position(|&w| w == 0)
                    .unwrap_or(words.len() - start);
                out.extend_from_slice(&(zeros as u16).to_le_bytes());
                out.extend_from_slice(&(literals as u16).to_le_bytes());
                for word in &words[start..start + literals] {
                    out.extend_from_slice(&word.to_le_bytes());
                }
                i = start + literals;
            }
        }
        out
    }

    pub fn decode(bytes: &[u8]) -> std::result::Result<Image, String> {
        let mut lines = bytes.splitn(3, |&b| b == b'\n');
        if lines.next() != Some(IMAGE_MAGIC.as_bytes()) {
            return Err("not a fuzz image".into());
        }
        let header: serde_json::Value =
            serde_json::from_slice(lines.next().ok_or("no header")?).map_err(|e| e.to_string())?;
        let mut rest = lines.next().unwrap_or_default();
        let mut take = |n: usize| -> std::result::Result<&[u8], String> {
            if rest.len() < n {
                return Err("truncated image".into());
            }
            let (head, tail) = rest.split_at(n);
            rest = tail;
            Ok(head)
        };
        let mut pages = FxHashMap::default();
        while let Ok(bytes) = take(8) {
            let address = u64::from_le_bytes(bytes.try_into().unwrap());
            let mut page = vec![0u8; PAGE as usize];
            let mut word = 0;
            while word < 512 {
                let zeros = u16::from_le_bytes(take(2)?.try_into().unwrap()) as usize;
                let literals = u16::from_le_bytes(take(2)?.try_into().unwrap()) as usize;
                word += zeros;
                if word + literals > 512 {
                    return Err("bad page run".into());
                }
                page[word * 8..(word + literals) * 8].copy_from_slice(take(literals * 8)?);
                word += literals;
            }
            pages.insert(address, page.into_boxed_slice());
        }
        let text = |key: &str| {
            header[key]
                .as_str()
                .map(str::to_string)
                .ok_or(format!("no {key}"))
        };
        Ok(Image {
            name: text("name")?,
            program: text("program")?,
            profile: text("profile")?,
            load_bias: header["load_bias"].as_u64().ok_or("no load_bias")?,
            tasks: header["tasks"].as_u64().ok_or("no tasks")?,
            request: header["request"].clone(),
            pages,
        })
    }

    pub fn load(path: &Path) -> Image {
        let bytes =
            std::fs::read(path).unwrap_or_else(|error| panic!("{}: {error}", path.display()));
        Image::decode(&bytes).unwrap_or_else(|error| panic!("{}: {error}", path.display()))
    }

    /// The recorded request with `options` applied.
    pub fn request(&self, options: RequestOptions) -> Request {
        let mut request = self.request.clone();
        request["all"] = options.all.into();
        request["locals"] = options.locals.into();
        request["group"] = options.group.into();
        request["wait_edges"] = options.wait_edges.into();
        serde_json::from_value(request).expect("an image's request parses")
    }

    /// The byte at `address`, if a page holds it.
    pub fn byte(&self, address: u64) -> Option<u8> {
        self.pages
            .get(&(address & !(PAGE - 1)))
            .map(|page| page[(address % PAGE) as usize])
    }
}

/// Which parts of a command a memory case runs.
#[derive(Debug, Clone, Copy)]
pub struct RequestOptions {
    pub all: bool,
    pub locals: bool,
    pub group: bool,
    pub wait_edges: bool,
}

pub const FULL: RequestOptions = RequestOptions {
    all: true,
    locals: true,
    group: true,
    wait_edges: true,
};

/// An image's memory with a case's writes laid over it; nothing outside the pages reads.
pub struct PatchedMemory<'a> {
    pub image: &'a Image,
    pub writes: &'a [Write],
}

impl Memory for PatchedMemory<'_> {
    fn read(&self, address: u64, buf: &mut [u8]) -> Result<()> {
        let len = buf.len();
        let fail = || Error::memory(address, len);
        let end = address.checked_add(buf.len() as u64).ok_or_else(fail)?;
        let mut cursor = address;
        while cursor < end {
            let page = cursor & !(PAGE - 1);
            let data = self.image.pages.get(&page).ok_or_else(fail)?;
            let in_page = (cursor - page) as usize;
            let take = ((end - cursor) as usize).min(PAGE as usize - in_page);
            let at = (cursor - address) as usize;
            buf[at..at + take].copy_from_slice(&data[in_page..in_page + take]);
            cursor += take as u64;
        }
        for write in self.writes {
            let write_end = write.address.saturating_add(write.bytes.len() as u64);
            let (from, to) = (write.address.max(address), write_end.min(end));
            if from < to {
                let src = (from - write.address) as usize;
                let dst = (from - address) as usize;
                let len = (to - from) as usize;
                buf[dst..dst + len].copy_from_slice(&write.bytes[src..src + len]);
            }
        }
        Ok(())
    }

    /// Read by two threads, as a copy or a core is.
    fn second_reader(&self) -> Option<Box<dyn Memory + Send + '_>> {
        Some(Box::new(SharedReader(self)))
    }
}

/// Another memory whose successful reads are noted: where the core looks on a real stop
/// is where mutations matter.
pub struct Tracing<'a> {
    pub inner: &'a dyn Memory,
    pub reads: RefCell<Vec<(u64, usize)>>,
}

impl<'a> Tracing<'a> {
    pub fn new(inner: &'a dyn Memory) -> Self {
        Tracing {
            inner,
            reads: RefCell::default(),
        }
    }
}

impl Memory for Tracing<'_> {
    fn read(&self, address: u64, buf: &mut [u8]) -> Result<()> {
        self.inner.read(address, buf)?;
        self.reads.borrow_mut().push((address, buf.len()));
        Ok(())
    }
}

/// Bytes written at an address (a memory case) or a file offset (a loader case).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Write {
    pub address: u64,
    pub bytes: Vec<u8>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TargetKind {
    /// `inspect` of every task, locals, groups and wait edges, rendered as text and JSON.
    Decoder,
    /// The walk of the task lists and run queues, and each task's header (`task_lists`).
    TaskLists,
    /// Loading a fixture binary's ELF and DWARF, then walking and decoding the tasks of an
    /// unmutated stop of it (the DWARF is parsed as the walk asks).
    Loader,
}

impl TargetKind {
    pub const ALL: [TargetKind; 3] = [
        TargetKind::Decoder,
        TargetKind::TaskLists,
        TargetKind::Loader,
    ];

    pub fn name(self) -> &'static str {
        match self {
            TargetKind::Decoder => "decoder",
            TargetKind::TaskLists => "task-lists",
            TargetKind::Loader => "loader",
        }
    }

    pub fn named(name: &str) -> Option<TargetKind> {
        TargetKind::ALL.into_iter().find(|kind| kind.name() == name)
    }
}

/// One input of a target. Text form, one item a line:
/// `decoder IMAGE` | `task-lists IMAGE` | `loader PROGRAM PROFILE`, then any number of
/// `write 0xADDRESS HEXBYTES` and, for the loader, at most one `truncate 0xLENGTH`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Case {
    pub target: TargetKind,
    /// The image name, or `PROGRAM PROFILE` for the loader.
    pub subject: String,
    pub writes: Vec<Write>,
    pub truncate: Option<u64>,
}

impl Case {
    pub fn to_text(&self) -> String {
        let mut text = format!("{} {}\n", self.target.name(), self.subject);
        for write in &self.writes {
            let hex: String = write.bytes.iter().map(|b| format!("{b:02x}")).collect();
            let _ = writeln!(text, "write {:#x} {hex}", write.address);
        }
        if let Some(length) = self.truncate {
            let _ = writeln!(text, "truncate {length:#x}");
        }
        text
    }

    pub fn parse(text: &str) -> std::result::Result<Case, String> {
        let mut lines = text
            .lines()
            .filter(|line| !line.trim().is_empty() && !line.starts_with('#'));
        let first = lines.next().ok_or("empty case")?;
        let (target, subject) = first.split_once(' ').ok_or("no subject")?;
        let target = TargetKind::named(target).ok_or(format!("unknown target {target}"))?;
        let mut case = Case {
            target,
            subject: subject.trim().to_string(),
            writes: Vec::new(),
            truncate: None,
        };
        let number = |text: &str| {
            u64::from_str_radix(text.trim_start_matches("0x"), 16).map_err(|e| e.to_string())
        };
        for line in lines {
            let words: Vec<&str> = line.split_whitespace().collect();
            match words.as_slice() {
                ["write", address, hex] if hex.len() % 2 == 0 => {
                    let bytes = (0..hex.len())
                        .step_by(2)
                        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).map_err(|e| e.to_string()))
                        .collect::<std::result::Result<Vec<u8>, String>>()?;
                    case.writes.push(Write {
                        address: number(address)?,
                        bytes,
                    });
                }
                ["truncate", length] => case.truncate = Some(number(length)?),
                _ => return Err(format!("bad line: {line}")),
            }
        }
        Ok(case)
    }
}

/// What a run gave, coarsely: cases with different outcomes are kept apart when the
/// corpus is chosen.
pub type Outcome = String;

/// The fixture binaries, their DWARF and the images, loaded once and shared by every case.
pub struct Harness {
    pub images: Vec<Image>,
    debug: RefCell<HashMap<(String, String), &'static DebugInfo>>,
    binaries: RefCell<HashMap<(String, String), &'static [u8]>>,
    build: fn(&str, &str) -> PathBuf,
    scratch: PathBuf,
}

impl Harness {
    /// The images in `images_dir`; `build` gives a fixture binary's path (building it).
    pub fn new(images_dir: &Path, build: fn(&str, &str) -> PathBuf) -> Harness {
        let mut paths: Vec<PathBuf> = std::fs::read_dir(images_dir)
            .map(|dir| {
                dir.filter_map(|entry| entry.ok().map(|entry| entry.path()))
                    .collect()
            })
            .unwrap_or_default();
        paths.retain(|path| path.extension().is_some_and(|ext| ext == "img"));
        paths.sort();
        let images = paths.iter().map(|path| Image::load(path)).collect();
        let scratch = std::env::temp_dir().join(format!("tokio-async-fuzz-{}", std::process::id()));
        Harness {
            images,
            debug: RefCell::default(),
            binaries: RefCell::default(),
            build,
            scratch,
        }
    }

    pub fn image(&self, name: &str) -> Option<&Image> {
        self.images.iter().find(|image| image.name == name)
    }

    /// The DWARF of a fixture, loaded once (and kept for the life of the process).
    pub fn debug_info(&self, program: &str, profile: &str) -> &'static DebugInfo {
        let key = (program.to_string(), profile.to_string());
        self.debug.borrow_mut().entry(key).or_insert_with(|| {
            let path = (self.build)(program, profile);
            Box::leak(Box::new(
                DebugInfo::load(&path)
                    .unwrap_or_else(|error| panic!("{}: {error}", path.display())),
            ))
        })
    }

    /// Drops the loaded DWARF (after a panic, whose unwinding may have poisoned its locks).
    pub fn forget_debug_info(&self) {
        self.debug.borrow_mut().clear();
    }

    /// The bytes of a fixture binary, read once.
    pub fn binary(&self, program: &str, profile: &str) -> &'static [u8] {
        let key = (program.to_string(), profile.to_string());
        self.binaries.borrow_mut().entry(key).or_insert_with(|| {
            let path = (self.build)(program, profile);
            let mut bytes = Vec::new();
            std::fs::File::open(&path)
                .and_then(|mut file| file.read_to_end(&mut bytes))
                .expect("fixture binary reads");
            Box::leak(bytes.into_boxed_slice())
        })
    }

    /// Loads what the case needs beforehand, so that its run is timed alone.
    pub fn warm(&self, case: &Case) {
        match case.target {
            TargetKind::Loader => {
                if let Some((program, profile)) = case.subject.split_once(' ') {
                    self.binary(program, profile);
                }
            }
            _ => {
                if let Some(image) = self.image(&case.subject) {
                    self.debug_info(&image.program, &image.profile);
                }
            }
        }
    }

    /// Runs one case; `Err` only for a case that names what does not exist.
    pub fn run(&self, case: &Case) -> std::result::Result<Outcome, String> {
        match case.target {
            TargetKind::Decoder | TargetKind::TaskLists => {
                let image = self
                    .image(&case.subject)
                    .ok_or(format!("no image {}", case.subject))?;
                let debug = self.debug_info(&image.program, &image.profile);
                let memory = PatchedMemory {
                    image,
                    writes: &case.writes,
                };
                Ok(match case.target {
                    TargetKind::Decoder => decoder(debug, image, &memory),
                    _ => task_lists(debug, image, &memory, false),
                })
            }
            TargetKind::Loader => {
                let (program, profile) = case
                    .subject
                    .split_once(' ')
                    .ok_or("loader cases name PROGRAM PROFILE")?;
                Ok(self.loader(program, profile, case))
            }
        }
    }

    fn loader(&self, program: &str, profile: &str, case: &Case) -> Outcome {
        let seed = self.binary(program, profile);
        let mut bytes = seed.to_vec();
        for write in &case.writes {
            let Ok(start) = usize::try_from(write.address) else {
                continue;
            };
            let end = (start + write.bytes.len()).min(bytes.len());
            if start < end {
                bytes[start..end].copy_from_slice(&write.bytes[..end - start]);
            }
        }
        if let Some(length) = case.truncate {
            bytes.truncate(length as usize);
        }
        std::fs::create_dir_all(&self.scratch).expect("scratch dir");
        // Its own directory: the loader looks for `<binary>.dwp` next to it.
        let path = self.scratch.join(program);
        std::fs::write(&path, &bytes).expect("scratch file writes");
        let outcome = match tokio_async_core::tokio::load_program(&path, &[], None, true) {
            Err(error) => format!("load: {}", shape(&error.message())),
            Ok(debug) => {
                // The DWARF is parsed lazily: a stop of the same binary makes the core read it.
                match self
                    .images
                    .iter()
                    .find(|image| image.program == program && image.profile == profile)
                {
                    Some(image) => format!(
                        "loaded; {}",
                        task_lists(&debug, image, &PatchedMemory { image, writes: &[] }, true)
                    ),
                    None => "loaded".to_string(),
                }
            }
        };
        let _ = std::fs::remove_file(&path);
        let _ = std::fs::remove_dir(&self.scratch);
        outcome
    }
}

/// The decoder target: the whole command, as `async bt all full` and `async waits` run it.
pub fn decoder(debug: &DebugInfo, image: &Image, memory: &dyn Memory) -> Outcome {
    let request = image.request(FULL);
    let report = inspect(debug, memory, image.load_bias, &request);
    if let Ok(report) = &report {
        render(report);
    }
    outcome(&report)
}

/// The task-list target: from each thread's tokio context, every runtime's task lists
/// (the walker), its inject queue and the workers' run queues, with each listed task's
/// header, future type and spawn location; with `decode`, each task's future too. No
/// stack frames: the lists alone.
pub fn task_lists(debug: &DebugInfo, image: &Image, memory: &dyn Memory, decode: bool) -> Outcome {
    let memory = WithExecutable {
        inner: memory,
        debug,
        load_bias: image.load_bias,
    };
    let target = Target::new(debug, &memory, image.load_bias);
    let variable = match find_context_variable(debug) {
        Ok(variable) => variable,
        Err(error) => return format!("context: {}", shape(&error.message())),
    };
    let reader = match TaskReader::new(&target) {
        Ok(reader) => reader,
        Err(error) => return format!("tasks: {}", shape(&error.message())),
    };
    let decoder = FutureDecoder::new(&target).with_tasks(&reader);
    let mut notes: Vec<String> = Vec::new();
    let mut note = |what: &str, result: std::result::Result<usize, Error>| match result {
        Ok(count) => notes.push(format!("{what} {count}")),
        Err(error) => notes.push(format!("{what}: {}", shape(&error.message()))),
    };
    let mut runtimes = Vec::new();
    let mut headers = Vec::new();
    for thread in image.request["threads"].as_array().into_iter().flatten() {
        let Some(fs_base) = thread["fs_base"].as_u64() else {
            continue;
        };
        let context = match read_thread_context(&target, &variable, fs_base) {
            Ok(Some(context)) => context,
            Ok(None) => continue,
            Err(error) => {
                note("thread", Err(error));
                continue;
            }
        };
        if let Some(context) = &context.worker_context {
            match worker_core(context) {
                Ok(Some(core)) => headers.extend(core.lifo_slot.into_iter().chain(core.run_queue)),
                Ok(None) => {}
                Err(error) => note("worker", Err(error)),
            }
        }
        if let Some(context) = &context.current_thread_context {
            match current_thread_queue(context) {
                Ok(queue) => headers.extend(queue.into_iter().flatten()),
                Err(error) => note("current_thread queue", Err(error)),
            }
        }
        let Some(runtime) = context.handle else {
            continue;
        };
        if runtimes.contains(&runtime.handle.address) {
            continue;
        }
        runtimes.push(runtime.handle.address);
        match inject_queue(&runtime.handle) {
            Ok(queue) => headers.extend(queue),
            Err(error) => note("inject", Err(error)),
        }
        match reader.task_addresses(&runtime.handle) {
            Ok(walk) => {
                note("walk", Ok(walk.addresses.len()));
                for problem in &walk.problems {
                    note(&shape(&problem.message()), Ok(0));
                }
                headers.extend(walk.addresses);
            }
            Err(error) => note("walk", Err(error)),
        }
    }
    let mut tasks = 0;
    for address in headers {
        let task = reader.read_header(address).and_then(|header| {
            let _ = reader.spawn_location(&header);
            reader.future(&header)
        });
        match task {
            Ok(TaskFuture::Running { ty, address }) => {
                tasks += 1;
                if decode {
                    decoder.decode(ty, address);
                }
            }
            Ok(TaskFuture::Gone { .. }) => tasks += 1,
            Err(error) => note("task", Err(error)),
        }
    }
    notes.sort();
    notes.dedup();
    format!(
        "{} runtimes, {tasks} tasks; {}",
        runtimes.len(),
        notes.join(" | ")
    )
}

fn render(report: &Report) {
    for view in [View::Backtrace, View::Tasks, View::Task, View::Waits] {
        let _ = output::to_string(
            report,
            &Format::Text(TextOptions {
                locals: true,
                view,
                style: Default::default(),
            }),
        );
    }
    let _ = output::to_string(report, &Format::Json(View::Backtrace));
}

/// A coarse summary of a report: numbers of things and the shapes of the errors.
fn outcome(report: &Result<Report>) -> Outcome {
    match report {
        Err(error) => format!("error {}", shape(&error.message())),
        Ok(report) => {
            let mut errors: Vec<String> = report.errors.iter().map(|e| shape(&e.message)).collect();
            errors.sort();
            errors.dedup();
            let node_errors = report
                .tasks
                .iter()
                .filter(|task| task.error.is_some() || task.root.error().is_some())
                .count();
            format!(
                "{} threads, {} tasks ({} failing), {} deadlocks, {} futurelocks; {}",
                report.threads.len(),
                report.tasks.len(),
                node_errors,
                report.deadlocks.len(),
                report.futurelocks.len(),
                errors.join(" | ")
            )
        }
    }
}

/// A message with its numbers (decimal, or hex after `0x`) taken out.
pub fn shape(message: &str) -> String {
    let mut out = String::new();
    let mut chars = message.chars().peekable();
    let mut after_word = false;
    while let Some(c) = chars.next() {
        if c.is_ascii_digit() && !after_word {
            while chars
                .peek()
                .is_some_and(|n| n.is_ascii_hexdigit() || *n == 'x')
            {
                chars.next();
            }
            out.push('#');
            after_word = false;
        } else {
            after_word = c.is_alphanumeric() || c == '_';
            out.push(c);
        }
    }
    out
}

/// The fuzz directory at the repository's root.
pub fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .join("fuzz")
}
