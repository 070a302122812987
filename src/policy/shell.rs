//! Shell commands as bash reads them: their words, and whether a whole command only reads.
//!
//! One verdict serves both places that need it: risk scoring (a shell-like tool's call
//! whose command only reads is scored as a read-only call) and grants (a prefix grant
//! covers a command only when the whole command only reads, see `trust::grants`). It is
//! an **allowlist**: a command is read-only only when its program, its subcommand and
//! every option and operand are in the tables below; anything gatebot does not know asks.
//!
//! # Words
//! [`words`] splits a command the way bash does before it runs one program: on ASCII
//! blanks (space and tab) only, with quote removal (`'--out''put'` is `--output`). A
//! command is **simple** when nothing in it makes the shell do more than run one program
//! with arguments, and shows as what it is:
//! - none of `;` `&` `|` `<` `>` `$` `` ` `` `(` `)` `{` `}` `\` `#` `!`, newlines or
//!   other control characters, quoted or not (refusing a harmless `git commit -m "a; b"`
//!   costs one question, accepting a hostile one costs everything);
//! - no whitespace other than the space and the tab (bash does not split on U+00A0, so
//!   `ls\u00a0/x` is one word that only looks like two), and no invisible or
//!   bidirectional character ([`crate::names::is_hidden`]);
//! - balanced quotes.
//!
//! A word whose value the shell would still change is **unknown**: an unquoted glob
//! character (`*`, `?`, `[`), or an unquoted `~` at the start of a word or after `=` or
//! `:`. An unknown word never counts as read-only: a glob can expand to file names the
//! agent chose (a file called `-oevil` turns `sort *` into `sort -oevil …`).
//!
//! # Read-only
//! [`Command::read`] finds a simple command read-only when:
//! 1. its first word is a program in [`READERS`] by its bare name (no directory, no
//!    variable assignment in front: `PATH=… ls` is not `ls`), followed by the words of
//!    one of its read-only subcommands when it has them (`git log`, `git stash list`);
//!    options before the subcommand (`git -c …`, `git -C DIR`, `--exec-path`) are
//!    refused, not skipped;
//! 2. every option after that is one the table lists for it, parsed the way the program
//!    parses options: long options by their **exact** name (programs accept unique
//!    abbreviations, so `--out` may be `--output`: only a whole listed name is taken),
//!    with a value after `=` or in the next word; short options bundled (`-la`), a
//!    value-taking short option taking the rest of its word or the next word (getopt;
//!    `tree` takes the next word and goes on with the bundle, so there a value-taking
//!    option must end its word); `--` ends the options;
//! 3. every operand and option value that names a file stays inside the directory the
//!    command runs in: no absolute path, no `..` component (so `cat /proc/self/environ`
//!    and `git blame --contents ~/.ssh/id_rsa` ask), and the program takes no more
//!    operands than it reads (`uniq IN OUT` writes OUT).
//!
//! What is never read-only, whatever its options: anything that runs project code or a
//! build (`make`, `cargo test`, `npm test`, `go test`, `uv run` …: the agent may have
//! written that code), interpreters, shells and wrappers, pagers and editors (`less` has
//! `!cmd`), and commands that read outside the project by design (`env`, `docker`,
//! `kubectl`). What a read-only command still trusts: the environment and configuration
//! files the agent runs with (a repository's own `.git/config` can name an fsmonitor or
//! a diff driver; `RIPGREP_CONFIG_PATH` can add options); changing either takes a call
//! that is not read-only, so that call asks (docs/trust.md says so).
//!
//! All of this is pure and linear in the command's length.

use std::fmt;

use crate::names::is_hidden;

/// The most bytes a command may have to be considered at all; longer ones ask.
pub const MAX_COMMAND_BYTES: usize = 64 * 1024;

/// One word of a simple command, after quote removal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Word {
    pub text: String,
    /// The shell would still expand it (a glob, a leading `~`): its value is not known.
    pub unknown: bool,
}

/// Why a command is not simple.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotSimple {
    Empty,
    TooLong,
    /// A character that makes the shell do more than run one program.
    Meta(char),
    /// Whitespace bash does not split on, or an invisible or bidirectional character.
    Hidden(char),
    UnbalancedQuote,
}

impl fmt::Display for NotSimple {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NotSimple::Empty => f.write_str("the command is empty"),
            NotSimple::TooLong => write!(f, "the command is longer than {MAX_COMMAND_BYTES} bytes"),
            NotSimple::Meta(c) => write!(
                f,
                "the command has `{}`, which makes the shell do more than run one program",
                c.escape_default()
            ),
            NotSimple::Hidden(c) => write!(
                f,
                "the command has the character U+{:04X}, which the shell does not read as a \
                 space and a person cannot see",
                u32::from(*c)
            ),
            NotSimple::UnbalancedQuote => f.write_str("the command has an unclosed quote"),
        }
    }
}

