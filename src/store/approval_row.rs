//! Reading an `approvals` row: the columns and how they parse. Requests are written
//! only by `approvals`; chat bookkeeping and trust read them back through this leaf.

use serde_json::Value;

use super::sql::{params, Conn, Row};
use super::{Result, StoreError};
use crate::approval::Approval;
use crate::policy::{Risk, RiskScore, ToolClass};

pub(super) const COLUMNS: &str =
    "id, short_id, agent, tool, args, summary, confidence, environment, \
    idempotency_key, status, risk_score, tool_class, risk_factors, policy_reason, checkpoint, \
    always_allow_offered, decided_by, decided_via, decision_reason, always_allowed, \
    result_detail, ttl_ms, created_at, decided_at, expires_at, finished_at, task_id, \
    accepts_edits, edited_args, route, cost";

/// How many columns [`COLUMNS`] names: a query selecting more reads them from here on.
pub(super) const COLUMN_COUNT: usize = 31;

/// Request `id`, if there is one.
pub(super) fn get_conn(conn: &Conn<'_>, id: &str) -> Result<Option<Approval>> {
    conn.query_opt(
        &format!("SELECT {COLUMNS} FROM approvals WHERE id = ?1"),
        params![id],
        row_to_approval,
    )
}

/// Reads one row; an error for a value that does not parse (a corrupt or hand-edited
/// database: [`StoreError::Corrupt`]) or a column that cannot be read.
pub(super) fn row_to_approval(r: &Row<'_>) -> Result<Approval> {
    let args: String = r.get(4)?;
    let status: String = r.get(9)?;
    let score: String = r.get(10)?;
    let class: String = r.get(11)?;
    let factors: String = r.get(12)?;
    let via: Option<String> = r.get(17)?;
    let id: String = r.get(0)?;
    let corrupt = |what: &str| StoreError::Corrupt(format!("approval {id}: bad {what}"));
    Ok(Approval {
        id: id.clone(),
        short_id: r.get(1)?,
        agent: r.get(2)?,
        tool: r.get(3)?,
        args: serde_json::from_str(&args).map_err(|_| corrupt("args"))?,
        summary: r.get(5)?,
        confidence: r.get(6)?,
        environment: r.get(7)?,
        idempotency_key: r.get(8)?,
        status: status.parse().map_err(|_| corrupt("status"))?,
        risk: Risk {
            score: serde_json::from_value::<RiskScore>(Value::String(score.clone()))
                .map_err(|_| corrupt("risk_score"))?,
            tool_class: serde_json::from_value::<ToolClass>(Value::String(class.clone()))
                .map_err(|_| corrupt("tool_class"))?,
            factors: serde_json::from_str(&factors).map_err(|_| corrupt("risk_factors"))?,
        },
        policy_reason: r.get(13)?,
        checkpoint: r.get(14)?,
        always_allow_offered: r.get(15)?,
        decided_by: r.get(16)?,
        decided_via: via
            .map(|v| v.parse().map_err(|_| corrupt("decided_via")))
            .transpose()?,
        decision_reason: r.get(18)?,
        always_allowed: r.get(19)?,
        result_detail: r.get(20)?,
        ttl_ms: r.get(21)?,
        created_at: r.get(22)?,
        decided_at: r.get(23)?,
        expires_at: r.get(24)?,
        finished_at: r.get(25)?,
        task_id: r.get(26)?,
        accepts_edits: r.get(27)?,
        edited_args: r
            .get::<Option<String>>(28)?
            .map(|e| serde_json::from_str(&e).map_err(|_| corrupt("edited_args")))
            .transpose()?,
        route: r
            .get::<Option<String>>(29)?
            .map(|e| serde_json::from_str(&e).map_err(|_| corrupt("route")))
            .transpose()?,
        cost: r.get(30)?,
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_column_count_is_the_columns_named() {
        assert_eq!(super::COLUMNS.split(',').count(), super::COLUMN_COUNT);
    }
}
