//! Tables seen with their stored keys: the names under which the schema finds a table
//! with its key as a last column (UPDATE and DELETE find their rows so; a locking SELECT
//! gives each locked table a name of its own), and the conditions that narrow such a
//! scan to given keys, as AST nodes.

use datafusion::sql::sqlparser::ast::{BinaryOperator, Expr, Ident, Value};

use crate::arrow_conv::KEY_COLUMN;

/// Prefix of the name under which a table is also found with its key column
/// (`__pmdb_key`, the stored key of each row), for the scans of UPDATE and DELETE.
const KEYED_PREFIX: &str = "__pmdb_keyed__";

/// The name under which `table` is found with its stored key in column
/// [`keyed_column`]`(instance)`: each locked table of one query has an instance of its
/// own, so that a wildcard can leave out each key by a name no other column has.
pub(crate) fn keyed_name(table: &str, instance: Option<usize>) -> String {
    match instance {
        None => format!("{KEYED_PREFIX}{table}"),
        Some(i) => format!("__pmdb_keyed_{i}__{table}"),
    }
}

/// The key column of a table found under [`keyed_name`]`(_, instance)`.
pub(crate) fn keyed_column(instance: Option<usize>) -> String {
    match instance {
        None => KEY_COLUMN.to_string(),
        Some(i) => format!("{KEY_COLUMN}_{i}"),
    }
}

/// The table a name from [`keyed_name`] names, with its key column's name.
pub(crate) fn keyed(name: &str) -> Option<(&str, String)> {
    if let Some(table) = name.strip_prefix(KEYED_PREFIX) {
        return Some((table, keyed_column(None)));
    }
    let (instance, table) = name.strip_prefix("__pmdb_keyed_")?.split_once("__")?;
    let instance: usize = instance.parse().ok()?;
    Some((table, keyed_column(Some(instance))))
}

/// Column `key` of the table seen as `alias`.
pub(crate) fn key_of(alias: &str, key: &str) -> Expr {
    Expr::CompoundIdentifier(vec![Ident::with_quote('"', alias), Ident::new(key)])
}

/// A stored key as a literal (`X'…'`), which a keyed scan reads as a point lookup.
pub(crate) fn key_literal(key: &[u8]) -> Expr {
    let hex: String = key.iter().map(|b| format!("{b:02x}")).collect();
    Expr::value(Value::HexStringLiteral(hex))
}

/// `selection AND condition`.
pub(crate) fn and_also(selection: &mut Option<Expr>, condition: Expr) {
    *selection = Some(match selection.take() {
        None => condition,
        Some(w) => Expr::BinaryOp {
            left: Box::new(Expr::Nested(Box::new(w))),
            op: BinaryOperator::And,
            right: Box::new(condition),
        },
    });
}
