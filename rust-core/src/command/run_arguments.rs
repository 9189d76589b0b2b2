//! The words of the commands that run the program: `async sample` and the stepping
//! commands (`next`, `step`, `finish`, `until-polled`, `until-woken`), read by the core as
//! the report commands' are (`arguments.rs`); the glue runs them.

use std::path::PathBuf;

use super::arguments::{absolute, bad, number, quoted};
use crate::error::{Error, ErrorKind, Result};

pub const SAMPLE_USAGE: &str =
    "usage: async sample [--interval SECONDS] [--count N] [--output FILE.folded] [--svg FILE.svg]";
pub const SAMPLE_HELP: &str = "Sample where the tasks wait: run the program, stop it every \
     --interval seconds (default 0.5), --count times (default 20), and read every task at each \
     stop; then print each await point's share of the task-samples and the tasks that never \
     moved. --output writes folded stacks (inferno-flamegraph, speedscope), --svg a flamegraph.";
/// A bound on the walk: at most this many samples, each at least this far apart.
pub const MAX_SAMPLES: u64 = 100_000;
pub const MIN_SAMPLE_INTERVAL: f64 = 0.001;
const MAX_SAMPLE_INTERVAL: f64 = 3600.0;

/// How `async sample` samples, and where it writes the stacks.
#[derive(Debug, Clone, PartialEq)]
pub struct SampleOptions {
    pub interval: f64,
    pub count: u64,
    /// Folded stacks (`--output`), absolute.
    pub folded: Option<PathBuf>,
    /// A flamegraph (`--svg`), absolute.
    pub svg: Option<PathBuf>,
}

impl Default for SampleOptions {
    fn default() -> Self {
        SampleOptions {
            interval: 0.5,
            count: 20,
            folded: None,
            svg: None,
        }
    }
}

/// `async sample`'s words (split as a shell splits them).
pub fn parse_sample(words: &[String]) -> Result<SampleOptions> {
    let mut options = SampleOptions::default();
    let mut words = words.iter();
    while let Some(word) = words.next() {
        let (name, attached) = match word.split_once('=') {
            Some((name, value)) => (name, Some(value)),
            None => (word.as_str(), None),
        };
        if !matches!(
            name,
            "--interval" | "-i" | "--count" | "-c" | "--output" | "-o" | "--svg"
        ) {
            return Err(bad(format!(
                "unknown argument {}; {SAMPLE_USAGE}",
                quoted(word)
            )));
        }
        let value = match attached.filter(|value| !value.is_empty()) {
            Some(value) => value,
            None => words
                .next()
                .ok_or_else(|| bad(format!("{name} needs a value; {SAMPLE_USAGE}")))?,
        };
        match name {
            "--interval" | "-i" => {
                options.interval = value
                    .strip_suffix('s')
                    .unwrap_or(value)
                    .parse::<f64>()
                    .ok()
                    .filter(|seconds| {
                        (MIN_SAMPLE_INTERVAL..=MAX_SAMPLE_INTERVAL).contains(seconds)
                    })
                    .ok_or_else(|| {
                        bad(format!(
                            "--interval needs seconds between {MIN_SAMPLE_INTERVAL} and {MAX_SAMPLE_INTERVAL}, not {}",
                            quoted(value)
                        ))
                    })?;
            }
            "--count" | "-c" => {
                options.count = number(value)
                    .filter(|count| (1..=MAX_SAMPLES).contains(count))
                    .ok_or_else(|| {
                        bad(format!(
                            "--count needs a number of samples from 1 to {MAX_SAMPLES}, not {}",
                            quoted(value)
                        ))
                    })?;
            }
            "--svg" => options.svg = Some(absolute(value)),
            _ => options.folded = Some(absolute(value)),
        }
    }
    Ok(options)
}

/// The stepping commands: name, usage and help.
pub const STEPPING_COMMANDS: &[(&str, &str, &str)] = &[
    (
        "next",
        "usage: async next [--own-frame]",
        "Run to the next line of the selected async fn in the same task: across awaits that \
         yield, whichever worker polls the task next; when the fn returns, stop in its awaiter. \
         With --own-frame, only where the selected frame is the async fn's own code.",
    ),
    (
        "step",
        "usage: async step",
        "Run into the async fn the current line awaits, in the same task: its first line on its \
         first poll, its await line when it resumes.",
    ),
    (
        "finish",
        "usage: async finish [--own-frame]",
        "Run until the selected async fn returns to its awaiter in the same task, and print the \
         value it returned. With --own-frame, only where the selected frame is the async fn's \
         own code.",
    ),
    (
        "until-polled",
        "usage: async until-polled TASK",
        "Continue until task TASK is next polled; stop where its innermost async fn resumes.",
    ),
    (
        "until-woken",
        "usage: async until-woken TASK",
        "Continue until something wakes task TASK; stop in the thread that wakes it (its `bt` \
         shows the waking code) and name the waker.",
    ),
];

