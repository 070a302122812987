//! The PostgreSQL backend's connections (issue 26): what [`super::sql`]'s handles run
//! their statements on when `[store] url` names a PostgreSQL database.
//!
//! The store's methods are synchronous and run on blocking threads (see `Engine`), as
//! they do on SQLite; tokio-postgres is asynchronous. So a [`Postgres`] keeps a small
//! runtime of its own (one thread, `gatebot-postgres`) that drives every connection's
//! socket, and a store call waits for each statement's answer on its own thread
//! (`futures_executor::block_on`: a query's future only waits for the connection
//! task's reply, so it needs no runtime, and this works from any thread, an async one
//! included, as a blocking SQLite call does).
//!
//! What differs from SQLite, and is handled here so the table files stay one:
//! - parameters are written `?N` in the table files and sent as `$N` ([`numbered`]);
//! - each parameter's type is sent with the statement (a number is `bigint`, text is
//!   `text`, a real is `double precision`, a `None` what its `Some` would be), so
//!   `?1 IS NULL` and friends parse; only a NULL written as such is left to the server;
//! - results are read as SQLite would give them: a count or sum (`bigint`,
//!   `numeric`), a comparison (`boolean`) and a yes/no column (`bigint` 0/1) all read
//!   as numbers or yes/no ([`Column`](super::sql::Column)'s `from_pg`);
//! - prepared statements are kept per connection, keyed by text and parameter types.
//!
//! Connections are not pooled here: the store keeps them as it keeps SQLite's (one
//! writer behind its lock, idle readers), see `super::Backend`.

use std::cell::RefCell;
use std::collections::HashMap;
use std::error::Error as StdError;
use std::time::Duration;

use tokio_postgres::tls::{MakeTlsConnect, TlsConnect};
use tokio_postgres::types::{FromSql, ToSql, Type};
use tokio_postgres::{Client, NoTls, Socket, Statement};

use super::{Result, StoreError};

/// How long a connection attempt may take before the call fails (the node then
/// answers 503, and tries again at the next call).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// A transaction left open this long by a node that stopped (frozen, or its process
/// suspended) is ended by the server, which lets go of the cluster's writer lock: no
/// node's transaction waits that long between two statements.
const IDLE_IN_TRANSACTION: &str = "30s";

/// The PostgreSQL database the store is on: how to connect, and the runtime that
/// drives the connections.
pub(super) struct Postgres {
    config: tokio_postgres::Config,
    /// With `sslmode=require`: every connection encrypted, the server's certificate
    /// verified.
    tls: Option<super::pg_tls::Tls>,
    /// Always `Some` until dropped (then shut down without waiting: a store may be
    /// dropped on an async thread, where waiting for a runtime is refused).
    runtime: Option<tokio::runtime::Runtime>,
    /// The database named for people: user, host, port and database, never the
    /// password.
    shown: String,
}

impl std::fmt::Debug for Postgres {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.shown)
    }
}

impl Postgres {
    /// The database at `url` (`postgres://USER@HOST[:PORT]/DB`), with `password` if
    /// given (a password in the URL itself is refused: it would end up in logs and
    /// `ps`).
    pub(super) fn new(url: &str, password: Option<&str>) -> Result<Postgres> {
        let (url, root) = without_root_cert(url);
        let mut config: tokio_postgres::Config = url
            .parse()
            .map_err(|e| StoreError::File(format!("store.url is not a PostgreSQL URL: {e}")))?;
        let tls = match config.get_ssl_mode() {
            tokio_postgres::config::SslMode::Require => Some(
                super::pg_tls::Tls::new(root.as_deref().map(std::path::Path::new))
                    .map_err(|e| StoreError::File(format!("store.url: {e}")))?,
            ),
            _ if root.is_some() => {
                return Err(StoreError::File(
                    "store.url names an sslrootcert but not sslmode=require: add \
                     sslmode=require to encrypt the connection and check the server's \
                     certificate against it"
                        .into(),
                ))
            }
            _ => None,
        };
        if config.get_password().is_some() {
            return Err(StoreError::File(
                "store.url must not hold the password: put it in the file store.password_file \
                 names (or a systemd credential)"
                    .into(),
            ));
        }
        if let Some(p) = password {
            config.password(p);
        }
        config
            .connect_timeout(CONNECT_TIMEOUT)
            .keepalives(true)
            .keepalives_idle(Duration::from_secs(30))
            .application_name("gatebot");
        let shown = shown(&config);
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("gatebot-postgres")
            .enable_all()
            .build()
            .map_err(|e| StoreError::File(format!("cannot start PostgreSQL's runtime: {e}")))?;
        Ok(Postgres {
            config,
            tls,
            runtime: Some(runtime),
            shown,
        })
    }

