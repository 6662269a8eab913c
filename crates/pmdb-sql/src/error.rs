//! The errors of the SQL layer: [`SqlError`], with the SQLSTATE a client would be given,
//! and [`CodecError`], bytes read back that do not decode.

use std::sync::Arc;

use datafusion::error::DataFusionError;
use pmdb_engine::DbError;

#[derive(Debug, thiserror::Error)]
pub enum SqlError {
    /// The statement is wrong or asks for what cannot be done; nothing was changed.
    /// PostgreSQL's clients get the message and the detail apart.
    #[error("{message}{}", detail.as_ref().map(|d| format!("\nDETAIL:  {d}")).unwrap_or_default())]
    User {
        sqlstate: &'static str,
        message: String,
        detail: Option<String>,
    },
    #[error(transparent)]
    Db(#[from] DbError),
    /// Bytes in storage that do not decode: damage, reported and never skipped.
    #[error("damaged {what}: {source}")]
    Damaged { what: String, source: CodecError },
    /// A failure of the query engine that is not the statement's fault.
    #[error("{0}")]
    Query(String),
    /// A prepared query whose result columns DDL changed since it was described: its
    /// client would decode the rows wrongly, so it fails (0A000) as in PostgreSQL, and
    /// drivers that know the error prepare it again.
    #[error("cached plan must not change result type")]
    CachedPlanChanged,
    /// An error a DO block raised (PL/pgSQL's RAISE EXCEPTION): the SQLSTATE, detail
    /// and hint it named, and where it was raised.
    #[error("{}", .0.message)]
    Raised(Box<Raised>),
}

/// What [`SqlError::Raised`] carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Raised {
    pub sqlstate: String,
    pub message: String,
    pub detail: Option<String>,
    pub hint: Option<String>,
    /// PostgreSQL's CONTEXT: the block's line and statement.
    pub context: Option<String>,
}

pub type Result<T, E = SqlError> = std::result::Result<T, E>;

/// SQLSTATE codes pmdb gives (PostgreSQL's).
pub mod state {
    pub const SYNTAX: &str = "42601";
    pub const PROTOCOL_VIOLATION: &str = "08P01";
    pub const INVALID_TEXT_REPRESENTATION: &str = "22P02";
    pub const UNDEFINED_TABLE: &str = "42P01";
    pub const UNDEFINED_COLUMN: &str = "42703";
    pub const UNDEFINED_FUNCTION: &str = "42883";
    pub const UNDEFINED_OBJECT: &str = "42704";
    pub const DUPLICATE_TABLE: &str = "42P07";
    pub const DUPLICATE_OBJECT: &str = "42710";
    pub const UNIQUE_VIOLATION: &str = "23505";
    pub const NOT_NULL_VIOLATION: &str = "23502";
    pub const DATA_EXCEPTION: &str = "22000";
    pub const NULL_VALUE_NOT_ALLOWED: &str = "22004";
    pub const CARDINALITY_VIOLATION: &str = "21000";
    pub const STRING_DATA_RIGHT_TRUNCATION: &str = "22001";
    pub const DIVISION_BY_ZERO: &str = "22012";
    pub const NUMERIC_OUT_OF_RANGE: &str = "22003";
    pub const DATETIME_OUT_OF_RANGE: &str = "22008";
    pub const INVALID_DATETIME_FORMAT: &str = "22007";
    pub const INTERVAL_FIELD_OVERFLOW: &str = "22015";
    pub const FEATURE_NOT_SUPPORTED: &str = "0A000";
    pub const INVALID_DEFINITION: &str = "42P16";
    pub const PROGRAM_LIMIT: &str = "54000";
    pub const STACK_DEPTH: &str = "54001";
    pub const DISK_FULL: &str = "53100";
    pub const UNDEFINED_FILE: &str = "58P01";
    pub const INTERNAL: &str = "XX000";
    pub const DATA_CORRUPTED: &str = "XX001";
    pub const SERIALIZATION_FAILURE: &str = "40001";
    pub const DEADLOCK_DETECTED: &str = "40P01";
    pub const QUERY_CANCELED: &str = "57014";
    pub const INVALID_TRANSACTION_STATE: &str = "25000";
    pub const ACTIVE_SQL_TRANSACTION: &str = "25001";
    pub const NO_ACTIVE_SQL_TRANSACTION: &str = "25P01";
    pub const IN_FAILED_SQL_TRANSACTION: &str = "25P02";
    pub const READ_ONLY_SQL_TRANSACTION: &str = "25006";
    pub const LOCK_NOT_AVAILABLE: &str = "55P03";
    pub const INVALID_SAVEPOINT_SPECIFICATION: &str = "3B001";
    pub const INVALID_PARAMETER_VALUE: &str = "22023";
    pub const SEQUENCE_GENERATOR_LIMIT_EXCEEDED: &str = "2200H";
    pub const OBJECT_NOT_IN_PREREQUISITE_STATE: &str = "55000";
    pub const DEPENDENT_OBJECTS_STILL_EXIST: &str = "2BP01";
    pub const GENERATED_ALWAYS: &str = "428C9";
    pub const WRONG_OBJECT_TYPE: &str = "42809";
    pub const INVALID_NAME: &str = "42602";
    pub const DUPLICATE_COLUMN: &str = "42701";
    pub const AMBIGUOUS_COLUMN: &str = "42702";
    pub const FOREIGN_KEY_VIOLATION: &str = "23503";
    pub const CHECK_VIOLATION: &str = "23514";
    pub const INVALID_FOREIGN_KEY: &str = "42830";
    pub const DATATYPE_MISMATCH: &str = "42804";
    pub const INVALID_SCHEMA_NAME: &str = "3F000";
    pub const DUPLICATE_SCHEMA: &str = "42P06";
    pub const RESERVED_NAME: &str = "42939";
}

