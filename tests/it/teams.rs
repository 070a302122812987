//! Team approvals: `[groups]` and `[[approval_rules]]` route a request to the people
//! they ask; each person votes once, on any surface; N approvals approve, and a deny
//! from the rule's number ends it (deny wins); whoever handed over the task cannot
//! approve its requests when the rule says so. Votes are audited; the deciding vote
//! settles the request in its own transaction.

use gatebot::chat::exchange::Actor;
use gatebot::chat::memory::Memory;
use serde_json::{json, Value};

use crate::helpers::{spawn_app, spawn_app_with_memory, TestApp};

const TEAM: &str = r#"
[people.alice]
unix = "alice"
telegram = 42

[people.bob]
unix = "bob"

[people.carol]
unix = "carol"

[people.dave]
unix = "dave"

[groups.oncall]
people = ["alice", "bob"]

[groups.leads]
people = ["carol"]

[[approval_rules]]
name = "mail"
tool = "send_email"
ask = ["oncall", "leads"]
approvals = 2
"#;

fn mail(n: u32) -> Value {
    json!({"agent": "mailer", "tool": "send_email", "args": {"to": "ann@example.com", "n": n}})
}

async fn vote(
    app: &TestApp,
    person: &str,
    id: &str,
    decision: &str,
    reason: Option<&str>,
) -> gatebot::client::Response {
    app.owner_as(person)
        .post(
            &format!("/v1/requests/{id}/decision"),
            &json!({"decision": decision, "reason": reason}),
        )
        .await
        .unwrap()
}

async fn events(app: &TestApp, id: &str, event: &str) -> Vec<Value> {
    app.audit_rows(id)
        .await
        .into_iter()
        .filter(|r| r["event"] == event)
        .collect()
}

#[tokio::test]
async fn two_of_three_approve_only_on_the_second_distinct_person() {
    let app = spawn_app(TEAM).await;
    let (id, short) = app.submit_pending(mail(1)).await;
    let first = vote(&app, "alice", &id, "approve", None).await;
    assert_eq!(first.status, 200, "{:?}", first.body);
    assert_eq!(
        first.body["said"][0],
        format!("Vote counted on {short}: 1 of 2 approvals: alice ✓. Waiting for bob or carol."),
        "{:?}",
        first.body
    );
    assert_eq!(app.get(&id, 0.0).await.body["status"], "pending");
    // The same person again: their first vote stands, nothing changes.
    let again = vote(&app, "alice", &id, "approve", None).await;
    assert_eq!(again.status, 409, "{:?}", again.body);
    assert_eq!(again.error_code(), Some("voted_already"));
    // Someone the rule does not ask: refused, audited.
    let dave = vote(&app, "dave", &id, "approve", None).await;
    assert_eq!(dave.status, 403, "{:?}", dave.body);
    assert_eq!(dave.error_code(), Some("not_asked"));
    assert!(
        dave.error_message().contains("asks alice, bob or carol"),
        "{:?}",
        dave.body
    );
    assert_eq!(events(&app, &id, "vote_refused").await.len(), 1);
    // The second distinct person approves it.
    let second = vote(&app, "carol", &id, "approve", None).await;
    assert_eq!(second.status, 200, "{:?}", second.body);
    let done = app.wait_for_status(&id, "approved").await;
    assert_eq!(done["decided_by"], "carol");
    let votes = events(&app, &id, "vote").await;
    assert_eq!(votes.len(), 2, "{votes:?}");
    assert_eq!(votes[0]["actor"], "alice");
    assert_eq!(votes[1]["actor"], "carol");
    assert_eq!(events(&app, &id, "decided").await.len(), 1);
}

#[tokio::test]
async fn one_deny_ends_it_and_the_agent_reads_the_deniers_reason() {
    let app = spawn_app(TEAM).await;
    let (id, _) = app.submit_pending(mail(2)).await;
    assert_eq!(vote(&app, "alice", &id, "approve", None).await.status, 200);
    let denied = vote(&app, "bob", &id, "deny", Some("not to customers today")).await;
    assert_eq!(denied.status, 200, "{:?}", denied.body);
    let done = app.wait_for_status(&id, "rejected").await;
    assert_eq!(done["decided_by"], "bob");
    assert_eq!(done["reason"], "not to customers today");
    // A vote after it settled is a decision on a settled request, as ever.
    let late = vote(&app, "carol", &id, "approve", None).await;
    assert_eq!(
        late.error_code(),
        Some("already_decided"),
        "{:?}",
        late.body
    );
}

#[tokio::test]
async fn alice_on_a_chat_and_on_the_command_line_is_one_vote() {
    let memory = Memory::new(&["-100"], 5);
    let app = spawn_app_with_memory(tempfile::tempdir().unwrap(), TEAM, &memory).await;
    let (id, short) = app.submit_pending(mail(3)).await;
    let alice = Actor {
        id: "42".into(),
        name: "Alice".into(),
        approver: true,
        person: Some("alice".into()),
    };
    let said = memory
        .say(&alice, "-100", &format!("/approve {short}"), None)
        .await;
    assert!(
        said.text().contains("Vote counted") && said.text().contains("alice ✓"),
        "{}",
        said.text()
    );
    let cli = vote(&app, "alice", &id, "approve", None).await;
    assert_eq!(cli.error_code(), Some("voted_already"), "{:?}", cli.body);
    assert_eq!(app.get(&id, 0.0).await.body["status"], "pending");
    assert_eq!(vote(&app, "bob", &id, "approve", None).await.status, 200);
    app.wait_for_status(&id, "approved").await;
}