    /// The database, for people (no password).
    pub(super) fn shown(&self) -> &str {
        &self.shown
    }

    /// A new connection, set up for the store.
    pub(super) fn connect(&self) -> Result<PgConn> {
        let (config, shown) = (self.config.clone(), self.shown.clone());
        let client = match self.tls.clone() {
            None => self.connecting(connected(config, NoTls, shown)),
            Some(tls) => self.connecting(connected(config, tls, shown)),
        }?;
        let conn = PgConn {
            client,
            statements: RefCell::default(),
        };
        conn.batch(&format!(
            "SET idle_in_transaction_session_timeout = '{IDLE_IN_TRANSACTION}'; \
             SET TIME ZONE 'UTC'"
        ))?;
        Ok(conn)
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

impl Postgres {
    /// A connection of its own that `LISTEN`s on `channel`: the receiver gets a `()` for
    /// notifications (several arriving at once may come as one) and ends when the
    /// connection does. Keep the [`Listening`] for as long as you listen.
    pub(super) fn listen(&self, channel: &str) -> Result<Listening> {
        let config = self.config.clone();
        let listen = format!("LISTEN {channel}");
        let (heard, rx) = tokio::sync::mpsc::channel(1);
        let client = match self.tls.clone() {
            None => self.connecting(listening(config, NoTls, listen, heard)),
            Some(tls) => self.connecting(listening(config, tls, listen, heard)),
        }?;
        Ok(Listening {
            _client: client,
            heard: rx,
        })
    }
}

/// A connection made with `tls` (plain, or [`super::pg_tls::Tls`]), driven on a task of
/// its own that says when it ends (`shown`: the database, for the log).
async fn connected<T>(
    config: tokio_postgres::Config,
    tls: T,
    shown: String,
) -> std::result::Result<Client, tokio_postgres::Error>
where
    T: MakeTlsConnect<Socket>,
    T::Stream: Send + 'static,
    T::TlsConnect: Send,
    <T::TlsConnect as TlsConnect<Socket>>::Future: Send,
{
    let (client, connection) = config.connect(tls).await?;
    tokio::spawn(async move {
        if let Err(e) = connection.await {
            tracing::warn!(database = %shown, error = %e, "PostgreSQL connection ended");
        }
    });
    Ok(client)
}

/// A connection made with `tls` that has run `listen`: each notification it gets is a
/// `()` on `heard`.
async fn listening<T>(
    config: tokio_postgres::Config,
    tls: T,
    listen: String,
    heard: tokio::sync::mpsc::Sender<()>,
) -> std::result::Result<Client, tokio_postgres::Error>
where
    T: MakeTlsConnect<Socket>,
    T::Stream: Send + 'static,
    T::TlsConnect: Send,
    <T::TlsConnect as TlsConnect<Socket>>::Future: Send,
{
    use futures_util::StreamExt;
    let (client, mut connection) = config.connect(tls).await?;
    tokio::spawn(async move {
        let mut messages = futures_util::stream::poll_fn(move |cx| connection.poll_message(cx));
        while let Some(Ok(message)) = messages.next().await {
            if let tokio_postgres::AsyncMessage::Notification(_) = message {
                // Full: a wake-up is already waiting, which covers this one.
                let _ = heard.try_send(());
            }
        }
    });
    client.batch_execute(&listen).await?;
    Ok(client)
}

/// `url` without its `sslrootcert` parameter (which tokio-postgres does not take), and
/// that parameter's value: the certificate authority's PEM file.
fn without_root_cert(url: &str) -> (String, Option<String>) {
    let Some((base, query)) = url.split_once('?') else {
        return (url.to_string(), None);
    };
    let mut root = None;
    let kept: Vec<&str> = query
        .split('&')
        .filter(|pair| match pair.split_once('=') {
            Some(("sslrootcert", value)) => {
                root = Some(
                    url::form_urlencoded::parse(format!("v={value}").as_bytes())
                        .next()
                        .map_or_else(|| value.to_string(), |(_, v)| v.into_owned()),
                );
                false
            }
            _ => true,
        })
        .collect();
    let url = if kept.is_empty() {
        base.to_string()
    } else {
        format!("{base}?{}", kept.join("&"))
    };
    (url, root)
}

impl Postgres {
    /// Runs `connect` (which connects, and spawns what drives the connection) on the
    /// store's runtime, and waits for the client it makes.
    fn connecting(
        &self,
        connect: impl std::future::Future<Output = std::result::Result<Client, tokio_postgres::Error>>
            + Send
            + 'static,
    ) -> Result<Client> {
        let runtime = self.runtime.as_ref().expect("kept until dropped");
        futures_executor::block_on(runtime.spawn(connect))
            .map_err(|e| StoreError::File(format!("connecting to PostgreSQL: {e}")))?
            .map_err(StoreError::from)
    }
}

/// A connection listening for notifications ([`Postgres::listen`]).
pub struct Listening {
    /// Dropping it ends the connection.
    _client: Client,
    /// A `()` per wake-up; `None` once the connection is gone.
    pub heard: tokio::sync::mpsc::Receiver<()>,
}

/// `user@host:port/db` of a config, for logs and errors.
fn shown(config: &tokio_postgres::Config) -> String {
    use tokio_postgres::config::Host;
    let host = match config.get_hosts().first() {
        Some(Host::Tcp(h)) => h.clone(),
        Some(Host::Unix(p)) => p.display().to_string(),
        None => "localhost".into(),
    };
    let port = config.get_ports().first().copied().unwrap_or(5432);
    format!(
        "{}@{host}:{port}/{}",
        config.get_user().unwrap_or("(user)"),
        config.get_dbname().unwrap_or("(database)")
    )
}

/// One connection to the database, with its prepared statements.
pub(super) struct PgConn {
    client: Client,
    /// Prepared statements by parameter types and text.
    statements: RefCell<HashMap<String, Statement>>,
}

impl PgConn {
    /// Whether the connection is gone (the server restarted, the network dropped it):
    /// the store then opens a new one.
    pub(super) fn is_closed(&self) -> bool {
        self.client.is_closed()
    }

    /// Runs one or more statements without parameters (`BEGIN`, `COMMIT`, …).
    pub(super) fn batch(&self, sql: &str) -> Result<()> {
        Ok(futures_executor::block_on(self.client.batch_execute(sql))?)
    }

    /// The statement for `sql` with these parameters' types: kept from an earlier call
    /// when `cached`.
    fn statement(&self, sql: &str, params: &[impl Bind], cached: bool) -> Result<Statement> {
        let types: Vec<Type> = params.iter().map(Bind::sent_as).collect();
        if !cached {
            return self.prepare(sql, &types);
        }
        let mut key = String::with_capacity(types.len() + 1 + sql.len());
        key.extend(types.iter().map(|t| match *t {
            Type::INT8 => 'i',
            Type::FLOAT8 => 'r',
            Type::TEXT => 't',
            _ => 'n',
        }));
        key.push('\0');
        key.push_str(sql);
        if let Some(s) = self.statements.borrow().get(&key) {
            return Ok(s.clone());
        }
        let s = self.prepare(sql, &types)?;
        self.statements.borrow_mut().insert(key, s.clone());
        Ok(s)
    }

    /// Prepares `sql` for parameters of these types. A statement the server refuses
    /// is a mistake in gatebot: the log names it (its text holds no values).
    fn prepare(&self, sql: &str, types: &[Type]) -> Result<Statement> {
        let text = numbered(sql);
        futures_executor::block_on(self.client.prepare_typed(&text, types)).map_err(|e| {
            if let Some(db) = e.as_db_error() {
                tracing::error!(error = db.message(), statement = %text, "PostgreSQL refused a statement");
                #[cfg(test)]
                eprintln!(
                    "PostgreSQL refused a statement: {:?}\n{text}",
                    e.as_db_error().map(|d| d.message())
                );
            }
            e.into()
        })
    }

    /// The rows of a query.
    pub(super) fn query(
        &self,
        sql: &str,
        params: &[impl Bind],
        cached: bool,
    ) -> Result<Vec<tokio_postgres::Row>> {
        let statement = self.statement(sql, params, cached)?;
        let params: Vec<&(dyn ToSql + Sync)> =
            params.iter().map(|p| p as &(dyn ToSql + Sync)).collect();
        Ok(futures_executor::block_on(
            self.client.query(&statement, &params),
        )?)
    }

    /// Runs a statement; how many rows it changed.
    pub(super) fn execute(&self, sql: &str, params: &[impl Bind], cached: bool) -> Result<usize> {
        let statement = self.statement(sql, params, cached)?;
        let params: Vec<&(dyn ToSql + Sync)> =
            params.iter().map(|p| p as &(dyn ToSql + Sync)).collect();
        let n = futures_executor::block_on(self.client.execute(&statement, &params))?;
        Ok(usize::try_from(n).unwrap_or(usize::MAX))
    }
}

/// What went wrong, in PostgreSQL's own words when it said something ("db error" alone
/// names nothing).
pub(super) fn words(e: &tokio_postgres::Error) -> String {
    if let Some(db) = e.as_db_error() {
        return format!("{} ({})", db.message(), db.code().code());
    }
    // Its causes too: "error performing TLS handshake" alone does not say which.
    let mut said = e.to_string();
    let mut cause = StdError::source(e);
    while let Some(c) = cause {
        said = format!("{said}: {c}");
        cause = c.source();
    }
    if said.contains("TLS handshake") {
        said.push_str(
            ". The server's certificate must be for the host store.url names and signed by an \
             authority this machine trusts, or by the one store.url names with \
             sslrootcert=/path/to/ca.pem",
        );
    }
    said
}

/// Whether `e` means the server cannot be reached or is going away (as opposed to a
/// statement it refused): the connection is gone, it could not be made, or the server
/// is shutting down or not yet accepting connections.
pub(super) fn unreachable(e: &tokio_postgres::Error) -> bool {
    use tokio_postgres::error::SqlState;
    match e.code() {
        Some(code) => {
            code.code().starts_with("08")
                || [
                    SqlState::ADMIN_SHUTDOWN,
                    SqlState::CRASH_SHUTDOWN,
                    SqlState::CANNOT_CONNECT_NOW,
                    SqlState::TOO_MANY_CONNECTIONS,
                ]
                .contains(code)
        }
        // No SQL state: an I/O error, a closed connection, a timeout connecting.
        None => e.as_db_error().is_none(),
    }
}

/// A parameter as PostgreSQL takes it: its value, and the type it is sent as (the
/// store's `Value`s, in `sql`).
pub(super) trait Bind: ToSql + Sync {
    fn sent_as(&self) -> Type;
}

impl Bind for i64 {
    fn sent_as(&self) -> Type {
        Type::INT8
    }
}

/// `sql` with SQLite's `?N` (and bare `?`) parameters written as PostgreSQL's `$N`;
/// question marks inside quoted text and identifiers are left alone.
pub(super) fn numbered(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len() + 8);
    let mut chars = sql.chars().peekable();
    let mut quote: Option<char> = None;
    let mut last = 0_u32;
    while let Some(c) = chars.next() {
        if let Some(q) = quote {
            out.push(c);
            if c == q {
                quote = None;
            }
            continue;
        }
        match c {
            '\'' | '"' => {
                quote = Some(c);
                out.push(c);
            }
            '?' => {
                let mut digits = String::new();
                while let Some(d) = chars.peek().copied().filter(char::is_ascii_digit) {
                    digits.push(d);
                    chars.next();
                }
                let n = if digits.is_empty() {
                    last + 1
                } else {
                    digits.parse().unwrap_or(u32::MAX)
                };
                last = last.max(n);
                out.push('$');
                out.push_str(&n.to_string());
            }
            _ => out.push(c),
        }
    }
    out
}

pub(super) type BoxError = Box<dyn StdError + Sync + Send>;

/// Column `i` of `row` as a `T`, or `None` for a NULL of any type (SQLite's NULL has
/// none; PostgreSQL's `SELECT NULL` is text, which a number's reader would refuse).
pub(super) fn column<T>(row: &tokio_postgres::Row, i: usize) -> Result<Option<T>>
where
    for<'a> T: FromSql<'a>,
{
    match row.try_get::<_, Option<T>>(i) {
        Ok(v) => Ok(v),
        Err(e) => match row.try_get::<_, Null>(i) {
            Ok(Null(true)) => Ok(None),
            _ => Err(e.into()),
        },
    }
}

/// Whether a value is NULL, whatever its type.
struct Null(bool);

impl<'a> FromSql<'a> for Null {
    fn from_sql(_: &Type, _: &'a [u8]) -> std::result::Result<Null, BoxError> {
        Ok(Null(false))
    }

