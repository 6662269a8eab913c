//! The statements prepared by name, the protocol's (Parse with a name) and SQL's
//! (`PREPARE name AS …`) alike, as PostgreSQL keeps them in one namespace: SQL's
//! `EXECUTE name [(arguments)]` runs either, a second Parse or PREPARE of a name in use
//! fails with 42P05, and `DEALLOCATE` forgets either. The session's queries read them
//! as `pg_prepared_statements` (see [`crate::session_statements`]).

use std::sync::Arc;

use datafusion::common::ScalarValue;
use datafusion::sql::parser::Statement as DfStatement;
use datafusion::sql::sqlparser::ast::{Expr, Ident, Statement, UnaryOperator, Value};
use pmdb_sql::{Prepared, SqlError};

use crate::session_statements::{Named, SessionStatements};

/// A statement EXECUTE runs, and its arguments.
pub(super) type Executed = (Arc<Prepared>, Vec<ScalarValue>);

/// The statements prepared by name.
#[derive(Default)]
pub(super) struct NamedStatements(Arc<SessionStatements>);

impl NamedStatements {
    /// What the session's queries read them through.
    pub fn shared(&self) -> Arc<SessionStatements> {
        Arc::clone(&self.0)
    }

    /// Keeps `prepared` as `name`, given as `statement` (by SQL's PREPARE if
    /// `from_sql`); 42P05 if the name is taken.
    pub fn add(
        &mut self,
        name: &str,
        prepared: Option<Arc<Prepared>>,
        statement: &str,
        from_sql: bool,
    ) -> Result<(), SqlError> {
        let mut map = self.0.write();
        if map.contains_key(name) {
            return Err(SqlError::user(
                "42P05",
                format!("prepared statement \"{name}\" already exists"),
            ));
        }
        let prepared_at = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_micros()).unwrap_or(i64::MAX));
        map.insert(
            name.to_owned(),
            Named {
                prepared,
                statement: statement.to_owned(),
                prepared_at,
                from_sql,
                runs: 0,
            },
        );
        Ok(())
    }

    pub fn contains(&self, name: &str) -> bool {
        self.0.read().contains_key(name)
    }

    /// Counts a run of the statement `name` (none for a name not prepared: the unnamed
    /// statement).
    pub fn ran(&self, name: &str) {
        if let Some(named) = self.0.write().get_mut(name) {
            named.runs = named.runs.saturating_add(1);
        }
    }

    /// Forgets `name`; whether it was there.
    pub fn remove(&mut self, name: &str) -> bool {
        self.0.write().remove(name).is_some()
    }

    /// Forgets every name, and gives them.
    pub fn drain(&mut self) -> Vec<String> {
        self.0.write().drain().map(|(name, _)| name).collect()
    }

    /// What `EXECUTE name [(arguments)]` runs: the statement, and its arguments as
    /// text that its parameters' types read. `None` if `s` is no EXECUTE; 26000 for a
    /// name prepared nowhere, 42601 for arguments that do not match its parameters.
    pub fn executed(&self, s: &DfStatement) -> Option<Result<Executed, SqlError>> {
        let DfStatement::Statement(s) = s else {
            return None;
        };
        let Statement::Execute {
            name: Some(name),
            parameters,
            immediate: false,
            into,
            using,
            ..
        } = s.as_ref()
        else {
            return None;
        };
        Some((|| {
            if !into.is_empty() || !using.is_empty() {
                return Err(SqlError::unsupported("EXECUTE … INTO or USING"));
            }
            let [part] = name.0.as_slice() else {
                return Err(SqlError::user(
                    "42601",
                    format!("bad statement name {name}"),
                ));
            };
            let ident = part
                .as_ident()
                .ok_or_else(|| SqlError::user("42601", format!("bad statement name {name}")))?;
            let name = folded(ident);
            let missing = || {
                SqlError::user(
                    "26000",
                    format!("prepared statement \"{name}\" does not exist"),
                )
            };
            let prepared = self
                .0
                .read()
                .get(&name)
                .ok_or_else(missing)?
                .prepared
                .clone();
            let prepared = prepared.ok_or_else(missing)?;
            self.ran(&name);
            let wanted = prepared.parameters().len();
            if parameters.len() != wanted {
                return Err(SqlError::user(
                    "42601",
                    format!("wrong number of parameters for prepared statement \"{name}\""),
                )
                .with_detail(format!(
                    "Expected {wanted} parameters but got {}.",
                    parameters.len()
                )));
            }
            let arguments = parameters.iter().map(argument).collect::<Result<_, _>>()?;
            Ok((prepared, arguments))
        })())
    }
}

/// A statement's name as PostgreSQL folds identifiers.
pub(super) fn folded(name: &Ident) -> String {
    match name.quote_style {
        Some(_) => name.value.clone(),
        None => name.value.to_lowercase(),
    }
}

/// An EXECUTE argument: a constant, as the text its parameter's type reads.
fn argument(e: &Expr) -> Result<ScalarValue, SqlError> {
    let text = match e {
        Expr::Value(v) => match &v.value {
            Value::Null => return Ok(ScalarValue::Null),
            Value::SingleQuotedString(s) | Value::EscapedStringLiteral(s) => s.clone(),
            Value::Number(n, _) => n.clone(),
            Value::Boolean(b) => b.to_string(),
            _ => None.ok_or_else(|| not_constant(e))?,
        },
        Expr::UnaryOp {
            op: UnaryOperator::Minus,
            expr,
        } => match argument(expr)? {
            ScalarValue::Utf8(Some(n)) if !n.starts_with('-') => format!("-{n}"),
            _ => return Err(not_constant(e)),
        },
        _ => return Err(not_constant(e)),
    };
    Ok(ScalarValue::Utf8(Some(text)))
}

fn not_constant(e: &Expr) -> SqlError {
    SqlError::unsupported(format!(
        "EXECUTE with an argument that is not a constant ({e})"
    ))
}
