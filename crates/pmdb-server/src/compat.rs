//! What PostgreSQL clients say beyond pmdb's SQL: session settings, set with `SET` (or
//! `SET TIME ZONE`, `SET NAMES`) and read with `SHOW` or reset with `RESET`, which each
//! connection keeps for itself (pmdb acts on none of them; drivers set them at
//! start-up and read some back). Settings of DataFusion (`datafusion.…`) go to
//! DataFusion instead. The isolation settings are the SQL session's own
//! ([`isolation`]).

use std::collections::BTreeMap;
use std::sync::Arc;

use datafusion::arrow::array::{RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::sql::parser::Statement as DfStatement;
use datafusion::sql::sqlparser::ast::{
    Expr, Ident, ObjectName, Reset, Set, Statement, TransactionIsolationLevel, TransactionMode,
    Value,
};
use pmdb_engine::Isolation;
use pmdb_sql::{CommandTag, Output, SqlError, SqlSession};

/// The settings a session starts with.
fn defaults() -> BTreeMap<String, String> {
    [
        ("application_name", ""),
        ("client_encoding", "UTF8"),
        ("server_encoding", "UTF8"),
        ("datestyle", "ISO, MDY"),
        ("intervalstyle", "postgres"),
        ("timezone", "UTC"),
        ("integer_datetimes", "on"),
        ("standard_conforming_strings", "on"),
        ("extra_float_digits", "1"),
        ("search_path", "public"),
        ("transaction_read_only", "off"),
        ("statement_timeout", "0"),
        ("lock_timeout", "0"),
        ("idle_in_transaction_session_timeout", "0"),
        ("max_identifier_length", "63"),
        ("server_version", "15.0"),
        ("server_version_num", "150000"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect()
}

/// One connection's settings.
pub struct Settings(BTreeMap<String, String>);

impl Default for Settings {
    fn default() -> Settings {
        Settings(defaults())
    }
}

fn name_of(name: &ObjectName) -> String {
    name.to_string().trim_matches('"').to_lowercase()
}

/// A value as SET gives it: a string's contents, else the expression's text.
fn value_of(values: &[Expr]) -> String {
    values
        .iter()
        .map(|e| match e {
            Expr::Value(v) => match &v.value {
                Value::SingleQuotedString(s) | Value::DoubleQuotedString(s) => s.clone(),
                other => other.to_string(),
            },
            Expr::Identifier(i) => i.value.clone(),
            other => other.to_string(),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn rows(columns: &[&str], rows: Vec<Vec<String>>) -> Output {
    let schema = Arc::new(Schema::new(
        columns
            .iter()
            .map(|c| Field::new(*c, DataType::Utf8, false))
            .collect::<Vec<_>>(),
    ));
    let arrays = (0..columns.len())
        .map(|c| Arc::new(StringArray::from_iter_values(rows.iter().map(|r| &r[c]))) as _)
        .collect();
    let batch = RecordBatch::try_new(Arc::clone(&schema), arrays).expect("columns match");
    Output::Rows {
        schema,
        batches: vec![batch],
    }
}

/// What to do for a statement about the isolation settings.
pub enum IsolationSetting {
    /// A SHOW, answered.
    Shown(Output),
    /// A SET, as the transaction statement that does it.
    Run(DfStatement),
}

fn isolation_name(i: Isolation) -> &'static str {
    match i {
        Isolation::ReadCommitted => "read committed",
        Isolation::Snapshot => "repeatable read",
        Isolation::Serializable => "serializable",
    }
}

/// `SET default_transaction_isolation` (as `SET SESSION CHARACTERISTICS AS
/// TRANSACTION`) and `SET transaction_isolation` (as `SET TRANSACTION`), and `SHOW` of
/// either, from the session; `None` for any other statement.
pub fn isolation(
    sql: &SqlSession,
    statement: &DfStatement,
) -> Option<Result<IsolationSetting, SqlError>> {
    let DfStatement::Statement(s) = statement else {
        return None;
    };
    match s.as_ref() {
        Statement::ShowVariable { variable } => {
            let name = shown_name(variable);
            let (column, isolation) = match name.as_str() {
                "transaction_isolation" | "transaction isolation level" => {
                    ("transaction_isolation", sql.isolation())
                }
                "default_transaction_isolation" => (name.as_str(), sql.default_isolation()),
                _ => return None,
            };
            let shown = rows(&[column], vec![vec![isolation_name(isolation).into()]]);
            Some(Ok(IsolationSetting::Shown(shown)))
        }
        Statement::Set(Set::SingleAssignment {
            variable, values, ..
        }) => {
            let session = match name_of(variable).as_str() {
                "default_transaction_isolation" => true,
                "transaction_isolation" => false,
                _ => return None,
            };
            let level = match value_of(values).to_lowercase().as_str() {
                "read committed" | "default" => TransactionIsolationLevel::ReadCommitted,
                "read uncommitted" => TransactionIsolationLevel::ReadUncommitted,
                "repeatable read" => TransactionIsolationLevel::RepeatableRead,
                "serializable" => TransactionIsolationLevel::Serializable,
                other => {
                    return Some(Err(SqlError::user(
                        "22023",
                        format!(
                            "invalid value for parameter \"{}\": \"{other}\"",
                            name_of(variable)
                        ),
                    )));
                }
            };
            let set = Statement::Set(Set::SetTransaction {
                modes: vec![TransactionMode::IsolationLevel(level)],
                snapshot: None,
                session,
            });
            Some(Ok(IsolationSetting::Run(DfStatement::Statement(Box::new(
                set,
            )))))
        }
        _ => None,
    }
}

/// The setting a SHOW names, as its words in lower case.
fn shown_name(variable: &[Ident]) -> String {
    variable
        .iter()
        .map(|i| i.value.to_lowercase())
        .collect::<Vec<_>>()
        .join(" ")
}

fn is_datafusion(name: &str) -> bool {
    name.starts_with("datafusion.")
}

impl Settings {
    /// Runs `statement` if it is about settings pmdb-sql does not know; `None` for any
    /// other statement.
    pub fn intercept(&mut self, statement: &DfStatement) -> Option<Result<Output, SqlError>> {
        let DfStatement::Statement(s) = statement else {
            return None;
        };
        let set = |this: &mut Settings, name: String, value: String| {
            // TIMESTAMPTZ values show in UTC: another zone would be ignored.
            if name == "timezone" && !pmdb_sql::names_utc(&value) {
                return Some(Err(SqlError::unsupported(format!(
                    "time zone {value:?}: pmdb shows TIMESTAMPTZ values in UTC only"
                ))));
            }
            this.0.insert(name, value);
            Some(Ok(Output::Command(CommandTag::of("SET"))))
        };
        match s.as_ref() {
            Statement::Set(Set::SingleAssignment {
                variable, values, ..
            }) => {
                let name = name_of(variable);
                if is_datafusion(&name) {
                    return None;
                }
                let value = value_of(values);
                let value = if value.eq_ignore_ascii_case("default") {
                    defaults().get(&name).cloned().unwrap_or_default()
                } else {
                    value
                };
                set(self, name, value)
            }
            Statement::Set(Set::SetTimeZone { value, .. }) => set(
                self,
                "timezone".into(),
                value_of(std::slice::from_ref(value)),
            ),
            Statement::Set(Set::SetNames { charset_name, .. }) => {
                set(self, "client_encoding".into(), charset_name.value.clone())
            }
            Statement::Reset(r) => {
                match &r.reset {
                    Reset::ALL => self.0 = defaults(),
                    Reset::ConfigurationParameter(name) => {
                        let name = name_of(name);
                        match defaults().remove(&name) {
                            Some(v) => self.0.insert(name, v),
                            None => self.0.remove(&name),
                        };
                    }
                }
                Some(Ok(Output::Command(CommandTag::of("RESET"))))
            }
            Statement::ShowVariable { variable } => {
                let name = shown_name(variable);
                if is_datafusion(&name) {
                    return None;
                }
                if name == "all" {
                    let all = self
                        .0
                        .iter()
                        .map(|(k, v)| vec![k.clone(), v.clone()])
                        .collect();
                    return Some(Ok(rows(&["name", "setting"], all)));
                }
                Some(match self.0.get(&name) {
                    Some(v) => Ok(rows(&[&name], vec![vec![v.clone()]])),
                    None => Err(SqlError::user(
                        "42704",
                        format!("unrecognized configuration parameter \"{name}\""),
                    )),
                })
            }
            _ => None,
        }
    }
}