#[tokio::test]
async fn the_last_vote_cast_by_two_people_at_once_gives_one_outcome() {
    let app = spawn_app(TEAM).await;
    for n in 0..50 {
        let (id, _) = app.submit_pending(mail(100 + n)).await;
        assert_eq!(vote(&app, "alice", &id, "approve", None).await.status, 200);
        let (bob, carol) = tokio::join!(
            vote(&app, "bob", &id, "approve", None),
            vote(&app, "carol", &id, "deny", Some("no")),
        );
        let won = [&bob, &carol].iter().filter(|r| r.status == 200).count();
        assert_eq!(won, 1, "{:?} {:?}", bob.body, carol.body);
        let lost = if bob.status == 200 { &carol } else { &bob };
        assert_eq!(
            lost.error_code(),
            Some("already_decided"),
            "{:?}",
            lost.body
        );
        assert_eq!(events(&app, &id, "decided").await.len(), 1);
        let status = app.get(&id, 0.0).await.body["status"].clone();
        let want = if bob.status == 200 {
            "approved"
        } else {
            "rejected"
        };
        assert_eq!(status, want);
    }
}

#[tokio::test]
async fn whoever_handed_over_the_task_cannot_approve_its_requests_but_can_deny_them() {
    let config = crate::inbox::with_inbox(
        "",
        &format!(
            "{TEAM}\n[[approval_rules]]\nname = \"in tasks\"\nin_task = true\nask = \"oncall\"\n\
             self_approval = false\n"
        ),
    );
    // The first rule ("mail") is about send_email; this one is about the rest, in tasks.
    let app = spawn_app(&config).await;
    let task = crate::inbox::add_ok(&app, "tidy the changelog").await;
    let task_id = task["id"].as_str().unwrap().to_string();
    let claimed = crate::inbox::claim(&app, "claude-code", 5.0).await;
    assert_eq!(claimed["id"], task_id.as_str());
    let asked = app
        .submit(json!({"agent": "claude-code", "tool": "Write", "args": {"file_path": "CHANGELOG.md"}, "task_id": task_id}))
        .await;
    assert_eq!(asked.body["status"], "pending", "{:?}", asked.body);
    let id = asked.body["id"].as_str().unwrap().to_string();
    // alice handed it over (crate::inbox::add asks as alice).
    let own = vote(&app, "alice", &id, "approve", None).await;
    assert_eq!(own.status, 403, "{:?}", own.body);
    assert_eq!(own.error_code(), Some("own_task"));
    assert!(own.error_message().contains("a deny from you counts"));
    // On the command line it exits 1 with the same words.
    let socket = gatebot::config::Config::load(&app.config_path)
        .unwrap()
        .queue
        .control_socket;
    let out = crate::helpers::gatebot_at(&socket, &["decide", &id, "approve"])
        .env("SUDO_USER", "alice")
        .output()
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("you cannot approve it"),
        "{out:?}"
    );
    assert_eq!(events(&app, &id, "vote_refused").await.len(), 2);
    // Her deny counts.
    let deny = vote(&app, "alice", &id, "deny", Some("not that file")).await;
    assert_eq!(deny.status, 200, "{:?}", deny.body);
    app.wait_for_status(&id, "rejected").await;
    // A request no rule matches is decided by the first answer, as before.
    let (free, _) = app
        .submit_pending(
            json!({"agent": "claude-code", "tool": "Write", "args": {"file_path": "x"}}),
        )
        .await;
    assert_eq!(vote(&app, "dave", &free, "approve", None).await.status, 200);
    app.wait_for_status(&free, "approved").await;
}

/// `gatebot decide --agent A approve|deny` as `person` (SUDO_USER), stdin not a terminal.
async fn batch(app: &TestApp, person: &str, args: &[&str]) -> std::process::Output {
    let socket = gatebot::config::Config::load(&app.config_path)
        .unwrap()
        .queue
        .control_socket;
    crate::helpers::gatebot_at(&socket, args)
        .env("SUDO_USER", person)
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .unwrap()
}

