//! The PostgreSQL schema (`migrations/postgres/`) against the SQLite one the daemon makes
//! (`migrations/sqlite/`, applied by the store itself): the same tables, columns, keys
//! and indexes, and triggers that do the same. On the throwaway cluster of
//! [`crate::pg_cluster`]; skipped, with one line, where PostgreSQL is not installed.
//!
//! What may differ is listed below, each with its reason; an entry that no longer
//! differs fails the test too, so the list stays true.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use regex::Regex;
use rusqlite::types::ValueRef;
use serde_json::{json, Value};
use tempfile::TempDir;

use crate::pg_cluster::{self, Database};

/// SQLite tables PostgreSQL has no counterpart of: the history's full-text index. FTS5
/// is SQLite's own (a virtual table and the shadow tables it keeps its index in), and so
/// is the bookkeeping that keeps it in step with the requests (`store::history`). On
/// PostgreSQL the search will read `approvals` through a trigram index, which PostgreSQL
/// keeps up to date itself; it comes with the search's own SQL.
const SQLITE_ONLY_TABLES: &[&str] = &[
    "approvals_search",
    "approvals_search_config",
    "approvals_search_data",
    "approvals_search_docsize",
    "approvals_search_idx",
    "approvals_search_stale",
    "approvals_search_state",
];

/// SQLite triggers without a PostgreSQL counterpart: the one marking indexed requests
/// stale for the full-text index above.
const SQLITE_ONLY_TRIGGERS: &[&str] = &["approvals_search_stale"];

/// PostgreSQL triggers SQLite has no need of: SQLite has no TRUNCATE (its DELETE without
/// WHERE runs the row triggers), PostgreSQL's TRUNCATE runs no row trigger.
const PG_ONLY_TRIGGERS: &[&str] = &[
    "audit_is_append_only_truncate",
    "audit_head_is_kept_truncate",
];

/// Tables whose SQLite rowid the store reads (ordering, paging, naming one row): on
/// PostgreSQL an explicit `rowid` identity column, last, with a unique index of its own.
const ROWID_TABLES: &[&str] = &["approvals", "cards", "subjects", "task_questions", "tasks"];

/// A column as both engines can describe it.
#[derive(Debug, PartialEq)]
struct Column {
    name: String,
    /// PostgreSQL's name for the type; on SQLite its declared type, until
    /// [`take_allowed_differences`] maps it ([`pg_type`]).
    ty: String,
    not_null: bool,
    default: Option<String>,
}

/// An index made by `CREATE INDEX`, by name.
#[derive(Debug, PartialEq)]
struct Index {
    table: String,
    columns: Vec<String>,
    unique: bool,
    partial: bool,
}

/// (table, columns, referenced table, referenced columns).
type ForeignKey = (String, Vec<String>, String, Vec<String>);

#[derive(Debug, Default)]
struct Schema {
    /// Every table's columns, in order.
    tables: BTreeMap<String, Vec<Column>>,
    primary_keys: BTreeMap<String, Vec<String>>,
    /// UNIQUE constraints (column or table): (table, columns).
    unique: BTreeSet<(String, Vec<String>)>,
    indexes: BTreeMap<String, Index>,
    foreign_keys: BTreeSet<ForeignKey>,
    /// How many CHECK constraints each table has.
    checks: BTreeMap<String, usize>,
    /// Trigger name → its table.
    triggers: BTreeMap<String, String>,
}

/// SQLite's declared column types, as PostgreSQL names what the baseline uses for them.
/// SQLite's INTEGER is 64-bit: `bigint`, never `integer` (32-bit).
fn pg_type(sqlite: &str) -> &'static str {
    match sqlite {
        "INTEGER" => "bigint",
        "TEXT" => "text",
        "REAL" => "double precision",
        other => panic!("a SQLite column type the map does not know: {other:?}"),
    }
}

/// A fresh SQLite database made by the store itself (every migration applied), and a
/// plain connection to it.
fn fresh_sqlite() -> (TempDir, rusqlite::Connection) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("gatebot.db");
    drop(gatebot::bench_internals::Store::open(&path).unwrap());
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.pragma_update(None, "foreign_keys", "ON").unwrap();
    (dir, conn)
}

