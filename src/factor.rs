//! Second factors (step-up, docs/teams.md): TOTP (RFC 6238) secrets, the `otpauth://`
//! URI an authenticator app reads (also drawn as a QR code), and checking a code.
//!
//! Codes are 6 digits over 30-second steps, SHA-1 (what every authenticator app
//! speaks), accepted one step either side for clock drift. A code is accepted once:
//! [`check`] returns the step it matched, and the store accepts only a step later than
//! the factor's last (RFC 6238 §5.2).

use rand::RngCore;
use totp_rs::{Algorithm, Builder, Secret, Totp};

/// Bytes of a new secret (160 bits, RFC 4226's recommendation).
const SECRET_BYTES: usize = 20;
/// Who issues the codes, as authenticator apps show it.
pub const ISSUER: &str = "gatebot";

/// A new secret, base32 (how it is stored, and shown for typing in by hand).
#[must_use]
pub fn new_secret() -> String {
    let mut bytes = [0u8; SECRET_BYTES];
    rand::rng().fill_bytes(&mut bytes);
    Secret::from(bytes).to_base32()
}

fn totp(secret: &str, account: &str) -> Option<Totp> {
    let bytes = Secret::try_from_base32(secret).ok()?;
    Builder::new()
        .with_algorithm(Algorithm::SHA1)
        .with_digits(6)
        .with_skew(1)
        .with_step_duration(30)
        .with_secret(bytes)
        .with_account_name(account)
        .with_issuer(Some(ISSUER))
        .build()
        .ok()
}

/// The `otpauth://totp/…` URI of `secret` for `person` (what the QR code holds).
#[must_use]
pub fn uri(secret: &str, person: &str) -> Option<String> {
    totp(secret, person)?.to_url().ok()
}

/// The time step `code` matches for `secret` at Unix time `now_secs` (one step either
/// side), or `None`. Spaces in the code are ignored ("123 456").
#[must_use]
pub fn check(secret: &str, code: &str, now_secs: u64) -> Option<u64> {
    let code: String = code.chars().filter(|c| !c.is_whitespace()).collect();
    if code.len() != 6 || !code.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    totp(secret, "x")?.check(&code, now_secs)
}

/// The code of `secret` at `now_secs` (tests, and `gatebot factor` examples).
#[must_use]
pub fn code_at(secret: &str, now_secs: u64) -> Option<String> {
    Some(totp(secret, "x")?.generate(now_secs).to_string())
}

/// `text` as a QR code, drawn as an SVG element (dark modules as one path), with a
/// quiet zone of 4 modules.
#[must_use]
pub fn qr_svg(text: &str) -> Option<String> {
    use qrcodegen::{QrCode, QrCodeEcc};
    let qr = QrCode::encode_text(text, QrCodeEcc::Medium).ok()?;
    let size = qr.size();
    let border = 4;
    let mut path = String::new();
    for y in 0..size {
        for x in 0..size {
            if qr.get_module(x, y) {
                path.push_str(&format!("M{},{}h1v1h-1z", x + border, y + border));
            }
        }
    }
    let full = size + 2 * border;
    Some(format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {full} {full}\" \
         width=\"240\" height=\"240\" role=\"img\" aria-label=\"QR code of the factor's secret\" \
         shape-rendering=\"crispEdges\"><rect width=\"100%\" height=\"100%\" fill=\"#fff\"/>\
         <path d=\"{path}\" fill=\"#000\"/></svg>"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 6238 Appendix B's SHA-1 secret ("12345678901234567890"), in base32.
    const RFC_SECRET: &str = "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ";

    #[test]
    fn codes_match_rfc_6238_and_one_step_either_side() {
        // RFC 6238's vectors are 8 digits; the 6-digit code is their last six.
        assert_eq!(code_at(RFC_SECRET, 59).unwrap(), "287082");
        assert_eq!(code_at(RFC_SECRET, 1_111_111_109).unwrap(), "081804");
        assert_eq!(check(RFC_SECRET, "081804", 1_111_111_109), Some(37_037_036));
        assert_eq!(
            check(RFC_SECRET, "081 804", 1_111_111_109 + 30),
            Some(37_037_036)
        );
        assert_eq!(check(RFC_SECRET, "081804", 1_111_111_109 + 90), None);
        for bad in ["", "12345", "1234567", "abcdef", "08180４"] {
            assert_eq!(check(RFC_SECRET, bad, 1_111_111_109), None, "{bad}");
        }
        assert_eq!(check("not base32!", "081804", 1_111_111_109), None);
    }

    #[test]
    fn a_new_secret_makes_a_uri_and_a_qr_code() {
        let s = new_secret();
        assert_eq!(s.len(), 32, "{s}");
        assert_ne!(s, new_secret());
        let u = uri(&s, "alice").unwrap();
        assert!(u.starts_with("otpauth://totp/gatebot:alice?"), "{u}");
        assert!(u.contains(&format!("secret={s}")), "{u}");
        let svg = qr_svg(&u).unwrap();
        assert!(
            svg.starts_with("<svg") && svg.contains("<path d=\"M"),
            "{svg}"
        );
    }
}