fn out(o: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[tokio::test]
async fn a_batch_is_one_vote_per_request_under_its_rule_and_never_approves_a_critical_one() {
    let app = spawn_app(TEAM).await;
    let mut mails = Vec::new();
    for n in 0..3 {
        mails.push(app.submit_pending(mail(200 + n)).await.0);
    }
    let (critical, critical_short) = app
        .submit_pending(json!({"agent": "mailer", "tool": "Bash", "args": {"command": "rm -rf /"}}))
        .await;
    let (other, _) = app
        .submit_pending(json!({"agent": "intern", "tool": "send_email", "args": {"n": 1}}))
        .await;
    // Without a terminal and without --yes: nothing is decided.
    let asked = batch(&app, "alice", &["decide", "--agent", "mailer", "approve"]).await;
    assert_eq!(asked.status.code(), Some(2), "{}", out(&asked));
    assert!(out(&asked).contains("add --yes"), "{}", out(&asked));
    assert_eq!(app.get(&mails[0], 0.0).await.body["status"], "pending");
    // Bad words: refused before anything is read.
    let bad = batch(
        &app,
        "alice",
        &["decide", "--agent", "mailer", "approve-always", "--yes"],
    )
    .await;
    assert_eq!(bad.status.code(), Some(2), "{}", out(&bad));
    let bad = batch(
        &app,
        "alice",
        &[
            "decide",
            "--agent",
            "mailer",
            "approve",
            "--risk-at-most",
            "huge",
            "--yes",
        ],
    )
    .await;
    assert!(
        out(&bad).contains("low, medium, high or critical"),
        "{}",
        out(&bad)
    );
    // alice's batch: one vote each on the three mails (their rule needs two people);
    // the critical request is left out, the intern's is not hers to batch.
    let first = batch(
        &app,
        "alice",
        &["decide", "--agent", "mailer", "approve", "--yes"],
    )
    .await;
    let said = out(&first);
    assert_eq!(first.status.code(), Some(0), "{said}");
    assert!(said.contains("Approve 3 requests of mailer:"), "{said}");
    assert!(
        said.contains(&format!(
            "Left out: 1 request of critical risk ({critical_short})"
        )),
        "{said}"
    );
    assert!(said.contains("3 requests a vote counted"), "{said}");
    for id in &mails {
        assert_eq!(app.get(id, 0.0).await.body["status"], "pending");
    }
    // bob's batch settles them; the critical one and the intern's still wait.
    let second = batch(
        &app,
        "bob",
        &[
            "decide",
            "--agent",
            "mailer",
            "approve",
            "--yes",
            "--tool",
            "send_email",
        ],
    )
    .await;
    assert!(
        out(&second).contains("3 requests approved"),
        "{}",
        out(&second)
    );
    for id in &mails {
        assert_eq!(app.get(id, 0.0).await.body["status"], "approved");
    }
    assert_eq!(app.get(&critical, 0.0).await.body["status"], "pending");
    assert_eq!(app.get(&other, 0.0).await.body["status"], "pending");
    // A batch deny includes the critical request, with one reason.
    let deny = batch(
        &app,
        "alice",
        &[
            "decide",
            "--agent",
            "mailer",
            "deny",
            "--reason",
            "not today",
            "--yes",
        ],
    )
    .await;
    assert!(out(&deny).contains("1 request denied"), "{}", out(&deny));
    let v = app.get(&critical, 0.0).await.body;
    assert_eq!(
        (v["status"].as_str(), v["reason"].as_str()),
        (Some("rejected"), Some("not today"))
    );
}

/// A routed request's prompt goes to the chats of the groups its rule asks (a group's
/// own chat, else each person's private chat with the bot), not to the usual chats; a
/// vote there edits every copy with the count.
#[tokio::test]
async fn prompts_go_where_the_rule_asks_and_a_vote_there_edits_them() {
    use crate::fake_telegram::{FakeTelegram, User};
    const TOKEN: &str = "424242:AAE-fake-secret-token-for-teams";
    const ALICE: User = (42, "Alice");
    let fake = FakeTelegram::start(TOKEN).await;
    let config = format!(
        "[telegram]\ntoken = \"{TOKEN}\"\napi_url = \"{}\"\nchats = [7001]\napprovers = [42, 43]\n\
         [people.alice]\ntelegram = 42\n[people.bob]\ntelegram = 43\n\
         [groups.oncall]\npeople = [\"alice\", \"bob\"]\ntelegram_chat = -5001\n\
         [groups.solo]\npeople = [\"alice\"]\n\
         [[approval_rules]]\nname = \"mail\"\ntool = \"send_email\"\nask = \"oncall\"\napprovals = 2\n\
         [[approval_rules]]\nname = \"contacts\"\ntool = \"create_contact\"\nask = \"solo\"\n",
        fake.url
    );
    let app = spawn_app(&config).await;
    let (mail_id, mail) = app.submit_pending(mail(1)).await;
    let (_, contact) = app
        .submit_pending(
            json!({"agent": "intern", "tool": "create_contact", "args": {"name": "Bo"}}),
        )
        .await;
    let (_, free) = app
        .submit_pending(json!({"agent": "intern", "tool": "delete_contact", "args": {"id": 7}}))
        .await;
    let posted = |short: String, chat: i64| {
        let fake = &fake;
        async move {
            crate::helpers::eventually(&format!("{short} in {chat}"), async || {
                fake.prompts_of(Some(chat), &short).pop()
            })
            .await
        }
    };
    let (_, message, params) = posted(mail.clone(), -5001).await;
    posted(contact.clone(), 42).await;
    posted(free.clone(), 7001).await;
    // Nowhere else.
    assert!(fake.prompts_of(Some(7001), &mail).is_empty());
    assert!(fake.prompts_of(Some(7001), &contact).is_empty());
    assert!(fake.prompts_of(Some(-5001), &free).is_empty());
    // alice approves in the group: a vote; the card there says so.
    let data = params["reply_markup"]["inline_keyboard"][0][0]["callback_data"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(data, format!("gb1:a:{mail_id}"));
    fake.press(ALICE, -5001, message, &data);
    crate::helpers::eventually("the card edited with alice's vote", async || {
        fake.ok_calls("editMessageText").into_iter().find(|p| {
            p["chat_id"] == json!(-5001)
                && p["text"]
                    .as_str()
                    .unwrap_or_default()
                    .contains("1 of 2 approvals: alice ✓. Waiting for bob.")
        })
    })
    .await;
    assert_eq!(app.get(&mail_id, 0.0).await.body["status"], "pending");
}

/// A rule's deadline denies an unanswered request ("no answer"), never approves it by
/// silence and never leaves it merely expired; the waiting agent reads why.
#[tokio::test]
async fn the_deadline_denies_what_no_one_settled_in_time() {
    let app = spawn_app(&format!(
        "{TEAM}\n[[approval_rules]]\nname = \"quick\"\ntool = \"create_contact\"\nask = \"oncall\"\n\
         approvals = 2\ndeadline = \"1s\"\n"
    ))
    .await;
    let (id, _) = app
        .submit_pending(
            json!({"agent": "intern", "tool": "create_contact", "args": {"name": "Bo"}}),
        )
        .await;
    assert_eq!(vote(&app, "alice", &id, "approve", None).await.status, 200);
    // The agent waits; one vote of two is not an approval.
    let waited = app.get(&id, 10.0).await.body;
    assert_eq!(waited["status"], "rejected", "{waited}");
    assert_eq!(waited["reason"], "no one answered within 1 s", "{waited}");
    assert_eq!(waited["decided_by"], "gatebot");
    let decided = events(&app, &id, "decided").await;
    assert_eq!(decided.len(), 1, "{decided:?}");
    assert_eq!(decided[0]["detail"]["deadline"], true);
    assert!(events(&app, &id, "expired").await.is_empty());
}

#[test]
fn a_deadline_past_the_longest_wait_is_refused() {
    let e = gatebot::config::Config::check_text(
        &format!(
            "{TEAM}\n[[approval_rules]]\nname = \"slow\"\nask = \"oncall\"\ndeadline = \"30d\"\n"
        ),
        std::path::Path::new("/etc/gatebot/bot.toml"),
    )
    .unwrap_err();
    let said: Vec<String> = e.iter().map(ToString::to_string).collect();
    assert!(
        said.iter()
            .any(|s| s.contains("deadline") && s.contains("max_ttl")),
        "{said:?}"
    );
}

/// The vote that would approve a routed request into overdraft is refused like any
/// approval: the request stays pending and the vote is not kept.
#[tokio::test]
async fn a_vote_into_overdraft_is_refused_and_not_kept() {
    let app = spawn_app(&format!(
        "{TEAM}\n[budgets]\ncurrency = \"USD\"\ndaily = 5\n\
         [[approval_rules]]\nname = \"contacts\"\ntool = \"create_contact\"\nask = \"oncall\"\n"
    ))
    .await;
    let ask =
        |n: u32| json!({"agent": "intern", "tool": "create_contact", "args": {"n": n}, "cost": 3});
    let (first, _) = app.submit_pending(ask(1)).await;
    let (second, _) = app.submit_pending(ask(2)).await;
    assert_eq!(
        vote(&app, "alice", &first, "approve", None).await.status,
        200
    );
    app.wait_for_status(&first, "approved").await;
    let over = vote(&app, "alice", &second, "approve", None).await;
    assert_eq!(over.error_code(), Some("over_budget"), "{:?}", over.body);
    assert_eq!(app.get(&second, 0.0).await.body["status"], "pending");
    assert!(events(&app, &second, "vote").await.is_empty());
    // Her deny is still hers to cast: the refused approval was not kept as a vote.
    assert_eq!(vote(&app, "alice", &second, "deny", None).await.status, 200);
    app.wait_for_status(&second, "rejected").await;
}

/// An escalation level, once due, asks its groups too: their chats get the prompt, their
/// people may vote, and the card says who is asked now. Audited once.
#[tokio::test]
async fn an_escalation_level_asks_more_people_when_it_is_due() {
    use crate::fake_telegram::FakeTelegram;
    const TOKEN: &str = "424242:AAE-fake-secret-token-for-escalation";
    let fake = FakeTelegram::start(TOKEN).await;
    let config = format!(
        "[telegram]\ntoken = \"{TOKEN}\"\napi_url = \"{}\"\nchats = [7001]\napprovers = [42, 43]\n\
         [people.alice]\ntelegram = 42\nunix = \"alice\"\n[people.bob]\ntelegram = 43\nunix = \"bob\"\n\
         [groups.oncall]\npeople = [\"alice\"]\n[groups.leads]\npeople = [\"bob\"]\n\
         [[approval_rules]]\nname = \"mail\"\ntool = \"send_email\"\nask = \"oncall\"\n\
         [[approval_rules.escalation]]\nafter = \"1s\"\nask = \"leads\"\n",
        fake.url
    );
    let app = spawn_app(&config).await;
    let (id, short) = app.submit_pending(mail(1)).await;
    crate::helpers::eventually("the prompt in alice's chat", async || {
        fake.prompts_of(Some(42), &short).pop()
    })
    .await;
    // bob is not asked yet.
    let early = vote(&app, "bob", &id, "approve", None).await;
    if early.status == 403 {
        assert_eq!(early.error_code(), Some("not_asked"));
        // Once the level is due, bob's private chat gets the prompt, and it says so.
        let (_, _, params) = crate::helpers::eventually("the prompt in bob's chat", async || {
            fake.prompts_of(Some(43), &short).pop()
        })
        .await;
        let text = params["text"].as_str().unwrap();
        assert!(text.contains("Waiting for alice or bob."), "{text}");
        assert_eq!(vote(&app, "bob", &id, "approve", None).await.status, 200);
    } else {
        // The level came due before bob's first try (a slow machine): his vote counted.
        assert_eq!(early.status, 200, "{:?}", early.body);
    }
    app.wait_for_status(&id, "approved").await;
    assert_eq!(events(&app, &id, "escalated").await.len(), 1);
    assert!(fake.prompts_of(Some(7001), &short).is_empty());
}

#[test]
fn an_escalation_level_must_come_before_the_deadline_and_ask_a_group() {
    for (level, want) in [
        (
            "after = \"2h\"\nask = \"leads\"\n",
            "sooner than the rule's deadline",
        ),
        (
            "after = \"10m\"\nask = \"nobody\"\n",
            "there is no group `nobody`",
        ),
    ] {
        let e = gatebot::config::Config::check_text(
            &format!(
                "{TEAM}\n[[approval_rules]]\nname = \"x\"\nask = \"oncall\"\ndeadline = \"1h\"\n\
                 [[approval_rules.escalation]]\n{level}"
            ),
            std::path::Path::new("/etc/gatebot/bot.toml"),
        )
        .unwrap_err();
        let said: Vec<String> = e.iter().map(ToString::to_string).collect();
        assert!(said.iter().any(|s| s.contains(want)), "{said:?}");
    }
}

/// An edit is decided by one person: under a rule that needs more, it is refused (approve
/// as asked, or deny); under a one-approval rule, only someone the rule asks may make it.
#[tokio::test]
async fn an_edited_approval_needs_a_rule_one_asked_person_can_settle() {
    let app = spawn_app(&format!(
        "{TEAM}\n[[approval_rules]]\nname = \"contacts\"\ntool = \"create_contact\"\nask = \"oncall\"\n"
    ))
    .await;
    let edit = |id: String, who: &'static str| {
        let engine = app.engine.clone();
        async move {
            engine
                .approve_edited(
                    &id,
                    json!({"to": "bob@example.com"}),
                    who.into(),
                    gatebot::approval::Via::Cli,
                    false,
                )
                .await
        }
    };
    let (two, _) = app.submit_pending(mail(9)).await;
    let refused = edit(two.clone(), "alice").await.unwrap_err().to_string();
    assert!(refused.contains("needs 2 approvals"), "{refused}");
    assert_eq!(app.get(&two, 0.0).await.body["status"], "pending");
    let (one, _) = app
        .submit_pending(
            json!({"agent": "intern", "tool": "create_contact", "args": {"name": "Bo"}}),
        )
        .await;
    let outsider = edit(one.clone(), "carol").await.unwrap_err().to_string();
    assert!(outsider.contains("not asked"), "{outsider}");
    let done = edit(one.clone(), "bob").await.unwrap();
    assert_eq!(
        done.status.as_str(),
        "rejected",
        "gatebot ask cannot take an edit: {done:?}"
    );
    assert_eq!(done.decided_by.as_deref(), Some("bob"));
}

/// The dashboard's batch, under approval rules: each is one vote, said as such; a request
/// the person is not asked about is left out with why, and the others go on.
#[tokio::test]
async fn a_dashboard_batch_under_rules_counts_votes_and_skips_what_is_not_yours() {
    let app = spawn_app(&format!(
        "[dashboard]\nlisten = \"{}\"\n{TEAM}\n[groups.solo]\npeople = [\"bob\"]\n\
         [[approval_rules]]\nname = \"bobs\"\ntool = \"create_contact\"\nask = \"solo\"\n",
        crate::helpers::free_port()
    ))
    .await;
    let b = crate::dashboard::signed_in(&app).await;
    let (m1, _) = app.submit_pending(mail(31)).await;
    let (m2, _) = app.submit_pending(mail(32)).await;
    let (bobs, _) = app
        .submit_pending(
            json!({"agent": "intern", "tool": "create_contact", "args": {"name": "Bo"}}),
        )
        .await;
    let csrf = b.get("/").await.csrf();
    let form = serde_urlencoded::to_string([
        ("csrf", csrf.as_str()),
        ("verb", "approve"),
        ("confirmed", "1"),
        ("id", m1.as_str()),
        ("id", m2.as_str()),
        ("id", bobs.as_str()),
    ])
    .unwrap();
    let page = b.send("POST", "/batch", &form, &[]).await;
    assert_eq!(page.status, 200, "{page:?}");
    assert!(
        page.body.contains("Your vote counted on 2 requests"),
        "{}",
        page.body
    );
    assert!(
        page.body.contains("You are not asked about request"),
        "{}",
        page.body
    );
    for id in [&m1, &m2, &bobs] {
        assert_eq!(app.get(id, 0.0).await.body["status"], "pending");
    }
}

/// A routed request's timers, end to end on the fake Telegram (which refuses malformed
/// mentions and enforces its rate limits): the people first asked are reminded once,
/// with mentions, as a reply to the card in their group; gatebot restarts between the
/// reminder and the escalation and repeats nothing; two escalation levels each prompt
/// their people (the first repeating its reminder); the deadline denies, edits every
/// copy, and tells the agent no one answered.
#[tokio::test]
async fn reminders_and_two_levels_then_the_deadline_across_a_restart() {
    use crate::fake_telegram::FakeTelegram;
    const TOKEN: &str = "424242:AAE-fake-secret-token-for-reminders";
    const GROUP: i64 = -1_007_001;
    let fake = FakeTelegram::start(TOKEN).await;
    fake.enforce_limits();
    let config = format!(
        "[telegram]\ntoken = \"{TOKEN}\"\napi_url = \"{}\"\nchats = [7001]\n\
         approvers = [42, 43, 44, 45]\n\
         [people.alice]\ntelegram = 42\n[people.bob]\ntelegram = 43\n\
         [people.carol]\ntelegram = 44\n[people.dave]\ntelegram = 45\nunix = \"dave\"\n\
         [groups.oncall]\npeople = [\"alice\", \"bob\"]\ntelegram_chat = {GROUP}\n\
         [groups.leads]\npeople = [\"carol\"]\n[groups.heads]\npeople = [\"dave\"]\n\
         [[approval_rules]]\nname = \"mail\"\ntool = \"send_email\"\nask = \"oncall\"\n\
         approvals = 2\nremind_after = \"2s\"\ndeadline = \"9s\"\n\
         [[approval_rules.escalation]]\nafter = \"4s\"\nask = \"leads\"\nrepeat = \"2s\"\n\
         [[approval_rules.escalation]]\nafter = \"6s\"\nask = \"heads\"\n",
        fake.url
    );
    let app = spawn_app(&config).await;
    let (id, short) = app.submit_pending(mail(1)).await;
    let (_, card, _) = crate::helpers::eventually("the prompt in the group", async || {
        fake.prompts_of(Some(GROUP), &short).pop()
    })
    .await;
    // The reminder: a reply to the card, mentioning both (neither has voted).
    let reminders = crate::helpers::eventually("the reminder in the group", async || {
        Some(fake.mentions(GROUP)).filter(|m| !m.is_empty())
    })
    .await;
    assert_eq!(reminders, [(reminders[0].0, Some(card), vec![42, 43])]);
    // A restart before the escalation.
    let dir = app.stop().await;
    let app = crate::helpers::spawn_app_in(dir, &config).await;
    // Both levels prompt their people in their private chats.
    for chat in [44, 45] {
        crate::helpers::eventually("a level's prompt", async || {
            fake.prompts_of(Some(chat), &short).pop()
        })
        .await;
    }
    // The deadline denies; the agent reads why.
    let done = app.get(&id, 15.0).await.body;
    assert_eq!(done["status"], "rejected", "{done}");
    assert_eq!(done["reason"], "no one answered within 9 s", "{done}");
    // Nothing was posted twice: one reminder in the group, one prompt per chat, and
    // carol's level reminded her (its repeat) by mention in her chat.
    assert_eq!(fake.mentions(GROUP).len(), 1, "{:?}", fake.mentions(GROUP));
    for chat in [GROUP, 44, 45] {
        assert_eq!(fake.prompts_of(Some(chat), &short).len(), 1, "chat {chat}");
    }
    let carol = fake.mentions(44);
    assert!(
        (1..=2).contains(&carol.len()) && carol.iter().all(|(_, _, u)| u == &[44]),
        "{carol:?}"
    );
    assert!(fake.mentions(45).is_empty(), "dave's level does not repeat");
    // Every copy is edited to the outcome.
    crate::helpers::eventually("every copy edited", async || {
        let edited: Vec<i64> = fake
            .ok_calls("editMessageText")
            .iter()
            .filter(|p| {
                p["text"]
                    .as_str()
                    .unwrap_or_default()
                    .contains("no one answered")
            })
            .filter_map(|p| p["chat_id"].as_i64())
            .collect();
        [GROUP, 44, 45]
            .iter()
            .all(|c| edited.contains(c))
            .then_some(())
    })
    .await;
    assert_eq!(fake.rate_limited(), 0, "reminders provoked a 429");
    let reminded = events(&app, &id, "reminded").await;
    assert!((2..=3).contains(&reminded.len()), "{reminded:?}");
    assert_eq!(events(&app, &id, "escalated").await.len(), 2);
}

/// Three people on two platforms plus the CLI and the dashboard: alice on Telegram and
/// on Slack is one vote; bob's on the dashboard and carol's on the CLI make three.
#[tokio::test]
async fn three_people_on_two_platforms_the_cli_and_the_dashboard_each_vote_once() {
    use crate::fake_slack::{click_in, FakeSlack};
    use crate::fake_telegram::{FakeTelegram, User};
    const TOKEN: &str = "424242:AAE-fake-secret-token-for-two-platforms";
    const ALICE: User = (42, "Alice");
    let telegram = FakeTelegram::start(TOKEN).await;
    let slack = FakeSlack::start().await;
    let config = format!(
        "[telegram]\ntoken = \"{TOKEN}\"\napi_url = \"{}\"\nchats = [7001]\napprovers = [42]\n\
         {}\
         [dashboard]\nlisten = \"{}\"\n\
         [people.alice]\ntelegram = 42\nslack = \"U1\"\n[people.bob]\nunix = \"bob\"\n\
         [people.carol]\nunix = \"carol\"\n\
         [groups.team]\npeople = [\"alice\", \"bob\", \"carol\"]\ntelegram_chat = -5001\n\
         slack_channel = \"C1\"\n\
         [[approval_rules]]\nname = \"mail\"\ntool = \"send_email\"\nask = \"team\"\napprovals = 3\n",
        telegram.url,
        slack.config(),
        crate::helpers::free_port()
    );
    let app = spawn_app(&config).await;
    let (id, short) = app.submit_pending(mail(7)).await;
    let (_, message, params) = crate::helpers::eventually("the Telegram prompt", async || {
        telegram.prompts_of(Some(-5001), &short).pop()
    })
    .await;
    let post = crate::helpers::eventually("the Slack prompt", async || {
        slack.calls("chat.postMessage").into_iter().find(|c| {
            c.ts.is_some() && c.params["channel"] == "C1" && c.params.to_string().contains(&id)
        })
    })
    .await;
    // alice on Telegram: a vote.
    let data = params["reply_markup"]["inline_keyboard"][0][0]["callback_data"]
        .as_str()
        .unwrap()
        .to_string();
    telegram.press(ALICE, -5001, message, &data);
    crate::helpers::eventually("alice's vote", async || {
        (events(&app, &id, "vote").await.len() == 1).then_some(())
    })
    .await;
    // alice again on Slack: the same person, so it does not count.
    slack
        .send(
            "interactive",
            click_in("U1", "C1", post.ts.as_ref().unwrap(), &data),
        )
        .await;
    let told = crate::helpers::eventually("alice told she voted", async || {
        slack
            .answers("U1")
            .iter()
            .map(|a| a.text())
            .find(|t| t.contains("already"))
    })
    .await;
    assert!(told.contains("your first vote stands"), "{told}");
    assert_eq!(events(&app, &id, "vote").await.len(), 1);
    // bob on the dashboard, carol on the CLI.
    let mut b = crate::dashboard::Browser::new(&app);
    b.sign_in(&crate::dashboard::link(&app, "bob").await).await;
    let csrf = b.get("/").await.csrf();
    let page = b
        .post(
            "/decide",
            &[("csrf", &csrf), ("button", &format!("gb1:a:{id}"))],
        )
        .await;
    assert_eq!(page.status, 303, "{page:?}");
    assert_eq!(app.get(&id, 0.0).await.body["status"], "pending");
    assert_eq!(vote(&app, "carol", &id, "approve", None).await.status, 200);
    let done = app.wait_for_status(&id, "approved").await;
    assert_eq!(done["decided_by"], "carol");
    let votes = events(&app, &id, "vote").await;
    let by: Vec<(String, String)> = votes
        .iter()
        .map(|v| {
            (
                v["actor"].as_str().unwrap_or_default().to_string(),
                v["channel"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    assert_eq!(
        by,
        [
            ("alice".to_string(), "telegram".to_string()),
            ("bob".to_string(), "dashboard".to_string()),
            ("carol".to_string(), "cli".to_string()),
        ],
        "{votes:?}"
    );
}

/// `bot.toml`'s team example, uncommented: the lines from its first `# [groups.` to
/// the blank line after the rules.
fn example_teams() -> String {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/bot.toml")).unwrap();
    let start = text.find("# [groups.").expect("bot.toml's team example");
    let block = &text[start..text[start..].find("\n\n").map_or(text.len(), |e| start + e)];
    block
        .lines()
        .map(|l| l.strip_prefix("# ").unwrap_or(l.trim_start_matches('#')))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every rule of `bot.toml`'s example, uncommented, is valid, warns of nothing, decides
/// some request (no earlier rule takes all of its own), and a daemon running it routes
/// requests by it.
#[tokio::test]
async fn every_rule_in_bot_toml_s_example_is_exercised() {
    use gatebot::config::teams::RuleFacts;
    use gatebot::inbox::Intent;
    use gatebot::policy::{RiskScore, Tier};
    let example = example_teams();
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/bot.toml")).unwrap();
    // The example appended to the file it is commented out in.
    let whole = format!("{text}\n# the example, uncommented\n{example}\n");
    let config =
        gatebot::config::Config::check_text(&whole, std::path::Path::new("/etc/gatebot/bot.toml"))
            .unwrap_or_else(|e| panic!("{e:?}\n{example}"));
    let teams = &config.teams;
    assert!(teams.rules.len() >= 2, "{example}");
    for w in &config.warnings {
        assert!(
            !w.contains("approval rule") && !w.contains("[groups."),
            "the example warns: {w}"
        );
    }
    let risks = [
        RiskScore::Low,
        RiskScore::Medium,
        RiskScore::High,
        RiskScore::Critical,
    ];
    let tiers = [
        Tier::DraftOnly,
        Tier::Supervised,
        Tier::SemiAutonomous,
        Tier::Autonomous,
    ];
    for (n, rule) in teams.rules.iter().enumerate() {
        let agent = rule.agents.first().map_or("some-agent", String::as_str);
        let tool = rule.tools.first().map_or("some_tool", String::as_str);
        let intents: Vec<Option<Intent>> = std::iter::once(None)
            .chain(Intent::ALL.into_iter().map(Some))
            .collect();
        let decides = risks.iter().any(|&risk| {
            tiers.iter().any(|&tier| {
                intents.iter().any(|&intent| {
                    let facts = RuleFacts {
                        agent,
                        tool,
                        risk,
                        tier,
                        intent,
                    };
                    teams
                        .rule_for(&facts)
                        .is_some_and(|r| std::ptr::eq(r, &teams.rules[n]))
                })
            })
        });
        assert!(decides, "rule \"{}\" decides no request", rule.name);
    }
    // A daemon on the example: a critical request is the "critical" rule's, which asks
    // the owner (the example's person) only, with a second factor.
    let app = spawn_app(&format!(
        "[people.owner]\nunix = \"owner\"\n[people.mallory]\nunix = \"mallory\"\n\
         {}\n",
        example
            .lines()
            .filter(|l| !l.starts_with("telegram_chat") && !l.starts_with("slack_channel"))
            .collect::<Vec<_>>()
            .join("\n")
    ))
    .await;
    let (id, _) = app
        .submit_pending(json!({"agent": "mailer", "tool": "Bash", "args": {"command": "rm -rf /"}}))
        .await;
    let stranger = vote(&app, "mallory", &id, "approve", None).await;
    assert_eq!(
        stranger.error_code(),
        Some("not_asked"),
        "{:?}",
        stranger.body
    );
    assert!(
        stranger
            .error_message()
            .contains("approval rule \"critical\" asks owner"),
        "{}",
        stranger.error_message()
    );
    let owner = vote(&app, "owner", &id, "approve", None).await;
    assert_eq!(owner.error_code(), Some("no_factor"), "{:?}", owner.body);
    assert_eq!(
        vote(&app, "owner", &id, "deny", Some("no")).await.status,
        200
    );
    app.wait_for_status(&id, "rejected").await;
}

/// On Slack, a reminder goes in the card's thread and mentions the people who have not
/// answered as Slack reads mentions (`<@U…>`).
#[tokio::test]
async fn a_reminder_on_slack_mentions_who_has_not_answered_in_the_cards_thread() {
    use crate::fake_slack::FakeSlack;
    let slack = FakeSlack::start().await;
    let config = format!(
        "{}[people.alice]\nslack = \"U1\"\nunix = \"alice\"\n[people.bob]\nslack = \"U2\"\n\
         [groups.oncall]\npeople = [\"alice\", \"bob\"]\nslack_channel = \"C1\"\n\
         [[approval_rules]]\nname = \"mail\"\ntool = \"send_email\"\nask = \"oncall\"\n\
         approvals = 2\nremind_after = \"2s\"\n",
        slack.config()
    );
    let app = spawn_app(&config).await;
    let (id, _) = app.submit_pending(mail(9)).await;
    // alice votes at once, well before the reminder: only bob is called on.
    assert_eq!(vote(&app, "alice", &id, "approve", None).await.status, 200);
    let card = crate::helpers::eventually("the card", async || {
        slack
            .calls("chat.postMessage")
            .into_iter()
            .find(|c| c.ts.is_some() && c.params.to_string().contains(&id))
    })
    .await;
    let reminders = crate::helpers::eventually("the reminder", async || {
        Some(slack.mentions("C1")).filter(|m| !m.is_empty())
    })
    .await;
    assert_eq!(
        reminders,
        [(card.ts.clone(), vec!["U2".to_string()])],
        "{reminders:?}"
    );
    assert_eq!(events(&app, &id, "reminded").await.len(), 1);
}