/// A fresh PostgreSQL database with every file of `migrations/postgres/` applied in order.
fn fresh_postgres() -> Option<Database> {
    let db = pg_cluster::database()?;
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("migrations/postgres");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "sql"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no migrations in {}", dir.display());
    for file in &files {
        db.apply(file);
    }
    Some(db)
}

fn sqlite_schema(conn: &rusqlite::Connection) -> Schema {
    let strings = |sql: &str| -> Vec<Vec<Option<String>>> {
        let mut stmt = conn.prepare(sql).unwrap();
        let n = stmt.column_count();
        stmt.query_map([], |r| {
            (0..n)
                .map(|i| {
                    Ok(match r.get_ref(i)? {
                        ValueRef::Null => None,
                        ValueRef::Integer(v) => Some(v.to_string()),
                        ValueRef::Text(t) => Some(String::from_utf8_lossy(t).into_owned()),
                        other => panic!("{other:?} in {sql}"),
                    })
                })
                .collect()
        })
        .unwrap()
        .map(Result::unwrap)
        .collect()
    };
    let one = |v: &Option<String>| v.clone().unwrap_or_default();
    let check = Regex::new(r"\bCHECK\s*\(").unwrap();
    let mut schema = Schema::default();
    for table in strings(
        "SELECT name, sql FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'",
    ) {
        let (name, sql) = (one(&table[0]), one(&table[1]));
        // A virtual table's columns cannot be read without its module's options.
        if sql.starts_with("CREATE VIRTUAL TABLE") {
            schema.tables.insert(name, Vec::new());
            continue;
        }
        let mut columns = Vec::new();
        let mut key = Vec::new();
        for c in strings(&format!(
            "SELECT name, type, \"notnull\", dflt_value, pk FROM pragma_table_info('{name}')"
        )) {
            let pk: usize = one(&c[4]).parse().unwrap();
            if pk > 0 {
                key.push((pk, one(&c[0])));
            }
            columns.push(Column {
                name: one(&c[0]),
                ty: one(&c[1]),
                // SQLite lets a primary key column that is not an INTEGER PRIMARY KEY hold
                // NULL, unless it says NOT NULL (a quirk it keeps for old databases); the
                // store never writes one, and PostgreSQL's keys are NOT NULL.
                not_null: one(&c[2]) == "1" || pk > 0,
                default: c[3].clone(),
            });
        }
        key.sort();
        if !key.is_empty() {
            schema
                .primary_keys
                .insert(name.clone(), key.into_iter().map(|(_, c)| c).collect());
        }
        for i in strings(&format!(
            "SELECT name, \"unique\", origin, partial FROM pragma_index_list('{name}')"
        )) {
            let index = one(&i[0]);
            let columns: Vec<String> = strings(&format!(
                "SELECT name FROM pragma_index_info('{index}') ORDER BY seqno"
            ))
            .iter()
            .map(|c| one(&c[0]))
            .collect();
            match one(&i[2]).as_str() {
                "pk" => {}
                "u" => {
                    schema.unique.insert((name.clone(), columns));
                }
                _ => {
                    schema.indexes.insert(
                        index,
                        Index {
                            table: name.clone(),
                            columns,
                            unique: one(&i[1]) == "1",
                            partial: one(&i[3]) == "1",
                        },
                    );
                }
            }
        }
        let mut fks: BTreeMap<String, ForeignKey> = BTreeMap::new();
        for f in strings(&format!(
            "SELECT id, \"table\", \"from\", \"to\" FROM pragma_foreign_key_list('{name}') \
             ORDER BY id, seq"
        )) {
            let fk = fks
                .entry(one(&f[0]))
                .or_insert_with(|| (name.clone(), Vec::new(), one(&f[1]), Vec::new()));
            fk.1.push(one(&f[2]));
            fk.3.push(one(&f[3]));
        }
        schema.foreign_keys.extend(fks.into_values());
        let checks = check.find_iter(&sql).count();
        if checks > 0 {
            schema.checks.insert(name.clone(), checks);
        }
        schema.tables.insert(name, columns);
    }
    for t in strings("SELECT name, tbl_name FROM sqlite_master WHERE type = 'trigger'") {
        schema.triggers.insert(one(&t[0]), one(&t[1]));
    }
    schema
}