/// The characters that make a command more than one program with arguments.
fn is_meta(c: char) -> bool {
    matches!(
        c,
        ';' | '&' | '|' | '<' | '>' | '$' | '`' | '(' | ')' | '{' | '}' | '\\' | '#' | '!'
    ) || (c.is_control() && c != '\t')
}

/// The blanks bash splits words on.
fn is_blank(c: char) -> bool {
    c == ' ' || c == '\t'
}

/// The words of a simple command, as bash would pass them to the program (see the
/// module docs).
pub fn words(command: &str) -> Result<Vec<Word>, NotSimple> {
    if command.len() > MAX_COMMAND_BYTES {
        return Err(NotSimple::TooLong);
    }
    #[derive(PartialEq)]
    enum Quote {
        None,
        Single,
        Double,
    }
    let mut out = Vec::new();
    let mut word: Option<Word> = None;
    let mut quote = Quote::None;
    // The last character added to the word unquoted (for `~` after `=` or `:`).
    let mut last_unquoted: Option<char> = None;
    for c in command.chars() {
        if is_meta(c) {
            return Err(NotSimple::Meta(c));
        }
        // Every hidden ASCII character is a control character, which is_meta refused.
        if !c.is_ascii() && is_hidden(c) {
            return Err(NotSimple::Hidden(c));
        }
        match quote {
            Quote::Single if c == '\'' => quote = Quote::None,
            Quote::Double if c == '"' => quote = Quote::None,
            Quote::Single | Quote::Double => {
                word.get_or_insert_with(empty).text.push(c);
                last_unquoted = None;
            }
            Quote::None if is_blank(c) => {
                out.extend(word.take());
                last_unquoted = None;
            }
            Quote::None => {
                let w = word.get_or_insert_with(empty);
                match c {
                    '\'' => quote = Quote::Single,
                    '"' => quote = Quote::Double,
                    _ => {
                        let tilde = c == '~'
                            && (w.text.is_empty() || matches!(last_unquoted, Some('=' | ':')));
                        if matches!(c, '*' | '?' | '[') || tilde {
                            w.unknown = true;
                        }
                        w.text.push(c);
                    }
                }
                last_unquoted = Some(c);
            }
        }
    }
    if quote != Quote::None {
        return Err(NotSimple::UnbalancedQuote);
    }
    out.extend(word);
    if out.is_empty() {
        return Err(NotSimple::Empty);
    }
    Ok(out)
}

fn empty() -> Word {
    Word {
        text: String::new(),
        unknown: false,
    }
}

/// How a program parses a value-taking short option inside a bundle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Style {
    /// getopt: the rest of the word is the value, or the next word when nothing is left.
    Getopt,
    /// The next word is the value, and the bundle goes on (`tree`): such an option must
    /// end its word.
    NextWord,
}

/// What a program's operands may be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Operands {
    /// None at all.
    None,
    /// Files it reads (or revisions): any number, each inside the working directory.
    Paths,
    /// At most this many files it reads; one more would be written.
    AtMost(usize),
    /// Words it only prints or looks up (`echo`, `which`): anything.
    Text,
}

/// One read-only command: a program and its subcommand words, with what it accepts.
struct Spec {
    /// The program and its subcommand words (`["git", "log"]`).
    path: &'static [&'static str],
    /// Short options without a value.
    flags: &'static str,
    /// Short options that take a value.
    valued: &'static str,
    /// `-5` means `-n 5`.
    numeric: bool,
    /// Long options without a value.
    long: &'static [&'static str],
    /// Long options that take a value (after `=` or in the next word).
    long_valued: &'static [&'static str],
    /// Long options whose value is optional: bare, or only after `=`.
    long_optional: &'static [&'static str],
    operands: Operands,
    style: Style,
}

const fn spec(path: &'static [&'static str]) -> Spec {
    Spec {
        path,
        flags: "",
        valued: "",
        numeric: false,
        long: &[],
        long_valued: &[],
        long_optional: &[],
        operands: Operands::Paths,
        style: Style::Getopt,
    }
}