/// `e` carried through DataFusion (from a table provider or a function), to come out
/// again as itself with its SQLSTATE.
pub fn external(e: SqlError) -> DataFusionError {
    DataFusionError::External(Box::new(e))
}

impl SqlError {
    pub fn user(sqlstate: &'static str, message: impl Into<String>) -> SqlError {
        SqlError::User {
            sqlstate,
            message: message.into(),
            detail: None,
        }
    }

    /// The error with `detail` (PostgreSQL's DETAIL line: the key, the row).
    pub fn with_detail(self, detail: impl Into<String>) -> SqlError {
        match self {
            SqlError::User {
                sqlstate, message, ..
            } => SqlError::User {
                sqlstate,
                message,
                detail: Some(detail.into()),
            },
            other => other,
        }
    }

    /// The primary message, without the detail.
    pub fn message(&self) -> String {
        match self {
            SqlError::User { message, .. } => message.clone(),
            SqlError::Raised(r) => r.message.clone(),
            other => other.to_string(),
        }
    }

    /// The detail, if the error has one.
    pub fn detail(&self) -> Option<&str> {
        match self {
            SqlError::User { detail, .. } => detail.as_deref(),
            SqlError::Raised(r) => r.detail.as_deref(),
            _ => None,
        }
    }

    /// The hint, if the error has one.
    pub fn hint(&self) -> Option<&str> {
        match self {
            SqlError::Raised(r) => r.hint.as_deref(),
            _ => None,
        }
    }

    /// Where the error was raised, if it came from inside a DO block.
    pub fn context(&self) -> Option<&str> {
        match self {
            SqlError::Raised(r) => r.context.as_deref(),
            _ => None,
        }
    }

    pub fn unsupported(message: impl Into<String>) -> SqlError {
        SqlError::user(state::FEATURE_NOT_SUPPORTED, message)
    }

    /// The SQLSTATE a client is given for this error.
    pub fn sqlstate(&self) -> &str {
        match self {
            SqlError::Raised(r) => &r.sqlstate,
            other => other.fixed_sqlstate(),
        }
    }

    /// The error with `message` for its message: its SQLSTATE and detail kept.
    pub fn with_message(self, message: impl Into<String>) -> SqlError {
        let message = message.into();
        match self {
            SqlError::User {
                sqlstate, detail, ..
            } => SqlError::User {
                sqlstate,
                message,
                detail,
            },
            SqlError::Raised(mut r) => {
                r.message = message;
                SqlError::Raised(r)
            }
            other => SqlError::user(other.fixed_sqlstate(), message),
        }
    }