    fn from_sql_null(_: &Type) -> std::result::Result<Null, BoxError> {
        Ok(Null(true))
    }

    fn accepts(_: &Type) -> bool {
        true
    }
}

/// A whole number as SQLite hands it back, from whichever type PostgreSQL gives: an
/// integer, a `numeric` (a `SUM` of `bigint`s), or a `boolean` (a comparison) as 0/1.
pub(super) struct Int(pub(super) i64);

impl<'a> FromSql<'a> for Int {
    fn from_sql(ty: &Type, raw: &'a [u8]) -> std::result::Result<Int, BoxError> {
        Ok(Int(match *ty {
            Type::INT8 => i64::from_sql(ty, raw)?,
            Type::INT4 => i64::from(i32::from_sql(ty, raw)?),
            Type::INT2 => i64::from(i16::from_sql(ty, raw)?),
            Type::BOOL => i64::from(bool::from_sql(ty, raw)?),
            Type::NUMERIC => numeric_integer(raw)?,
            _ => return Err(format!("a {ty} is not a whole number").into()),
        }))
    }

    fn accepts(ty: &Type) -> bool {
        matches!(
            *ty,
            Type::INT8 | Type::INT4 | Type::INT2 | Type::BOOL | Type::NUMERIC
        )
    }
}

/// A real number, from a float, an integer or a `numeric` (an `AVG`).
pub(super) struct Real(pub(super) f64);

impl<'a> FromSql<'a> for Real {
    #[allow(clippy::cast_precision_loss)]
    fn from_sql(ty: &Type, raw: &'a [u8]) -> std::result::Result<Real, BoxError> {
        Ok(Real(match *ty {
            Type::FLOAT8 => f64::from_sql(ty, raw)?,
            Type::FLOAT4 => f64::from(f32::from_sql(ty, raw)?),
            Type::NUMERIC => numeric_real(raw)?,
            _ => Int::from_sql(ty, raw)?.0 as f64,
        }))
    }