// git's log-like options, shared by log, show, shortlog and stash list. Never `--output`,
// `--ext-diff`, `--textconv`, `-O`, `--exec`, `--open-files-in-pager`.
const GIT_LOG_LONG: &[&str] = &[
    "oneline",
    "stat",
    "shortstat",
    "numstat",
    "name-only",
    "name-status",
    "graph",
    "decorate",
    "no-decorate",
    "all",
    "patch",
    "no-patch",
    "reverse",
    "follow",
    "no-merges",
    "merges",
    "first-parent",
    "abbrev-commit",
    "no-abbrev-commit",
    "no-color",
    "summary",
    "numbered",
    "email",
    "full-history",
    "left-right",
    "cherry-pick",
    "topo-order",
    "date-order",
    "relative-date",
    "parents",
    "children",
    "source",
    "word-diff",
    "ignore-all-space",
    "ignore-space-change",
    "no-renames",
    "no-ext-diff",
    "no-textconv",
    "branches",
    "tags",
    "remotes",
];
const GIT_LOG_VALUED: &[&str] = &[
    "max-count",
    "skip",
    "since",
    "after",
    "until",
    "before",
    "author",
    "committer",
    "grep",
    "format",
    "pretty",
    "date",
    "diff-filter",
    "abbrev",
];
const GIT_LOG_OPTIONAL: &[&str] = &["color", "decorate", "stat", "word-diff"];

const GIT_DIFF_LONG: &[&str] = &[
    "stat",
    "shortstat",
    "numstat",
    "name-only",
    "name-status",
    "cached",
    "staged",
    "patch",
    "no-patch",
    "ignore-all-space",
    "ignore-space-change",
    "ignore-blank-lines",
    "no-color",
    "no-renames",
    "no-ext-diff",
    "no-textconv",
    "exit-code",
    "quiet",
    "minimal",
    "patience",
    "histogram",
    "check",
    "summary",
];

