//! Risk scoring: tool class + content factors + shell commands + environment.
//!
//! [`assess`] is pure: the same arguments always give the same [`Risk`]. The content
//! patterns are compiled once, by [`ContentPatterns::new`], when the config loads.
//!
//! # Factors
//! Pushed into [`Risk::factors`] in this order, each at most once:
//!
//! | factor | effect | fires when |
//! | --- | --- | --- |
//! | `read_only_command` | none | a shell-like tool's whole command only reads, so the call is scored as read-only (`policy::shell`) |
//! | `pricing_content` | +1 | the `pricing` pattern matches the text |
//! | `competitor_mention` | +1 | the `competitor` pattern matches the text |
//! | `negative_context` | +1 | the `negative` pattern matches the text |
//! | `external_url` | +1 | the `external_url` pattern matches and not every URL is internal (below) |
//! | `bulk_operation` | +1 | more than 5 recipients (below) |
//! | `first_time_usage` | +1 | no earlier call of this tool by the agent was allowed or approved (see [`RiskInput::first_use`]) |
//! | `educational_content` | −1 | the `educational` pattern matches the text |
//! | `internal_tool` | −1 | the tool is in `[policy] internal_tools` |
//! | `shell_critical` | critical | the `shell_critical` pattern matches a command |
//! | `shell_high` | at least high | the `shell_high` pattern matches a command (and `shell_critical` does not) |
//! | `environment_production` | one level up | `environment` is `production` |
//! | `environment_sandbox` | one level down | `environment` is `sandbox` (never lowers `shell_critical`) |
//!
//! # What is scanned
//! - **The text** (content factors): every JSON string *value* in the arguments, at any
//!   depth, joined with a newline. Object keys, numbers, booleans and nulls are not text.
//! - **Commands** (shell factors): only string values (at any depth) under an object key
//!   named `command`, `cmd`, `script`, `sql` or `query` (ASCII case-insensitive), found at
//!   any depth, plus the arguments themselves when they are a single JSON string. So
//!   `{"command": "rm -rf /"}` and `{"steps": [{"sql": "DROP TABLE users"}]}` are commands,
//!   while an e-mail body saying "please delete from your list" is not.
//! - **Recipients** (`bulk_operation`): the top-level keys `recipients`, `contacts`,
//!   `emailList`, `email_list`, `to`, `cc` and `bcc` (ASCII case-insensitive) are summed:
//!   an array counts its non-null elements (an element that is itself a string counts its
//!   non-empty `,`/`;`-separated parts, so `["a@x, b@x"]` is two), a string counts its
//!   non-empty `,`/`;`-separated parts. A top-level numeric `count` (also case-insensitive)
//!   is used instead when it is larger. More than 5 is bulk.
//! - **Internal domains** (`external_url`): when `internal_domains` is set, every
//!   `http://`/`https://` URL's host is checked; a host equal to an internal domain or a
//!   subdomain of one (`docs.example.com` for `example.com`) is internal. The factor is
//!   dropped only when URLs were found and *every* one is internal. User info is not the host
//!   (`https://example.com@evil.test` is external).
//!
//! # Default patterns
//! All case-insensitive. Each can be replaced in `[policy.patterns]`; a replacement is used
//! exactly as written, so add `(?i)` to keep it case-insensitive. A pattern that can never
//! match, such as `\b\B`, turns a factor off.
//! - `pricing`: the words price(s), pricing, cost(s), fee(s), discount(s), offer(s),
//!   deal(s), USD, EUR, GBP, or a currency sign (`$ € £ ¥ ₹`) next to a number (`$49`,
//!   `€ 10`, `10€`).
//! - `competitor`: competitor(s), versus, `vs.`/`vs `, alternative(s), "compared to",
//!   "better than".
//! - `negative`: complaint/complain(ed/ing/s), disappointed/disappointing/disappointment,
//!   angry, frustrated/frustrating/frustration, terrible, worst, refund(s/ed).
//! - `external_url`: `http://` or `https://` followed by a non-space.
//! - `educational`: "how to", tutorial(s), guide(s), learn(s/ing), explain(s/ed/ing), tips,
//!   FAQ(s), informational.
//! - `shell_critical` (any whitespace between words): `rm` with recursive and force flags
//!   (`rm -rf`, `rm -fr`, `rm -Rf`, `rm -r -f`, `rm --recursive --force`, other flags in
//!   between), `drop table`, `drop database`, `drop schema`, `truncate table`,
//!   `delete from`, `mkfs` (and `mkfs.ext4` …), `wipefs`, `dd` with `if=`/`of=`, a
//!   redirect onto a raw disk (`> /dev/sda`, `/dev/nvme0n1` …), `terraform destroy` and
//!   the shell fork bomb `:(){ :|:& };:`.
//! - `shell_high` (any whitespace): `git push`, `npm publish`, `yarn publish`,
//!   `pnpm publish`, `cargo publish`, `docker push`, `kubectl apply`, `kubectl delete`,
//!   `terraform apply`.
//!
//! # Score
//! ```text
//! plus  = number of the six raising factors
//! minus = number of educational_content and internal_tool
//! net   = plus - minus, but not below 0
//! base  = destructive → high; write → high if net > 0, else medium;
//!         read-only → medium if net >= 2, else low
//! shell_critical → critical; shell_high → at least high
//! environment "production" → one level up; "sandbox" → one level down, except that a
//!         shell_critical command stays critical (the agent's word is not enough to run
//!         `rm -rf` unasked). The environment is trimmed and compared case-insensitively;
//!         other values change nothing and add no factor.
//! ```

