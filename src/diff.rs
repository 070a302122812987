//! A line diff of a file's text before and after a change, in the unified format
//! (`--- a`, `+++ b`, `@@` hunks with three lines of context): what `--dry-run` of the set-up
//! commands shows, and the dashboard's edit page (a request's arguments as asked and as edited).

use std::fmt::Write as _;

/// Lines of context around each change.
const CONTEXT: usize = 3;
/// Past this many line pairs the longest common subsequence is not computed: the
/// whole old text is shown removed and the new one added.
const MAX_CELLS: usize = 4_000_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Same,
    Gone,
    New,
}

/// The unified diff from `old` to `new`, named `from` and `to`; empty when they are
/// the same.
#[must_use]
pub fn unified(from: &str, to: &str, old: &str, new: &str) -> String {
    if old == new {
        return String::new();
    }
    let a: Vec<&str> = old.lines().collect();
    let b: Vec<&str> = new.lines().collect();
    let ops = edits(&a, &b);
    let mut out = format!("--- {from}\n+++ {to}\n");
    // Positions in `ops` that are changes, grouped into hunks with their context.
    let changed: Vec<usize> = (0..ops.len()).filter(|&i| ops[i].0 != Op::Same).collect();
    let mut i = 0;
    while i < changed.len() {
        let start = changed[i].saturating_sub(CONTEXT);
        let mut end = changed[i];
        while i < changed.len() && changed[i] <= end + 2 * CONTEXT + 1 {
            end = changed[i];
            i += 1;
        }
        let end = (end + CONTEXT + 1).min(ops.len());
        let hunk = &ops[start..end];
        let (first_a, first_b) = (ops[start].1, ops[start].2);
        let len_a = hunk.iter().filter(|o| o.0 != Op::New).count();
        let len_b = hunk.iter().filter(|o| o.0 != Op::Gone).count();
        let _ = writeln!(
            out,
            "@@ -{} +{} @@",
            range(first_a, len_a),
            range(first_b, len_b)
        );
        for &(op, ia, ib) in hunk {
            let _ = match op {
                Op::Same => writeln!(out, " {}", a[ia]),
                Op::Gone => writeln!(out, "-{}", a[ia]),
                Op::New => writeln!(out, "+{}", b[ib]),
            };
        }
    }
    out
}

/// `start,len` as unified diffs write it (1-based; an empty range names the line before).
fn range(start: usize, len: usize) -> String {
    match len {
        0 => format!("{start},0"),
        1 => format!("{}", start + 1),
        _ => format!("{},{len}", start + 1),
    }
}

/// The edit script: each step with its position in `a` and in `b`.
fn edits(a: &[&str], b: &[&str]) -> Vec<(Op, usize, usize)> {
    let (n, m) = (a.len(), b.len());
    if n.saturating_mul(m) > MAX_CELLS {
        return (0..n)
            .map(|i| (Op::Gone, i, 0))
            .chain((0..m).map(|j| (Op::New, n, j)))
            .collect();
    }
    // lcs[i][j]: the longest common subsequence of a[i..] and b[j..].
    let mut lcs = vec![vec![0u32; m + 1]; n + 1];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            lcs[i][j] = if a[i] == b[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let (mut i, mut j) = (0, 0);
    let mut ops = Vec::with_capacity(n + m);
    while i < n || j < m {
        if i < n && j < m && a[i] == b[j] {
            ops.push((Op::Same, i, j));
            i += 1;
            j += 1;
        } else if i < n && (j == m || lcs[i + 1][j] >= lcs[i][j + 1]) {
            ops.push((Op::Gone, i, j));
            i += 1;
        } else {
            ops.push((Op::New, i, j));
            j += 1;
        }
    }
    ops
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_text_has_no_diff() {
        assert_eq!(unified("a", "b", "x\ny\n", "x\ny\n"), "");
    }

    #[test]
    fn a_change_is_shown_with_its_context() {
        let old = "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n";
        let new = "1\n2\n3\n4\n5\nsix\n7\n8\n9\n10\n11\n";
        assert_eq!(
            unified("old", "new", old, new),
            "--- old\n+++ new\n@@ -3,8 +3,9 @@\n 3\n 4\n 5\n-6\n+six\n 7\n 8\n 9\n 10\n+11\n"
        );
    }

    #[test]
    fn a_new_file_is_all_added() {
        assert_eq!(
            unified("/dev/null", "f", "", "{\n}\n"),
            "--- /dev/null\n+++ f\n@@ -0,0 +1,2 @@\n+{\n+}\n"
        );
    }

    #[test]
    fn distant_changes_are_separate_hunks() {
        let old: String = (1..=20).map(|i| format!("{i}\n")).collect();
        let new = old.replace("2\n", "two\n").replace("19\n", "nineteen\n");
        let d = unified("a", "b", &old, &new);
        assert_eq!(d.matches("@@ -").count(), 2, "{d}");
    }
}