/// The read-only commands. Kept short on purpose: each line is a promise.
static READERS: &[Spec] = &[
    // Listing and reading files.
    Spec {
        flags: "aAbBcCdfFgGhHiklLmnNopqQrRsStuUvxXZ1",
        valued: "ITw",
        long: &[
            "all",
            "almost-all",
            "human-readable",
            "recursive",
            "reverse",
            "size",
            "directory",
            "classify",
            "inode",
            "numeric-uid-gid",
            "dereference",
            "group-directories-first",
            "no-group",
            "si",
            "full-time",
        ],
        long_valued: &[
            "sort",
            "time",
            "time-style",
            "format",
            "ignore",
            "hide",
            "width",
        ],
        long_optional: &["color"],
        ..spec(&["ls"])
    },
    Spec {
        flags: "AbeEnstTuv",
        long: &[
            "number",
            "number-nonblank",
            "show-all",
            "show-ends",
            "show-tabs",
            "squeeze-blank",
            "show-nonprinting",
        ],
        ..spec(&["cat"])
    },
    // head and tail: never tail -f (it never ends).
    head_or_tail(&["head"]),
    head_or_tail(&["tail"]),
    Spec {
        flags: "clmwL",
        long: &["bytes", "chars", "lines", "words", "max-line-length"],
        ..spec(&["wc"])
    },
    Spec {
        flags: "EFGPiyvwxcLloqsbHhnTZraIUz",
        valued: "efmABCdD",
        long: &[
            "extended-regexp",
            "fixed-strings",
            "basic-regexp",
            "perl-regexp",
            "ignore-case",
            "no-ignore-case",
            "invert-match",
            "word-regexp",
            "line-regexp",
            "count",
            "files-with-matches",
            "files-without-match",
            "only-matching",
            "quiet",
            "silent",
            "no-messages",
            "byte-offset",
            "with-filename",
            "no-filename",
            "line-number",
            "initial-tab",
            "null",
            "null-data",
            "recursive",
            "dereference-recursive",
            "text",
        ],
        long_valued: &[
            "regexp",
            "file",
            "max-count",
            "after-context",
            "before-context",
            "context",
            "include",
            "exclude",
            "exclude-dir",
            "label",
            "binary-files",
            "directories",
            "devices",
        ],
        long_optional: &["color", "colour"],
        ..spec(&["grep"])
    },
    // ripgrep: never --pre, --pre-glob, --search-zip (-z), --hostname-bin.
    Spec {
        flags: "iIlcnNsSwvxFuULHopq",
        valued: "egtTmABCMjrf",
        long: &[
            "hidden",
            "no-ignore",
            "files",
            "files-with-matches",
            "files-without-match",
            "count",
            "count-matches",
            "json",
            "vimgrep",
            "no-heading",
            "heading",
            "line-number",
            "no-line-number",
            "ignore-case",
            "smart-case",
            "case-sensitive",
            "word-regexp",
            "line-regexp",
            "fixed-strings",
            "invert-match",
            "follow",
            "null",
            "only-matching",
            "trim",
            "stats",
            "no-messages",
            "column",
            "pretty",
            "type-list",
            "no-filename",
            "with-filename",
        ],
        long_valued: &[
            "glob",
            "iglob",
            "type",
            "type-not",
            "max-count",
            "context",
            "after-context",
            "before-context",
            "regexp",
            "max-depth",
            "sort",
            "sortr",
            "max-filesize",
            "replace",
            "threads",
            "color",
            "file",
            "max-columns",
        ],
        ..spec(&["rg"])
    },
    Spec {
        flags: "LP",
        operands: Operands::None,
        ..spec(&["pwd"])
    },
    Spec {
        flags: "neE",
        operands: Operands::Text,
        ..spec(&["echo"])
    },
    Spec {
        flags: "LftZ",
        valued: "c",
        long: &["dereference", "file-system", "terse"],
        long_valued: &["format", "printf"],
        ..spec(&["stat"])
    },
    Spec {
        flags: "aAbchHklLmsSx0",
        valued: "dB",
        long: &[
            "all",
            "apparent-size",
            "bytes",
            "total",
            "human-readable",
            "si",
            "summarize",
            "one-file-system",
            "dereference",
        ],
        long_valued: &["max-depth", "block-size", "threshold"],
        ..spec(&["du"])
    },
    Spec {
        flags: "ahHiklPT",
        valued: "tBx",
        long: &[
            "all",
            "human-readable",
            "si",
            "inodes",
            "local",
            "portability",
            "print-type",
            "total",
        ],
        long_valued: &["type", "exclude-type", "block-size"],
        ..spec(&["df"])
    },
    // tree: never -o (writes a file), -R/-H (HTML files), --fromfile.
    Spec {
        flags: "adfFilpsughDrtvCnNQx",
        valued: "LIP",
        long: &["noreport", "dirsfirst", "gitignore", "prune", "du", "si"],
        style: Style::NextWord,
        ..spec(&["tree"])
    },
    Spec {
        flags: "iEZbwBaTtNPqsuypdrc",
        valued: "UCWSD",
        long: &[
            "brief",
            "report-identical-files",
            "recursive",
            "new-file",
            "unidirectional-new-file",
            "ignore-case",
            "ignore-all-space",
            "ignore-space-change",
            "ignore-blank-lines",
            "ignore-tab-expansion",
            "text",
            "side-by-side",
            "minimal",
            "expand-tabs",
            "initial-tab",
            "show-c-function",
            "suppress-common-lines",
        ],
        long_valued: &["width", "label"],
        long_optional: &["unified", "context", "color"],
        ..spec(&["diff"])
    },
    Spec {
        flags: "a",
        operands: Operands::Text,
        ..spec(&["which"])
    },
    spec(&["whoami"]).none(),
    Spec {
        flags: "asnrvmpio",
        long: &[
            "all",
            "kernel-name",
            "nodename",
            "kernel-release",
            "kernel-version",
            "machine",
            "processor",
            "hardware-platform",
            "operating-system",
        ],
        operands: Operands::None,
        ..spec(&["uname"])
    },
    // file: never -C (writes), -m (magic from anywhere), -f (a list of names).
    Spec {
        flags: "bchiLNprsv",
        long: &[
            "brief",
            "mime",
            "mime-type",
            "mime-encoding",
            "dereference",
            "no-dereference",
        ],
        ..spec(&["file"])
    },
    // sort: never -o/--output, --compress-program, -T, --random-source, --files0-from.
    Spec {
        flags: "bdfgiMhnRrsuVcCz",
        valued: "ktS",
        long: &[
            "ignore-leading-blanks",
            "dictionary-order",
            "ignore-case",
            "general-numeric-sort",
            "ignore-nonprinting",
            "month-sort",
            "human-numeric-sort",
            "numeric-sort",
            "random-sort",
            "reverse",
            "stable",
            "unique",
            "version-sort",
            "zero-terminated",
        ],
        long_valued: &["key", "field-separator", "buffer-size", "parallel"],
        ..spec(&["sort"])
    },
    // uniq: a second operand is the file it writes.
    Spec {
        flags: "cdDiuz",
        valued: "fsw",
        long: &[
            "count",
            "repeated",
            "unique",
            "ignore-case",
            "zero-terminated",
        ],
        long_valued: &["skip-fields", "skip-chars", "check-chars"],
        operands: Operands::AtMost(1),
        ..spec(&["uniq"])
    },
    Spec {
        flags: "snz",
        valued: "bcdf",
        long: &["complement", "only-delimited", "zero-terminated"],
        long_valued: &[
            "bytes",
            "characters",
            "delimiter",
            "fields",
            "output-delimiter",
        ],
        ..spec(&["cut"])
    },
    // git: only these subcommands, never an option before the subcommand.
    Spec {
        flags: "sbuvz",
        long: &[
            "short",
            "branch",
            "long",
            "verbose",
            "show-stash",
            "ahead-behind",
            "no-ahead-behind",
            "renames",
            "no-renames",
        ],
        long_optional: &[
            "porcelain",
            "untracked-files",
            "ignored",
            "ignore-submodules",
        ],
        ..spec(&["git", "status"])
    },
    Spec {
        flags: "pu",
        valued: "nSG",
        numeric: true,
        long: GIT_LOG_LONG,
        long_valued: GIT_LOG_VALUED,
        long_optional: GIT_LOG_OPTIONAL,
        ..spec(&["git", "log"])
    },
    Spec {
        flags: "pus",
        valued: "nSG",
        numeric: true,
        long: GIT_LOG_LONG,
        long_valued: GIT_LOG_VALUED,
        long_optional: GIT_LOG_OPTIONAL,
        ..spec(&["git", "show"])
    },
    Spec {
        flags: "snec",
        numeric: true,
        long: &[
            "summary",
            "numbered",
            "email",
            "committer",
            "all",
            "no-merges",
            "merges",
        ],
        long_valued: &["since", "until", "author", "max-count", "format"],
        ..spec(&["git", "shortlog"])
    },
    Spec {
        flags: "pu",
        numeric: true,
        long: GIT_LOG_LONG,
        long_valued: GIT_LOG_VALUED,
        long_optional: GIT_LOG_OPTIONAL,
        ..spec(&["git", "stash", "list"])
    },
    Spec {
        flags: "puwbRMaz",
        valued: "U",
        long: GIT_DIFF_LONG,
        long_valued: &[
            "diff-filter",
            "unified",
            "inter-hunk-context",
            "relative",
            "abbrev",
        ],
        long_optional: &["color", "stat", "word-diff", "dirstat"],
        ..spec(&["git", "diff"])
    },
    Spec {
        flags: "wsencflbtp",
        valued: "L",
        long: &[
            "porcelain",
            "line-porcelain",
            "show-email",
            "show-name",
            "root",
            "incremental",
        ],
        long_valued: &["since", "date"],
        ..spec(&["git", "blame"])
    },
    // git grep: never -O / --open-files-in-pager, --textconv, -f.
    Spec {
        flags: "nivwlLcEFGPhHoqIzWr",
        valued: "eABCm",
        numeric: false,
        long: &[
            "cached",
            "untracked",
            "no-index",
            "ignore-case",
            "word-regexp",
            "invert-match",
            "line-number",
            "files-with-matches",
            "files-without-match",
            "count",
            "extended-regexp",
            "fixed-strings",
            "basic-regexp",
            "perl-regexp",
            "full-name",
            "only-matching",
            "quiet",
            "heading",
            "break",
            "show-function",
            "column",
            "recurse-submodules",
        ],
        long_valued: &[
            "max-depth",
            "after-context",
            "before-context",
            "context",
            "max-count",
        ],
        long_optional: &["color"],
        ..spec(&["git", "grep"])
    },
    Spec {
        long: &[
            "show-toplevel",
            "show-prefix",
            "show-cdup",
            "is-inside-work-tree",
            "is-inside-git-dir",
            "is-bare-repository",
            "git-dir",
            "absolute-git-dir",
            "abbrev-ref",
            "symbolic-full-name",
            "verify",
            "quiet",
        ],
        long_optional: &["short"],
        ..spec(&["git", "rev-parse"])
    },
    Spec {
        flags: "cdmoiskstuz",
        long: &[
            "cached",
            "deleted",
            "modified",
            "others",
            "ignored",
            "stage",
            "unmerged",
            "killed",
            "directory",
            "exclude-standard",
            "full-name",
            "error-unmatch",
        ],
        ..spec(&["git", "ls-files"])
    },
    // git branch only lists: an operand would create a branch.
    Spec {
        flags: "arvl",
        long: &[
            "all",
            "remotes",
            "verbose",
            "list",
            "show-current",
            "no-color",
        ],
        long_valued: &[
            "sort",
            "format",
            "contains",
            "no-contains",
            "merged",
            "no-merged",
            "points-at",
        ],
        long_optional: &["color"],
        operands: Operands::None,
        ..spec(&["git", "branch"])
    },
    Spec {
        flags: "v",
        long: &["verbose"],
        operands: Operands::None,
        ..spec(&["git", "remote"])
    },
    Spec {
        long: &[
            "tags",
            "all",
            "always",
            "long",
            "exact-match",
            "first-parent",
        ],
        long_valued: &["abbrev", "match", "exclude", "candidates"],
        ..spec(&["git", "describe"])
    },
    Spec {
        long: &["porcelain", "verbose"],
        flags: "vz",
        operands: Operands::None,
        ..spec(&["git", "worktree", "list"])
    },
];

