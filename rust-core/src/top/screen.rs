//! The terminal side of `top`: the loop of refreshes and keys, and the views drawn with
//! ratatui on crossterm.

use std::time::{Duration, Instant};

use ratatui::crossterm::event::{self, Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style as Paint, Stylize};
use ratatui::text::{Line, Span, Text};
use ratatui::widgets::{Block, Clear, Paragraph, Row as TableRow, Table};
use ratatui::{DefaultTerminal, Frame};

use super::tasks::{duration, parse_filter, Column, Row, Tasks};
use super::{next_interval, Options, Refresh, Source};
use crate::error::{Error, ErrorKind, Result};
use crate::format::thousands;
use crate::model::{Party, TaskState};
use crate::render::{render_one_task, state_name, stranded_text, Style, TextOptions, View};
use crate::selection::Selection;

/// How often keys and signals are looked at while waiting for the next refresh.
const TICK: Duration = Duration::from_millis(100);

/// What the screen shows.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Tasks,
    /// One task's tree (Enter), scrolled by this many lines.
    Task(u64, u16),
    Resources,
    Help,
    /// Typing a filter after `/`.
    Filter,
}

struct Screen {
    tasks: Tasks,
    mode: Mode,
    /// The mode `?` or `/` return to.
    under: Mode,
    sort: Column,
    descending: bool,
    grouped: bool,
    paused: bool,
    filter: Selection,
    filter_text: String,
    typing: String,
    /// The message of the last failed refresh.
    problem: Option<String>,
    /// The header's tasks per runtime and state, and its count of tasks stuck long: made
    /// once per refresh, not per frame (100,000 tasks).
    runtimes_text: String,
    stuck_long: usize,
    /// Why the filter being typed was refused.
    filter_problem: Option<String>,
    selected: usize,
    offset: usize,
    rows: Vec<Row>,
    /// The runtime column, once shown, stays: the table does not jump each time a
    /// worker happens to be running a task at a refresh.
    runtime_column: bool,
    last: Option<(Option<Duration>, Duration)>,
    interval: Duration,
    asked: Duration,
    source_name: String,
    live: bool,
    colour: bool,
    /// Whether the last refresh read the locals (only while a task view wants them).
    locals_read: bool,
    /// In a task view: the neighbour chosen with Tab, by its place among the task's.
    neighbour: Option<usize>,
    /// The task views left for a neighbour's, the last first out: Esc goes back to them.
    back: Vec<u64>,
}

pub fn run(
    source: &mut dyn Source,
    options: Options,
    interrupted: &dyn Fn() -> bool,
) -> Result<()> {
    let mut terminal = ratatui::try_init()
        .map_err(|error| Error::new(ErrorKind::Usage, format!("top needs a terminal: {error}")))?;
    let outcome = Screen::new(source, options)
        .and_then(|mut screen| screen.run(&mut terminal, source, interrupted));
    // Restored whatever happened; a panic is restored by ratatui's hook as it unwinds.
    let _ = ratatui::try_restore();
    outcome
}

impl Screen {
    fn new(source: &dyn Source, options: Options) -> Result<Screen> {
        Ok(Screen {
            tasks: options.since.map(Tasks::since).unwrap_or_default(),
            mode: Mode::Tasks,
            under: Mode::Tasks,
            sort: Column::Id,
            descending: false,
            grouped: false,
            paused: false,
            filter: parse_filter("")?,
            filter_text: String::new(),
            typing: String::new(),
            problem: None,
            runtimes_text: format!("tokio-async top · {}", source.name()),
            stuck_long: 0,
            filter_problem: None,
            selected: 0,
            offset: 0,
            rows: Vec::new(),
            runtime_column: false,
            last: None,
            interval: options.interval,
            asked: options.interval,
            source_name: source.name(),
            live: source.live(),
            colour: options.colour,
            locals_read: false,
            neighbour: None,
            back: Vec::new(),
        })
    }

