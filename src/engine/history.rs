//! Reading what happened, for the web dashboard's history and audit pages: requests
//! of every status searched and filtered, and the audit trail filtered, a keyset page
//! at a time, newest first (see `store::history`).

use super::{Engine, EngineError};
use crate::approval::Approval;
use crate::store::AuditRow;
pub use crate::store::{AuditFilter, Cursor, HistoryFilter, Page};

impl Engine {
    /// One page of requests matching `filter`, newest first.
    pub async fn history(
        &self,
        filter: HistoryFilter,
    ) -> Result<Page<Approval, String>, EngineError> {
        self.blocking(move |s| s.history_page(&filter)).await
    }

    /// Brings the history's search index up to date by at most `max` new requests (and
    /// every request changed since it was indexed); how many new ones it indexed.
    pub async fn index_history(&self, max: usize) -> Result<usize, EngineError> {
        self.blocking(move |s| s.index_history(max)).await
    }

    /// One page of the audit trail matching `filter`, newest first.
    pub async fn audit_history(
        &self,
        filter: AuditFilter,
    ) -> Result<Page<AuditRow, i64>, EngineError> {
        self.blocking(move |s| s.audit_history(&filter)).await
    }
}