/// `head` and `tail` read the same options.
const fn head_or_tail(path: &'static [&'static str]) -> Spec {
    Spec {
        flags: "qvz",
        valued: "nc",
        numeric: true,
        long: &["quiet", "silent", "verbose"],
        long_valued: &["lines", "bytes"],
        ..spec(path)
    }
}

impl Spec {
    /// The same spec with no operands and no options (`whoami`).
    const fn none(self) -> Spec {
        Spec {
            operands: Operands::None,
            ..self
        }
    }
}

/// A shell-like tool's command, read once per call: its words and whether it only
/// reads. Risk scoring and grant matching both use this one reading.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Command<'a> {
    /// The command as the agent sent it.
    pub raw: &'a str,
    /// Its words, or why it is not a simple command.
    pub simple: Result<Vec<Word>, NotSimple>,
    /// Whether the whole command only reads, and what makes it so.
    pub read_only: Option<ReadOnly>,
}

impl<'a> Command<'a> {
    /// Reads `raw` (see the module docs).
    #[must_use]
    pub fn read(raw: &'a str) -> Command<'a> {
        let simple = words(raw);
        let read_only = simple.as_deref().ok().and_then(read_only_words);
        Command {
            raw,
            simple,
            read_only,
        }
    }

    /// Its words, when it is a simple command.
    #[must_use]
    pub fn words(&self) -> Option<&[Word]> {
        self.simple.as_deref().ok()
    }
}

/// What [`Command::read`] found read-only: the program and subcommand words that make the command
/// read-only (`git log`), which is also the prefix gatebot offers for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadOnly {
    pub path: String,
}