use std::fmt;

use regex::{Regex, RegexSet};
use serde_json::Value;

use super::{Risk, RiskScore, ToolClass};

/// `[policy.patterns]` in bot.toml: each Some(regex) replaces that default pattern.
#[derive(Debug, Clone, Default, PartialEq, serde::Deserialize, serde::Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct PatternOverrides {
    pub pricing: Option<String>,
    pub competitor: Option<String>,
    pub negative: Option<String>,
    pub external_url: Option<String>,
    pub educational: Option<String>,
    pub shell_critical: Option<String>,
    pub shell_high: Option<String>,
    /// Hosts (and their subdomains) whose URLs are not "external".
    pub internal_domains: Vec<String>,
}

/// A pattern that failed to compile: `key` is the [`PatternOverrides`] field name
/// (e.g. `"pricing"`, or `"internal_domains"` for an entry that is not a host name).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PatternError {
    pub key: &'static str,
    pub message: String,
}

impl fmt::Display for PatternError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid `{}` pattern: {}", self.key, self.message)
    }
}

impl std::error::Error for PatternError {}

const DEFAULT_PRICING: &str = r"(?i)\b(?:prices?|pricing|costs?|fees?|discounts?|offers?|deals?|usd|eur|gbp)\b|[$€£¥₹][ \t\x{A0}]?\d|\d[ \t\x{A0}]?[$€£¥₹]";
const DEFAULT_COMPETITOR: &str =
    r"(?i)\b(?:competitors?|versus|alternatives?|compared\s+to|better\s+than)\b|\bvs(?:\.|\s)";
const DEFAULT_NEGATIVE: &str = r"(?i)\b(?:complain(?:t|ts|ed|ing|s)?|disappoint(?:ed|ing|ment)|angry|frustrat(?:ed|ing|ion)|terrible|worst|refunds?|refunded)\b";
const DEFAULT_EXTERNAL_URL: &str = r"(?i)https?://\S";
const DEFAULT_EDUCATIONAL: &str = r"(?i)\b(?:how\s+to|tutorials?|guides?|learn(?:s|ing)?|explain(?:s|ed|ing)?|tips|faqs?|informational)\b";
const DEFAULT_SHELL_CRITICAL: &str = concat!(
    r"(?i)",
    // rm with -r/-R/--recursive and -f/--force, in one cluster or apart, in any order,
    // with any other arguments of the same command in between.
    r"\brm(?:\s+[^\s;|&]+)*?\s+-[a-z]*(?:r[a-z]*f|f[a-z]*r)[a-z]*\b",
    r"|\brm(?:\s+[^\s;|&]+)*?\s+(?:-[a-z]*r[a-z]*|--recursive)(?:\s+[^\s;|&]+)*?\s+(?:-[a-z]*f[a-z]*|--force)\b",
    r"|\brm(?:\s+[^\s;|&]+)*?\s+(?:-[a-z]*f[a-z]*|--force)(?:\s+[^\s;|&]+)*?\s+(?:-[a-z]*r[a-z]*|--recursive)\b",
    // SQL that destroys data.
    r"|\bdrop\s+(?:table|database|schema)\b|\btruncate\s+table\b|\bdelete\s+from\b",
    // Disk and filesystem destruction.
    r"|\bmkfs\b|\bwipefs\b|\bdd\s+(?:[^\s;|&]+\s+)*?(?:if|of)=",
    r"|>\s*/dev/(?:sd[a-z]|hd[a-z]|vd[a-z]|xvd[a-z]|nvme\d|mmcblk\d)",
    // Infrastructure teardown and the fork bomb.
    r"|\bterraform\s+destroy\b|:\s*\(\s*\)\s*\{\s*:\s*\|\s*:\s*&\s*\}\s*;\s*:",
);
const DEFAULT_SHELL_HIGH: &str = concat!(
    r"(?i)\bgit\s+push\b|\b(?:npm|yarn|pnpm|cargo)\s+publish\b|\bdocker\s+push\b",
    r"|\bkubectl\s+(?:apply|delete)\b|\bterraform\s+apply\b",
);

/// Finds the host of each http(s) URL: optional user info (no `/`, `\`, `?`, `#`), then
/// the host up to the first character that cannot be in a host name (`:`, `/`, `)` …).
const URL_HOST: &str = r"(?i)https?://(?:[^\s/\\?#@]*@)?([\p{L}\p{N}._-]*)";

/// Indexes into the content `RegexSet`, in the order of [`CONTENT_KEYS`].
const PRICING: usize = 0;
const COMPETITOR: usize = 1;
const NEGATIVE: usize = 2;
const EXTERNAL_URL: usize = 3;
const EDUCATIONAL: usize = 4;
const CONTENT_KEYS: [&str; 5] = [
    "pricing",
    "competitor",
    "negative",
    "external_url",
    "educational",
];

/// Object keys whose string values are shell commands or queries.
const COMMAND_KEYS: [&str; 5] = ["command", "cmd", "script", "sql", "query"];
/// Top-level keys whose values are recipients.
const RECIPIENT_KEYS: [&str; 7] = [
    "recipients",
    "contacts",
    "emailList",
    "email_list",
    "to",
    "cc",
    "bcc",
];
/// More recipients than this is a bulk operation.
const BULK_THRESHOLD: u64 = 5;