    fn run(
        &mut self,
        terminal: &mut DefaultTerminal,
        source: &mut dyn Source,
        interrupted: &dyn Fn() -> bool,
    ) -> Result<()> {
        let mut due = Instant::now();
        let mut refreshed = false;
        // Drawn when something changed: a refresh, a key, a resize.
        let mut changed = true;
        loop {
            if interrupted() {
                return Ok(());
            }
            let wanted = !refreshed || (self.live && !self.paused);
            // A task view opened on a refresh without locals reads them now.
            let locals_missing = refreshed && self.wants_locals() && !self.locals_read;
            if wanted && (Instant::now() >= due || locals_missing) {
                self.refresh(source);
                refreshed = true;
                changed = true;
                due = Instant::now() + self.interval;
            }
            if std::mem::take(&mut changed) {
                terminal.draw(|frame| self.draw(frame)).map_err(|error| {
                    Error::new(ErrorKind::Output, format!("cannot draw: {error}"))
                })?;
            }
            let refreshing = self.live && !self.paused;
            let wait = match refreshing {
                true => due.saturating_duration_since(Instant::now()).min(TICK),
                false => TICK,
            };
            if event::poll(wait).unwrap_or(false) {
                changed = true;
                match event::read() {
                    Ok(Event::Key(key)) if key.kind != KeyEventKind::Release => {
                        if self.key(key) {
                            return Ok(());
                        }
                    }
                    // A resize is drawn on the next turn.
                    Ok(_) => {}
                    // The terminal is gone (closed): the program is let go as we leave.
                    Err(_) => return Ok(()),
                }
            }
        }
    }

    /// A task view is open (under the help, too): it shows the locals.
    fn wants_locals(&self) -> bool {
        let shown = match self.mode {
            Mode::Help => self.under,
            mode => mode,
        };
        matches!(shown, Mode::Task(..))
    }

    fn refresh(&mut self, source: &mut dyn Source) {
        let with_locals = self.wants_locals();
        match source.read(with_locals) {
            Ok(Refresh {
                report,
                paused,
                took,
            }) => {
                // A core is read once, with its locals, whatever is asked.
                self.locals_read = with_locals || !self.live;
                self.tasks.update(report);
                self.runtimes_text = self.runtimes_line();
                self.stuck_long = self
                    .rows_all_stuck()
                    .filter(|&seconds| seconds >= STUCK_WARNING_SECS)
                    .count();
                self.last = Some((paused, took));
                self.interval = next_interval(self.asked, paused);
                self.problem = None;
                self.update_rows();
                self.runtime_column = self.runtime_column
                    || self.tasks.report.runtimes.len() > 1
                    || self.rows.iter().any(|row| row.runtime.contains(' '));
            }
            Err(error) => self.problem = Some(error.message()),
        }
    }

    fn update_rows(&mut self) {
        let selected_id = self.rows.get(self.selected).map(|row| row.id);
        self.rows = self
            .tasks
            .rows(&self.filter, self.sort, self.descending, self.grouped);
        // The selection follows its task across refreshes and sorts.
        self.selected = selected_id
            .and_then(|id| self.rows.iter().position(|row| row.id == id))
            .unwrap_or(0)
            .min(self.rows.len().saturating_sub(1));
    }