fn postgres_schema(db: &Database) -> Schema {
    let text = |v: &Value| v.as_str().unwrap().to_string();
    let texts = |v: &Value| -> Vec<String> { v.as_array().unwrap().iter().map(text).collect() };
    let mut schema = Schema::default();
    for c in db.rows(
        "SELECT c.table_name AS tbl, c.column_name AS name, c.ordinal_position AS position, \
                c.data_type AS ty, c.is_nullable = 'NO' AS not_null, c.column_default AS dflt \
         FROM information_schema.columns c \
         JOIN information_schema.tables t USING (table_schema, table_name) \
         WHERE c.table_schema = 'public' AND t.table_type = 'BASE TABLE' \
         ORDER BY c.table_name, c.ordinal_position",
    ) {
        schema
            .tables
            .entry(text(&c["tbl"]))
            .or_default()
            .push(Column {
                name: text(&c["name"]),
                ty: text(&c["ty"]),
                not_null: c["not_null"] == true,
                // `'high'::text` is SQLite's `'high'`.
                default: c["dflt"]
                    .as_str()
                    .map(|d| d.trim_end_matches("::text").to_string()),
            });
    }
    // Every index; those behind a PRIMARY KEY or UNIQUE constraint are the constraint.
    for i in db.rows(
        "SELECT t.relname AS tbl, i.relname AS name, x.indisunique AS uniq, \
                x.indisprimary AS pk, x.indpred IS NOT NULL AS partial, \
                EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conindid = x.indexrelid \
                        AND k.conrelid = t.oid AND k.contype IN ('p', 'u')) AS constraint_, \
                array(SELECT a.attname FROM unnest(x.indkey::int2[]) WITH ORDINALITY k(n, o) \
                      JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = k.n \
                      ORDER BY k.o) AS cols \
         FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid \
         JOIN pg_class t ON t.oid = x.indrelid \
         JOIN pg_namespace s ON s.oid = t.relnamespace WHERE s.nspname = 'public'",
    ) {
        let (table, columns) = (text(&i["tbl"]), texts(&i["cols"]));
        if i["pk"] == true {
            schema.primary_keys.insert(table, columns);
        } else if i["constraint_"] == true {
            schema.unique.insert((table, columns));
        } else {
            schema.indexes.insert(
                text(&i["name"]),
                Index {
                    table,
                    columns,
                    unique: i["uniq"] == true,
                    partial: i["partial"] == true,
                },
            );
        }
    }
    let columns_of = |key: &str, table: &str| {
        format!(
            "array(SELECT a.attname FROM unnest({key}) WITH ORDINALITY k(n, o) \
             JOIN pg_attribute a ON a.attrelid = {table} AND a.attnum = k.n ORDER BY k.o)"
        )
    };
    for f in db.rows(&format!(
        "SELECT conrelid::regclass::text AS tbl, confrelid::regclass::text AS refs, \
                {} AS cols, {} AS ref_cols \
         FROM pg_constraint WHERE contype = 'f' AND connamespace = 'public'::regnamespace",
        columns_of("conkey", "conrelid"),
        columns_of("confkey", "confrelid"),
    )) {
        schema.foreign_keys.insert((
            text(&f["tbl"]),
            texts(&f["cols"]),
            text(&f["refs"]),
            texts(&f["ref_cols"]),
        ));
    }
    for c in db.rows(
        "SELECT conrelid::regclass::text AS tbl, count(*) AS n FROM pg_constraint \
         WHERE contype = 'c' AND connamespace = 'public'::regnamespace GROUP BY 1",
    ) {
        let n = c["n"].as_u64().unwrap() as usize;
        schema.checks.insert(text(&c["tbl"]), n);
    }
    for t in db.rows(
        "SELECT tgname AS name, tgrelid::regclass::text AS tbl FROM pg_trigger \
         WHERE NOT tgisinternal",
    ) {
        schema.triggers.insert(text(&t["name"]), text(&t["tbl"]));
    }
    schema
}

