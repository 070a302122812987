//! Step 2 of loading: the file as written becomes a [`Config`]. [`Resolve`]
//! ([`crate::settings`]) carries what every section needs to report an error (the text
//! and path, for key paths and lines) and to read what the file points at (its
//! directory, for relative paths). Each section resolves itself with it: `[store]`, `[queue]`, `[log]` in `queue`,
//! `[policy]`, `[tools]` in `policy`, `[agents.*]` in `agents`, `[promotion]`, `[grants]`
//! and shell-like tools in `promotion`, and the chat tables in the platforms' own modules.

use std::path::{Path, PathBuf};

use super::file::{read_only, FileConfig};
use super::{Config, ConfigError};
use crate::settings::Resolve;

/// Where the daemon listens, as the client commands read it ([`Config::sockets`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sockets {
    /// `[queue] socket`: `ask`, the hooks and `gatebot mcp`.
    pub agents: PathBuf,
    /// `[queue] control_socket`: the owner's commands.
    pub control: PathBuf,
}

impl Config {
    /// Only the sockets of the file at `path`, for the client commands: `[queue]
    /// socket` and `control_socket`, checked as the daemon checks them, and nothing
    /// else (`file::read_only`). An owner's shell (or an agent's) does not have the
    /// daemon's secrets, so an agent's unset `token_env` or a `${CREDENTIALS_DIRECTORY}`
    /// that only systemd sets must not stop `gatebot pending`, and a mistake in a key
    /// the command does not read (a bad `default_ttl`, fixed in the file while the
    /// daemon runs on the old one) is `gatebot check-config`'s to report. TOML that
    /// cannot be read at all is an error here too (the first).
    pub fn sockets(path: &Path) -> Result<Sockets, ConfigError> {
        let raw = super::read(path)?;
        let file = read_only(
            &raw,
            path,
            &[&["queue", "socket"], &["queue", "control_socket"]],
        )
        .map_err(|mut errors| errors.swap_remove(0))?;
        let r = Resolve::new(&raw, path);
        Ok(Sockets {
            agents: r.anchor(&file.queue.socket),
            control: r.anchor(&file.queue.control_socket),
        })
    }
}

