//! Workflow check-ins: long-running agent workflows pause for their owner where, and
//! when, the owner chose (docs/workflows.md; the seed `autonomy-evaluation-logic.md` is
//! the specification).
//!
//! A run's lifecycle:
//! 1. an agent **starts** a run (`POST /v1/runs`): it belongs to that agent, and is
//!    `running`;
//! 2. it reports **events** as it goes (`step_complete`, `phase_complete`,
//!    `workflow_complete`, each with its warnings and errors); each is evaluated against
//!    the agent's settings in force ([`evaluate::evaluate`]) and answered `continue`,
//!    `stop` or `wait`;
//! 3. on `wait` the run is `waiting` at a **check-in**: a subject with cards in every
//!    chat (Continue / Review issues / Stop workflow), in `gatebot pending`, answered
//!    with `gatebot decide ID continue|stop`; the agent long-polls the run;
//! 4. the owner's answer (or the check-in's expiry, which counts as stop) moves the run
//!    back to `running`, or to `stopped`; a run that passes `workflow_complete` is
//!    `completed`. Stopped and completed runs take no more events.
//!
//! Modules: [`model`] (frequency, tolerances, limits, overrides, legacy levels),
//! [`evaluate`] (what one event means; pure), [`run`] (the records the store keeps),
//! [`wire`] (the API's JSON shapes, shared with the client).

pub mod evaluate;
pub mod model;
pub mod run;
pub mod wire;

pub use evaluate::{
    evaluate, normalize, Evaluation, EventType, Handling, Issue, IssueKind, ResultHandling,
    RunState, StepResult, StopCause, Totals, Verdict, Why,
};
pub use model::{Autonomy, Frequency, Limits, OnLimit, Settings, Severity, Tolerance};
