//! The report commands' words and flags, as `tokio-async PID COMMAND` takes them: what
//! follows `async` in the debuggers (`backtrace [all] [full]`, `tasks`, `task N`, `waits`,
//! `diff`, with `--json`, `--output`, `--group`, the filters and the budget), read into a
//! `Command`; and their help, which the debuggers' glue shows and completes from
//! (`command_table` in `python/`).

use std::path::PathBuf;

use crate::command::Command;
use crate::error::{Error, ErrorKind, Result};
use crate::model::TaskState;
use crate::render::View;

/// One flag: its long and short names, the name of its value (`None`: a switch), and the
/// help and completion the debuggers show for it.
struct Flag {
    long: &'static str,
    short: &'static str,
    value: Option<&'static str>,
    /// Only in listing commands (`backtrace`, `tasks`), or only in `diff`.
    only: Option<&'static [View]>,
    help: &'static str,
}

const LISTING: &[View] = &[View::Backtrace, View::Tasks];
const FLAGS: &[Flag] = &[
    flag("json", "j", None, None, "print JSON (docs/schema.md)"),
    flag(
        "output",
        "o",
        Some("FILE"),
        None,
        "write the report to FILE and print one line",
    ),
    flag(
        "group",
        "g",
        None,
        Some(LISTING),
        "merge tasks whose trees have the same shape, largest group first",
    ),
    flag(
        "name",
        "n",
        Some("REGEX"),
        Some(LISTING),
        "only tasks with a frame whose function or type matches REGEX",
    ),
    flag(
        "state",
        "s",
        Some("STATE"),
        Some(LISTING),
        "only tasks in STATE",
    ),
    flag(
        "waiting-on",
        "w",
        Some("KIND"),
        Some(LISTING),
        "only tasks with a leaf of KIND (mutex_lock, sleep, mpsc_recv, ...)",
    ),
    flag(
        "runtime",
        "r",
        Some("ADDRESS"),
        Some(LISTING),
        "only tasks of the runtime (or LocalSet) at ADDRESS",
    ),
    flag(
        "limit",
        "l",
        Some("N"),
        Some(LISTING),
        "at most N tasks, lowest ids first",
    ),
    flag(
        "stuck-for",
        "S",
        Some("SECONDS"),
        Some(LISTING),
        "only tasks unchanged for at least SECONDS since an earlier stop",
    ),
    // With --stuck-for, the earlier stop it counts from.
    flag(
        "since",
        "f",
        Some("FILE"),
        Some(&[View::Diff, View::Backtrace, View::Tasks]),
        "compare with a report saved with --json (an earlier stop, another core); with \
         --stuck-for, the stop it counts from",
    ),
    flag(
        "verbose",
        "v",
        None,
        None,
        "say first how the stacks were unwound, and where one ended short",
    ),
    flag(
        "max-nodes",
        "N",
        Some("N"),
        None,
        "stop after decoding N future nodes (default 2,000,000)",
    ),
    flag(
        "max-bytes",
        "B",
        Some("N"),
        None,
        "stop after reading N bytes of the program's memory (default 1 GiB)",
    ),
];

const fn flag(
    long: &'static str,
    short: &'static str,
    value: Option<&'static str>,
    only: Option<&'static [View]>,
    help: &'static str,
) -> Flag {
    Flag {
        long,
        short,
        value,
        only,
        help,
    }
}

/// One flag of a command as the debuggers' help and completion show it.
pub struct FlagHelp {
    pub long: &'static str,
    pub short: &'static str,
    pub value: Option<&'static str>,
    pub help: &'static str,
    /// What its value may be, where the list is fixed (`--state`).
    pub choices: Vec<&'static str>,
}

const FILTER_HELP: &str = "FILTERS select tasks (they imply `all`): --name REGEX, --state STATE, \
     --waiting-on KIND, --runtime ADDRESS, --limit N, --stuck-for SECONDS.";