/// Takes the listed differences out of both descriptions, failing on any entry that is
/// no longer a difference (so the lists above stay true).
fn take_allowed_differences(lite: &mut Schema, pg: &mut Schema) {
    for table in SQLITE_ONLY_TABLES {
        assert!(
            lite.tables.remove(*table).is_some(),
            "{table} is listed as SQLite-only but SQLite has no such table"
        );
        assert!(
            !pg.tables.contains_key(*table),
            "{table} is on PostgreSQL too"
        );
        lite.primary_keys.remove(*table);
        lite.checks.remove(*table);
        lite.unique.retain(|(t, _)| t.as_str() != *table);
        lite.indexes.retain(|_, i| i.table != *table);
    }
    for trigger in SQLITE_ONLY_TRIGGERS {
        assert!(
            lite.triggers.remove(*trigger).is_some(),
            "no SQLite trigger {trigger}"
        );
        assert!(
            !pg.triggers.contains_key(*trigger),
            "{trigger} is on PostgreSQL too"
        );
    }
    for trigger in PG_ONLY_TRIGGERS {
        assert!(
            pg.triggers.remove(*trigger).is_some(),
            "no PostgreSQL trigger {trigger}"
        );
        assert!(
            !lite.triggers.contains_key(*trigger),
            "{trigger} is on SQLite too"
        );
    }
    for column in lite.tables.values_mut().flatten() {
        column.ty = pg_type(&column.ty).to_string();
    }
    for table in ROWID_TABLES {
        let columns = pg.tables.get_mut(*table).unwrap();
        let rowid = columns.pop().unwrap();
        assert_eq!(
            rowid,
            Column {
                name: "rowid".into(),
                ty: "bigint".into(),
                not_null: true,
                default: None,
            },
            "{table}'s last column on PostgreSQL",
        );
        let unique = (table.to_string(), vec!["rowid".to_string()]);
        assert!(
            pg.unique.remove(&unique),
            "{table}.rowid is not unique on PostgreSQL"
        );
    }
    // Every other table has no rowid column: the store reads no other table's rowid.
    for (table, columns) in &pg.tables {
        assert!(
            !columns.iter().any(|c| c.name == "rowid"),
            "{table} has a rowid column but is not in ROWID_TABLES"
        );
    }
}

#[test]
fn postgres_baseline_has_the_sqlite_schema() {
    let Some(db) = fresh_postgres() else { return };
    let (_dir, conn) = fresh_sqlite();
    let mut lite = sqlite_schema(&conn);
    let mut pg = postgres_schema(&db);
    take_allowed_differences(&mut lite, &mut pg);

    assert_eq!(
        lite.tables.keys().collect::<Vec<_>>(),
        pg.tables.keys().collect::<Vec<_>>(),
        "the same tables (SQLite, then PostgreSQL)"
    );
    for (table, columns) in &lite.tables {
        let theirs = &pg.tables[table];
        let names = |c: &[Column]| c.iter().map(|c| c.name.clone()).collect::<Vec<_>>();
        assert_eq!(
            names(columns),
            names(theirs),
            "{table}'s columns, in order (SQLite, then PostgreSQL)"
        );
        for (column, theirs) in columns.iter().zip(theirs) {
            assert_eq!(
                column, theirs,
                "{table}.{} (SQLite, then PostgreSQL)",
                column.name
            );
        }
    }
    assert_eq!(lite.primary_keys, pg.primary_keys, "primary keys");
    same("UNIQUE constraints", &lite.unique, &pg.unique);
    same(
        "indexes made by CREATE INDEX",
        &lite
            .indexes
            .iter()
            .map(|(n, i)| format!("{n}: {i:?}"))
            .collect(),
        &pg.indexes
            .iter()
            .map(|(n, i)| format!("{n}: {i:?}"))
            .collect(),
    );
    same("foreign keys", &lite.foreign_keys, &pg.foreign_keys);
    assert_eq!(lite.checks, pg.checks, "CHECK constraints per table");
    assert_eq!(lite.triggers, pg.triggers, "triggers and their tables");

    // The identity columns: the rowids and reminders' id, numbered by PostgreSQL; no
    // other (audit.seq above all: the store numbers it from the head, gapless).
    let identity: Vec<String> = db
        .rows(
            "SELECT table_name || '.' || column_name || ' ' || identity_generation AS c \
             FROM information_schema.columns \
             WHERE table_schema = 'public' AND is_identity = 'YES' ORDER BY 1",
        )
        .iter()
        .map(|r| r["c"].as_str().unwrap().to_string())
        .collect();
    let mut want: Vec<String> = ROWID_TABLES
        .iter()
        .map(|t| format!("{t}.rowid ALWAYS"))
        .chain(["reminders.id BY DEFAULT".to_string()])
        .collect();
    want.sort();
    assert_eq!(identity, want, "identity columns");
    assert_eq!(
        db.rows("SELECT 1 FROM pg_sequences").len(),
        ROWID_TABLES.len() + 1,
        "no sequence besides the identity columns'"
    );

    // What a new database holds: the audit head and the evidence's state, nothing else.
    for table in lite.tables.keys() {
        let want = sqlite_rows(&conn, &format!("SELECT * FROM {table}"));
        let mut have = db.rows(&format!("SELECT * FROM {table}"));
        for row in &mut have {
            row.as_object_mut().unwrap().remove("rowid");
        }
        assert_eq!(want, have, "a new database's {table}");
    }
    assert_eq!(
        db.rows("SELECT * FROM audit_head"),
        [
            json!({"id": 1, "seq": 0, "hash": null, "rows": 0, "legacy_rows": 0, "legacy_through": 0})
        ]
    );
}