    fn accepts(ty: &Type) -> bool {
        matches!(*ty, Type::FLOAT8 | Type::FLOAT4) || Int::accepts(ty)
    }
}

/// A `numeric`'s parts in its binary form: base-10000 digits, the first one's weight
/// (a power of 10000) and the sign.
fn numeric_parts(raw: &[u8]) -> std::result::Result<(Vec<i64>, i64, bool), BoxError> {
    let word = |i: usize| -> std::result::Result<u16, BoxError> {
        raw.get(i..i + 2)
            .map(|b| u16::from_be_bytes([b[0], b[1]]))
            .ok_or_else(|| "a numeric cut short".into())
    };
    let count = usize::from(word(0)?);
    #[allow(clippy::cast_possible_wrap)]
    let weight = i64::from(word(2)? as i16);
    let sign = word(4)?;
    if sign == 0xC000 {
        return Err("a numeric that is not a number".into());
    }
    let digits = (0..count)
        .map(|k| word(8 + 2 * k).map(i64::from))
        .collect::<std::result::Result<_, _>>()?;
    Ok((digits, weight, sign == 0x4000))
}

/// A `numeric`'s whole part (a `SUM` of whole numbers has no other).
fn numeric_integer(raw: &[u8]) -> std::result::Result<i64, BoxError> {
    let (digits, weight, negative) = numeric_parts(raw)?;
    let mut n: i64 = 0;
    for (k, d) in digits.iter().enumerate() {
        let power = weight - i64::try_from(k)?;
        if power < 0 {
            break;
        }
        let place = 10_000_i64
            .checked_pow(u32::try_from(power)?)
            .ok_or("a numeric too large for 64 bits")?;
        n = d
            .checked_mul(place)
            .and_then(|v| n.checked_add(v))
            .ok_or("a numeric too large for 64 bits")?;
    }
    Ok(if negative { -n } else { n })
}

fn numeric_real(raw: &[u8]) -> std::result::Result<f64, BoxError> {
    let (digits, weight, negative) = numeric_parts(raw)?;
    let mut x = 0.0_f64;
    for (k, d) in digits.iter().enumerate() {
        let power = i32::try_from(weight - i64::try_from(k)?)?;
        #[allow(clippy::cast_precision_loss)]
        let d = *d as f64;
        x += d * 10_000_f64.powi(power);
    }
    Ok(if negative { -x } else { x })
}

/// The migrations of `migrations/postgres/`, in order (the schema, a file per change).
const MIGRATIONS: &[(i64, &str)] = &[
    (
        1,
        include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/migrations/postgres/0001_baseline.sql"
        )),
    ),
    (
        2,
        include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/migrations/postgres/0002_nodes.sql"
        )),
    ),
];