/// What `async COMMAND` does, as the debuggers' `help` says it.
pub fn help(view: View) -> String {
    match view {
        View::Backtrace => format!(
            "Print each tokio thread's current future and await stack; `all` adds every task, \
             `full` the locals kept across each await, `--json` prints JSON; `--output FILE` \
             writes the report to FILE and prints one line; `--group` prints tasks of the same \
             shape once. {FILTER_HELP}"
        ),
        View::Tasks => format!(
            "List the tokio tasks, one line each: id, state, runtime, root, the deepest frame \
             in your code with its await line, and what the task waits on; `--group` gives one \
             line per shape. {FILTER_HELP}"
        ),
        View::Task => "Print one task's whole async backtrace, as `async backtrace all` prints \
             it; `full` adds saved locals."
            .into(),
        View::Waits => "Print who waits for whom: each lock, semaphore, channel, Notify and \
             JoinHandle with the tasks waiting on it and the tasks holding it, then every \
             deadlock (tasks waiting in a cycle), futurelock (an idle future holding what \
             others wait for) and stranded task (one no live task or thread can let go on)."
            .into(),
        View::Diff => "Compare this stop with the previous one (each report keeps a snapshot of \
             its stop) or with a report saved with --json (--since FILE): each task is stuck \
             (the same state and tree, node for node, progress included), moved (with the \
             first node that differs), new or finished; stuck tasks first, grouped by shape, \
             with how long they have been stuck."
            .into(),
    }
}

/// The words besides flags that `view`'s command takes (`backtrace all full`).
pub fn words_of(view: View) -> &'static [&'static str] {
    match view {
        View::Backtrace => &["all", "full"],
        View::Task => &["full"],
        _ => &[],
    }
}

/// Every flag of `view`'s command with its help and choices.
pub fn flag_help(view: View) -> Vec<FlagHelp> {
    FLAGS
        .iter()
        .filter(|flag| flag.only.is_none_or(|views| views.contains(&view)))
        .map(|flag| FlagHelp {
            long: flag.long,
            short: flag.short,
            value: flag.value,
            help: flag.help,
            choices: match flag.long {
                "state" => TaskState::ALL.iter().map(|state| state.name()).collect(),
                _ => Vec::new(),
            },
        })
        .collect()
}

/// The report commands, by the name `async` takes.
pub const REPORT_COMMANDS: &[(&str, View)] = &[
    ("backtrace", View::Backtrace),
    ("tasks", View::Tasks),
    ("task", View::Task),
    ("waits", View::Waits),
    ("diff", View::Diff),
];

/// How a command is spelled where it is typed: `async ` in the debuggers, nothing after
/// `tokio-async PID`.
pub fn usage(view: View, prefix: &str) -> String {
    let rest = match view {
        View::Backtrace => "backtrace [all] [full] [--json] [--output FILE] [--group] [FILTERS]",
        View::Tasks => "tasks [--json] [--output FILE] [--group] [FILTERS]",
        View::Task => "task ID [full] [--json] [--output FILE]",
        View::Waits => "waits [--json] [--output FILE]",
        View::Diff => "diff [--since FILE.json] [--json] [--output FILE]",
    };
    format!("usage: {prefix}{rest}")
}

/// A word as the messages quote it (as Python's `repr` does a plain string).
pub(super) fn quoted(word: &str) -> String {
    match word.contains('\'') {
        true => format!("\"{word}\""),
        false => format!("'{word}'"),
    }
}

/// Whether `word` is a flag followed by its value (`--output FILE`), in any command.
pub fn takes_a_value(word: &str) -> bool {
    FLAGS.iter().any(|flag| {
        flag.value.is_some()
            && (word == format!("--{}", flag.long) || word == format!("-{}", flag.short))
    })
}

/// The command a word names (`bt` is `backtrace`).
pub fn view_named(word: &str) -> Option<View> {
    Some(match word {
        "backtrace" | "bt" => View::Backtrace,
        "tasks" => View::Tasks,
        "task" => View::Task,
        "waits" => View::Waits,
        "diff" => View::Diff,
        _ => return None,
    })
}

pub(super) fn bad(message: String) -> Error {
    Error::new(ErrorKind::Usage, message)
}