/// Fails, saying what is only on either side, unless `lite` and `pg` are the same.
fn same<T: Ord + std::fmt::Debug>(what: &str, lite: &BTreeSet<T>, pg: &BTreeSet<T>) {
    let only_lite: Vec<&T> = lite.difference(pg).collect();
    let only_pg: Vec<&T> = pg.difference(lite).collect();
    assert!(
        only_lite.is_empty() && only_pg.is_empty(),
        "{what}: only on SQLite {only_lite:#?}, only on PostgreSQL {only_pg:#?}"
    );
}

/// A query's rows on SQLite, each a JSON object by column name (as `Database::rows`).
fn sqlite_rows(conn: &rusqlite::Connection, query: &str) -> Vec<Value> {
    let mut stmt = conn.prepare(query).unwrap();
    let names: Vec<String> = stmt.column_names().iter().map(|n| n.to_string()).collect();
    stmt.query_map([], |r| {
        let mut row = serde_json::Map::new();
        for (i, name) in names.iter().enumerate() {
            let v = match r.get_ref(i)? {
                ValueRef::Null => Value::Null,
                ValueRef::Integer(v) => json!(v),
                ValueRef::Real(v) => json!(v),
                ValueRef::Text(t) => json!(String::from_utf8_lossy(t)),
                ValueRef::Blob(_) => panic!("a blob in {query}"),
            };
            row.insert(name.clone(), v);
        }
        Ok(Value::Object(row))
    })
    .unwrap()
    .map(Result::unwrap)
    .collect()
}

/// Runs `sql` on both engines, each statement on its own (as the store's autocommit
/// writes): what each refused, with its message.
fn on_both(
    conn: &rusqlite::Connection,
    db: &Database,
    sql: &str,
) -> (Option<String>, Option<String>) {
    let lite = conn.execute_batch(sql).err().map(|e| e.to_string());
    let pg = db.try_run(sql).err();
    (lite, pg)
}

