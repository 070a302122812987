//! A fake SMTP server on 127.0.0.1:0 that speaks the protocol as RFC 5321 describes it
//! (EHLO, MAIL FROM, RCPT TO, DATA with dot-stuffing, RSET, NOOP, QUIT), advertises
//! 8BITMIME and SMTPUTF8, enforces the line length limit (1000 octets with CRLF), and
//! records every mail it accepted. Tests make the next transactions fail with a
//! temporary 451 (the sender must try again; nothing was accepted).

use std::sync::{Arc, Mutex};

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;

/// A mail the server accepted.
#[derive(Debug, Clone)]
pub struct Received {
    pub from: String,
    pub to: Vec<String>,
    /// The whole message as sent (headers and body), dot-stuffing undone.
    pub data: String,
}

impl Received {
    /// A header's value (the first of that name), unfolded.
    pub fn header(&self, name: &str) -> Option<String> {
        let head = self.data.split("\r\n\r\n").next()?;
        let mut value: Option<String> = None;
        for line in head.split("\r\n") {
            if line.starts_with([' ', '\t']) {
                if let Some(v) = value.as_mut() {
                    v.push_str(line.trim_start());
                }
                continue;
            }
            if value.is_some() {
                break;
            }
            if let Some((k, v)) = line.split_once(':') {
                if k.eq_ignore_ascii_case(name) {
                    value = Some(v.trim().to_string());
                }
            }
        }
        value
    }

    /// The decoded body of the part whose Content-Type starts with `mime`
    /// (quoted-printable and base64 undone).
    pub fn part(&self, mime: &str) -> Option<String> {
        let lower = self.data.to_ascii_lowercase();
        let at = lower.find(&format!("content-type: {mime}"))?;
        let rest = &self.data[at..];
        let head_end = rest.find("\r\n\r\n")?;
        let head = rest[..head_end].to_ascii_lowercase();
        let body = &rest[head_end + 4..];
        let body = body.split("\r\n--").next().unwrap_or(body);
        Some(if head.contains("quoted-printable") {
            unquote(body)
        } else if head.contains("base64") {
            let clean: String = body.chars().filter(|c| !c.is_whitespace()).collect();
            String::from_utf8_lossy(&base64_decode(&clean)).into_owned()
        } else {
            body.to_string()
        })
    }
}

fn unquote(s: &str) -> String {
    let mut out = Vec::new();
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'=' && i + 2 < b.len() + 1 {
            if b.get(i + 1) == Some(&b'\r') && b.get(i + 2) == Some(&b'\n') {
                i += 3;
                continue;
            }
            if let Some(h) = s
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
            {
                out.push(h);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn base64_decode(s: &str) -> Vec<u8> {
    const A: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = Vec::new();
    let (mut buf, mut bits) = (0u32, 0);
    for c in s.bytes() {
        let Some(v) = A.iter().position(|&x| x == c) else {
            continue;
        };
        buf = (buf << 6) | v as u32;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((buf >> bits) as u8);
        }
    }
    out
}

#[derive(Default)]
struct Inner {
    received: Vec<Received>,
    fail_next: usize,
}

/// The fake server.
#[derive(Clone)]
pub struct FakeSmtp {
    pub port: u16,
    inner: Arc<Mutex<Inner>>,
}

impl FakeSmtp {
    pub async fn start() -> FakeSmtp {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let inner = Arc::new(Mutex::new(Inner::default()));
        let shared = inner.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                tokio::spawn(session(stream, shared.clone()));
            }
        });
        FakeSmtp { port, inner }
    }

    /// The `[email]` table for a daemon mailing through this server.
    pub fn config(&self, to: &[&str]) -> String {
        let to: Vec<String> = to.iter().map(|a| format!("\"{a}\"")).collect();
        format!(
            "[email]\nsmtp_host = \"127.0.0.1\"\nsmtp_port = {}\nsecurity = \"none\"\n\
             from = \"gatebot <gatebot@example.com>\"\nto = [{}]\n",
            self.port,
            to.join(", ")
        )
    }

    pub fn received(&self) -> Vec<Received> {
        self.inner.lock().unwrap().received.clone()
    }

    /// The mails to `address`, oldest first.
    pub fn to(&self, address: &str) -> Vec<Received> {
        self.received()
            .into_iter()
            .filter(|m| m.to.iter().any(|t| t == address))
            .collect()
    }

    /// The next `n` transactions are refused with 451 at MAIL FROM.
    pub fn fail_next(&self, n: usize) {
        self.inner.lock().unwrap().fail_next = n;
    }
}

async fn session(stream: tokio::net::TcpStream, inner: Arc<Mutex<Inner>>) {
    let (read, mut write) = stream.into_split();
    let mut lines = BufReader::new(read);
    let say = |s: &str| format!("{s}\r\n");
    if write
        .write_all(say("220 fake.example ESMTP").as_bytes())
        .await
        .is_err()
    {
        return;
    }
    let (mut from, mut to) = (None::<String>, Vec::<String>::new());
    let mut line = String::new();
    loop {
        line.clear();
        match lines.read_line(&mut line).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        if line.len() > 1000 {
            let _ = write
                .write_all(say("500 5.5.2 line too long").as_bytes())
                .await;
            continue;
        }
        let upper = line.trim_end().to_ascii_uppercase();
        let reply = if upper.starts_with("EHLO") || upper.starts_with("HELO") {
            "250-fake.example\r\n250-8BITMIME\r\n250-SMTPUTF8\r\n250 SIZE 10485760".to_string()
        } else if upper.starts_with("MAIL FROM:") {
            let mut i = inner.lock().unwrap();
            if i.fail_next > 0 {
                i.fail_next -= 1;
                "451 4.3.0 try again later".to_string()
            } else {
                from = Some(address(&line));
                to.clear();
                "250 2.1.0 OK".to_string()
            }
        } else if upper.starts_with("RCPT TO:") {
            if from.is_none() {
                "503 5.5.1 MAIL first".to_string()
            } else {
                to.push(address(&line));
                "250 2.1.5 OK".to_string()
            }
        } else if upper == "DATA" {
            if to.is_empty() {
                "503 5.5.1 RCPT first".to_string()
            } else {
                if write
                    .write_all(say("354 end with <CRLF>.<CRLF>").as_bytes())
                    .await
                    .is_err()
                {
                    return;
                }
                let mut data = String::new();
                loop {
                    line.clear();
                    match lines.read_line(&mut line).await {
                        Ok(0) | Err(_) => return,
                        Ok(_) => {}
                    }
                    if line == ".\r\n" {
                        break;
                    }
                    data.push_str(line.strip_prefix('.').unwrap_or(&line));
                }
                inner.lock().unwrap().received.push(Received {
                    from: from.take().unwrap_or_default(),
                    to: std::mem::take(&mut to),
                    data,
                });
                "250 2.0.0 queued".to_string()
            }
        } else if upper == "RSET" || upper == "NOOP" {
            from = None;
            to.clear();
            "250 2.0.0 OK".to_string()
        } else if upper == "QUIT" {
            let _ = write.write_all(say("221 2.0.0 bye").as_bytes()).await;
            return;
        } else {
            "502 5.5.1 not implemented".to_string()
        };
        if write.write_all(say(&reply).as_bytes()).await.is_err() {
            return;
        }
    }
}

/// The address in `MAIL FROM:<a>` / `RCPT TO:<a>`.
fn address(line: &str) -> String {
    let start = line.find('<').map_or(0, |i| i + 1);
    let end = line[start..].find('>').map_or(line.len(), |i| start + i);
    line[start..end].to_string()
}