/// Reads one command's words (after its name); relative files are made absolute against
/// the working directory. `prefix` is how the command is typed (`usage`).
pub fn parse(view: View, words: &[String], prefix: &str) -> Result<Command> {
    let usage = usage(view, prefix);
    let mut command = Command {
        view,
        all: view != View::Backtrace,
        ..Command::default()
    };
    let mut filtered = false;
    let mut words = words.iter();
    while let Some(word) = words.next() {
        let (name, attached) = match word.strip_prefix("--") {
            Some(rest) => match rest.split_once('=') {
                Some((name, value)) => (format!("--{name}"), Some(value.to_string())),
                None => (word.clone(), None),
            },
            None => (word.clone(), None),
        };
        match (view, word.as_str()) {
            (View::Backtrace, "all") => {
                command.all = true;
                continue;
            }
            (View::Backtrace | View::Task, "full") => {
                command.full = true;
                continue;
            }
            _ => {}
        }
        if view == View::Task && command.filter.ids.is_none() {
            if let Some(id) = number(word) {
                command.filter.ids = Some(vec![id]);
                continue;
            }
        }
        let Some(flag) = FLAGS.iter().find(|flag| {
            flag.only.is_none_or(|views| views.contains(&view))
                && (name == format!("--{}", flag.long) || name == format!("-{}", flag.short))
        }) else {
            return Err(bad(format!("unknown argument {}; {usage}", quoted(word))));
        };
        let Some(value_name) = flag.value else {
            match flag.long {
                "json" => command.json = true,
                "verbose" => command.verbose = true,
                _ => command.group = true,
            }
            continue;
        };
        let value = match attached {
            Some(value) => value,
            None => words
                .next()
                .cloned()
                .ok_or_else(|| bad(format!("{name} needs {}; {usage}", a(value_name))))?,
        };
        filtered |= set_value(&mut command, flag.long, &name, value)?;
    }
    if view == View::Task && command.filter.ids.is_none() {
        return Err(bad(format!("which task? {usage}")));
    }
    if filtered {
        command.all = true;
    }
    if command.verbose && command.json && command.output.is_none() {
        return Err(bad(
            "--verbose says its lines before the report: with --json, write the report to a \
             file (--output FILE)"
                .into(),
        ));
    }
    Ok(command)
}

/// Sets the value `value` of flag `--long` (given as `name`); says whether it filters the
/// tasks (every filter lists them all).
fn set_value(command: &mut Command, long: &str, name: &str, value: String) -> Result<bool> {
    match long {
        "output" => command.output = Some(absolute(&value)),
        "since" => command.since = Some(absolute(&value)),
        "stuck-for" => {
            command.filter.stuck_for = Some(seconds(&value).ok_or_else(|| {
                bad(format!(
                    "--stuck-for needs a number of seconds, not {}",
                    quoted(&value)
                ))
            })?);
        }
        "limit" => {
            let limit = number(&value).ok_or_else(|| {
                bad(format!(
                    "--limit needs a number of tasks, not {}",
                    quoted(&value)
                ))
            })?;
            command.filter.limit = Some(limit as usize);
        }
        "max-nodes" | "max-bytes" => {
            let limit = number(&value).filter(|&limit| limit > 0).ok_or_else(|| {
                bad(format!(
                    "{name} needs a positive number, not {}",
                    quoted(&value)
                ))
            })?;
            match long {
                "max-nodes" => command.limits.nodes = Some(limit),
                _ => command.limits.bytes = Some(limit),
            }
        }
        "name" => command.filter.name = Some(value),
        "state" => command.filter.state = Some(value),
        "waiting-on" => command.filter.waiting_on = Some(value),
        _ => command.filter.runtime = Some(value),
    }
    Ok(!matches!(
        long,
        "output" | "since" | "max-nodes" | "max-bytes"
    ))
}

fn a(value_name: &str) -> String {
    match value_name {
        "FILE" => "a file name".into(),
        "N" => "a number".into(),
        "SECONDS" => "a number of seconds".into(),
        other => format!("a value ({other})"),
    }
}