/// Whether the whole command these words make only reads, inside the directory it
/// runs in (see the module docs); `Some` names the program and subcommand that make it so.
fn read_only_words(words: &[Word]) -> Option<ReadOnly> {
    if words.iter().any(|w| w.unknown) {
        return None;
    }
    // The longest matching path wins (`git stash list` before a `git stash`, had we one).
    let spec = READERS
        .iter()
        .filter(|s| {
            s.path.len() <= words.len() && s.path.iter().zip(words).all(|(p, w)| *p == w.text)
        })
        .max_by_key(|s| s.path.len())?;
    let rest: Vec<&str> = words[spec.path.len()..]
        .iter()
        .map(|w| w.text.as_str())
        .collect();
    accepts(spec, &rest).then(|| ReadOnly {
        path: spec.path.join(" "),
    })
}

/// Whether `spec` accepts these words after its path.
fn accepts(spec: &Spec, rest: &[&str]) -> bool {
    let mut words = rest.iter().copied();
    let mut operands = 0usize;
    let mut options_done = false;
    while let Some(word) = words.next() {
        if options_done || word == "-" || !word.starts_with('-') {
            operands += 1;
            if !operand_ok(spec, word, operands) {
                return false;
            }
        } else if word == "--" {
            options_done = true;
        } else if let Some(long) = word.strip_prefix("--") {
            if !long_option_ok(spec, long, &mut words) {
                return false;
            }
        } else if !short_options_ok(spec, &word[1..], &mut words) {
            return false;
        }
    }
    true
}

/// Whether `spec` accepts the long option `--{long}` (`--lines=5`, or `--lines 5` taking the
/// value from the next word).
fn long_option_ok<'w>(spec: &Spec, long: &str, next: &mut impl Iterator<Item = &'w str>) -> bool {
    let (name, value) = match long.split_once('=') {
        Some((n, v)) => (n, Some(v)),
        None => (long, None),
    };
    if spec.long.contains(&name) && value.is_none() {
        return true;
    }
    if spec.long_optional.contains(&name) {
        return value.is_none_or(inside);
    }
    if spec.long_valued.contains(&name) {
        return value.or_else(|| next.next()).is_some_and(inside);
    }
    false
}