/// The compiled `[policy.patterns]`: built once when the config loads.
#[derive(Debug, Clone)]
pub struct ContentPatterns {
    /// pricing, competitor, negative, external_url, educational.
    content: RegexSet,
    shell_critical: Regex,
    shell_high: Regex,
    /// Only when `internal_domains` is non-empty.
    internal: Option<InternalHosts>,
}

#[derive(Debug, Clone)]
struct InternalHosts {
    url_host: Regex,
    /// Lower-case, without leading `*.`/`.` or a trailing `.`.
    domains: Vec<String>,
}

impl InternalHosts {
    fn is_internal(&self, host: &str) -> bool {
        let host = host.trim_end_matches('.').to_lowercase();
        self.domains.iter().any(|d| {
            host == *d
                || host
                    .strip_suffix(d.as_str())
                    .is_some_and(|rest| rest.ends_with('.'))
        })
    }

    /// True when `text` has at least one http(s) URL and every one is internal.
    fn every_url_internal(&self, text: &str) -> bool {
        let mut found = false;
        for caps in self.url_host.captures_iter(text) {
            found = true;
            let host = caps.get(1).map_or("", |m| m.as_str());
            if !self.is_internal(host) {
                return false;
            }
        }
        found
    }
}

impl ContentPatterns {
    /// Compiles the default patterns with `overrides` applied.
    ///
    /// # Errors
    /// A `PatternError` naming the first field whose regex does not compile, or
    /// `internal_domains` when an entry is not a host name.
    pub fn new(overrides: &PatternOverrides) -> Result<Self, PatternError> {
        let content_sources = [
            pattern(&overrides.pricing, DEFAULT_PRICING),
            pattern(&overrides.competitor, DEFAULT_COMPETITOR),
            pattern(&overrides.negative, DEFAULT_NEGATIVE),
            pattern(&overrides.external_url, DEFAULT_EXTERNAL_URL),
            pattern(&overrides.educational, DEFAULT_EDUCATIONAL),
        ];
        // Compile one by one first, so an error names its key; the set gives no index.
        for (key, source) in CONTENT_KEYS.iter().zip(content_sources) {
            compile(key, source)?;
        }
        let content = RegexSet::new(content_sources).map_err(|e| {
            // Each pattern compiles alone, so the set only fails on its combined size:
            // blame the pattern whose addition crossed the limit.
            let key = (1..=content_sources.len())
                .find(|&n| RegexSet::new(&content_sources[..n]).is_err())
                .map_or(CONTENT_KEYS[0], |n| CONTENT_KEYS[n - 1]);
            PatternError {
                key,
                message: e.to_string(),
            }
        })?;
        let shell_critical = compile(
            "shell_critical",
            pattern(&overrides.shell_critical, DEFAULT_SHELL_CRITICAL),
        )?;
        let shell_high = compile(
            "shell_high",
            pattern(&overrides.shell_high, DEFAULT_SHELL_HIGH),
        )?;
        let internal = if overrides.internal_domains.is_empty() {
            None
        } else {
            let domains = overrides
                .internal_domains
                .iter()
                .map(|d| internal_domain(d))
                .collect::<Result<Vec<_>, _>>()?;
            Some(InternalHosts {
                url_host: Regex::new(URL_HOST).expect("the URL host pattern is valid"),
                domains,
            })
        };
        Ok(ContentPatterns {
            content,
            shell_critical,
            shell_high,
            internal,
        })
    }

    /// The built-in patterns, no internal domains.
    #[must_use]
    pub fn defaults() -> Self {
        Self::new(&PatternOverrides::default()).expect("the default patterns compile")
    }
}

impl Default for ContentPatterns {
    fn default() -> Self {
        Self::defaults()
    }
}

fn pattern<'a>(over: &'a Option<String>, default: &'a str) -> &'a str {
    over.as_deref().unwrap_or(default)
}

fn compile(key: &'static str, source: &str) -> Result<Regex, PatternError> {
    Regex::new(source).map_err(|e| PatternError {
        key,
        message: e.to_string(),
    })
}

/// Normalises one `internal_domains` entry: `*.Example.COM.` → `example.com`.
fn internal_domain(raw: &str) -> Result<String, PatternError> {
    let d = raw.trim().to_lowercase();
    let d = d.strip_prefix("*.").unwrap_or(&d);
    let d = d.trim_start_matches('.').trim_end_matches('.');
    let valid = !d.is_empty()
        && d.chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '-' | '.' | '_'));
    if valid {
        Ok(d.to_owned())
    } else {
        Err(PatternError {
            key: "internal_domains",
            message: format!(
                "{raw:?} is not a host name (write `example.com`, without scheme, port or path)"
            ),
        })
    }
}

/// What the risk assessment needs to know about one request.
#[derive(Debug, Clone, Copy)]
pub struct RiskInput<'a> {
    pub tool_class: ToolClass,
    /// The class is read-only because a shell-like tool's whole command only reads
    /// (`shell::Command::read`): noted as the factor `read_only_command`, which counts
    /// neither up nor down.
    pub read_only_command: bool,
    /// The tool is in `[policy] internal_tools`.
    pub internal_tool: bool,
    pub args: &'a Value,
    pub environment: Option<&'a str>,
    /// No earlier call of this tool by this agent was allowed or approved: none
    /// has status allowed, approved, executing, succeeded or failed
    /// (`Store::submit_facts`). Calls that were pending, rejected, expired,
    /// cancelled or blocked do not count, so a tool stays "first time" until one
    /// call of it has actually been let through.
    pub first_use: bool,
}