/// The same statements on both engines: what each refuses, and where that leaves the
/// audit trail and its head.
#[test]
fn postgres_audit_triggers_refuse_what_sqlite_refuses() {
    let Some(db) = fresh_postgres() else { return };
    let (_dir, conn) = fresh_sqlite();
    const APPEND_ONLY: &str = "the audit trail is append-only";
    const ONE_ROW: &str = "the audit head moves one row at a time";
    const KEPT: &str = "the audit head is kept";
    let script: &[(&str, Option<&str>)] = &[
        (
            "INSERT INTO audit (seq, at, approval_id, event, actor, channel, detail, prev_hash, hash) \
             VALUES (1, 1000, 'A1', 'submitted', 'mailer', 'api', '{\"tool\": \"send\"}', NULL, 'h1')",
            None,
        ),
        (
            "INSERT INTO audit (seq, at, event, detail, prev_hash, hash) \
             VALUES (2, 1001, 'decided', '{}', 'h1', 'h2')",
            None,
        ),
        ("UPDATE audit SET event = 'approved' WHERE seq = 1", Some(APPEND_ONLY)),
        ("UPDATE audit SET detail = detail WHERE seq = 2", Some(APPEND_ONLY)),
        ("DELETE FROM audit WHERE seq = 2", Some(APPEND_ONLY)),
        ("DELETE FROM audit", Some(APPEND_ONLY)),
        // Rows no statement touches fire no row trigger, on either.
        ("DELETE FROM audit WHERE seq = 99", None),
        // The head moves one row per append, and its legacy fields never.
        ("UPDATE audit_head SET rows = rows + 2", Some(ONE_ROW)),
        ("UPDATE audit_head SET rows = rows - 1", Some(ONE_ROW)),
        ("UPDATE audit_head SET rows = rows", Some(ONE_ROW)),
        ("UPDATE audit_head SET rows = rows + 1, legacy_rows = 1", Some(ONE_ROW)),
        ("UPDATE audit_head SET rows = rows + 1, legacy_through = 5", Some(ONE_ROW)),
        ("UPDATE audit_head SET rows = rows + 1, id = 2", Some(ONE_ROW)),
        ("DELETE FROM audit_head", Some(KEPT)),
        // One row on, any seq and hash (seq may go back: see migration 0006).
        ("UPDATE audit_head SET rows = rows + 1, seq = 1, hash = 'h1'", None),
        (
            "INSERT INTO audit (seq, at, event, detail, prev_hash, hash) \
             VALUES (3, 1002, 'expired', NULL, 'h2', 'h3')",
            None,
        ),
    ];
    for (sql, refused) in script {
        let (lite, pg) = on_both(&conn, &db, sql);
        match refused {
            None => {
                assert_eq!(lite, None, "SQLite refused {sql}");
                assert_eq!(pg, None, "PostgreSQL refused {sql}");
            }
            Some(message) => {
                let lite = lite.unwrap_or_else(|| panic!("SQLite let through {sql}"));
                let pg = pg.unwrap_or_else(|| panic!("PostgreSQL let through {sql}"));
                assert!(lite.contains(message), "SQLite said {lite:?} to {sql}");
                assert!(pg.contains(message), "PostgreSQL said {pg:?} to {sql}");
            }
        }
    }
    // Nothing refused is left behind; the head followed every append.
    for query in [
        "SELECT * FROM audit ORDER BY seq",
        "SELECT * FROM audit_head",
    ] {
        assert_eq!(sqlite_rows(&conn, query), db.rows(query), "{query}");
    }
    assert_eq!(
        db.rows("SELECT seq, hash, rows FROM audit_head"),
        [json!({"seq": 3, "hash": "h3", "rows": 4})]
    );
    // PostgreSQL's TRUNCATE runs no row trigger: it has a refusal of its own.
    for table in ["audit", "audit_head"] {
        let err = db
            .try_run(&format!("TRUNCATE {table}"))
            .err()
            .unwrap_or_else(|| panic!("PostgreSQL let through TRUNCATE {table}"));
        assert!(
            err.contains(if table == "audit" { APPEND_ONLY } else { KEPT }),
            "{err}"
        );
    }
    assert_eq!(db.rows("SELECT seq FROM audit").len(), 3);
}