/// A statement's parameters when it has none.
const NO_PARAMS: &[i64] = &[];

/// The session lock nodes take to bring the schema up to date one at a time (the
/// writer's transaction lock is another number: see `sql`).
const MIGRATING: i64 = 0x6761_7465_626f_7401;

/// Brings the database's schema up to date, one node at a time; refuses a database
/// whose text does not sort byte by byte, or one a newer gatebot made.
pub(super) fn migrate(conn: &PgConn, shown: &str) -> Result<()> {
    let collation = conn.query(
        "SELECT datcollate FROM pg_database WHERE datname = current_database()",
        NO_PARAMS,
        false,
    )?;
    let collation: String = collation
        .first()
        .map(|r| r.try_get(0))
        .transpose()?
        .unwrap_or_default();
    if collation != "C" && collation != "POSIX" {
        return Err(StoreError::File(format!(
            "the PostgreSQL database {shown} sorts text as {collation:?}; gatebot needs \
             byte order, as SQLite's. Create it with: CREATE DATABASE … TEMPLATE template0 \
             LC_COLLATE 'C' LC_CTYPE 'C'"
        )));
    }
    conn.batch(&format!("SELECT pg_advisory_lock({MIGRATING})"))?;
    let applied = apply(conn);
    let unlocked = conn.batch(&format!("SELECT pg_advisory_unlock({MIGRATING})"));
    applied.and(unlocked)
}

