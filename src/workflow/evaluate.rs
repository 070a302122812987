//! The seed's `evaluateStepCompletion`, pure: what one event of a run means, given the
//! run's settings and what it collected so far. No I/O; the store runs it inside the
//! transaction that records the event, so two events of one run cannot interleave.
//!
//! For each event ([`evaluate`]):
//! 1. the phase's autonomy: its override over the run's settings ([`Settings::for_phase`]);
//! 2. every warning and error is normalized ([`normalize`]): a severity given by name is
//!    used (an unknown name is `medium`), a missing one is detected from the text
//!    ([`detect_severity`]);
//! 3. each is held against the phase's tolerance for its kind: within it, it is
//!    collected; beyond it, it *exceeds*;
//! 4. the collected ones are added to the run's totals and checked against the global
//!    limits (`>=`): `stop` stops the run ("Global limit reached: 50/50 warnings");
//!    `truncate` keeps the run going but stops collecting the kind that reached its
//!    limit (this event's ones of that kind are counted as not collected);
//! 5. a problem beyond tolerance applies the step's `result_handling`: `on_failure` for
//!    errors (which win), `on_warning` for warnings: `stop` stops the run ("Warning
//!    exceeds tolerance: …"), `ask` asks the owner, `continue` goes on (the problem is
//!    kept for the next check-in);
//! 6. otherwise, if the phase's frequency makes this event a check-in point
//!    ([`should_check_in`]), the run **checks in**: with problems collected since the
//!    last check-in it asks the owner (Continue / Review issues / Stop workflow);
//!    without, the check-in is a report and the run goes on. `workflow_complete` is
//!    also a check-in point whenever problems are still unreported, so nothing
//!    collected ends the run unseen (the seed's "end-of-workflow report").

use std::sync::LazyLock;

use regex::Regex;
use serde::{Deserialize, Serialize};

use super::model::{Autonomy, Frequency, OnLimit, Settings, Severity};

/// Warning or error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum IssueKind {
    Warning,
    Error,
}

impl IssueKind {
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            IssueKind::Warning => "warning",
            IssueKind::Error => "error",
        }
    }

    /// "warnings", "errors".
    #[must_use]
    pub fn plural(self) -> &'static str {
        match self {
            IssueKind::Warning => "warnings",
            IssueKind::Error => "errors",
        }
    }
}

/// The three events a run reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EventType {
    StepComplete,
    PhaseComplete,
    WorkflowComplete,
}

impl EventType {
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::StepComplete => "step_complete",
            EventType::PhaseComplete => "phase_complete",
            EventType::WorkflowComplete => "workflow_complete",
        }
    }

    #[must_use]
    pub fn parse(s: &str) -> Option<EventType> {
        match s {
            "step_complete" => Some(EventType::StepComplete),
            "phase_complete" => Some(EventType::PhaseComplete),
            "workflow_complete" => Some(EventType::WorkflowComplete),
            _ => None,
        }
    }
}

/// What to do with a problem beyond tolerance.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Handling {
    Stop,
    Ask,
    Continue,
}

impl Handling {
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Handling::Stop => "stop",
            Handling::Ask => "ask",
            Handling::Continue => "continue",
        }
    }
}

/// A step's `result_handling`; both default to `stop`, as in the seed's examples.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResultHandling {
    pub on_failure: Handling,
    pub on_warning: Handling,
}

impl Default for ResultHandling {
    fn default() -> Self {
        ResultHandling {
            on_failure: Handling::Stop,
            on_warning: Handling::Stop,
        }
    }
}

/// One warning or error, normalized.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Issue {
    pub kind: IssueKind,
    pub text: String,
    pub severity: Severity,
    /// The severity was detected from the text (none was given).
    pub detected: bool,
}

/// Words that make a problem `high` when no severity is given: harm that cannot be
/// taken back, or an attacker's way in.
static HIGH: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)\b(critical|fatal|panic(ked|s)?|crash(ed|es)?|security|vulnerab\w*|exploit\w*|cve-\d+|data[ -]loss|corrupt\w*|leak(ed|s)?|secret|credential\w*)\b",
    )
    .expect("a valid pattern")
});

/// Words that make a problem `low` when no severity is given: cosmetics.
static LOW: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)\b(style|styling|lint|linter|format(ting)?|typo\w*|cosmetic|minor|nit(pick)?|whitespace|spelling|todo)\b",
    )
    .expect("a valid pattern")
});