/// The same requests written, changed and deleted on both engines leave the same
/// evidence summaries, and those are what the requests count up to.
#[test]
fn postgres_evidence_summaries_follow_requests_as_on_sqlite() {
    let Some(db) = fresh_postgres() else { return };
    let (_dir, conn) = fresh_sqlite();
    let hour = 3_600_000_i64;
    let request = |id: &str,
                   agent: &str,
                   status: &str,
                   ttl: &str,
                   grant: &str,
                   low: &str,
                   at: i64| {
        format!(
            "INSERT INTO approvals (id, short_id, agent, tool, args, status, risk_score, \
             tool_class, risk_factors, policy_reason, ttl_ms, grant_id, low_confidence, created_at) \
             VALUES ('{id}', lower('{id}'), '{agent}', 'send', '{{}}', '{status}', 'medium', \
             'write', '[]', 'why', {ttl}, {grant}, {low}, {at})"
        )
    };
    let script = [
        // Asked a human; let through by a grant; blocked for low confidence; another agent.
        request(
            "A1",
            "mailer",
            "pending",
            "60000",
            "NULL",
            "0",
            10 * hour + 5,
        ),
        request(
            "A2",
            "mailer",
            "allowed",
            "NULL",
            "'G1'",
            "NULL",
            10 * hour + 6,
        ),
        request("A3", "mailer", "blocked", "NULL", "NULL", "1", 11 * hour),
        request(
            "A4",
            "deployer",
            "pending",
            "60000",
            "NULL",
            "NULL",
            11 * hour + 1,
        ),
        // The same key again: its counts go to 2.
        request(
            "A5",
            "mailer",
            "pending",
            "60000",
            "NULL",
            "0",
            10 * hour + 7,
        ),
        "UPDATE approvals SET status = 'approved', decided_at = 1 WHERE id = 'A1'".into(),
        "UPDATE approvals SET status = 'succeeded' WHERE id = 'A2'".into(),
        // No column of the key: nothing moves.
        "UPDATE approvals SET summary = 'words' WHERE id = 'A3'".into(),
        // A key column named but unchanged: nothing moves.
        "UPDATE approvals SET status = status, agent = agent WHERE id = 'A4'".into(),
        // NULL and 0 are the same `low`: nothing moves; then 1 moves it.
        "UPDATE approvals SET low_confidence = 0 WHERE id = 'A4'".into(),
        "UPDATE approvals SET low_confidence = 1 WHERE id = 'A4'".into(),
        // Within the hour: only the hours would move, and they do not; then the next hour.
        "UPDATE approvals SET created_at = created_at + 1 WHERE id = 'A4'".into(),
        format!("UPDATE approvals SET created_at = created_at + {hour} WHERE id = 'A4'"),
        "UPDATE approvals SET ttl_ms = NULL WHERE id = 'A1'".into(),
        // Another time to live, but still asked: nothing moves.
        "UPDATE approvals SET ttl_ms = 5 WHERE id = 'A5'".into(),
        "UPDATE approvals SET agent = 'mailer2' WHERE id = 'A3'".into(),
        "UPDATE approvals SET grant_id = 'G2' WHERE id = 'A3'".into(),
        // Several rows in one statement.
        "UPDATE approvals SET status = 'expired' WHERE status = 'pending'".into(),
        "DELETE FROM approvals WHERE id = 'A2'".into(),
    ];
    for sql in &script {
        let (lite, pg) = on_both(&conn, &db, sql);
        assert_eq!((lite, pg), (None, None), "{sql}");
    }
    for table in ["evidence_totals", "evidence_hours"] {
        let query = format!("SELECT * FROM {table}");
        let mut want = sqlite_rows(&conn, &query);
        let mut have = db.rows(&query);
        want.sort_by_key(Value::to_string);
        have.sort_by_key(Value::to_string);
        assert!(want.len() > 5, "{table}: {want:?}");
        assert!(
            want.iter().any(|r| r["n"] == 0),
            "{table} keeps rows at n = 0"
        );
        assert_eq!(want, have, "{table} (SQLite, then PostgreSQL)");
    }
    // And PostgreSQL's are what its requests count up to.
    let recount = db.rows(
        "SELECT agent, status, (ttl_ms IS NOT NULL)::int AS asked, \
                (grant_id IS NOT NULL)::int AS granted, COALESCE(low_confidence, 0) AS low, \
                created_at / 3600000 AS hour, count(*) AS n \
         FROM approvals GROUP BY 1, 2, 3, 4, 5, 6 ORDER BY 1, 2, 3, 4, 5, 6",
    );
    let kept = db.rows(
        "SELECT agent, status, asked, granted, low, hour, n FROM evidence_hours \
         WHERE n > 0 ORDER BY 1, 2, 3, 4, 5, 6",
    );
    assert_eq!(recount, kept, "evidence_hours against the requests");
}