/// Whether `spec` accepts a bundle of short options (`-nv`, `-n5`, `-n 5`): a valued option
/// takes the rest of the bundle or the next word, as the spec's style says, and ends the bundle.
fn short_options_ok<'w>(
    spec: &Spec,
    bundle: &str,
    next: &mut impl Iterator<Item = &'w str>,
) -> bool {
    if spec.numeric && bundle.bytes().all(|b| b.is_ascii_digit()) {
        return true;
    }
    for (at, c) in bundle.char_indices() {
        if spec.flags.contains(c) {
            continue;
        }
        if !spec.valued.contains(c) {
            return false;
        }
        let attached = &bundle[at + c.len_utf8()..];
        let value = match spec.style {
            Style::Getopt if !attached.is_empty() => Some(attached),
            Style::NextWord if !attached.is_empty() => None,
            Style::Getopt | Style::NextWord => next.next(),
        };
        return value.is_some_and(inside);
    }
    true
}

fn operand_ok(spec: &Spec, word: &str, nth: usize) -> bool {
    match spec.operands {
        Operands::None => false,
        Operands::Text => true,
        Operands::Paths => inside(word),
        Operands::AtMost(n) => nth <= n && inside(word),
    }
}

/// Whether a word, read as a file name, stays inside the working directory: not
/// absolute, no `..` component, no `~` in front (a revision such as `HEAD~2` or
/// `main..topic` is fine).
fn inside(word: &str) -> bool {
    !word.starts_with('/')
        && !word.starts_with('~')
        && !word.split(['/', ':', '=']).any(|part| part == "..")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_only(command: &str) -> Option<ReadOnly> {
        Command::read(command).read_only
    }

    fn is_simple(command: &str) -> bool {
        Command::read(command).simple.is_ok()
    }

    fn texts(command: &str) -> Vec<String> {
        words(command)
            .unwrap()
            .into_iter()
            .map(|w| w.text)
            .collect()
    }

    #[test]
    fn words_split_on_ascii_blanks_after_quote_removal() {
        assert_eq!(texts("  git   status\t-sb "), ["git", "status", "-sb"]);
        assert_eq!(texts("git log --out''put=x"), ["git", "log", "--output=x"]);
        assert_eq!(texts("git log '--output'=x"), ["git", "log", "--output=x"]);
        assert_eq!(texts(r#"grep "a b" 'c d'e"#), ["grep", "a b", "c de"]);
        assert_eq!(texts("echo ''"), ["echo", ""]);
        assert!(words("git st'atus").is_err());
        assert!(words("   ").is_err());
    }

    #[test]
    fn whitespace_the_shell_does_not_split_on_is_not_simple() {
        for c in [
            '\u{a0}', '\u{2000}', '\u{2009}', '\u{200a}', '\u{3000}', '\u{2028}', '\u{2029}',
            '\u{202e}', '\u{200b}', '\u{feff}', '\u{85}', '\u{b}', '\u{c}',
        ] {
            let command = format!("git{c}status");
            assert!(!is_simple(&command), "U+{:04X}", u32::from(c));
            assert!(read_only(&format!("ls{c}/../evil/run.sh")).is_none());
        }
    }

    #[test]
    fn globs_and_tildes_are_unknown_words() {
        for command in [
            "ls *.rs",
            "cat ?",
            "ls [ab]",
            "cat ~/x",
            "grep --include=~/x a",
            "sort a:~/b",
        ] {
            assert!(read_only(command).is_none(), "{command}");
        }
        for command in [
            "ls '*.rs'",
            "git log HEAD~2",
            "git diff main..topic",
            "ls 'a b'",
        ] {
            assert!(read_only(command).is_some(), "{command}");
        }
    }

    #[test]
    fn read_only_commands_name_their_program_and_subcommand() {
        for (command, path) in [
            ("ls -la", "ls"),
            ("ls -la src", "ls"),
            ("cat README.md", "cat"),
            ("head -n 20 src/lib.rs", "head"),
            ("head -5 x", "head"),
            ("tail -n5 x", "tail"),
            ("wc -l src/lib.rs", "wc"),
            ("grep -rn TODO src", "grep"),
            ("grep -e -foo x", "grep"),
            ("grep --include='*.rs' -r x .", "grep"),
            ("rg TODO", "rg"),
            ("rg -n -g '*.rs' TODO src", "rg"),
            ("pwd", "pwd"),
            ("echo hello /etc", "echo"),
            ("du -sh .", "du"),
            ("df -h", "df"),
            ("tree -L 2", "tree"),
            ("diff -u a b", "diff"),
            ("which git", "which"),
            ("whoami", "whoami"),
            ("uname -a", "uname"),
            ("sort -k2 -n a", "sort"),
            ("sort -t, -k1,2 a", "sort"),
            ("uniq -c a", "uniq"),
            ("cut -d: -f1 a", "cut"),
            ("git status", "git status"),
            ("git status --short", "git status"),
            ("git status --porcelain=v2", "git status"),
            ("git log --oneline -5", "git log"),
            ("git log -n 5 --format=%h", "git log"),
            ("git log --color=always -p -- src", "git log"),
            ("git show HEAD~1 --stat", "git show"),
            ("git diff --cached", "git diff"),
            ("git diff HEAD~1 -- src", "git diff"),
            ("git stash list", "git stash list"),
            ("git blame -L 1,20 src/lib.rs", "git blame"),
            ("git grep -n TODO", "git grep"),
            ("git rev-parse --abbrev-ref HEAD", "git rev-parse"),
            ("git branch -a", "git branch"),
            ("git branch --show-current", "git branch"),
            ("git remote -v", "git remote"),
            ("git ls-files -m", "git ls-files"),
            ("git describe --tags", "git describe"),
        ] {
            assert_eq!(
                read_only(command).map(|r| r.path).as_deref(),
                Some(path),
                "{command}"
            );
        }
    }

    /// The commands the issue found running code or writing files under prefix grants,
    /// and more of the same shapes: none of them is read-only.
    pub(crate) const HOSTILE: &[&str] = &[
        "git grep -Oevil foo",
        "git grep -O evil foo",
        "git grep --open-files-in-pager=evil foo",
        "git fetch --upload-pack='sh evil.sh' .",
        "git diff --output=out.txt",
        "git diff --out=out.txt",
        "git log --output=out.txt",
        "git log --out''put=out.txt",
        "git log '--output'=out.txt",
        "git log --upload-p=x",
        "sort --compress-program=evil.sh a",
        "sort -o out.txt a",
        "sort -uo out.txt a",
        "sort -uoout.txt a",
        "sort -T tmp a",
        "uniq a out.txt",
        "tree -o out.txt",
        "tree -Lo 2 out.txt",
        "tree -R -H x",
        "rg --pre=evil.sh x",
        "rg --pre evil.sh x",
        "rg -z x",
        "rg --hostname-bin=evil.sh x",
        "make test -f evil.mk",
        "make test SHELL=evil.sh",
        "make test install",
        "go test -exec evil",
        "go test -toolexec=evil",
        "go env -w GOFLAGS=-x",
        "cargo test",
        "cargo test --config build.rustc-wrapper=evil",
        "npm test",
        "npm test --script-shell=evil",
        "npm run env",
        "npm exec foo",
        "yarn dlx foo",
        "pnpm dlx foo",
        "npx foo",
        "mvn test deploy",
        "git submodule foreach id",
        "git rebase -x id",
        "git config core.fsmonitor evil",
        "git -c core.pager=id log",
        "git -C .. log",
        "git --exec-path=. log",
        "git --git-dir=x log",
        "git branch newbranch",
        "git branch -D main",
        "git stash drop",
        "git stash",
        "git push",
        "git push --force",
        "git remote add x y",
        "docker exec c id",
        "kubectl exec p -- id",
        "uv run x.py",
        "less +'!id' x",
        "more x",
        "env",
        "FOO=1 ls",
        "/bin/ls",
        "./ls",
        "cat /proc/self/environ",
        "cat ../secret",
        "cat src/../../secret",
        "git blame --contents ~/.ssh/id_rsa x",
        "git blame --contents /root/.ssh/id_rsa x",
        "grep -f /etc/shadow x",
        "file -C -m x",
        "find . -delete",
        "xargs rm",
        "bash -c ls",
        "sh x.sh",
        "python3 -c 1",
        "head -c 10 /dev/sda",
        "ls; id",
        "ls && id",
        "ls | sh",
        "ls > x",
        "ls $(id)",
        "ls `id`",
        "cat x\nid",
        "echo -e '\\x41'",
    ];

    #[test]
    fn hostile_commands_are_not_read_only() {
        for command in HOSTILE {
            assert_eq!(read_only(command), None, "{command:?}");
        }
    }

    #[test]
    fn a_value_taking_option_at_the_end_is_refused() {
        for command in ["head -n", "grep -e", "git log --author", "tree -L"] {
            assert!(read_only(command).is_none(), "{command}");
        }
    }

    #[test]
    fn a_huge_command_is_refused_in_linear_time() {
        let long = format!("git log {}", "--oneline ".repeat(6_000));
        assert!(read_only(&long).is_some());
        let too_long = format!("git log {}", "--oneline ".repeat(7_000));
        assert_eq!(words(&too_long).unwrap_err(), NotSimple::TooLong);
    }
}