    /// Takes a key; true to quit.
    fn key(&mut self, key: KeyEvent) -> bool {
        let control = key.modifiers.contains(KeyModifiers::CONTROL);
        if control && matches!(key.code, KeyCode::Char('c')) {
            return true;
        }
        if self.mode == Mode::Filter {
            self.filter_key(key.code);
            return false;
        }
        if self.neighbour_key(key.code) {
            return false;
        }
        match key.code {
            KeyCode::Char('q') => return true,
            KeyCode::Char('?') if self.mode != Mode::Help => {
                self.under = self.mode;
                self.mode = Mode::Help;
            }
            // The help closes onto the view it was opened on; the others go back to tasks.
            KeyCode::Esc | KeyCode::Backspace | KeyCode::Left | KeyCode::Char('?')
                if self.mode == Mode::Help =>
            {
                self.mode = self.under;
            }
            KeyCode::Esc | KeyCode::Backspace | KeyCode::Left => {
                self.mode = Mode::Tasks;
                self.back.clear();
            }
            KeyCode::Char('p') => self.paused = !self.paused,
            KeyCode::Char('r') => self.mode = Mode::Resources,
            KeyCode::Char('t') => self.mode = Mode::Tasks,
            KeyCode::Char('s') => {
                let shown = self.columns();
                self.sort = self.sort.next();
                while !shown.contains(&self.sort) {
                    self.sort = self.sort.next();
                }
                self.update_rows();
            }
            KeyCode::Char('S') => {
                self.descending = !self.descending;
                self.update_rows();
            }
            KeyCode::Char('g') => {
                self.grouped = !self.grouped;
                self.update_rows();
            }
            KeyCode::Char('/') => {
                self.under = Mode::Tasks;
                self.typing = self.filter_text.clone();
                self.mode = Mode::Filter;
            }
            KeyCode::Enter | KeyCode::Right if self.mode == Mode::Tasks => {
                if let Some(row) = self.rows.get(self.selected) {
                    self.mode = Mode::Task(row.id, 0);
                    self.neighbour = None;
                    self.back.clear();
                }
            }
            code => self.move_by(code),
        }
        false
    }

    /// In a task view, the keys that walk the wait-for graph: Tab and Shift-Tab choose a
    /// neighbour, Enter opens its view, Esc goes back to the view left for it. True when
    /// the key was one of them.
    fn neighbour_key(&mut self, code: KeyCode) -> bool {
        let Mode::Task(id, _) = self.mode else {
            return false;
        };
        let neighbours = self.tasks.task_neighbours(id);
        match code {
            KeyCode::Tab | KeyCode::BackTab if !neighbours.is_empty() => {
                let count = neighbours.len();
                self.neighbour = Some(match (self.neighbour, code) {
                    (None, KeyCode::Tab) => 0,
                    (None, _) => count - 1,
                    (Some(at), KeyCode::Tab) => (at + 1) % count,
                    (Some(at), _) => (at + count - 1) % count,
                });
            }
            KeyCode::Enter => {
                if let Some(&next) = self.neighbour.and_then(|at| neighbours.get(at)) {
                    self.back.push(id);
                    self.mode = Mode::Task(next, 0);
                    self.neighbour = None;
                }
            }
            KeyCode::Esc | KeyCode::Backspace | KeyCode::Left if !self.back.is_empty() => {
                if let Some(previous) = self.back.pop() {
                    self.mode = Mode::Task(previous, 0);
                    self.neighbour = None;
                }
            }
            _ => return false,
        }
        true
    }

    fn filter_key(&mut self, code: KeyCode) {
        match code {
            KeyCode::Enter => match parse_filter(&self.typing) {
                Ok(selection) => {
                    self.filter = selection;
                    self.filter_text = self.typing.trim().to_string();
                    self.filter_problem = None;
                    self.mode = Mode::Tasks;
                    self.update_rows();
                }
                Err(error) => self.filter_problem = Some(error.message()),
            },
            KeyCode::Esc => {
                self.filter_problem = None;
                self.mode = Mode::Tasks;
            }
            KeyCode::Backspace => {
                self.typing.pop();
            }
            KeyCode::Char(c) => self.typing.push(c),
            _ => {}
        }
    }

