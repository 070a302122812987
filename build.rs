//! Names the git commit gatebot is built from, for `gatebot --version`.
//!
//! 1. `GATEBOT_BUILD_COMMIT`, when set (a packager building from a tarball who knows it);
//! 2. else `git rev-parse --short HEAD` in the source directory, when git and a checkout
//!    are there (`cargo build`, `cargo install --path .`);
//! 3. else `unknown` (a crate tarball, no git): the build never fails for want of it.

use std::path::Path;
use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    let text = text.trim();
    (out.status.success() && !text.is_empty()).then(|| text.to_string())
}

fn main() {
    println!("cargo:rerun-if-env-changed=GATEBOT_BUILD_COMMIT");
    let commit = match std::env::var("GATEBOT_BUILD_COMMIT") {
        Ok(c) if !c.trim().is_empty() => c.trim().to_string(),
        _ => git(&["rev-parse", "--short", "HEAD"]).unwrap_or_else(|| "unknown".into()),
    };
    // A new commit or another branch checked out changes HEAD or the ref it names (a
    // worktree has its own HEAD; the refs live in the common directory).
    if let (Some(dir), Some(common)) = (
        git(&["rev-parse", "--absolute-git-dir"]),
        git(&["rev-parse", "--path-format=absolute", "--git-common-dir"]),
    ) {
        let watch = |p: &Path| {
            if p.exists() {
                println!("cargo:rerun-if-changed={}", p.display());
            }
        };
        watch(&Path::new(&dir).join("HEAD"));
        watch(&Path::new(&common).join("packed-refs"));
        if let Some(r) = git(&["symbolic-ref", "-q", "HEAD"]) {
            watch(&Path::new(&common).join(r));
        }
    }
    println!("cargo:rustc-env=GATEBOT_GIT_COMMIT={commit}");
}