fn apply(conn: &PgConn) -> Result<()> {
    conn.batch(
        "CREATE TABLE IF NOT EXISTS gatebot_schema (\
           version bigint NOT NULL PRIMARY KEY, \
           applied_at bigint NOT NULL)",
    )?;
    let rows = conn.query("SELECT MAX(version) FROM gatebot_schema", NO_PARAMS, false)?;
    let at: i64 = rows
        .first()
        .and_then(|r| r.try_get::<_, Option<i64>>(0).transpose())
        .transpose()?
        .unwrap_or(0);
    let newest = MIGRATIONS.last().map_or(0, |m| m.0);
    if at > newest {
        return Err(StoreError::File(format!(
            "the PostgreSQL database's schema is version {at}, newer than this gatebot's \
             ({newest}): a newer gatebot has used it. Run that version"
        )));
    }
    for (version, sql) in MIGRATIONS.iter().filter(|m| m.0 > at) {
        conn.batch("BEGIN")?;
        let done = conn.batch(sql).and_then(|()| {
            conn.execute(
                "INSERT INTO gatebot_schema (version, applied_at) \
                 VALUES (?1, (extract(epoch FROM clock_timestamp()) * 1000)::bigint)",
                &[*version],
                false,
            )
            .map(drop)
        });
        match done {
            Ok(()) => conn.batch("COMMIT")?,
            Err(e) => {
                let _ = conn.batch("ROLLBACK");
                return Err(e);
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sslrootcert_is_taken_out_of_the_url_and_asks_for_sslmode_require() {
        let (url, root) =
            without_root_cert("postgres://g@db/g?sslmode=require&sslrootcert=%2Fetc%2Fca.pem");
        assert_eq!(url, "postgres://g@db/g?sslmode=require");
        assert_eq!(root.as_deref(), Some("/etc/ca.pem"));
        let (url, root) = without_root_cert("postgres://g@db/g?sslrootcert=/ca.pem");
        assert_eq!(
            (url.as_str(), root.as_deref()),
            ("postgres://g@db/g", Some("/ca.pem"))
        );
        assert_eq!(
            without_root_cert("postgres://g@db/g"),
            ("postgres://g@db/g".to_string(), None)
        );
        let refused = Postgres::new("postgres://g@db/g?sslrootcert=/ca.pem", None).unwrap_err();
        assert!(refused.to_string().contains("sslmode=require"), "{refused}");
        let missing = Postgres::new(
            "postgres://g@db/g?sslmode=require&sslrootcert=/nonexistent.pem",
            None,
        )
        .unwrap_err();
        assert!(
            missing.to_string().contains("sslrootcert /nonexistent.pem"),
            "{missing}"
        );
        // Plain unless asked: no certificate needed.
        assert!(Postgres::new("postgres://g@db/g?sslmode=prefer", None).is_ok());
        assert!(Postgres::new("postgres://g@db/g?sslmode=require", None).is_ok());
    }

    #[test]
    fn parameters_are_numbered_outside_quotes() {
        assert_eq!(
            numbered("SELECT ?1, ?12, '?1', \"a?\" FROM t WHERE x = ? AND y = ?"),
            "SELECT $1, $12, '?1', \"a?\" FROM t WHERE x = $13 AND y = $14"
        );
        assert_eq!(
            numbered("a = 'it''s ?' AND b = ?2"),
            "a = 'it''s ?' AND b = $2"
        );
    }

    fn numeric(digits: &[u16], weight: i16, negative: bool) -> Vec<u8> {
        let mut raw = Vec::new();
        let len = u16::try_from(digits.len()).unwrap();
        raw.extend(len.to_be_bytes());
        raw.extend(weight.to_be_bytes());
        raw.extend(if negative { 0x4000_u16 } else { 0 }.to_be_bytes());
        raw.extend(0_u16.to_be_bytes());
        for d in digits {
            raw.extend(d.to_be_bytes());
        }
        raw
    }

    #[test]
    fn numerics_read_as_sqlite_would_give_them() {
        // 123456789 = 1|2345|6789 in base 10000, weight 2.
        assert_eq!(
            numeric_integer(&numeric(&[1, 2345, 6789], 2, false)).unwrap(),
            123_456_789
        );
        assert_eq!(numeric_integer(&numeric(&[42], 0, true)).unwrap(), -42);
        assert_eq!(numeric_integer(&numeric(&[], 0, false)).unwrap(), 0);
        // 12.5 = 12|5000, weight 0: the whole part for an integer, all of it for a real.
        assert_eq!(
            numeric_integer(&numeric(&[12, 5000], 0, false)).unwrap(),
            12
        );
        assert!((numeric_real(&numeric(&[12, 5000], 0, false)).unwrap() - 12.5).abs() < 1e-9);
        // 10^20 does not fit.
        assert!(numeric_integer(&numeric(&[1], 5, false)).is_err());
        assert!(numeric_integer(&[0, 1]).is_err());
    }
}
