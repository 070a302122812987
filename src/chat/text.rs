//! Measuring, escaping and cutting text for chat platforms: one of each.
//!
//! - [`escape`]: `&`, `<` and `>` are markup both in Telegram's HTML parse mode and in
//!   Slack's mrkdwn, so escaping them keeps agent text from becoming formatting,
//!   links or mentions in either; hidden characters (bidirectional overrides, no-break
//!   and zero-width spaces) are written out (`\u202e`) so text shows as what it is.
//! - [`len16`]: chat limits are counted in UTF-16 code units on Telegram or characters
//!   on Slack; UTF-16 units are never fewer than characters, so one measure serves both.
//! - [`fit`]: the longest prefix of a text whose *rendered* form (escaped, fenced,
//!   labelled) passes a limit, with a note saying how much was cut. Every cut in the
//!   chat layer goes through it, so a cut never splits an entity or a fence.

/// Escapes `&`, `<` and `>`, and writes out hidden characters as
/// [`crate::names::visible`] does (every string a renderer places passes through here).
#[must_use]
pub fn escape(s: &str) -> String {
    let s = crate::names::visible(s);
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            c => out.push(c),
        }
    }
    out
}

/// The length chat limits are checked against: UTF-16 code units.
#[must_use]
pub fn len16(s: &str) -> usize {
    s.encode_utf16().count()
}

/// Cuts `s` to its longest prefix (in characters) for which `fits` holds, for limits
/// that apply to a rendered form rather than to the raw text. `fits` must be monotone:
/// when a prefix fits, so does every shorter one. The note says how many characters of
/// `what` ("arguments", "the summary") were cut.
#[must_use]
pub fn fit(s: &str, what: &str, fits: impl Fn(&str) -> bool) -> (String, Option<String>) {
    if fits(s) {
        return (s.to_string(), None);
    }
    // Byte offsets of every char boundary; `ends[n]` ends the prefix of n + 1 characters.
    let ends: Vec<usize> = s
        .char_indices()
        .map(|(i, _)| i)
        .skip(1)
        .chain([s.len()])
        .collect();
    let prefix = |n: usize| if n == 0 { "" } else { &s[..ends[n - 1]] };
    // The whole does not fit: find the largest n < total that does.
    let (mut lo, mut hi) = (0, ends.len() - 1);
    while lo < hi {
        let mid = (lo + hi).div_ceil(2);
        if fits(prefix(mid)) {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    (
        prefix(lo).to_string(),
        Some(cut_note(ends.len() - lo, what)),
    )
}

/// At most `max` characters of `s` (names in lists: an agent, a tool).
#[must_use]
pub fn shorten(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((end, _)) => s[..end].to_string(),
        None => s.to_string(),
    }
}

/// "… 12 more characters of arguments not shown (full text: gatebot status)".
#[must_use]
pub fn cut_note(cut: usize, what: &str) -> String {
    format!("… {cut} more characters of {what} not shown (full text: gatebot status)")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_covers_the_markup_characters_of_both_platforms() {
        assert_eq!(escape("a<b>&</code>"), "a&lt;b&gt;&amp;&lt;/code&gt;");
        assert_eq!(
            escape("<!channel> <@U123> <https://evil|click> & co"),
            "&lt;!channel&gt; &lt;@U123&gt; &lt;https://evil|click&gt; &amp; co"
        );
    }

    #[test]
    fn fitting_keeps_the_longest_prefix_whose_rendered_form_fits() {
        let doubled = |p: &str| p.chars().count() * 2 <= 6;
        assert_eq!(fit("abc", "x", doubled), ("abc".to_string(), None));
        let (kept, note) = fit("abcdé", "the summary", doubled);
        assert_eq!(kept, "abc");
        assert_eq!(
            note.unwrap(),
            "… 2 more characters of the summary not shown (full text: gatebot status)"
        );
        let (kept, note) = fit("abc", "x", |p| p.is_empty());
        assert_eq!(kept, "");
        assert!(note.unwrap().starts_with("… 3 more"));
    }

    #[test]
    fn shortening_counts_characters_not_bytes() {
        assert_eq!(shorten("héllo", 10), "héllo");
        assert_eq!(shorten("ééééé", 3), "ééé");
    }

    #[test]
    fn utf16_length_counts_astral_characters_twice() {
        assert_eq!(len16("a\u{1F600}"), 3);
    }
}