/// `~/` is the home directory (a debugger's command line has no shell to expand it).
pub(super) fn absolute(path: &str) -> PathBuf {
    let path = match (path.strip_prefix("~/"), std::env::var_os("HOME")) {
        (Some(rest), Some(home)) => PathBuf::from(home).join(rest),
        _ => PathBuf::from(path),
    };
    match path.is_absolute() {
        true => path,
        false => std::env::current_dir()
            .map(|directory| directory.join(&path))
            .unwrap_or(path),
    }
}

/// A whole number as typed: `10001`, or with the separators our counts show (`10,001`) or
/// Rust's (`10_001`).
pub(super) fn number(word: &str) -> Option<u64> {
    let digits = |group: &str| !group.is_empty() && group.bytes().all(|b| b.is_ascii_digit());
    let plain = digits(word);
    let with = |separator: char| {
        let groups: Vec<&str> = word.split(separator).collect();
        groups.len() > 1
            && groups.iter().all(|group| digits(group))
            && (separator == '_'
                || (groups[0].len() <= 3 && groups[1..].iter().all(|group| group.len() == 3)))
    };
    (plain || with(',') || with('_'))
        .then(|| word.replace([',', '_'], "").parse().ok())
        .flatten()
}

/// A duration as typed: `10`, `2.5`, `90s`.
fn seconds(word: &str) -> Option<f64> {
    let seconds: f64 = word.strip_suffix('s').unwrap_or(word).parse().ok()?;
    (seconds.is_finite() && seconds >= 0.0).then_some(seconds)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> Vec<String> {
        text.split_whitespace().map(String::from).collect()
    }

    fn parse(view: View, words: &[String]) -> Result<Command> {
        super::parse(view, words, "")
    }

    #[test]
    fn commands_read_as_in_the_debuggers() {
        let command = parse(View::Backtrace, &words("all full --json")).unwrap();
        assert!(command.all && command.full && command.json);
        let command = parse(View::Backtrace, &words("--state idle --limit 1,000")).unwrap();
        assert!(command.all, "a filter implies all");
        assert_eq!(command.filter.state.as_deref(), Some("idle"));
        assert_eq!(command.filter.limit, Some(1000));
        let command = parse(View::Task, &words("10_001 full")).unwrap();
        assert_eq!(command.filter.ids, Some(vec![10001]));
        let command = parse(View::Tasks, &words("--stuck-for=2.5s -g")).unwrap();
        assert_eq!((command.filter.stuck_for, command.group), (Some(2.5), true));
        let command = parse(View::Diff, &words("--since /tmp/a.json")).unwrap();
        assert_eq!(command.since, Some(PathBuf::from("/tmp/a.json")));
        let command = parse(View::Waits, &words("-v")).unwrap();
        assert!(command.verbose && !command.json);
        let command = parse(View::Tasks, &words("--verbose --json -o /tmp/a.json")).unwrap();
        assert!(command.verbose && command.json);
    }

    #[test]
    fn bad_words_say_what_is_wrong_in_one_line() {
        for (view, text, says) in [
            (
                View::Backtrace,
                "--bad",
                "unknown argument '--bad'; usage: backtrace",
            ),
            (View::Task, "", "which task?"),
            (View::Task, "10,01", "unknown argument '10,01'"),
            (View::Tasks, "--limit", "--limit needs a number"),
            (
                View::Tasks,
                "--stuck-for soon",
                "--stuck-for needs a number of seconds",
            ),
            (View::Waits, "--group", "unknown argument"),
            (
                View::Backtrace,
                "--max-nodes 0",
                "--max-nodes needs a positive number",
            ),
            (
                View::Tasks,
                "--json --verbose",
                "with --json, write the report to a file (--output FILE)",
            ),
        ] {
            let error = parse(view, &words(text)).err().expect(text);
            assert_eq!(error.kind, ErrorKind::Usage);
            assert!(
                error.message().contains(says),
                "{text}: {}",
                error.message()
            );
        }
    }
}