impl Resolve<'_> {
    /// Resolves the file, recording every error it finds in `errors`. Returns `None`
    /// when a value the config needs could not be resolved; the caller must check
    /// `errors` either way (the checks that leave no value behind only record).
    pub(super) fn resolve(
        &self,
        mut file: FileConfig,
        errors: &mut Vec<ConfigError>,
    ) -> Option<Config> {
        let mut notes = Vec::new();
        // The agents' own `workflow` and `limits` tables, taken out of theirs.
        let per_agent_workflow = file
            .agents
            .iter_mut()
            .filter_map(|(name, a)| Some((name.clone(), a.workflow.take()?)))
            .collect();
        let per_agent_limits = file
            .agents
            .iter_mut()
            .filter_map(|(name, a)| Some((name.clone(), a.limits.take()?)))
            .collect();
        let workflow = self.workflow(
            std::mem::take(&mut file.workflow),
            per_agent_workflow,
            file.policy.max_ttl,
            &mut notes,
            errors,
        );
        let platforms = file.platforms(self, &mut notes, errors);
        let FileConfig {
            store,
            queue,
            log,
            policy,
            tools,
            agents,
            inbox,
            promotion,
            grants,
            limits,
            people,
            dashboard,
            groups,
            approval_rules,
            step_up,
            budgets,
            // The workflow and the platforms' tables were taken above.
            ..
        } = file;
        let store = self.store(store, errors);
        let queue = self.queue(queue, errors);
        let limits = self.limits(limits, per_agent_limits, queue.max_body_bytes, errors);
        let people = self.people(people, errors);
        let dashboard = self.dashboard(dashboard, &mut notes, errors);
        self.socket_paths(&store, &queue, errors);
        self.per_agent_caps(&queue, &mut notes, errors);
        let log = self.log(log, errors);
        let (default_ttl, max_ttl, unknown_agents) =
            (policy.default_ttl, policy.max_ttl, policy.unknown_agents);
        let trust = self.trust(promotion, grants, &tools, errors);
        let policy = self.policy(policy, tools, errors);
        let agents = self.agents(agents, errors);
        let budgets = self
            .budgets(budgets, &agents, errors)
            .map(std::sync::Arc::new);
        let inbox =
            inbox.and_then(|i| i.resolve(self, &agents, unknown_agents, &mut notes, errors));
        let mut warnings =
            super::agents::token_warnings(&agents, inbox.as_ref(), queue.listen.as_deref());
        let teams = self.teams(
            (groups, approval_rules, step_up),
            &people,
            max_ttl,
            &mut warnings,
            errors,
        );
        Some(Config {
            source: self.file().to_path_buf(),
            store,
            queue,
            log,
            policy: policy?,
            default_ttl,
            max_ttl,
            unknown_agents,
            agents,
            platforms,
            inbox,
            notes,
            warnings,
            workflow,
            trust,
            limits,
            people,
            dashboard,
            teams,
            budgets,
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::config::parse_in_etc as parse;
    use crate::config::Config;

    #[test]
    fn a_missing_token_env_is_an_error() {
        let e = parse(
            "[agents.a]\ntier = \"supervised\"\ntoken_env = \"GATEBOT_TEST_SURELY_UNSET_VAR\"\n",
        )
        .unwrap_err();
        assert_eq!(e.key, "agents.a.token_env");
        assert_eq!(e.line, Some(3));
        assert!(e.message.contains("GATEBOT_TEST_SURELY_UNSET_VAR"));
    }

    #[test]
    fn two_token_sources_are_an_error() {
        let e = parse("[agents.a]\ntier = \"supervised\"\ntoken = \"x\"\ntoken_env = \"Y\"\n")
            .unwrap_err();
        assert!(e.message.contains("only one"), "{e}");
    }

    #[test]
    fn a_token_file_is_read_and_trimmed() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("tok"), "s3cret\n").unwrap();
        let cfg = dir.path().join("bot.toml");
        std::fs::write(
            &cfg,
            "[agents.a]\ntier = \"supervised\"\ntoken_file = \"tok\"\n",
        )
        .unwrap();
        let c = Config::load(&cfg).unwrap();
        assert_eq!(c.agents["a"].token.as_ref().unwrap().expose(), "s3cret");
    }

    #[test]
    fn token_files_can_name_systemd_credentials() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("mailer-token"), "from-credentials\n").unwrap();
        let raw = "[agents.a]\ntier = \"supervised\"\ntoken_file = \"${CREDENTIALS_DIRECTORY}/mailer-token\"\n";
        // Only this test touches CREDENTIALS_DIRECTORY.
        std::env::remove_var("CREDENTIALS_DIRECTORY");
        let e = parse(raw).unwrap_err();
        assert_eq!(e.key, "agents.a.token_file");
        assert!(e.message.contains("LoadCredential"), "{e}");
        std::env::set_var("CREDENTIALS_DIRECTORY", dir.path());
        let c = parse(raw).unwrap();
        std::env::remove_var("CREDENTIALS_DIRECTORY");
        assert_eq!(
            c.agents["a"].token.as_ref().unwrap().expose(),
            "from-credentials"
        );
    }

    #[test]
    fn chat_channels_are_off_without_tokens() {
        let c = parse(
            "[telegram]\ntoken_env = \"GATEBOT_TEST_UNSET_TG\"\napprovers = [1]\n[slack]\nbot_token_env = \"GATEBOT_TEST_UNSET_SL\"\n",
        )
        .unwrap();
        assert!(c.platforms.is_empty());
        assert_eq!(c.notes.len(), 2, "{:?}", c.notes);
        assert!(c.notes[0].contains("GATEBOT_TEST_UNSET_TG"));
    }
}