/// The level a linter or compiler gave its own finding, as its usual output formats print
/// it (group 1 to 5, the first that matched):
/// - ESLint's `unix` format: `/p/src/a.js:1:10: Missing semicolon. [Warning/semi]`;
/// - `LEVEL:` and `LEVEL[CODE]:` after a location or at the start, as gcc, clang, rustc,
///   clippy, mypy and shellcheck write it: `src/main.rs:2:9: warning: unused variable`,
///   `error[E0308]: mismatched types`;
/// - ESLint's default (`stylish`) format: `  1:10  warning  Missing semicolon  semi`;
/// - `LEVEL CODE:` as tsc and MSVC write it: `a.ts(1,5): error TS2322: …`;
/// - a bracketed level, as loggers write it: `[WARN] …`.
static LABEL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"(?i)\[(warning|error)/",
        r"|(?:^|[\s:(\[])(warning|warn|note|info|hint|error)(?:\[[^\]]*\])?:(?:\s|$)",
        r"|(?:^|\s)\d+:\d+\s+(warning|error)\s",
        r"|\b(warning|error)\s+[a-z]+\d+:",
        r"|\[(warning|warn|note|info|hint|error)\]",
    ))
    .expect("a valid pattern")
});

/// The severity a tool's own level label means: its warnings, notes and hints are
/// `low` (the tool itself lets the build go on), its errors `medium`; `None` without a
/// label.
fn labelled(text: &str) -> Option<Severity> {
    let caps = LABEL.captures(text)?;
    let level = (1..=5).find_map(|i| caps.get(i))?.as_str();
    Some(if level.eq_ignore_ascii_case("error") {
        Severity::Medium
    } else {
        Severity::Low
    })
}

/// The severity of a problem reported without one:
/// 1. `high` if the text names harm (critical, fatal, panic, crash, security,
///    vulnerability, exploit, CVE-…, data loss, corrupt, leak, secret, credentials);
/// 2. else the level a linter or compiler printed on its own finding ([`LABEL`]):
///    `warning`, `note`, `info`, `hint` are `low`, `error` is `medium`;
/// 3. else `low` if it names cosmetics (style, lint, format, typo, cosmetic, minor, nit,
///    whitespace, spelling, TODO);
/// 4. else `medium`.
///
/// Whole words, any case; `high` wins, so "minor security issue" is `high`.
#[must_use]
pub fn detect_severity(text: &str) -> Severity {
    if HIGH.is_match(text) {
        Severity::High
    } else if let Some(severity) = labelled(text) {
        severity
    } else if LOW.is_match(text) {
        Severity::Low
    } else {
        Severity::Medium
    }
}

/// The seed's `normalizeWarning` / `normalizeError`: the severity given (an unknown name
/// is `medium`), or the one [`detect_severity`] finds.
#[must_use]
pub fn normalize(kind: IssueKind, text: &str, severity: Option<&str>) -> Issue {
    let (severity, detected) = match severity {
        Some(name) => (Severity::from_name(name), false),
        None => (detect_severity(text), true),
    };
    Issue {
        kind,
        text: text.to_string(),
        severity,
        detected,
    }
}

/// The seed's `shouldCheckIn`: per-step checks in on `step_complete`, per-phase on
/// `phase_complete`, end-only on `workflow_complete`.
#[must_use]
pub fn should_check_in(frequency: Frequency, event: EventType) -> bool {
    matches!(
        (frequency, event),
        (Frequency::PerStep, EventType::StepComplete)
            | (Frequency::PerPhase, EventType::PhaseComplete)
            | (Frequency::EndOnly, EventType::WorkflowComplete)
    )
}

/// Counts of warnings and errors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Totals {
    pub warnings: u32,
    pub errors: u32,
}

impl Totals {
    #[must_use]
    pub fn of(self, kind: IssueKind) -> u32 {
        match kind {
            IssueKind::Warning => self.warnings,
            IssueKind::Error => self.errors,
        }
    }

    fn add(&mut self, kind: IssueKind, n: u32) {
        match kind {
            IssueKind::Warning => self.warnings = self.warnings.saturating_add(n),
            IssueKind::Error => self.errors = self.errors.saturating_add(n),
        }
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.warnings == 0 && self.errors == 0
    }
}

