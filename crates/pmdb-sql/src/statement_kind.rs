//! [`StatementKind`]: what a statement is, decided once from its syntax tree, for the
//! server, the session and the executor alike: who runs it (the session's block, the
//! server's settings, pmdb's own executor or DataFusion), whether it changes data or
//! locks rows, and what a prepared statement keeps of its planning.

use datafusion::sql::parser::Statement as DfStatement;
use datafusion::sql::sqlparser::ast::{CopyTarget, ObjectType, Set, Statement};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StatementKind {
    /// BEGIN, COMMIT, ROLLBACK, savepoints, SET TRANSACTION and SET SESSION
    /// CHARACTERISTICS: the session's transaction block.
    TransactionControl,
    /// SET and RESET of a setting.
    Setting,
    /// SHOW of a setting.
    Show,
    /// A query without locking clauses.
    Query,
    /// A query with locking clauses: it locks the rows it returns.
    LockingQuery,
    Insert,
    Update,
    Delete,
    /// COPY … FROM STDIN: rows the client sends.
    CopyFromStdin,
    /// COPY … FROM a file.
    CopyFromFile,
    /// COPY … TO STDOUT: rows for the client.
    CopyToStdout,
    /// CREATE TABLE, CREATE INDEX, CREATE SEQUENCE, DROP, TRUNCATE, ALTER TABLE,
    /// ANALYZE: pmdb's own,
    /// on the catalog or whole tables.
    Ddl,
    /// VACUUM, which the engine's own merges make a no-op.
    Vacuum,
    /// DECLARE … CURSOR, FETCH, CLOSE: the session's cursors.
    Cursor,
    Explain,
    /// EXPLAIN ANALYZE of a statement that writes, which it runs.
    ExplainWrite,
    /// CREATE DATABASE and DROP DATABASE: the server's, whose databases are engines of
    /// their own (an engine alone refuses them).
    Database,
    /// Anything else, left to DataFusion.
    Other,
}

impl StatementKind {
    pub fn of(statement: &DfStatement) -> StatementKind {
        match statement {
            DfStatement::Statement(s) => StatementKind::of_sql(s),
            DfStatement::Explain(_) => StatementKind::Explain,
            _ => StatementKind::Other,
        }
    }

    fn of_sql(s: &Statement) -> StatementKind {
        use StatementKind as K;
        match s {
            Statement::StartTransaction { .. }
            | Statement::Commit { .. }
            | Statement::Rollback { .. }
            | Statement::Savepoint { .. }
            | Statement::ReleaseSavepoint { .. }
            | Statement::Set(Set::SetTransaction { .. }) => K::TransactionControl,
            s if crate::set_constraints::of_statement(s).is_some() => K::TransactionControl,
            Statement::Set(_) | Statement::Reset(_) => K::Setting,
            Statement::ShowVariable { .. } => K::Show,
            Statement::Query(q) if q.locks.is_empty() => K::Query,
            Statement::Query(_) => K::LockingQuery,
            Statement::Insert(_) => K::Insert,
            Statement::Update(_) => K::Update,
            Statement::Delete(_) => K::Delete,
            Statement::Copy {
                to: false,
                target: CopyTarget::Stdin,
                ..
            } => K::CopyFromStdin,
            Statement::Copy { to: false, .. } => K::CopyFromFile,
            Statement::Copy { to: true, .. } => K::CopyToStdout,
            Statement::CreateDatabase { .. }
            | Statement::Drop {
                object_type: ObjectType::Database,
                ..
            } => K::Database,
            Statement::CreateTable(_)
            | Statement::CreateIndex(_)
            | Statement::CreateSequence { .. }
            | Statement::CreateSchema { .. }
            | Statement::Drop { .. }
            | Statement::Truncate(_)
            | Statement::AlterTable(_)
            | Statement::Analyze(_)
            | Statement::CreateView(_)
            | Statement::CreateType { .. }
            | Statement::AlterType(_)
            | Statement::CreateDomain(_)
            | Statement::DropDomain(_)
            | Statement::CreateExtension(_)
            | Statement::DropExtension(_)
            | Statement::Comment { .. } => K::Ddl,
            Statement::Vacuum(_) => K::Vacuum,
            Statement::Declare { .. } | Statement::Fetch { .. } | Statement::Close { .. } => {
                K::Cursor
            }
            Statement::Explain { statement, .. }
                if crate::explain_options::analyzes(s) && Self::of_sql(statement).writes() =>
            {
                K::ExplainWrite
            }
            Statement::Explain { .. } => K::Explain,
            _ => K::Other,
        }
    }

    /// Whether it may change data or the catalog, or lock rows: refused in a READ ONLY
    /// block.
    pub fn writes(self) -> bool {
        use StatementKind as K;
        matches!(
            self,
            K::LockingQuery
                | K::Insert
                | K::Update
                | K::Delete
                | K::CopyFromStdin
                | K::CopyFromFile
                | K::Ddl
                | K::ExplainWrite
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(sql: &str) -> StatementKind {
        StatementKind::of(&crate::session::parse(sql).unwrap().pop_front().unwrap())
    }

    #[test]
    fn statements_are_classified_by_their_syntax_tree() {
        use StatementKind as K;
        let cases = [
            ("BEGIN", K::TransactionControl),
            ("ROLLBACK TO SAVEPOINT s", K::TransactionControl),
            (
                "SET TRANSACTION ISOLATION LEVEL SERIALIZABLE",
                K::TransactionControl,
            ),
            ("SET search_path = public", K::Setting),
            ("SHOW server_version", K::Show),
            ("SELECT 1", K::Query),
            ("SELECT * FROM t FOR NO KEY UPDATE OF t", K::LockingQuery),
            ("UPDATE t SET a = 1", K::Update),
            ("COPY t FROM STDIN", K::CopyFromStdin),
            ("COPY t FROM '/tmp/x.csv'", K::CopyFromFile),
            ("COPY t TO STDOUT", K::CopyToStdout),
            ("TRUNCATE t", K::Ddl),
            ("CREATE SEQUENCE s START 5", K::Ddl),
            ("VACUUM", K::Vacuum),
            ("EXPLAIN SELECT 1", K::Explain),
        ];
        for (sql, expected) in cases {
            assert_eq!(kind(sql), expected, "{sql}");
        }
        assert!(K::LockingQuery.writes() && K::Ddl.writes());
        assert!(!K::Query.writes() && !K::Vacuum.writes() && !K::Explain.writes());
    }
}
