use std::process::ExitCode;

use clap::Parser;

use gatebot::client::cli::{complete_if_asked, run_client, Cli, Command, EXIT_ERROR};
use gatebot::client::discover::{self, Places};
use gatebot::config::Config;
use gatebot::daemon::{reload_on_sighup, App, Signals};
use gatebot::systemd::Activation;

fn main() -> ExitCode {
    // A completion script asking for the words at the cursor: answered and exited here,
    // before any runtime starts (`decide`'s ids need one of their own).
    complete_if_asked();
    start()
}

#[tokio::main]
async fn start() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Run => run(cli).await,
        _ => run_client(cli).await,
    }
}

async fn run(cli: Cli) -> ExitCode {
    // Before anything else reads the environment or opens files.
    let activation = Activation::from_env();
    // Before the daemon serves: a SIGTERM or SIGHUP must never meet the default action.
    let signals = match Signals::install() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: cannot install signal handlers: {e}");
            return ExitCode::from(EXIT_ERROR);
        }
    };
    // The file as every command finds it: --config, GATEBOT_CONFIG, ./bot.toml, the
    // user's, the system's.
    let path = match discover::config_file(cli.config.as_deref(), &Places::from_env()) {
        Ok(found) => found.path,
        Err(missing) => {
            eprintln!("error: {}", missing.lines());
            return ExitCode::from(EXIT_ERROR);
        }
    };
    // Every error in the file, one a line, then how many (as `check-config` says them).
    let config = match Config::check(&path) {
        Ok(c) => c,
        Err(errors) => {
            for e in &errors {
                eprintln!("error: {e}");
            }
            eprintln!(
                "{}: {}; gatebot did not start",
                path.display(),
                gatebot::config::count_errors(errors.len())
            );
            return ExitCode::from(EXIT_ERROR);
        }
    };
    gatebot::telemetry::init(config.log.format, &config.log.level);
    let source = config.source.clone();
    tracing::info!(config = %source.display(), "config file read");
    let app = match App::build_with(config, activation).await {
        Ok(app) => app,
        Err(e) => {
            tracing::error!("cannot start: {e:#}");
            return ExitCode::from(EXIT_ERROR);
        }
    };
    let (shutdown, hup) = signals.shutdown();
    tokio::spawn(reload_on_sighup(app.engine(), source, hup));
    match app.run_until(shutdown).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!("stopped with an error: {e:#}");
            ExitCode::from(EXIT_ERROR)
        }
    }
}