/// One event of a run, its problems normalized.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepResult {
    pub event: EventType,
    pub phase: String,
    pub step: Option<String>,
    pub warnings: Vec<Issue>,
    pub errors: Vec<Issue>,
    pub handling: ResultHandling,
}

/// What the run collected before this event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RunState {
    /// Collected over the whole run (what the limits count).
    pub totals: Totals,
    /// Problems kept since the last check-in, not yet shown to the owner.
    pub unreported: usize,
}

/// Why a run asks its owner.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Why {
    /// A check-in point with problems to show.
    CheckIn,
    /// A problem beyond tolerance, and `result_handling` says `ask`.
    Tolerance,
}

impl Why {
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Why::CheckIn => "check_in",
            Why::Tolerance => "tolerance",
        }
    }
}

/// Why a run stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopCause {
    /// A problem beyond tolerance, and `result_handling` says `stop`.
    Tolerance,
    /// A global limit, with `on_limit_reached = "stop"`.
    Limit,
    /// The owner answered a check-in with Stop.
    Owner,
    /// Nobody answered a check-in in time.
    Expiry,
}

impl StopCause {
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            StopCause::Tolerance => "tolerance",
            StopCause::Limit => "limit",
            StopCause::Owner => "owner",
            StopCause::Expiry => "expiry",
        }
    }

    #[must_use]
    pub fn parse(s: &str) -> Option<StopCause> {
        match s {
            "tolerance" => Some(StopCause::Tolerance),
            "limit" => Some(StopCause::Limit),
            "owner" => Some(StopCause::Owner),
            "expiry" => Some(StopCause::Expiry),
            _ => None,
        }
    }
}

/// What the run does after the event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Go on; not a check-in point.
    Continue,
    /// A check-in point with nothing to show: a report, and the run goes on.
    Report,
    /// Pause until the owner answers; `reason` is the question or the tolerance breach.
    Ask { why: Why, reason: String },
    /// The run is over.
    Stop { cause: StopCause, reason: String },
}

/// The outcome of one event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Evaluation {
    /// The phase's frequency and tolerances, as applied.
    pub autonomy: Autonomy,
    /// Collected: within tolerance (and not truncated).
    pub kept: Vec<Issue>,
    /// Beyond tolerance.
    pub exceeded: Vec<Issue>,
    /// Within tolerance but not collected: their kind had reached its limit (truncate).
    pub dropped: Totals,
    /// The run's collected totals after the event.
    pub totals: Totals,
    /// Kinds whose limit was reached under `truncate` at this event.
    pub truncated: Vec<IssueKind>,
    pub verdict: Verdict,
}

/// The question a check-in asks: "Check-in: build complete. Continue?".
#[must_use]
pub fn question(event: EventType, phase: &str, step: Option<&str>) -> String {
    match (event, step) {
        (EventType::StepComplete, Some(step)) => {
            format!("Check-in: step {step} of {phase} complete. Continue?")
        }
        (EventType::WorkflowComplete, _) => "Check-in: workflow complete. Continue?".into(),
        _ => format!("Check-in: {phase} complete. Continue?"),
    }
}

