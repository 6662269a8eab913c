//! How pmdb's objects read in the catalog where PostgreSQL shows them as text or
//! numbers of its own: index and view definitions, column defaults, column numbers.

use pmdb_sql::schema::TableDef;
use pmdb_sql::view::ViewDef;

pub fn has_indexes(def: &TableDef) -> bool {
    !def.primary_key.is_empty() || !def.indexes.is_empty()
}

/// Column positions (from 0) as PostgreSQL numbers them (from 1).
pub fn column_numbers(columns: &[u16]) -> Vec<i16> {
    columns
        .iter()
        .map(|&c| i16::try_from(c).map_or(i16::MAX, |c| c.saturating_add(1)))
        .collect()
}

/// A default's text as PostgreSQL prints it: a sequence's name as a `regclass`.
pub fn shown_default(default: &str) -> String {
    match default
        .strip_prefix("nextval(")
        .and_then(|d| d.strip_suffix(')'))
    {
        Some(name) if name.starts_with('\'') && name.ends_with('\'') => {
            format!("nextval({name}::regclass)")
        }
        _ => default.to_owned(),
    }
}

/// A view's query as `pg_views` and `information_schema.views` show it.
pub fn view_definition(v: &ViewDef) -> String {
    format!(" {};", v.query)
}

/// A materialized view's query as `pg_get_viewdef` and `pg_matviews` show it.
pub fn materialized_query(def: &TableDef) -> Option<String> {
    def.materialized.as_ref().map(|q| format!(" {q};"))
}

/// The names of `columns` of table `def`, quoted where they need it, comma-separated.
pub fn column_list(def: &TableDef, columns: &[u16]) -> String {
    columns
        .iter()
        .filter_map(|&c| def.columns.get(usize::from(c)))
        .map(|c| pmdb_sql::quoted_identifier(&c.name))
        .collect::<Vec<_>>()
        .join(", ")
}

/// An index's CREATE INDEX, as `pg_get_indexdef` and `pg_indexes` show it.
pub fn index_definition(table: &TableDef, unique: bool, name: &str, columns: &[u16]) -> String {
    format!(
        "CREATE {}INDEX {} ON {}.{} USING btree ({})",
        if unique { "UNIQUE " } else { "" },
        pmdb_sql::quoted_identifier(name),
        pmdb_sql::quoted_identifier(&table.schema),
        pmdb_sql::quoted_identifier(&table.name),
        column_list(table, columns)
    )
}

/// `information_schema`'s yes-or-no.
pub fn yes_no(b: bool) -> String {
    if b { "YES" } else { "NO" }.to_owned()
}
