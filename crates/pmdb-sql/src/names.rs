//! Names as PostgreSQL reads them: unquoted identifiers fold to lower case, and a
//! table may be named with pmdb's one schema (`public`) and database before it.

use datafusion::sql::sqlparser::ast::ObjectName;

use crate::error::{Result, SqlError, state};

/// A name as DataFusion resolves it: unquoted identifiers fold to lower case.
pub fn ident_name(ident: &datafusion::sql::sqlparser::ast::Ident) -> String {
    if ident.quote_style.is_some() {
        ident.value.clone()
    } else {
        ident.value.to_lowercase()
    }
}

/// The table named by `name` (an optional `public.` schema is allowed).
pub fn object_name(name: &ObjectName) -> Result<String> {
    let parts: Vec<String> = name
        .0
        .iter()
        .map(|p| {
            p.as_ident()
                .map(ident_name)
                .ok_or_else(|| SqlError::user(state::SYNTAX, format!("bad name {name}")))
        })
        .collect::<Result<_>>()?;
    match parts.as_slice() {
        [n] => Ok(n.clone()),
        [s, n] if s == "public" => Ok(n.clone()),
        [c, s, n] if c == "pmdb" && s == "public" => Ok(n.clone()),
        _ => Err(SqlError::user(
            state::UNDEFINED_TABLE,
            format!("{name}: pmdb has one schema, public"),
        )),
    }
}