/// Evaluates one event; see the module docs for the steps.
#[must_use]
pub fn evaluate(settings: &Settings, state: &RunState, step: &StepResult) -> Evaluation {
    // 1. The phase's autonomy.
    let autonomy = settings.for_phase(&step.phase);
    // 2-3. Normalized by the caller; held against the tolerances.
    let (mut kept_w, exceeded_w): (Vec<Issue>, Vec<Issue>) = step
        .warnings
        .iter()
        .cloned()
        .partition(|w| !w.severity.exceeds(autonomy.warning_tolerance));
    let (mut kept_e, exceeded_e): (Vec<Issue>, Vec<Issue>) = step
        .errors
        .iter()
        .cloned()
        .partition(|e| !e.severity.exceeds(autonomy.error_tolerance));

    // 4. Global limits, on what was collected.
    let limits = settings.limits;
    let counted =
        |before: u32, n: usize| before.saturating_add(u32::try_from(n).unwrap_or(u32::MAX));
    let new_w = counted(state.totals.warnings, kept_w.len());
    let new_e = counted(state.totals.errors, kept_e.len());
    let w_reached = new_w >= limits.max_total_warnings;
    let e_reached = new_e >= limits.max_total_errors;
    let mut totals = state.totals;
    let mut dropped = Totals::default();
    let mut truncated = Vec::new();
    let exceeded: Vec<Issue> = exceeded_w.iter().chain(&exceeded_e).cloned().collect();
    if (w_reached || e_reached) && limits.on_limit_reached == OnLimit::Stop {
        let (count, limit, kind) = if w_reached {
            (new_w, limits.max_total_warnings, "warnings")
        } else {
            (new_e, limits.max_total_errors, "errors")
        };
        let kept: Vec<Issue> = kept_w.into_iter().chain(kept_e).collect();
        return Evaluation {
            autonomy,
            kept,
            exceeded,
            dropped,
            // The run is over: its figures say what it reached.
            totals: Totals {
                warnings: new_w,
                errors: new_e,
            },
            truncated,
            verdict: Verdict::Stop {
                cause: StopCause::Limit,
                reason: format!("Global limit reached: {count}/{limit} {kind}"),
            },
        };
    }
    for (kind, reached, kept) in [
        (IssueKind::Warning, w_reached, &mut kept_w),
        (IssueKind::Error, e_reached, &mut kept_e),
    ] {
        if reached {
            dropped.add(kind, counted(0, kept.len()));
            kept.clear();
            truncated.push(kind);
        } else {
            totals.add(kind, counted(0, kept.len()));
        }
    }
    let kept: Vec<Issue> = kept_w.into_iter().chain(kept_e).collect();

    let unreported = state.unreported + kept.len() + exceeded.len();
    let verdict = verdict(step, &autonomy, &exceeded_e, &exceeded_w, unreported);
    Evaluation {
        autonomy,
        kept,
        exceeded,
        dropped,
        totals,
        truncated,
        verdict,
    }
}

