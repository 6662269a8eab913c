//! What PostgreSQL clients say beyond pmdb's SQL: session settings, set with `SET` (or
//! `SET TIME ZONE`, `SET NAMES`) and read with `SHOW` or reset with `RESET`, which each
//! connection keeps for itself (drivers set them at start-up and read some back; of
//! these pmdb acts on the time limits, [`crate::timeouts`], and the search path, and refuses a time zone
//! other than UTC and a table access method other than heap). Settings of DataFusion (`datafusion.…`) go to
//! DataFusion instead. The isolation settings are the SQL session's own
//! ([`isolation`]).

use std::collections::BTreeMap;
use std::sync::Arc;

use datafusion::arrow::array::{RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::sql::parser::Statement as DfStatement;
use datafusion::sql::sqlparser::ast::{
    ContextModifier, Expr, Ident, ObjectName, Reset, Set, Statement, TransactionAccessMode,
    TransactionIsolationLevel, TransactionMode, Value,
};
use pmdb_sql::{CommandTag, Output, SettingChange, SettingValues, Severity, SqlError, SqlSession};

use crate::timeouts;

/// The PostgreSQL release pmdb answers as (at startup, in `SHOW server_version`).
pub const SERVER_VERSION: &str = "15.0";

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
        ("client_min_messages", "notice"),
        ("default_table_access_method", "heap"),
        // pmdb compiles no queries: as a PostgreSQL built without LLVM, JIT is off
        // whatever it is set to (drivers turn it off before catalog queries).
        ("jit", "off"),
        ("server_version", SERVER_VERSION),
        ("server_version_num", "150000"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect()
}

/// One connection's settings. In a block they are transactional, as in PostgreSQL: a
/// rollback restores those before the block, and `SET LOCAL` lasts until the block ends.
pub struct Settings {
    current: BTreeMap<String, String>,
    /// Since the block's first SET.
    block: Option<BlockSettings>,
    /// The time limits `current` sets, read once per change rather than per statement.
    limits: timeouts::Limits,
    /// Where `current` is shown to the SQL session (`current_setting`).
    shown: SettingValues,
}

struct BlockSettings {
    /// The settings before the block, which a rollback restores.
    before: BTreeMap<String, String>,
    /// The settings without the block's `SET LOCAL`s, once there was one: what a
    /// commit keeps.
    session: Option<BTreeMap<String, String>>,
}

impl Settings {
    /// The settings a session starts with, each change shown in `shown`.
    pub fn new(shown: SettingValues) -> Settings {
        shown.take_changes_checked_by(Arc::new(checked));
        let mut settings = Settings {
            current: defaults(),
            block: None,
            limits: timeouts::Limits::default(),
            shown,
        };
        settings.changed();
        settings
    }
}

fn name_of(name: &ObjectName) -> String {
    name.to_string().trim_matches('"').to_lowercase()
}

/// The value setting `name` (in lower case) takes when set to `value`, as it shows it,
/// or why it cannot be set: one SET and `set_config` alike check.
pub fn checked(name: &str, value: &str) -> Result<String, SqlError> {
    // TIMESTAMPTZ values show in UTC: another zone would be ignored.
    if name == "timezone" && !pmdb_sql::names_utc(value) {
        return Err(SqlError::unsupported(format!(
            "time zone {value:?}: pmdb shows TIMESTAMPTZ values in UTC only"
        )));
    }
    // pmdb stores every table one way, which catalogs call heap.
    if name == "default_table_access_method" && value != "heap" {
        return Err(SqlError::unsupported(format!(
            "table access method {value:?}: pmdb's tables have one, heap"
        )));
    }
    if name == "client_min_messages"
        && !value.eq_ignore_ascii_case("error")
        && Severity::of_setting(value).is_none_or(|s| s == Severity::Info)
    {
        return Err(SqlError::user(
            "22023",
            format!("invalid value for parameter \"client_min_messages\": \"{value}\""),
        ));
    }
    if is_datafusion(name) {
        return Err(SqlError::unsupported(format!(
            "set_config of {name} (set it with SET)"
        )));
    }
    match timeouts::is_timeout(name) {
        true => timeouts::parse(name, value).map(timeouts::shown),
        false => Ok(value.to_owned()),
    }
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

fn isolation_name(level: TransactionIsolationLevel) -> &'static str {
    match level {
        TransactionIsolationLevel::ReadUncommitted => "read uncommitted",
        TransactionIsolationLevel::ReadCommitted => "read committed",
        TransactionIsolationLevel::RepeatableRead | TransactionIsolationLevel::Snapshot => {
            "repeatable read"
        }
        TransactionIsolationLevel::Serializable => "serializable",
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

/// The statement that gives the session back its default transaction characteristics,
/// when `statement` resets them (`RESET ALL`, `RESET default_transaction_isolation` or
/// `… read_only`): they live in the SQL session, not among the settings.
pub fn resets_characteristics(statement: &DfStatement) -> Option<DfStatement> {
    let DfStatement::Statement(s) = statement else {
        return None;
    };
    let Statement::Reset(r) = s.as_ref() else {
        return None;
    };
    let mode = match &r.reset {
        Reset::ALL => None,
        Reset::ConfigurationParameter(name) => Some(name_of(name)),
    };
    let modes = match mode.as_deref() {
        None => vec![
            TransactionMode::IsolationLevel(TransactionIsolationLevel::ReadCommitted),
            TransactionMode::AccessMode(TransactionAccessMode::ReadWrite),
        ],
        Some("default_transaction_isolation") => vec![TransactionMode::IsolationLevel(
            TransactionIsolationLevel::ReadCommitted,
        )],
        Some("default_transaction_read_only") => {
            vec![TransactionMode::AccessMode(
                TransactionAccessMode::ReadWrite,
            )]
        }
        Some(_) => return None,
    };
    Some(DfStatement::Statement(Box::new(Statement::Set(
        Set::SetTransaction {
            modes,
            snapshot: None,
            session: true,
        },
    ))))
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
    /// The time limits the settings set.
    pub fn limits(&self) -> timeouts::Limits {
        self.limits
    }

    /// The least severity of the notices the client asks for (`client_min_messages`):
    /// `None` for ERROR, which only INFO passes.
    pub fn least_notice(&self) -> Option<Severity> {
        self.current
            .get("client_min_messages")
            .and_then(|v| Severity::of_setting(v))
    }

    /// Where unqualified names are looked up, as `search_path` lists it.
    pub fn search_path(&self) -> &str {
        self.current
            .get("search_path")
            .map_or("public", String::as_str)
    }

    fn changed(&mut self) {
        self.limits = timeouts::Limits::of(|name| self.current.get(name).map(String::as_str));
        self.shown.store(&self.current);
    }

    /// Ends the block the settings were changed in: a commit keeps its changes but its
    /// `SET LOCAL`s, a rollback none.
    pub fn block_ended(&mut self, committed: bool) {
        if let Some(block) = self.block.take() {
            self.current = match committed {
                true => block.session.unwrap_or(std::mem::take(&mut self.current)),
                false => block.before,
            };
            self.changed();
        }
    }

    /// Changes the settings as `change` does: in a block (`in_block`) so that its end
    /// keeps or undoes it, only until then if `local`; outside a block a local change
    /// does nothing (PostgreSQL warns).
    fn change(
        &mut self,
        in_block: bool,
        local: bool,
        change: impl Fn(&mut BTreeMap<String, String>),
    ) {
        if !in_block {
            if !local {
                change(&mut self.current);
                self.changed();
            }
            return;
        }
        let block = self.block.get_or_insert_with(|| BlockSettings {
            before: self.current.clone(),
            session: None,
        });
        match (&mut block.session, local) {
            (None, true) => block.session = Some(self.current.clone()),
            (Some(session), false) => change(session),
            _ => {}
        }
        change(&mut self.current);
        self.changed();
    }

    /// Takes a change `set_config` asked for (checked by [`checked`] as it ran), as SET
    /// (or SET LOCAL) would make it; `in_block`: whether a transaction block is open.
    pub fn take(&mut self, change: SettingChange, in_block: bool) {
        self.change(in_block, change.local, |m| {
            m.insert(change.name.clone(), change.value.clone());
        });
    }

    /// Runs `statement` if it is about settings pmdb-sql does not know; `None` for any
    /// other statement. `in_block`: whether a transaction block is open.
    pub fn intercept(
        &mut self,
        statement: &DfStatement,
        in_block: bool,
    ) -> Option<Result<Output, SqlError>> {
        let DfStatement::Statement(s) = statement else {
            return None;
        };
        let set = |this: &mut Settings, local: bool, name: String, value: String| {
            let value = match checked(&name, &value) {
                Ok(value) => value,
                Err(e) => return Some(Err(e)),
            };
            this.change(in_block, local, |m| {
                m.insert(name.clone(), value.clone());
            });
            Some(Ok(Output::Command(CommandTag::of("SET"))))
        };
        match s.as_ref() {
            Statement::Set(Set::SingleAssignment {
                variable,
                values,
                scope,
                ..
            }) => {
                let local = matches!(scope, Some(ContextModifier::Local));
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
                set(self, local, name, value)
            }
            Statement::Set(Set::SetTimeZone { local, value }) => set(
                self,
                *local,
                "timezone".into(),
                value_of(std::slice::from_ref(value)),
            ),
            Statement::Set(Set::SetNames { charset_name, .. }) => set(
                self,
                false,
                "client_encoding".into(),
                charset_name.value.clone(),
            ),
            Statement::Reset(r) => {
                let name = match &r.reset {
                    Reset::ALL => None,
                    Reset::ConfigurationParameter(name) => Some(name_of(name)),
                };
                self.change(in_block, false, |m| match &name {
                    None => *m = defaults(),
                    Some(name) => {
                        match defaults().remove(name) {
                            Some(v) => m.insert(name.clone(), v),
                            None => m.remove(name),
                        };
                    }
                });
                Some(Ok(Output::Command(CommandTag::of("RESET"))))
            }
            Statement::ShowVariable { variable } => {
                let name = shown_name(variable);
                if is_datafusion(&name) {
                    return None;
                }
                if name == "all" {
                    let all = self
                        .current
                        .iter()
                        .map(|(k, v)| vec![k.clone(), v.clone()])
                        .collect();
                    return Some(Ok(rows(&["name", "setting"], all)));
                }
                Some(match self.current.get(&name) {
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
