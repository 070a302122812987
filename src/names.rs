//! Names gatebot accepts from configs and agents.

/// Agent names appear in URLs, logs and chat prompts: keep them plain.
#[must_use]
pub fn valid_agent_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agent_names_are_plain_and_short() {
        for ok in ["mailer", "ops-bot_2", "a.b", &"x".repeat(64)] {
            assert!(valid_agent_name(ok), "{ok}");
        }
        for bad in ["", "mail er", "mailer/1", "ünicode", "<b>", &"x".repeat(65)] {
            assert!(!valid_agent_name(bad), "{bad}");
        }
    }
}
