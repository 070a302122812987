//! `gatebot factor enroll|list|remove`: the owner's second factors (step-up,
//! docs/teams.md). Enrolling prints the `otpauth://` URI and the secret for an
//! authenticator app, then takes the app's first code (on the terminal, or `--code`);
//! removing takes a fresh code.

use clap::Subcommand;
use serde_json::{json, Value};

use super::decide::code_from_terminal;
use super::out::outln;
use super::{encode, expect_ok, listing, EXIT_GO, EXIT_NO};
use crate::client::Client;

#[derive(Debug, Subcommand)]
pub enum FactorAction {
    /// Add an authenticator app: prints what to scan or type into it, then asks for
    /// its first code.
    Enroll {
        /// What to call it ("phone", "laptop"), to tell your factors apart.
        #[arg(long, default_value = "authenticator app")]
        label: String,
        /// The app's first code (for scripts; asked on the terminal otherwise).
        #[arg(long, value_name = "CODE")]
        code: Option<String>,
    },
    /// List your factors.
    List {
        /// Print the data as JSON (what the API answers) instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Remove a factor, after a fresh code from any of yours.
    Remove {
        /// The factor's id, as `gatebot factor list` shows it.
        id: String,
        /// A fresh code (asked on the terminal otherwise).
        #[arg(long, value_name = "CODE")]
        code: Option<String>,
    },
}

/// `gatebot factor …`, as the owner.
pub(super) async fn run(client: &Client, action: FactorAction) -> Result<u8, String> {
    match action {
        FactorAction::Enroll { label, code } => enroll(client, &label, code).await,
        FactorAction::List { json } => list(client, json).await,
        FactorAction::Remove { id, code } => {
            let Some(code) = code.or(code_from_terminal(
                "Enter a code from your authenticator app to remove this factor.",
            )?) else {
                eprintln!("Removing a factor takes a fresh code: add --code CODE.");
                return Ok(EXIT_NO);
            };
            let res = client
                .post(
                    &format!("/v1/factors/{}/remove", encode(&id)),
                    &json!({"code": code}),
                )
                .await
                .map_err(|e| e.to_string())?;
            if refused(&res) {
                return Ok(EXIT_NO);
            }
            expect_ok(Ok(res))?;
            outln!("Removed factor {id}.");
            Ok(EXIT_GO)
        }
    }
}

/// Says why a code was refused; `true` if it was.
fn refused(res: &crate::client::Response) -> bool {
    if matches!(
        res.error_code(),
        Some("wrong_code" | "codes_locked" | "no_factor" | "invalid_request")
    ) {
        eprintln!("{}", res.error_message());
        return true;
    }
    false
}

async fn enroll(client: &Client, label: &str, code: Option<String>) -> Result<u8, String> {
    let res = expect_ok(client.post("/v1/factors", &json!({"label": label})).await)?;
    let id = res.body["id"].as_str().unwrap_or_default().to_string();
    let person = res.body["person"].as_str().unwrap_or_default();
    outln!("A second factor for {person}. Add it to your authenticator app: open this link on the phone,");
    outln!("or scan it as a QR code from the dashboard's Factors page, or type the secret in:");
    outln!("  {}", res.body["uri"].as_str().unwrap_or_default());
    outln!(
        "  secret: {}",
        res.body["secret"].as_str().unwrap_or_default()
    );
    let Some(code) = code.or(code_from_terminal(
        "Then enter the code the app shows, to finish (within 10 minutes).",
    )?) else {
        outln!(
            "Not finished: run `gatebot factor enroll` again with --code, or confirm it on the dashboard."
        );
        return Ok(EXIT_NO);
    };
    let res = client
        .post(
            &format!("/v1/factors/{}/confirm", encode(&id)),
            &json!({"code": code}),
        )
        .await
        .map_err(|e| e.to_string())?;
    if refused(&res) {
        return Ok(EXIT_NO);
    }
    expect_ok(Ok(res))?;
    outln!(
        "Enrolled factor {id} ({label}): approvals that need a second factor now ask for its code."
    );
    Ok(EXIT_GO)
}

async fn list(client: &Client, json: bool) -> Result<u8, String> {
    let Some(list) = listing::<Value>(client, "/v1/factors", "factors", json).await? else {
        return Ok(EXIT_GO);
    };
    if list.is_empty() {
        outln!("You have no second factor. Add one: gatebot factor enroll");
        return Ok(EXIT_GO);
    }
    let now = crate::time::now_ms();
    outln!("ID                          LABEL                 ADDED");
    for f in &list {
        let added = f["created_at"]
            .as_str()
            .and_then(crate::time::parse_ms)
            .map(|ms| crate::words::relative(ms, now))
            .unwrap_or_default();
        let state = if f["confirmed"].as_bool() == Some(true) {
            ""
        } else {
            " (waiting for its first code)"
        };
        outln!(
            "{:<26}  {:<20}  {added}{state}",
            f["id"].as_str().unwrap_or_default(),
            crate::words::cut(f["label"].as_str().unwrap_or_default(), 20),
        );
    }
    Ok(EXIT_GO)
}