    /// The SQLSTATE of every error but a raised one, which carries its own
    /// (`raise_exception`'s here).
    fn fixed_sqlstate(&self) -> &'static str {
        match self {
            SqlError::User { sqlstate, .. } => sqlstate,
            SqlError::Raised(_) => "P0001",
            SqlError::Db(DbError::Corrupt(_) | DbError::Fenced { .. })
            | SqlError::Damaged { .. } => state::DATA_CORRUPTED,
            SqlError::Db(
                DbError::KeyTooLarge { .. }
                | DbError::ValueTooLarge { .. }
                | DbError::BatchTooLarge { .. },
            ) => state::PROGRAM_LIMIT,
            SqlError::Db(DbError::PoolFull) => state::DISK_FULL,
            // A table dropped or rebuilt by DDL while a block had written to it: the
            // block runs again against the table as it is now.
            SqlError::Db(
                DbError::Conflict { .. }
                | DbError::SubtableDropped { .. }
                | DbError::NoSuchSubtable { .. },
            ) => state::SERIALIZATION_FAILURE,
            SqlError::Db(DbError::ReadOnly { .. }) => state::READ_ONLY_SQL_TRANSACTION,
            SqlError::Db(_) => state::INTERNAL,
            SqlError::Query(_) => state::INTERNAL,
            SqlError::CachedPlanChanged => state::FEATURE_NOT_SUPPORTED,
        }
    }

    /// The function of PostgreSQL's that reports this error, where drivers tell errors
    /// of one SQLSTATE apart by it (the error's routine field).
    pub fn routine(&self) -> Option<&'static str> {
        match self {
            SqlError::CachedPlanChanged => Some("RevalidateCachedQuery"),
            _ => None,
        }
    }
}