    fn move_by(&mut self, code: KeyCode) {
        const PAGE: usize = 20;
        if let Mode::Task(id, scroll) = self.mode {
            let scroll = match code {
                KeyCode::Down | KeyCode::Char('j') => scroll.saturating_add(1),
                KeyCode::Up | KeyCode::Char('k') => scroll.saturating_sub(1),
                KeyCode::PageDown => scroll.saturating_add(PAGE as u16),
                KeyCode::PageUp => scroll.saturating_sub(PAGE as u16),
                KeyCode::Home => 0,
                _ => scroll,
            };
            self.mode = Mode::Task(id, scroll);
            return;
        }
        let last = self.rows.len().saturating_sub(1);
        self.selected = match code {
            KeyCode::Down | KeyCode::Char('j') => self.selected.saturating_add(1),
            KeyCode::Up | KeyCode::Char('k') => self.selected.saturating_sub(1),
            KeyCode::PageDown => self.selected.saturating_add(PAGE),
            KeyCode::PageUp => self.selected.saturating_sub(PAGE),
            KeyCode::Home => 0,
            KeyCode::End => last,
            _ => self.selected,
        }
        .min(last);
    }

    fn paint(&self, style: Paint) -> Paint {
        if self.colour {
            style
        } else {
            Paint::default()
        }
    }

    fn draw(&mut self, frame: &mut Frame<'_>) {
        let [header, body, footer] = Layout::vertical([
            Constraint::Length(3),
            Constraint::Min(1),
            Constraint::Length(1),
        ])
        .areas(frame.area());
        frame.render_widget(Paragraph::new(self.header_lines()), header);
        match self.mode {
            Mode::Task(id, scroll) => self.draw_task(frame, body, id, scroll),
            Mode::Resources => self.draw_resources(frame, body),
            Mode::Help => {
                match self.under {
                    Mode::Resources => self.draw_resources(frame, body),
                    Mode::Task(id, scroll) => self.draw_task(frame, body, id, scroll),
                    _ => self.draw_table(frame, body),
                }
                self.draw_help(frame, body);
            }
            Mode::Tasks | Mode::Filter => self.draw_table(frame, body),
        }
        frame.render_widget(Paragraph::new(self.footer_line()), footer);
    }

