//! What a chat answers when the engine refuses what someone pressed or typed: the one
//! place where an [`EngineError`] becomes chat words (the API's are in `api::error`).

use crate::engine::{describe_settled, Conflict, EngineError, GrantRefused, What};

/// Longest id repeated back, in characters (it is what someone typed).
const TYPED_CHARS: usize = 64;

/// What to tell someone whose command or button failed.
#[must_use]
pub fn failure(e: &EngineError) -> String {
    match e {
        EngineError::NotFound { what, id } => not_found(*what, &shorten(id)),
        EngineError::Ambiguous {
            what,
            typed,
            candidates,
        } => format!(
            "`{}` matches several {}: {}. Type more of the id.",
            shorten(typed),
            what.plural(),
            candidates.join(", ")
        ),
        EngineError::UnknownAgent(a) => format!(
            "No agent `{}` in the config. /agents lists them.",
            shorten(a)
        ),
        EngineError::Invalid { problem, .. } => problem.clone(),
        EngineError::VoteRefused { .. }
        | EngineError::VotedAlready { .. }
        | EngineError::StepUpRequired { .. }
        | EngineError::CodeRefused { .. } => e.to_string(),
        EngineError::Grant(g) => grant(g),
        EngineError::Conflict(
            c
            @ (Conflict::Task { .. } | Conflict::LeaseLost { .. } | Conflict::NothingAsked { .. }),
        ) => format!("{c}."),
        EngineError::Conflict(c) => c.to_string(),
        EngineError::AlreadySettled(a) => {
            format!("Request {} is already {}.", a.short_id, describe_settled(a))
        }
        other => {
            tracing::error!(error = %other.chain(), "chat command failed");
            "Something went wrong; see the gatebot log.".into()
        }
    }
}

/// Nothing of kind `what` has the id `id`: say where to find the ones there are.
fn not_found(what: What, id: &str) -> String {
    match what {
        What::Request => format!("No request matches `{id}`. Use /pending to see open requests."),
        What::Task => format!("No task matches `{id}`. /tasks lists the open ones."),
        What::Grant => format!("No grant matches `{id}`. /grants lists them."),
        What::CheckIn | What::Subject => {
            format!(
                "No {} matches `{id}`. Use /pending to see what waits for you.",
                {
                    if what == What::CheckIn {
                        "check-in"
                    } else {
                        "request or check-in"
                    }
                }
            )
        }
        What::Run => format!("No workflow run matches `{id}`."),
        What::Proposal => "That proposal no longer exists.".into(),
        // Chat buttons name an agent by a handle: this one is not in the database
        // (forged, or another database's).
        What::Agent => {
            "This button names no agent gatebot knows. Use /agents for fresh ones.".into()
        }
        What::Pause => "That pause is over (the agent was resumed); nothing was denied.".into(),
        What::Session => format!("No dashboard session matches `{id}`."),
        What::Factor => format!("You have no second factor `{id}`."),
        What::Draft => format!("No draft matches `{id}`."),
    }
}

/// An owner's grant choice refused. In chats the choices are buttons, and a time box
/// comes from the config.
fn grant(g: &GrantRefused) -> String {
    match g {
        GrantRefused::For(why) => format!("A time-boxed grant {why}: see allow_for in bot.toml."),
        other => other.to_string(),
    }
}

fn shorten(s: &str) -> String {
    crate::chat::text::shorten(s, TYPED_CHARS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_not_found_says_what_was_looked_for() {
        let grant = failure(&EngineError::not_found(What::Grant, "zzzz"));
        assert_eq!(grant, "No grant matches `zzzz`. /grants lists them.");
        let request = failure(&EngineError::not_found(What::Request, "zzzz"));
        assert!(
            request.starts_with("No request matches `zzzz`"),
            "{request}"
        );
        let task = failure(&EngineError::not_found(What::Task, "zzzz"));
        assert!(task.starts_with("No task matches"), "{task}");
    }

    #[test]
    fn ambiguity_names_the_kind() {
        let e = EngineError::Ambiguous {
            what: What::Task,
            typed: "ab".into(),
            candidates: vec!["ab12".into(), "ab34".into()],
        };
        assert_eq!(
            failure(&e),
            "`ab` matches several tasks: ab12, ab34. Type more of the id."
        );
    }
}