/// Steps 5 and 6: what the event means for the run, from what went beyond tolerance
/// (errors first, by the step's result handling) or else whether this is a check-in
/// point with something to report (`unreported` problems since the last check-in).
fn verdict(
    step: &StepResult,
    autonomy: &Autonomy,
    exceeded_e: &[Issue],
    exceeded_w: &[Issue],
    unreported: usize,
) -> Verdict {
    // 5. Beyond tolerance: result_handling (errors first).
    let breach = match (exceeded_e.first(), exceeded_w.first()) {
        (Some(e), _) => Some((
            step.handling.on_failure,
            format!("Error exceeds tolerance: {}", e.text),
        )),
        (None, Some(w)) => Some((
            step.handling.on_warning,
            format!("Warning exceeds tolerance: {}", w.text),
        )),
        (None, None) => None,
    };
    match breach {
        Some((Handling::Stop, reason)) => Verdict::Stop {
            cause: StopCause::Tolerance,
            reason,
        },
        Some((Handling::Ask, reason)) => Verdict::Ask {
            why: Why::Tolerance,
            reason,
        },
        Some((Handling::Continue, _)) => Verdict::Continue,
        // 6. A check-in point?
        None => {
            let point = should_check_in(autonomy.check_in_frequency, step.event)
                || (step.event == EventType::WorkflowComplete && unreported > 0);
            match (point, unreported) {
                (false, _) => Verdict::Continue,
                (true, 0) => Verdict::Report,
                (true, _) => Verdict::Ask {
                    why: Why::CheckIn,
                    reason: question(step.event, &step.phase, step.step.as_deref()),
                },
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workflow::model::{
        Frequency, Limits, OnLimit, PhaseOverride, Settings, Severity, Tolerance, DEFAULT_AUTONOMY,
    };

    fn settings(frequency: Frequency, warnings: Tolerance, errors: Tolerance) -> Settings {
        Settings {
            autonomy: Autonomy {
                check_in_frequency: frequency,
                warning_tolerance: warnings,
                error_tolerance: errors,
            },
            ..Settings::default()
        }
    }

    fn issue(kind: IssueKind, text: &str, severity: &str) -> Issue {
        normalize(kind, text, Some(severity))
    }

    fn step(event: EventType, phase: &str, warnings: Vec<Issue>, errors: Vec<Issue>) -> StepResult {
        StepResult {
            event,
            phase: phase.into(),
            step: Some("s1".into()),
            warnings,
            errors,
            handling: ResultHandling::default(),
        }
    }

    fn stop(cause: StopCause, reason: &str) -> Verdict {
        Verdict::Stop {
            cause,
            reason: reason.into(),
        }
    }

    fn ask(why: Why, reason: &str) -> Verdict {
        Verdict::Ask {
            why,
            reason: reason.into(),
        }
    }

    use EventType::*;
    use IssueKind::*;

    #[test]
    fn the_seeds_five_examples() {
        let defaults = Settings::default();
        let low_w = settings(Frequency::PerPhase, Tolerance::Low, Tolerance::None);
        let low_e = settings(Frequency::PerPhase, Tolerance::Low, Tolerance::Low);
        // (name, settings, state before, event, verdict)
        let cases: Vec<(&str, &Settings, RunState, StepResult, Verdict)> = vec![
            (
                "1: low warning, low tolerance",
                &low_w,
                RunState::default(),
                step(
                    StepComplete,
                    "build",
                    vec![issue(Warning, "Style issue", "low")],
                    vec![],
                ),
                Verdict::Continue,
            ),
            (
                "2: medium warning, low tolerance",
                &low_w,
                RunState::default(),
                step(
                    StepComplete,
                    "build",
                    vec![issue(Warning, "Deprecated API", "medium")],
                    vec![],
                ),
                stop(
                    StopCause::Tolerance,
                    "Warning exceeds tolerance: Deprecated API",
                ),
            ),
            (
                "3: high error, low tolerance",
                &low_e,
                RunState::default(),
                step(
                    StepComplete,
                    "build",
                    vec![],
                    vec![issue(Error, "Security vulnerability", "high")],
                ),
                stop(
                    StopCause::Tolerance,
                    "Error exceeds tolerance: Security vulnerability",
                ),
            ),
            (
                "4: low error, none tolerance",
                &defaults,
                RunState::default(),
                step(
                    StepComplete,
                    "build",
                    vec![],
                    vec![issue(Error, "Minor validation error", "low")],
                ),
                stop(
                    StopCause::Tolerance,
                    "Error exceeds tolerance: Minor validation error",
                ),
            ),
            (
                "5: per-phase, phase_complete with accumulated issues",
                &defaults,
                RunState {
                    totals: Totals {
                        warnings: 2,
                        errors: 0,
                    },
                    unreported: 2,
                },
                step(PhaseComplete, "architect", vec![], vec![]),
                ask(Why::CheckIn, "Check-in: architect complete. Continue?"),
            ),
            (
                "5: per-phase, phase_complete with nothing to show is a report",
                &defaults,
                RunState::default(),
                step(PhaseComplete, "architect", vec![], vec![]),
                Verdict::Report,
            ),
        ];
        for (name, s, state, event, want) in cases {
            assert_eq!(evaluate(s, &state, &event).verdict, want, "{name}");
        }
    }

    #[test]
    fn check_in_points_follow_the_frequency() {
        // (frequency, event, is a check-in point)
        let cases = [
            (Frequency::PerStep, StepComplete, true),
            (Frequency::PerStep, PhaseComplete, false),
            (Frequency::PerStep, WorkflowComplete, false),
            (Frequency::PerPhase, StepComplete, false),
            (Frequency::PerPhase, PhaseComplete, true),
            (Frequency::PerPhase, WorkflowComplete, false),
            (Frequency::EndOnly, StepComplete, false),
            (Frequency::EndOnly, PhaseComplete, false),
            (Frequency::EndOnly, WorkflowComplete, true),
        ];
        for (f, e, want) in cases {
            assert_eq!(should_check_in(f, e), want, "{f:?} {e:?}");
        }
    }

    #[test]
    fn collected_problems_are_shown_at_the_next_check_in_point() {
        let s = Settings::default();
        let warn = || vec![issue(Warning, "Style issue", "low")];
        // (state, event, verdict): per-phase, low warnings tolerated.
        let cases: Vec<(RunState, StepResult, Verdict)> = vec![
            (
                RunState::default(),
                step(StepComplete, "build", warn(), vec![]),
                Verdict::Continue,
            ),
            (
                RunState::default(),
                step(PhaseComplete, "build", warn(), vec![]),
                ask(Why::CheckIn, "Check-in: build complete. Continue?"),
            ),
            // Problems left unreported when the run ends are shown then.
            (
                RunState {
                    totals: Totals {
                        warnings: 1,
                        errors: 0,
                    },
                    unreported: 1,
                },
                step(WorkflowComplete, "deploy", vec![], vec![]),
                ask(Why::CheckIn, "Check-in: workflow complete. Continue?"),
            ),
            (
                RunState::default(),
                step(WorkflowComplete, "deploy", vec![], vec![]),
                Verdict::Continue,
            ),
        ];
        for (state, event, want) in cases {
            assert_eq!(evaluate(&s, &state, &event).verdict, want, "{event:?}");
        }
        let per_step = settings(Frequency::PerStep, Tolerance::Low, Tolerance::None);
        assert_eq!(
            evaluate(
                &per_step,
                &RunState::default(),
                &step(StepComplete, "build", warn(), vec![])
            )
            .verdict,
            ask(
                Why::CheckIn,
                "Check-in: step s1 of build complete. Continue?"
            )
        );
        let end_only = settings(Frequency::EndOnly, Tolerance::Low, Tolerance::None);
        assert_eq!(
            evaluate(
                &end_only,
                &RunState::default(),
                &step(WorkflowComplete, "x", vec![], vec![])
            )
            .verdict,
            Verdict::Report
        );
    }

    #[test]
    fn result_handling_decides_what_a_breach_does_and_errors_come_first() {
        let s = Settings::default();
        let medium_w = || vec![issue(Warning, "Deprecated API", "medium")];
        let low_e = || vec![issue(Error, "Flaky test", "low")];
        let handling = |on_failure, on_warning| ResultHandling {
            on_failure,
            on_warning,
        };
        // (warnings, errors, handling, verdict)
        let cases: Vec<(Vec<Issue>, Vec<Issue>, ResultHandling, Verdict)> = vec![
            (
                medium_w(),
                vec![],
                ResultHandling::default(),
                stop(
                    StopCause::Tolerance,
                    "Warning exceeds tolerance: Deprecated API",
                ),
            ),
            (
                medium_w(),
                vec![],
                handling(Handling::Stop, Handling::Ask),
                ask(Why::Tolerance, "Warning exceeds tolerance: Deprecated API"),
            ),
            (
                medium_w(),
                vec![],
                handling(Handling::Stop, Handling::Continue),
                Verdict::Continue,
            ),
            (
                vec![],
                low_e(),
                handling(Handling::Ask, Handling::Stop),
                ask(Why::Tolerance, "Error exceeds tolerance: Flaky test"),
            ),
            (
                medium_w(),
                low_e(),
                handling(Handling::Continue, Handling::Stop),
                Verdict::Continue,
            ),
            (
                medium_w(),
                low_e(),
                handling(Handling::Stop, Handling::Continue),
                stop(StopCause::Tolerance, "Error exceeds tolerance: Flaky test"),
            ),
        ];
        for (w, e, h, want) in cases {
            let mut ev = step(StepComplete, "build", w, e);
            ev.handling = h;
            let got = evaluate(&s, &RunState::default(), &ev);
            assert_eq!(got.verdict, want, "{h:?}");
            assert!(got.kept.is_empty(), "a breach is not collected: {got:?}");
        }
        // A breach let through by `continue` waits for the next check-in.
        let mut ev = step(StepComplete, "build", medium_w(), vec![]);
        ev.handling = handling(Handling::Stop, Handling::Continue);
        let got = evaluate(&s, &RunState::default(), &ev);
        assert_eq!(got.exceeded.len(), 1);
        assert_eq!(
            got.totals,
            Totals::default(),
            "limits count what is collected"
        );
    }

    #[test]
    fn an_override_applies_to_its_phase_only() {
        let mut s = settings(Frequency::PerPhase, Tolerance::Medium, Tolerance::None);
        s.overrides.insert(
            "evaluate".into(),
            PhaseOverride {
                warning_tolerance: Some(Tolerance::None),
                check_in_frequency: Some(Frequency::PerStep),
                error_tolerance: None,
            },
        );
        let w = || vec![issue(Warning, "Slow query", "low")];
        let build = evaluate(
            &s,
            &RunState::default(),
            &step(StepComplete, "build", w(), vec![]),
        );
        assert_eq!(build.verdict, Verdict::Continue);
        assert_eq!(build.kept.len(), 1);
        let evaluate_phase = evaluate(
            &s,
            &RunState::default(),
            &step(StepComplete, "evaluate", w(), vec![]),
        );
        assert_eq!(
            evaluate_phase.verdict,
            stop(
                StopCause::Tolerance,
                "Warning exceeds tolerance: Slow query"
            )
        );
        assert_eq!(
            evaluate_phase.autonomy.check_in_frequency,
            Frequency::PerStep
        );
        // Per-step in that phase: a clean step there is a check-in point (a report).
        assert_eq!(
            evaluate(
                &s,
                &RunState::default(),
                &step(StepComplete, "evaluate", vec![], vec![])
            )
            .verdict,
            Verdict::Report
        );
    }

    #[test]
    fn a_limit_stops_the_run_or_truncates_collection() {
        let limits = |on| Limits {
            max_total_warnings: 3,
            max_total_errors: 2,
            on_limit_reached: on,
        };
        let with = |on| Settings {
            limits: limits(on),
            ..settings(Frequency::EndOnly, Tolerance::High, Tolerance::High)
        };
        let w = |n: usize| {
            (0..n)
                .map(|i| issue(Warning, &format!("w{i}"), "low"))
                .collect::<Vec<_>>()
        };
        let e = |n: usize| {
            (0..n)
                .map(|i| issue(Error, &format!("e{i}"), "low"))
                .collect::<Vec<_>>()
        };
        let before = |warnings, errors| RunState {
            totals: Totals { warnings, errors },
            unreported: 0,
        };

        // Below the limits: collected and counted.
        let got = evaluate(
            &with(OnLimit::Stop),
            &before(1, 0),
            &step(StepComplete, "p", w(1), e(1)),
        );
        assert_eq!(
            (got.verdict, got.totals),
            (
                Verdict::Continue,
                Totals {
                    warnings: 2,
                    errors: 1
                }
            )
        );

        // Reaching one (>=) stops, naming the count, the limit and the kind.
        let got = evaluate(
            &with(OnLimit::Stop),
            &before(2, 0),
            &step(StepComplete, "p", w(1), vec![]),
        );
        assert_eq!(
            got.verdict,
            stop(StopCause::Limit, "Global limit reached: 3/3 warnings")
        );
        let got = evaluate(
            &with(OnLimit::Stop),
            &before(0, 1),
            &step(StepComplete, "p", vec![], e(4)),
        );
        assert_eq!(
            got.verdict,
            stop(StopCause::Limit, "Global limit reached: 5/2 errors")
        );
        // Warnings are named when both are reached.
        let got = evaluate(
            &with(OnLimit::Stop),
            &before(2, 1),
            &step(StepComplete, "p", w(1), e(1)),
        );
        assert_eq!(
            got.verdict,
            stop(StopCause::Limit, "Global limit reached: 3/3 warnings")
        );
        // The limits come before a breach of tolerance (the seed's order).
        let mut strict = with(OnLimit::Stop);
        strict.autonomy.warning_tolerance = Tolerance::None;
        strict.autonomy.error_tolerance = Tolerance::Low;
        let got = evaluate(&strict, &before(0, 1), &step(StepComplete, "p", w(1), e(1)));
        assert_eq!(
            got.verdict,
            stop(StopCause::Limit, "Global limit reached: 2/2 errors")
        );

        // Truncate: the run goes on; the kind that reached its limit is not collected,
        // the other one still is.
        let got = evaluate(
            &with(OnLimit::Truncate),
            &before(2, 0),
            &step(StepComplete, "p", w(2), e(1)),
        );
        assert_eq!(got.verdict, Verdict::Continue);
        assert_eq!(got.truncated, vec![Warning]);
        assert_eq!(
            got.dropped,
            Totals {
                warnings: 2,
                errors: 0
            }
        );
        assert_eq!(
            got.totals,
            Totals {
                warnings: 2,
                errors: 1
            }
        );
        assert_eq!(
            got.kept.iter().map(|i| i.text.as_str()).collect::<Vec<_>>(),
            ["e0"]
        );
        // An event without problems of that kind is not truncated.
        let got = evaluate(
            &with(OnLimit::Truncate),
            &before(2, 0),
            &step(StepComplete, "p", vec![], e(1)),
        );
        assert!(got.truncated.is_empty());
    }

    #[test]
    fn severities_are_given_or_detected_from_the_text() {
        // (text, severity given, severity, detected)
        let cases: &[(&str, Option<&str>, Severity, bool)] = &[
            ("Style issue", None, Severity::Low, true),
            ("Deprecated API", None, Severity::Medium, true),
            ("Security vulnerability", None, Severity::High, true),
            ("Minor validation error", None, Severity::Low, true),
            ("minor security issue", None, Severity::High, true),
            ("lint: unused import", None, Severity::Low, true),
            ("Test suite crashed", None, Severity::High, true),
            ("CVE-2024-1234 in openssl", None, Severity::High, true),
            ("reformatted 3 files", None, Severity::Medium, true),
            ("Style issue", Some("high"), Severity::High, false),
            ("Style issue", Some("MEDIUM"), Severity::Medium, false),
            ("Anything", Some("critical"), Severity::Medium, false),
            ("Anything", Some(""), Severity::Medium, false),
        ];
        for (text, given, severity, detected) in cases {
            let i = normalize(Warning, text, *given);
            assert_eq!(
                (i.severity, i.detected),
                (*severity, *detected),
                "{text} {given:?}"
            );
        }
    }

    #[test]
    fn a_tools_own_level_decides_unless_the_text_names_harm() {
        // Lines as the tools print them (ESLint 10 `-f unix` and its default format,
        // clippy and rustc `--message-format short`, gcc, tsc, mypy), reported as
        // warnings without a severity.
        let cases: &[(&str, Severity)] = &[
            ("/p/src/a.js:1:10: Missing semicolon. [Warning/semi]", Severity::Low),
            ("/p/src/a.js:2:7: Expected '===' and instead saw '=='. [Warning/eqeqeq]", Severity::Low),
            ("/p/src/a.js:3:1: 'foo' is not defined. [Error/no-undef]", Severity::Medium),
            ("  1:10  warning  Missing semicolon                    semi", Severity::Low),
            ("  3:1   error    'foo' is not defined                 no-undef", Severity::Medium),
            ("src/main.rs:2:9: warning: unused variable: `x`: help: if this is intentional, prefix it with an underscore: `_x`", Severity::Low),
            ("src/main.rs:6:8: warning: length comparison to zero: help: using `is_empty` is clearer and more explicit: `v.is_empty()`", Severity::Low),
            ("warning: useless use of `vec!`", Severity::Low),
            ("src/main.rs:4:8: error: length comparison to zero: help: using `is_empty` is clearer and more explicit: `v.is_empty()`", Severity::Medium),
            ("src/main.rs:5:17: error[E0308]: mismatched types: expected `u8`, found `&str`", Severity::Medium),
            ("w.c:2:16: warning: unused variable 'x' [-Wunused-variable]", Severity::Low),
            ("w.c:3:9: warning: control reaches end of non-void function [-Wreturn-type]", Severity::Low),
            ("e.c:1:20: error: 'y' undeclared (first use in this function)", Severity::Medium),
            ("src/a.ts(1,5): error TS2322: Type 'string' is not assignable to type 'number'.", Severity::Medium),
            ("app.py:3: note: By default the bodies of untyped functions are not checked", Severity::Low),
            ("[WARN] cache directory is missing", Severity::Low),
            // The tool's error beats cosmetic words; harm beats the tool's warning.
            ("a.css:1:1: error: lint rule `indent` failed", Severity::Medium),
            ("w.c:2:1: warning: format not a string literal and no format arguments [-Wformat-security]", Severity::High),
            ("/p/src/b.js:1:1: Possible timing attack leaks the secret. [Warning/security/detect-possible-timing-attacks]", Severity::High),
            // No label: the words decide, as before.
            ("Minor validation error", Severity::Low),
            ("an error in the docs", Severity::Medium),
            ("Deprecated API", Severity::Medium),
            ("see https://info.example/x", Severity::Medium),
        ];
        for (text, want) in cases {
            assert_eq!(detect_severity(text), *want, "{text}");
        }
    }

    #[test]
    fn the_defaults_are_the_seeds() {
        assert_eq!(Settings::default().autonomy, DEFAULT_AUTONOMY);
        assert_eq!(Settings::default().limits.max_total_warnings, 50);
        assert_eq!(Settings::default().limits.max_total_errors, 20);
        assert_eq!(ResultHandling::default().on_warning, Handling::Stop);
    }
}