    /// Tasks per runtime and state; stuck tasks, deadlocks and futurelocks; then what the
    /// last refresh cost and how the rows are chosen.
    fn header_lines(&self) -> Text<'static> {
        let report = &self.tasks.report;
        let alarm = !report.deadlocks.is_empty()
            || !report.futurelocks.is_empty()
            || !report.stranded.is_empty();
        let warning_style = match alarm {
            true => self.paint(Paint::default().red().add_modifier(Modifier::BOLD)),
            false => Paint::default(),
        };
        Text::from(vec![
            Line::from(self.runtimes_text.clone()).add_modifier(Modifier::BOLD),
            Line::styled(self.warnings_line(), warning_style),
            Line::from(self.refresh_line()),
        ])
    }

    /// `tokio-async top · process 1234 · rt0 MultiThread: 13 tasks (12 idle, 1 running)`.
    fn runtimes_line(&self) -> String {
        let report = &self.tasks.report;
        let mut line = format!("tokio-async top · {}", self.source_name);
        for (index, runtime) in report.runtimes.iter().enumerate() {
            let mut counts: Vec<(TaskState, usize)> = Vec::new();
            for task in report
                .tasks
                .iter()
                .filter(|task| task.runtime == runtime.address)
            {
                match counts.iter_mut().find(|(state, _)| *state == task.state) {
                    Some((_, count)) => *count += 1,
                    None => counts.push((task.state, 1)),
                }
            }
            let total: usize = counts.iter().map(|(_, count)| count).sum();
            let states = counts
                .iter()
                .map(|(state, count)| {
                    format!("{} {}", thousands(*count as u64), state_name(*state))
                })
                .collect::<Vec<_>>()
                .join(", ");
            line.push_str(&format!(
                " · rt{index} {}: {} tasks ({states})",
                runtime.flavor,
                thousands(total as u64)
            ));
        }
        line
    }

    /// Deadlocks, futurelocks, stranded tasks, tasks stuck long, and a refresh that failed.
    fn warnings_line(&self) -> String {
        let report = &self.tasks.report;
        let stuck_long = self.stuck_long;
        let mut warnings = vec![
            format!("deadlocks {}", report.deadlocks.len()),
            format!("futurelocks {}", report.futurelocks.len()),
            format!("stranded {}", report.stranded.len()),
            format!(
                "stuck ≥{}: {}",
                duration(STUCK_WARNING_SECS),
                thousands(stuck_long as u64)
            ),
        ];
        if let Some(problem) = &self.problem {
            warnings.push(format!("error: {problem}"));
        }
        warnings.join(" · ")
    }

    /// `#12 · stopped 1.3 ms (read 13 ms) · every 1.0 s, 0.13% stopped · sort ID▲`.
    fn refresh_line(&self) -> String {
        let cost = match self.last {
            Some((Some(paused), took)) => format!(
                "stopped {:.1} ms (read {:.0} ms)",
                paused.as_secs_f64() * 1e3,
                took.as_secs_f64() * 1e3
            ),
            Some((None, took)) => format!("not stopped (read {:.0} ms)", took.as_secs_f64() * 1e3),
            None => "reading…".into(),
        };
        let every = match (self.live, self.paused) {
            (false, _) => "a still picture".to_string(),
            (true, true) => "paused (p)".to_string(),
            (true, false) => {
                let stopped_share = self
                    .last
                    .and_then(|(paused, _)| paused)
                    .map_or(0.0, |paused| {
                        paused.as_secs_f64() / self.interval.as_secs_f64()
                    });
                format!(
                    "every {:.1} s, {:.2}% stopped",
                    self.interval.as_secs_f64(),
                    stopped_share * 100.0
                )
            }
        };
        let order = if self.descending { "▼" } else { "▲" };
        let mut line = format!(
            "#{} · {cost} · {every} · sort {}{order}",
            self.tasks.refreshes,
            self.sort.title()
        );
        if self.grouped {
            line.push_str(" · grouped");
        }
        if !self.filter_text.is_empty() {
            line.push_str(&format!(" · filter {}", self.filter_text));
        }
        line
    }

    fn rows_all_stuck(&self) -> impl Iterator<Item = f64> + '_ {
        let snapshot = self.tasks.snapshot.as_ref();
        self.tasks
            .report
            .tasks
            .iter()
            .filter_map(move |task| snapshot?.stuck_secs(task.id))
    }

    fn footer_line(&self) -> Line<'static> {
        let text = match self.mode {
            Mode::Filter => match &self.filter_problem {
                Some(problem) => format!("filter: {}▏ {problem}", self.typing),
                None => format!(
                    "filter (--name R --state S --waiting-on K, or a name; Enter, Esc): {}▏",
                    self.typing
                ),
            },
            Mode::Task(..) => {
                "Esc back  ↑↓ scroll  Tab/Shift-Tab a neighbour  Enter open it  q quit  ? help"
                    .into()
            }
            _ => "q quit  ↑↓ move  Enter task  s/S sort  / filter  g group  r resources  p pause  ? help"
                .into(),
        };
        Line::styled(text, self.paint(Paint::default().reversed()))
    }

    fn draw_table(&mut self, frame: &mut Frame<'_>, area: Rect) {
        let height = area.height.saturating_sub(1) as usize;
        if self.selected < self.offset {
            self.offset = self.selected;
        } else if height > 0 && self.selected >= self.offset + height {
            self.offset = self.selected + 1 - height;
        }
        if self.rows.is_empty() {
            let empty = match self.tasks.refreshes {
                0 => "reading the program…",
                _ => "No task matches.",
            };
            frame.render_widget(Paragraph::new(empty), area);
            return;
        }
        let columns = self.columns();
        let visible = self.rows.iter().enumerate().skip(self.offset).take(height);
        let rows: Vec<TableRow<'static>> = visible
            .map(|(index, row)| {
                let cells = columns.iter().map(|&column| self.cell(row, column));
                let table_row = TableRow::new(cells);
                match index == self.selected {
                    true => table_row.style(Paint::default().reversed()),
                    false => table_row,
                }
            })
            .collect();
        let widths = columns.iter().map(|&column| match column_width(column) {
            (min, 0) => Constraint::Length(min),
            (_, share) => Constraint::Fill(share),
        });
        let header = TableRow::new(columns.iter().map(|column| {
            let mut title = column.title().to_string();
            if *column == self.sort {
                title.push_str(if self.descending { "▼" } else { "▲" });
            }
            title
        }))
        .style(Paint::default().add_modifier(Modifier::BOLD));
        let table = Table::new(rows, widths).header(header).column_spacing(1);
        frame.render_widget(table, area);
    }

    /// The columns worth their room: the runtime where there are several or a worker
    /// runs a task (at this refresh or an earlier one), the spawn location where tokio
    /// records one.
    fn columns(&self) -> Vec<Column> {
        let spawned = self.rows.iter().any(|row| row.spawned_at != "-");
        let runtimes = self.runtime_column;
        Column::ALL
            .into_iter()
            .filter(|&column| match column {
                Column::Spawned => spawned,
                Column::Runtime => runtimes,
                _ => true,
            })
            .collect()
    }

    fn cell(&self, row: &Row, column: Column) -> Span<'static> {
        let text = row.cell(column);
        let style = match column {
            Column::Root => Paint::default().yellow(),
            Column::WaitingAt | Column::Spawned => Paint::default().green(),
            Column::State if row.state != "idle" => Paint::default().cyan(),
            Column::Stuck
                if row
                    .stuck_secs
                    .is_some_and(|stuck| stuck >= STUCK_WARNING_SECS) =>
            {
                Paint::default().red()
            }
            _ => Paint::default(),
        };
        Span::styled(text, self.paint(style))
    }

    /// The whole tree (locals held across each await), who it waits for and who waits for
    /// it, and how long it has been as it is.
    fn draw_task(&self, frame: &mut Frame<'_>, area: Rect, id: u64, scroll: u16) {
        let Some(task) = self.tasks.task(id) else {
            frame.render_widget(
                Paragraph::new(format!("Task {id} is gone (finished since).")),
                area,
            );
            return;
        };
        let options = TextOptions {
            locals: true,
            view: View::Task,
            style: Style::default(),
        };
        let mut lines: Vec<Line<'static>> = render_one_task(task, &options)
            .lines()
            .map(|line| Line::from(line.to_string()))
            .collect();
        if !self.locals_read {
            // Refreshes read locals only while a task view is open: this one's come next.
            lines.push(Line::from(match self.paused {
                true => "Locals: read at the next refresh (paused: p resumes)",
                false => "Locals: being read",
            }));
        }
        if let Some(stranded) = self.tasks.stranded(id) {
            lines.push(Line::from(format!("Stranded: {}", stranded_text(stranded))));
        }
        lines.extend(self.neighbour_lines(id));
        let stuck = self
            .tasks
            .snapshot
            .as_ref()
            .and_then(|snapshot| snapshot.stuck_secs(id));
        lines.push(Line::from(match stuck {
            Some(stuck) => format!(
                "Unchanged for {} (over the last {} refreshes)",
                duration(stuck),
                self.tasks.refreshes
            ),
            None => "Unchanged since: not known yet".to_string(),
        }));
        lines.push(Line::from(match self.tasks.last_move(id) {
            Some(last) => format!(
                "Last change, seen at refresh #{}: {}",
                last.refresh, last.what
            ),
            None => "Last change: none seen".to_string(),
        }));
        let block = Block::bordered().title(format!(" task {id} "));
        frame.render_widget(Paragraph::new(lines).block(block).scroll((scroll, 0)), area);
    }

    /// `Waits for: task 3` and `Waited on by: [task 9], thread 1201`: the neighbour chosen
    /// with Tab in brackets.
    fn neighbour_lines(&self, id: u64) -> [Line<'static>; 2] {
        let (waits_for, waited_by) = self.tasks.neighbours(id);
        let chosen = self
            .neighbour
            .and_then(|at| self.tasks.task_neighbours(id).get(at).copied());
        let line = |title: &str, parties: &[Party]| {
            let mut spans = vec![Span::raw(format!("{title}: "))];
            if parties.is_empty() {
                spans.push(Span::raw("nobody"));
            }
            for (at, party) in parties.iter().enumerate() {
                if at > 0 {
                    spans.push(Span::raw(", "));
                }
                spans.push(match chosen {
                    Some(task) if *party == Party::Task(task) => {
                        Span::styled(format!("[{party}]"), Paint::default().reversed())
                    }
                    _ => Span::raw(party.to_string()),
                });
            }
            Line::from(spans)
        };
        [
            line("Waits for", &waits_for),
            line("Waited on by", &waited_by),
        ]
    }

    /// The resources tasks wait on, their holders and waiters; then the timers.
    fn draw_resources(&self, frame: &mut Frame<'_>, area: Rect) {
        let (resources, timers) = self.tasks.resources();
        let listed = |parties: &[Party]| match parties {
            [] => "-".to_string(),
            [one] => one.to_string(),
            [first, rest @ ..] => format!("{first} +{}", rest.len()),
        };
        let mut rows: Vec<TableRow<'static>> = resources
            .iter()
            .map(|row| {
                let held_by = match row.no_holder {
                    true => "no task or thread".to_string(),
                    false => listed(&row.holders),
                };
                TableRow::new(vec![
                    row.resource.kind.name().to_string(),
                    format!("{:#x}", row.resource.address),
                    row.state.clone().unwrap_or_else(|| "-".to_string()),
                    held_by,
                    thousands(row.waiters.len() as u64),
                    listed(&row.waiters),
                ])
            })
            .collect();
        if timers.waiting > 0 {
            let soonest = timers.soonest_secs.map_or("-".to_string(), |secs| {
                format!("next in {}", duration(secs))
            });
            rows.push(TableRow::new(vec![
                "timer".to_string(),
                "-".to_string(),
                soonest,
                "-".to_string(),
                thousands(timers.waiting as u64),
                "-".to_string(),
            ]));
        }
        if rows.is_empty() {
            frame.render_widget(
                Paragraph::new("No task waits on a lock, channel, timer or task."),
                area,
            );
            return;
        }
        let widths = [
            Constraint::Length(10),
            Constraint::Length(16),
            Constraint::Fill(1),
            Constraint::Fill(1),
            Constraint::Length(8),
            Constraint::Fill(1),
        ];
        let header = TableRow::new(["KIND", "ADDRESS", "STATE", "HELD BY", "WAITERS", "WAITING"])
            .style(Paint::default().add_modifier(Modifier::BOLD));
        frame.render_widget(Table::new(rows, widths).header(header), area);
    }

    fn draw_help(&self, frame: &mut Frame<'_>, area: Rect) {
        let width = area.width.min(64);
        let height = area.height.min(HELP.len() as u16 + 2);
        let popup = Rect {
            x: area.x + (area.width - width) / 2,
            y: area.y + (area.height - height) / 2,
            width,
            height,
        };
        frame.render_widget(Clear, popup);
        let lines: Vec<Line<'static>> = HELP.iter().map(|line| Line::from(*line)).collect();
        frame.render_widget(
            Paragraph::new(lines).block(Block::bordered().title(" keys (Esc closes) ")),
            popup,
        );
    }
}