/// Scores one request (see the module docs for the factors and the formula).
#[must_use]
pub(crate) fn assess(patterns: &ContentPatterns, input: &RiskInput<'_>) -> Risk {
    let scanned = Scanned::of(input.args);
    let text = scanned.content.join("\n");
    let commands = scanned.commands.join("\n");
    let hits = patterns.content.matches(&text);

    let external_url = hits.matched(EXTERNAL_URL)
        && !patterns
            .internal
            .as_ref()
            .is_some_and(|internal| internal.every_url_internal(&text));
    let raising = [
        (hits.matched(PRICING), "pricing_content"),
        (hits.matched(COMPETITOR), "competitor_mention"),
        (hits.matched(NEGATIVE), "negative_context"),
        (external_url, "external_url"),
        (is_bulk(input.args), "bulk_operation"),
        (input.first_use, "first_time_usage"),
    ];
    let lowering = [
        (hits.matched(EDUCATIONAL), "educational_content"),
        (input.internal_tool, "internal_tool"),
    ];

    let mut factors: Vec<String> = Vec::new();
    if input.read_only_command {
        factors.push("read_only_command".to_owned());
    }
    let mut count = |list: &[(bool, &str)]| {
        let mut n = 0usize;
        for &(on, name) in list {
            if on {
                factors.push(name.to_owned());
                n += 1;
            }
        }
        n
    };
    let plus = count(&raising);
    let minus = count(&lowering);
    let net = plus.saturating_sub(minus);

    let mut score = match input.tool_class {
        ToolClass::Destructive => RiskScore::High,
        ToolClass::Write if net > 0 => RiskScore::High,
        ToolClass::Write => RiskScore::Medium,
        ToolClass::ReadOnly if net >= 2 => RiskScore::Medium,
        ToolClass::ReadOnly => RiskScore::Low,
    };

    let critical = !commands.is_empty() && patterns.shell_critical.is_match(&commands);
    if critical {
        factors.push("shell_critical".to_owned());
        score = RiskScore::Critical;
    } else if !commands.is_empty() && patterns.shell_high.is_match(&commands) {
        factors.push("shell_high".to_owned());
        score = score.max(RiskScore::High);
    }

    let environment = input.environment.map(str::trim);
    if environment.is_some_and(|e| e.eq_ignore_ascii_case("production")) {
        factors.push("environment_production".to_owned());
        score = score.raised();
    } else if environment.is_some_and(|e| e.eq_ignore_ascii_case("sandbox")) {
        factors.push("environment_sandbox".to_owned());
        if !critical {
            score = score.lowered();
        }
    }

    Risk {
        score,
        tool_class: input.tool_class,
        factors,
    }
}

/// The strings of one request's arguments, split by how they are scanned.
struct Scanned<'a> {
    /// Every string value.
    content: Vec<&'a str>,
    /// String values under a command key, or the arguments when they are one string.
    commands: Vec<&'a str>,
}

impl<'a> Scanned<'a> {
    fn of(args: &'a Value) -> Self {
        let mut scanned = Scanned {
            content: Vec::new(),
            commands: Vec::new(),
        };
        // Iterative, so no argument shape can exhaust the stack.
        let mut stack = vec![(args, args.is_string())];
        while let Some((value, command)) = stack.pop() {
            match value {
                Value::String(s) => {
                    scanned.content.push(s);
                    if command {
                        scanned.commands.push(s);
                    }
                }
                Value::Array(items) => stack.extend(items.iter().rev().map(|v| (v, command))),
                Value::Object(map) => stack.extend(
                    map.iter()
                        .rev()
                        .map(|(k, v)| (v, command || is_command_key(k))),
                ),
                Value::Null | Value::Bool(_) | Value::Number(_) => {}
            }
        }
        scanned
    }
}

fn is_command_key(key: &str) -> bool {
    COMMAND_KEYS.iter().any(|k| key.eq_ignore_ascii_case(k))
}

/// More than [`BULK_THRESHOLD`] recipients, or a larger top-level `count`.
fn is_bulk(args: &Value) -> bool {
    let Value::Object(map) = args else {
        return false;
    };
    let mut recipients: u64 = 0;
    let mut count: f64 = 0.0;
    for (key, value) in map {
        if RECIPIENT_KEYS.iter().any(|k| key.eq_ignore_ascii_case(k)) {
            recipients = recipients.saturating_add(recipient_count(value));
        } else if key.eq_ignore_ascii_case("count") {
            if let Some(n) = value.as_f64() {
                count = count.max(n);
            }
        }
    }
    recipients > BULK_THRESHOLD || count > BULK_THRESHOLD as f64
}

fn recipient_count(value: &Value) -> u64 {
    match value {
        Value::String(s) => list_parts(s),
        Value::Array(items) => items
            .iter()
            .map(|item| match item {
                Value::String(s) => list_parts(s),
                Value::Null => 0,
                _ => 1,
            })
            .fold(0, u64::saturating_add),
        _ => 0,
    }
}

/// Non-empty parts of a `,`/`;`-separated list.
fn list_parts(s: &str) -> u64 {
    s.split([',', ';']).filter(|p| !p.trim().is_empty()).count() as u64
}