/// Only where the selected frame is the async fn's own code, not a function it calls (as
/// an editor's `next`/`stepOut` means it; `tokio-async dap` passes it).
const OWN_FRAME: &str = "--own-frame";

/// What a stepping command was told: the task to follow, or to step only in the async
/// fn's own frame.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SteppingArguments {
    pub task: Option<u64>,
    pub own_frame: bool,
}

/// The usage of stepping command `command`.
pub fn stepping_usage(command: &str) -> Result<&'static str> {
    STEPPING_COMMANDS
        .iter()
        .find(|(name, _, _)| *name == command)
        .map(|(_, usage, _)| *usage)
        .ok_or_else(|| {
            Error::new(
                ErrorKind::Internal,
                format!("no stepping command {command:?}"),
            )
        })
}

/// Stepping command `command`'s words (split at whitespace).
pub fn parse_stepping(command: &str, words: &[String]) -> Result<SteppingArguments> {
    let usage = stepping_usage(command)?;
    match (command, words) {
        // A task id as the other commands take it (`10,001` as the tables print it).
        ("until-polled" | "until-woken", words) => match words {
            [task] => number(task),
            _ => None,
        }
        .map(|task| SteppingArguments {
            task: Some(task),
            own_frame: false,
        })
        .ok_or_else(|| bad(format!("which task? {usage}"))),
        ("next" | "finish", [flag]) if flag == OWN_FRAME => Ok(SteppingArguments {
            task: None,
            own_frame: true,
        }),
        (_, []) => Ok(SteppingArguments::default()),
        _ => Err(bad(format!("{command} takes no arguments; {usage}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> Vec<String> {
        text.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn sample_options_read_with_their_defaults_and_bounds() {
        assert_eq!(parse_sample(&[]).unwrap(), SampleOptions::default());
        let options = parse_sample(&words(
            "-i 0.1s --count=5 --svg /tmp/a.svg -o /tmp/a.folded",
        ))
        .unwrap();
        assert_eq!(
            options,
            SampleOptions {
                interval: 0.1,
                count: 5,
                folded: Some(PathBuf::from("/tmp/a.folded")),
                svg: Some(PathBuf::from("/tmp/a.svg")),
            }
        );
        // Counts as the other commands take them.
        assert_eq!(parse_sample(&words("-c 1,000")).unwrap().count, 1000);
        let with_usage = |text: &str| format!("{text}; {SAMPLE_USAGE}");
        for (text, says) in [
            ("--bad", with_usage("unknown argument '--bad'")),
            ("--count", with_usage("--count needs a value")),
            (
                "--count 1,2",
                "--count needs a number of samples from 1 to 100000, not '1,2'".into(),
            ),
            (
                "--count 0",
                "--count needs a number of samples from 1 to 100000, not '0'".into(),
            ),
            (
                "-c 1e3",
                "--count needs a number of samples from 1 to 100000, not '1e3'".into(),
            ),
            (
                "-i 0",
                "--interval needs seconds between 0.001 and 3600, not '0'".into(),
            ),
        ] {
            let error = parse_sample(&words(text)).expect_err(text);
            assert_eq!((error.kind, error.message()), (ErrorKind::Usage, says));
        }
    }

    #[test]
    fn stepping_commands_take_a_task_or_the_own_frame_flag() {
        assert_eq!(
            parse_stepping("until-woken", &words("7")).unwrap().task,
            Some(7)
        );
        assert_eq!(
            parse_stepping("until-polled", &words("10,001"))
                .unwrap()
                .task,
            Some(10_001)
        );
        for command in ["next", "finish"] {
            assert!(
                parse_stepping(command, &words("--own-frame"))
                    .unwrap()
                    .own_frame,
                "{command}"
            );
        }
        assert_eq!(
            parse_stepping("step", &[]).unwrap(),
            SteppingArguments::default()
        );
        for (command, text, says) in [
            (
                "until-woken",
                "",
                "which task? usage: async until-woken TASK",
            ),
            (
                "until-polled",
                "x",
                "which task? usage: async until-polled TASK",
            ),
            (
                "next",
                "now",
                "next takes no arguments; usage: async next [--own-frame]",
            ),
            (
                "step",
                "--own-frame",
                "step takes no arguments; usage: async step",
            ),
        ] {
            let error = parse_stepping(command, &words(text)).expect_err(text);
            assert_eq!(
                (error.kind, error.message().as_str()),
                (ErrorKind::Usage, says)
            );
        }
        assert_eq!(
            parse_stepping("jump", &[]).err().map(|error| error.kind),
            Some(ErrorKind::Internal)
        );
    }
}