/// Tasks unchanged this long are counted and shown in red.
const STUCK_WARNING_SECS: f64 = 10.0;

/// A column's width: fixed (share 0), or a share of what is left.
fn column_width(column: Column) -> (u16, u16) {
    match column {
        Column::Id => (6, 0),
        Column::State => (9, 0),
        Column::Runtime => (6, 0),
        Column::Root => (0, 3),
        Column::WaitingAt => (0, 4),
        Column::WaitingOn => (0, 5),
        Column::Stuck => (6, 0),
        Column::Busy => (4, 0),
        Column::Spawned => (0, 3),
    }
}

const HELP: [&str; 15] = [
    "↑ ↓ PgUp PgDn Home End   move (scroll in a task)",
    "Enter                    the task: its tree, locals, neighbours",
    "Tab, Enter (in a task)   choose a neighbour, open it",
    "Esc                      back: the task before, or the tasks",
    "s / S                    sort on the next column / reverse",
    "/                        filter: --name R --state S --waiting-on K",
    "g                        group tasks of the same stack",
    "r                        resources: locks, channels, tasks waited on",
    "t                        tasks",
    "p                        pause refreshing",
    "q, Ctrl-C                quit (the program runs on)",
    "",
    "STUCK: since the task's tree last changed.",
    "BUSY: the share of refreshes it was running or scheduled in.",
    "Refreshes stop the program at most 1% of the time.",
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Report;

    /// A live program whose refreshes say whether they were asked for locals, and give
    /// these reports in turn (then empty ones).
    #[derive(Default)]
    struct Recording {
        asked: Vec<bool>,
        reports: Vec<Report>,
    }

    impl Source for Recording {
        fn read(&mut self, with_locals: bool) -> Result<Refresh> {
            self.asked.push(with_locals);
            let report = if self.reports.is_empty() {
                Report::empty(None)
            } else {
                self.reports.remove(0)
            };
            Ok(Refresh {
                report,
                paused: None,
                took: Duration::ZERO,
            })
        }

        fn name(&self) -> String {
            "process 1".into()
        }

        fn live(&self) -> bool {
            true
        }
    }

    fn every_second() -> Options {
        Options {
            interval: Duration::from_secs(1),
            since: None,
            colour: false,
        }
    }

    /// Refreshes read locals only while a task view is open, under the help too.
    #[test]
    fn locals_are_read_only_for_a_task_view() {
        let mut source = Recording::default();
        let mut screen = Screen::new(&source, every_second()).unwrap();
        screen.refresh(&mut source);
        assert!(!screen.locals_read);
        screen.mode = Mode::Task(7, 0);
        assert!(screen.wants_locals());
        screen.refresh(&mut source);
        assert!(screen.locals_read);
        (screen.mode, screen.under) = (Mode::Help, Mode::Task(7, 0));
        screen.refresh(&mut source);
        for mode in [Mode::Tasks, Mode::Resources, Mode::Filter] {
            (screen.mode, screen.under) = (mode, Mode::Tasks);
            screen.refresh(&mut source);
        }
        assert_eq!(source.asked, [false, true, true, false, false, false]);
        assert!(!screen.locals_read);
    }

    /// One task, run by worker 0 at this refresh or not.
    fn one_task(running: bool) -> Report {
        use crate::model::{FutureNode, NodeKind, TaskReport, TaskState, ThreadReport, ThreadRole};
        let mut report = Report::empty(None);
        report.tasks.push(TaskReport {
            id: 3,
            address: 0x7000,
            state: TaskState::Idle,
            root: FutureNode::new(NodeKind::Future, "app::tick", 0x9000),
            runtime: 0x100,
            spawned_at: None,
            error: None,
        });
        report.threads.push(ThreadReport {
            tid: 1,
            name: None,
            role: ThreadRole::Worker,
            worker: Some(0),
            current_task: running.then_some(3),
            state: None,
            queue: None,
            future: None,
            block_on_future: None,
            blocking_function: None,
            blocking_task: None,
            block_on_copies: None,
            runtime: Some(0x100),
            local_set: None,
            error: None,
        });
        report
    }

    /// The runtime column comes when a worker is seen running a task and then stays, so
    /// the table does not jump between refreshes.
    #[test]
    fn the_runtime_column_once_shown_stays() {
        let mut source = Recording {
            reports: vec![one_task(false), one_task(true), one_task(false)],
            ..Recording::default()
        };
        let mut screen = Screen::new(&source, every_second()).unwrap();
        let mut shown = Vec::new();
        for _ in 0..3 {
            screen.refresh(&mut source);
            shown.push(screen.columns().contains(&Column::Runtime));
        }
        assert_eq!(shown, [false, true, true]);
        assert_eq!(screen.rows[0].runtime, "0x100");
    }
}