#[cfg(test)]
mod tests {
    use std::sync::OnceLock;

    use serde_json::json;

    use super::*;

    /// Compiled once: compiling per case makes the tables slow in debug builds.
    fn defaults() -> &'static ContentPatterns {
        static DEFAULTS: OnceLock<ContentPatterns> = OnceLock::new();
        DEFAULTS.get_or_init(ContentPatterns::defaults)
    }

    fn score_with(
        patterns: &ContentPatterns,
        class: ToolClass,
        args: &Value,
        environment: Option<&str>,
        first_use: bool,
        internal_tool: bool,
    ) -> Risk {
        assess(
            patterns,
            &RiskInput {
                tool_class: class,
                read_only_command: false,
                internal_tool,
                args,
                environment,
                first_use,
            },
        )
    }

    fn risk(class: ToolClass, args: &Value) -> Risk {
        score_with(defaults(), class, args, None, false, false)
    }

    fn factors(args: &Value) -> Vec<String> {
        risk(ToolClass::Write, args).factors
    }

    fn has(args: &Value, factor: &str) -> bool {
        factors(args).iter().any(|f| f == factor)
    }

    #[test]
    fn each_content_factor_is_detected_in_text_that_has_it() {
        let cases: &[(&str, &str)] = &[
            ("pricing_content", "Our new price is great"),
            ("pricing_content", "PRICING update"),
            ("pricing_content", "a small fee applies"),
            ("pricing_content", "20% discounts this week"),
            ("pricing_content", "special offer inside"),
            ("pricing_content", "it costs 49 USD"),
            ("pricing_content", "only $49 today"),
            ("pricing_content", "only € 10"),
            ("pricing_content", "only 10€"),
            ("pricing_content", "just £5.99"),
            ("competitor_mention", "how we compare to our competitors"),
            ("competitor_mention", "Acme vs. Globex"),
            ("competitor_mention", "Acme vs Globex"),
            ("competitor_mention", "a cheaper alternative"),
            ("competitor_mention", "Compared  to Globex"),
            ("competitor_mention", "better than the rest"),
            ("competitor_mention", "us versus them"),
            ("negative_context", "I have a complaint"),
            ("negative_context", "we are Disappointed"),
            ("negative_context", "an angry customer"),
            ("negative_context", "frustrated with support"),
            ("negative_context", "terrible service"),
            ("negative_context", "worst day"),
            ("negative_context", "I want a refund"),
            ("external_url", "see https://example.com/x"),
            ("external_url", "see HTTP://example.com"),
            ("educational_content", "How to set up your account"),
            ("educational_content", "a short tutorial"),
            ("educational_content", "our guide to onboarding"),
            ("educational_content", "learn the basics"),
            ("educational_content", "this explains the steps"),
            ("educational_content", "five tips for spring"),
            ("educational_content", "see the FAQ"),
            ("educational_content", "purely informational"),
        ];
        for (factor, text) in cases {
            let args = json!({ "body": text });
            assert!(has(&args, factor), "{factor} not found in {text:?}");
        }
    }

    #[test]
    fn a_neutral_sentence_has_no_factors() {
        let neutral = [
            "Hi Sam, the meeting moved to Thursday at 10. See you there.",
            "Please review the attached notes and reply when you can.",
            "The invoice number is 12345 and the total is 7 items.",
            "It is priceless, and we offered help on the 5th.",
            "Open it in the browser at example.com",
            "Five stars $ and 10 out of 10",
            "Dear team, the deadline is Friday; thanks for your patience.",
        ];
        for text in neutral {
            let args = json!({ "subject": "Hello", "body": text, "to": ["sam@example.com"] });
            let found = factors(&args);
            assert!(found.is_empty(), "{text:?} gave {found:?}");
        }
    }

    #[test]
    fn only_string_values_are_scanned_not_keys_numbers_or_bools() {
        let args = json!({ "price": 10, "refund": true, "https://x.test": null, "note": "ok" });
        assert!(factors(&args).is_empty(), "{:?}", factors(&args));
    }

    #[test]
    fn strings_at_any_depth_are_scanned() {
        let args = json!({ "a": [{ "b": { "c": ["fine", "ask for a refund"] } }] });
        assert_eq!(factors(&args), vec!["negative_context"]);
        assert_eq!(
            factors(&json!("a plain string with $5")),
            vec!["pricing_content"]
        );
    }

    #[test]
    fn a_currency_sign_and_a_number_in_separate_strings_do_not_join() {
        let args = json!(["total $", "5 items"]);
        assert!(factors(&args).is_empty(), "{:?}", factors(&args));
    }

    #[test]
    fn factors_come_in_the_documented_order() {
        let args = json!({
            "body": "Refund? Our price beats competitors, see https://x.test, a guide",
            "to": ["a", "b", "c", "d", "e", "f"],
        });
        let r = score_with(
            defaults(),
            ToolClass::Write,
            &args,
            Some("production"),
            true,
            true,
        );
        assert_eq!(
            r.factors,
            vec![
                "pricing_content",
                "competitor_mention",
                "negative_context",
                "external_url",
                "bulk_operation",
                "first_time_usage",
                "educational_content",
                "internal_tool",
                "environment_production",
            ]
        );
        assert_eq!(r.tool_class, ToolClass::Write);
    }

    #[test]
    fn bulk_counts_recipients_across_keys_and_formats() {
        let cases = [
            (json!({ "recipients": ["a", "b", "c", "d", "e"] }), false),
            (
                json!({ "recipients": ["a", "b", "c", "d", "e", "f"] }),
                true,
            ),
            (
                json!({ "to": ["a", "b", "c"], "cc": ["d", "e"], "bcc": ["f"] }),
                true,
            ),
            (json!({ "to": "a@x, b@x, c@x, , d@x, e@x" }), false),
            (json!({ "to": "a@x, b@x, c@x, d@x, e@x; f@x" }), true),
            (json!({ "emailList": ["a", "b", "c", "d", "e", "f"] }), true),
            (
                json!({ "email_list": ["a", "b", "c", "d", "e", "f"] }),
                true,
            ),
            (
                json!({ "contacts": [{"id": 1}, {"id": 2}, {"id": 3}, {"id": 4}, {"id": 5}, {"id": 6}] }),
                true,
            ),
            (
                json!({ "Recipients": ["a", "b", "c", "d", "e", "f"] }),
                true,
            ),
            (json!({ "to": ["a@x, b@x, c@x", "d@x, e@x, f@x"] }), true),
            (json!({ "to": [null, null, null, null, null, "a"] }), false),
            (json!({ "count": 6 }), true),
            (json!({ "count": 5 }), false),
            (json!({ "count": 5.5 }), true),
            (json!({ "count": "600" }), false),
            (json!({ "to": ["a"], "count": 1000 }), true),
            (
                json!({ "nested": { "recipients": ["a", "b", "c", "d", "e", "f"] } }),
                false,
            ),
            (json!({ "subject": "hi" }), false),
            (json!(["a", "b", "c", "d", "e", "f"]), false),
        ];
        for (args, bulk) in cases {
            assert_eq!(has(&args, "bulk_operation"), bulk, "{args}");
        }
    }

    #[test]
    fn the_combined_score_follows_the_layer2_table() {
        let none = json!({ "body": "hello" });
        let one = json!({ "body": "see https://x.test" });
        let two = json!({ "body": "see https://x.test for the price" });
        let cases = [
            (ToolClass::ReadOnly, &none, RiskScore::Low),
            (ToolClass::ReadOnly, &one, RiskScore::Low),
            (ToolClass::ReadOnly, &two, RiskScore::Medium),
            (ToolClass::Write, &none, RiskScore::Medium),
            (ToolClass::Write, &one, RiskScore::High),
            (ToolClass::Destructive, &none, RiskScore::High),
            (ToolClass::Destructive, &two, RiskScore::High),
        ];
        for (class, args, want) in cases {
            assert_eq!(risk(class, args).score, want, "{class:?} {args}");
        }
    }

    #[test]
    fn educational_content_and_internal_tools_lower_the_count() {
        let p = defaults();
        let priced = json!({ "body": "the price is right" });
        let priced_guide = json!({ "body": "a guide to our price list" });
        // Write + pricing = high; an educational guide cancels the factor: medium.
        assert_eq!(risk(ToolClass::Write, &priced).score, RiskScore::High);
        assert_eq!(
            risk(ToolClass::Write, &priced_guide).score,
            RiskScore::Medium
        );
        // An internal tool cancels it too.
        let r = score_with(p, ToolClass::Write, &priced, None, false, true);
        assert_eq!(r.score, RiskScore::Medium);
        assert_eq!(r.factors, vec!["pricing_content", "internal_tool"]);
        // The count never goes below zero: lowering alone changes nothing.
        let r = score_with(p, ToolClass::Write, &priced_guide, None, false, true);
        assert_eq!(r.score, RiskScore::Medium);
        // Read-only with two factors is medium, and one lowering factor brings it back.
        let two = json!({ "body": "price at https://x.test" });
        assert_eq!(risk(ToolClass::ReadOnly, &two).score, RiskScore::Medium);
        let r = score_with(p, ToolClass::ReadOnly, &two, None, false, true);
        assert_eq!(r.score, RiskScore::Low);
    }

    #[test]
    fn first_use_raises_the_count() {
        let p = defaults();
        let args = json!({ "body": "hello" });
        let r = score_with(p, ToolClass::Write, &args, None, true, false);
        assert_eq!(r.score, RiskScore::High);
        assert_eq!(r.factors, vec!["first_time_usage"]);
        let r = score_with(p, ToolClass::Write, &args, None, false, false);
        assert_eq!(r.score, RiskScore::Medium);
    }

    #[test]
    fn each_critical_shell_command_is_critical() {
        let commands = [
            "rm -rf /",
            "rm -fr build",
            "rm -r -f build",
            "rm -f -r build",
            "rm\t-rf\n/tmp/x",
            "RM -RF /",
            "rm -Rf /var",
            "rm -rfv dir",
            "rm -v -r --interactive=never -f dir",
            "rm --recursive --force dir",
            "sudo rm -rf --no-preserve-root /",
            "cd /srv && rm -rf *",
            "drop table users",
            "DROP   TABLE users;",
            "drop\ndatabase prod",
            "DROP SCHEMA public CASCADE",
            "truncate table orders",
            "delete from users",
            "DELETE\tFROM users WHERE 1=1",
            "mkfs.ext4 /dev/sdb1",
            "mkfs -t xfs /dev/sdb",
            "wipefs -a /dev/sdb",
            "dd if=/dev/zero of=/dev/sda bs=1M",
            "dd bs=1M of=/dev/sda",
            "cat image > /dev/sda",
            "echo x >/dev/nvme0n1",
            "terraform destroy -auto-approve",
            ":(){ :|:& };:",
        ];
        for cmd in commands {
            let r = risk(ToolClass::ReadOnly, &json!({ "command": cmd }));
            assert_eq!(r.score, RiskScore::Critical, "{cmd:?}");
            assert!(r.factors.contains(&"shell_critical".to_owned()), "{cmd:?}");
            assert!(!r.factors.contains(&"shell_high".to_owned()), "{cmd:?}");
        }
    }

    #[test]
    fn each_high_shell_command_is_at_least_high() {
        let commands = [
            "git push origin main",
            "GIT  PUSH --force",
            "git\tpush",
            "npm publish",
            "yarn publish",
            "pnpm publish --access public",
            "cargo publish",
            "docker push registry/app:1",
            "docker\npush x",
            "kubectl apply -f deploy.yaml",
            "kubectl delete pod x",
            "terraform apply -auto-approve",
        ];
        for cmd in commands {
            let r = risk(ToolClass::ReadOnly, &json!({ "cmd": cmd }));
            assert_eq!(r.score, RiskScore::High, "{cmd:?}");
            assert_eq!(r.factors, vec!["shell_high"], "{cmd:?}");
        }
        // Never lowers: production on top of high is critical.
        let r = score_with(
            defaults(),
            ToolClass::ReadOnly,
            &json!({ "cmd": "git push" }),
            Some("production"),
            false,
            false,
        );
        assert_eq!(r.score, RiskScore::Critical);
    }

    #[test]
    fn harmless_commands_are_not_flagged() {
        let commands = [
            "ls -la",
            "rm file.txt",
            "rm -r build",
            "rm -f stale.lock",
            "farm -rf",
            "git status",
            "git pull",
            "npm install",
            "docker pull x",
            "SELECT * FROM users",
            "select deleted from items",
            "echo hi > /dev/null",
            "add if=1",
            "terraform plan",
            "kubectl get pods",
        ];
        for cmd in commands {
            let r = risk(ToolClass::ReadOnly, &json!({ "command": cmd }));
            assert_eq!(r.score, RiskScore::Low, "{cmd:?}: {:?}", r.factors);
            assert!(r.factors.is_empty(), "{cmd:?}: {:?}", r.factors);
        }
    }

    #[test]
    fn when_both_shell_patterns_match_only_critical_is_reported() {
        let r = risk(
            ToolClass::Write,
            &json!({ "script": "git push && rm -rf /" }),
        );
        assert_eq!(r.score, RiskScore::Critical);
        assert_eq!(r.factors, vec!["shell_critical"]);
    }

    #[test]
    fn shell_commands_are_found_under_command_keys_at_any_depth() {
        let cases = [
            json!({ "command": "rm -rf /" }),
            json!({ "CMD": "rm -rf /" }),
            json!({ "Script": ["set -e", "rm -rf /"] }),
            json!({ "steps": [{ "sql": "DROP TABLE users" }] }),
            json!({ "query": { "text": "delete from users" } }),
            json!({ "command": ["rm", "-rf", "/"] }),
            json!("rm -rf /"),
        ];
        for args in cases {
            assert_eq!(
                risk(ToolClass::Write, &args).score,
                RiskScore::Critical,
                "{args}"
            );
        }
    }

    #[test]
    fn shell_words_in_an_email_body_are_not_commands() {
        let args = json!({
            "to": ["sam@example.com"],
            "subject": "Re: unsubscribe",
            "body": "Sure, we will delete from our list. Also: rm -rf, drop table, git push.",
        });
        let r = risk(ToolClass::Write, &args);
        assert_eq!(r.score, RiskScore::Medium, "{:?}", r.factors);
        assert!(r.factors.is_empty(), "{:?}", r.factors);
    }

    #[test]
    fn production_raises_and_sandbox_lowers_one_level() {
        let p = defaults();
        let plain = json!({ "body": "hello" });
        let cases = [
            (ToolClass::ReadOnly, Some("production"), RiskScore::Medium),
            (ToolClass::Write, Some("production"), RiskScore::High),
            (
                ToolClass::Destructive,
                Some("production"),
                RiskScore::Critical,
            ),
            (
                ToolClass::Destructive,
                Some(" Production "),
                RiskScore::Critical,
            ),
            (
                ToolClass::Destructive,
                Some("PRODUCTION"),
                RiskScore::Critical,
            ),
            (ToolClass::ReadOnly, Some("sandbox"), RiskScore::Low),
            (ToolClass::Write, Some("sandbox"), RiskScore::Low),
            (ToolClass::Destructive, Some("Sandbox"), RiskScore::Medium),
            (ToolClass::Destructive, Some("staging"), RiskScore::High),
            (ToolClass::Destructive, Some("prod"), RiskScore::High),
            (ToolClass::Destructive, None, RiskScore::High),
        ];
        for (class, env, want) in cases {
            let r = score_with(p, class, &plain, env, false, false);
            assert_eq!(r.score, want, "{class:?} {env:?}");
        }
        let r = score_with(
            p,
            ToolClass::Write,
            &plain,
            Some("production"),
            false,
            false,
        );
        assert_eq!(r.factors, vec!["environment_production"]);
        let r = score_with(p, ToolClass::Write, &plain, Some("sandbox"), false, false);
        assert_eq!(r.factors, vec!["environment_sandbox"]);
        let r = score_with(p, ToolClass::Write, &plain, Some("staging"), false, false);
        assert!(r.factors.is_empty());
    }

    #[test]
    fn a_critical_command_in_the_sandbox_stays_critical() {
        let p = defaults();
        let args = json!({ "command": "rm -rf /" });
        let r = score_with(p, ToolClass::Write, &args, Some("sandbox"), false, false);
        assert_eq!(r.score, RiskScore::Critical);
        assert_eq!(r.factors, vec!["shell_critical", "environment_sandbox"]);
        // A high command is lowered like anything else.
        let args = json!({ "command": "git push" });
        let r = score_with(p, ToolClass::Write, &args, Some("sandbox"), false, false);
        assert_eq!(r.score, RiskScore::Medium);
    }

    #[test]
    fn internal_domains_keep_their_urls_from_counting_as_external() {
        let p = ContentPatterns::new(&PatternOverrides {
            internal_domains: vec!["Example.com".into(), "*.corp.test".into()],
            ..PatternOverrides::default()
        })
        .unwrap();
        let cases = [
            ("see https://example.com/docs", false),
            ("see https://EXAMPLE.com.", false),
            ("see https://docs.example.com:8443/a?b#c", false),
            ("see http://wiki.corp.test and https://example.com", false),
            ("see https://user:pw@example.com/x", false),
            ("see https://notexample.com", true),
            ("see https://example.com.evil.test", true),
            ("see https://example.com@evil.test", true),
            ("see https://evil.test\\@example.com", true),
            ("see https://example.com and https://evil.test", true),
            ("see https://[::1]/", true),
        ];
        for (text, external) in cases {
            let r = score_with(
                &p,
                ToolClass::Write,
                &json!({ "body": text }),
                None,
                false,
                false,
            );
            assert_eq!(
                r.factors.contains(&"external_url".to_owned()),
                external,
                "{text:?}"
            );
        }
        // Without internal domains every URL is external.
        assert!(has(
            &json!({ "body": "https://example.com" }),
            "external_url"
        ));
    }

    #[test]
    fn an_internal_domain_that_is_not_a_host_is_an_error() {
        for bad in ["", "  ", "https://example.com", "example.com:80", "a b"] {
            let e = ContentPatterns::new(&PatternOverrides {
                internal_domains: vec!["ok.test".into(), bad.into()],
                ..PatternOverrides::default()
            })
            .unwrap_err();
            assert_eq!(e.key, "internal_domains", "{bad:?}");
        }
    }

    #[test]
    fn a_bad_override_regex_names_its_key() {
        type Set = fn(&mut PatternOverrides, String);
        let fields: [(&str, Set); 7] = [
            ("pricing", |o, s| o.pricing = Some(s)),
            ("competitor", |o, s| o.competitor = Some(s)),
            ("negative", |o, s| o.negative = Some(s)),
            ("external_url", |o, s| o.external_url = Some(s)),
            ("educational", |o, s| o.educational = Some(s)),
            ("shell_critical", |o, s| o.shell_critical = Some(s)),
            ("shell_high", |o, s| o.shell_high = Some(s)),
        ];
        for (key, set) in fields {
            let mut overrides = PatternOverrides::default();
            set(&mut overrides, "(unclosed".into());
            let e = ContentPatterns::new(&overrides).unwrap_err();
            assert_eq!(e.key, key);
            assert!(!e.message.is_empty());
            assert!(e.to_string().contains(key), "{e}");
        }
    }

    #[test]
    fn overrides_replace_defaults_and_are_used_as_written() {
        let p = ContentPatterns::new(&PatternOverrides {
            pricing: Some(r"\bQuote\b".into()),
            shell_high: Some(r"\bdeploy\b".into()),
            educational: Some(r"\b\B".into()),
            ..PatternOverrides::default()
        })
        .unwrap();
        let f = |args: Value| score_with(&p, ToolClass::Write, &args, None, false, false).factors;
        assert_eq!(f(json!({ "body": "a Quote" })), vec!["pricing_content"]);
        // Case-sensitive as written, and the default is gone.
        assert!(f(json!({ "body": "a quote for $49" })).is_empty());
        assert!(f(json!({ "body": "a tutorial" })).is_empty());
        assert_eq!(f(json!({ "cmd": "deploy now" })), vec!["shell_high"]);
        assert!(f(json!({ "cmd": "git push" })).is_empty());
        // The untouched defaults still apply.
        assert_eq!(f(json!({ "cmd": "rm -rf /" })), vec!["shell_critical"]);
    }

    #[test]
    fn default_patterns_and_defaults_agree() {
        let a = ContentPatterns::default();
        let b = defaults();
        assert_eq!(a.content.patterns(), b.content.patterns());
        assert!(a.internal.is_none());
    }

    #[test]
    fn overrides_deserialize_with_unknown_keys_rejected() {
        let o: PatternOverrides =
            serde_json::from_value(json!({ "pricing": "x", "internal_domains": ["a.test"] }))
                .unwrap();
        assert_eq!(o.pricing.as_deref(), Some("x"));
        assert_eq!(o.internal_domains, vec!["a.test"]);
        assert!(serde_json::from_value::<PatternOverrides>(json!({ "pricng": "x" })).is_err());
    }
}