/// An error that several partitions share (a repartition hands its input's error to
/// each): pmdb's own error inside it, with its SQLSTATE and message, when there is one.
fn shared_error(e: &DataFusionError) -> SqlError {
    let mut at: &(dyn std::error::Error + 'static) = e;
    loop {
        let df = at
            .downcast_ref::<DataFusionError>()
            .or_else(|| at.downcast_ref::<Arc<DataFusionError>>().map(Arc::as_ref));
        if let Some(DataFusionError::External(inner)) = df
            && let Some(sql) = inner.downcast_ref::<SqlError>()
        {
            return match sql {
                SqlError::Raised(r) => SqlError::Raised(r.clone()),
                _ => {
                    let again = SqlError::user(sql.fixed_sqlstate(), sql.message());
                    match sql.detail() {
                        Some(d) => again.with_detail(d),
                        None => again,
                    }
                }
            };
        }
        match at.source() {
            Some(next) => at = next,
            None => return SqlError::Query(e.strip_backtrace()),
        }
    }
}

/// A DataFusion error as one clear message; pmdb's own errors inside it come back out.
pub fn df_error(e: DataFusionError) -> SqlError {
    match e {
        DataFusionError::External(inner) => match inner.downcast::<SqlError>() {
            Ok(sql) => *sql,
            Err(other) => SqlError::Query(other.to_string()),
        },
        DataFusionError::Context(_, inner) | DataFusionError::Diagnostic(_, inner) => {
            df_error(*inner)
        }
        DataFusionError::Collection(mut errors) if !errors.is_empty() => {
            df_error(errors.swap_remove(0))
        }
        DataFusionError::Shared(inner) => match Arc::try_unwrap(inner) {
            Ok(e) => df_error(e),
            Err(shared) => shared_error(&shared),
        },
        DataFusionError::SQL(e, _) => SqlError::user(state::SYNTAX, e.to_string()),
        DataFusionError::NotImplemented(m) => match crate::builtin_types::unknown_in(&m) {
            Some(name) => SqlError::user(
                state::UNDEFINED_OBJECT,
                format!("type \"{name}\" does not exist"),
            ),
            None => SqlError::unsupported(m),
        },
        DataFusionError::Plan(m) if m.starts_with("table '") && m.ends_with("' not found") => {
            // PostgreSQL's words, naming the relation without the catalog and schema
            // DataFusion resolved it in.
            let named = &m["table '".len()..m.len() - "' not found".len()];
            let name = named.splitn(3, '.').nth(2).unwrap_or(named);
            SqlError::user(
                state::UNDEFINED_TABLE,
                format!("relation \"{name}\" does not exist"),
            )
        }
        DataFusionError::Plan(m) => SqlError::user(state::SYNTAX, m),
        DataFusionError::SchemaError(e, _) => schema_error(*e),
        DataFusionError::ArrowError(e, _)
            if matches!(
                e.as_ref(),
                datafusion::arrow::error::ArrowError::DivideByZero
            ) =>
        {
            SqlError::user(state::DIVISION_BY_ZERO, "division by zero")
        }
        DataFusionError::ArrowError(e, _)
            if let datafusion::arrow::error::ArrowError::CastError(m) = e.as_ref()
                && let Some(refused) = unreadable_text(m) =>
        {
            refused
        }
        DataFusionError::ArrowError(e, _) => {
            let sqlstate = match e.as_ref() {
                datafusion::arrow::error::ArrowError::ArithmeticOverflow(_) => {
                    state::NUMERIC_OUT_OF_RANGE
                }
                _ => state::DATA_EXCEPTION,
            };
            SqlError::user(sqlstate, e.to_string())
        }
        DataFusionError::Execution(m) => SqlError::user(state::DATA_EXCEPTION, m),
        other => SqlError::Query(other.strip_backtrace()),
    }
}

/// Arrow's refusal to read text as a number, a boolean or a date, in PostgreSQL's
/// words: 22P02 `invalid input syntax for type integer: "abc"`.
fn unreadable_text(message: &str) -> Option<SqlError> {
    let rest = message
        .strip_prefix("Cannot cast string '")
        .or_else(|| message.strip_prefix("Cannot cast value '"))?;
    let (text, ty) = rest.rsplit_once("' to value of ")?;
    let ty = ty.strip_suffix(" type").unwrap_or(ty);
    let name = match ty {
        "Int16" => "smallint",
        "Int32" => "integer",
        "Int64" => "bigint",
        "Float32" => "real",
        "Float64" => "double precision",
        "Boolean" => "boolean",
        "Date32" => "date",
        t if t.starts_with("Decimal") => "numeric",
        t if t.starts_with("Timestamp") => "timestamp",
        _ => return None,
    };
    Some(SqlError::user(
        state::INVALID_TEXT_REPRESENTATION,
        format!("invalid input syntax for type {name}: \"{text}\""),
    ))
}

/// A column a statement names that is not there, or not only once, in PostgreSQL's
/// words: `column "a" does not exist`, `column t.a does not exist` when qualified.
fn schema_error(e: datafusion::common::SchemaError) -> SqlError {
    use datafusion::common::SchemaError;
    let shown = |c: &datafusion::common::Column| match &c.relation {
        Some(r) => format!("{}.{}", r.table(), c.name),
        None => format!("\"{}\"", c.name),
    };
    match &e {
        SchemaError::FieldNotFound { field, .. } => SqlError::user(
            state::UNDEFINED_COLUMN,
            format!("column {} does not exist", shown(field)),
        ),
        SchemaError::AmbiguousReference { field } => SqlError::user(
            state::AMBIGUOUS_COLUMN,
            format!("column reference \"{}\" is ambiguous", field.name),
        ),
        _ => SqlError::user(state::UNDEFINED_COLUMN, e.to_string()),
    }
}

/// Bytes that do not decode as what they should be: a key or a row read back from
/// storage is never trusted.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CodecError {
    #[error("{what}: truncated at byte {at}")]
    Truncated { what: &'static str, at: usize },
    #[error("{what}: {reason}")]
    Invalid { what: &'static str, reason: String },
    #[error("{0}")]
    Mismatch(String),
}

/// Column `column` is not one of table `table`'s.
pub fn undefined_column(column: &str, table: &str) -> SqlError {
    SqlError::user(
        state::UNDEFINED_COLUMN,
        format!("column \"{column}\" of relation \"{table}\" does not exist"),
    )
}
