//! PostgreSQL's listing views: `pg_tables`, `pg_views`, `pg_matviews` and `pg_indexes`,
//! each object by its schema's and its own name with its definition.

use super::shown::{has_indexes, index_definition, materialized_query, view_definition};
use crate::pg_catalog::relation::catalog_relation;
use crate::pg_catalog::source::Source;

catalog_relation! {
    /// The tables (not the materialized views).
    PgTables = "pg_tables" (rows: table_list) {
        schemaname: Text,
        tablename: Text,
        tableowner: Text,
        tablespace: Text or null,
        hasindexes: Bool,
        hasrules: Bool,
        hastriggers: Bool,
        rowsecurity: Bool,
    }
}

fn table_list(source: &Source) -> Vec<PgTables> {
    source
        .tables()
        .into_iter()
        .filter(|def| def.materialized.is_none())
        .map(|def| PgTables {
            hasindexes: has_indexes(&def),
            schemaname: def.schema,
            tablename: def.name,
            tableowner: source.owner().to_owned(),
            tablespace: None,
            hasrules: false,
            hastriggers: false,
            rowsecurity: false,
        })
        .collect()
}

catalog_relation! {
    PgViews = "pg_views" (rows: view_list) {
        schemaname: Text,
        viewname: Text,
        viewowner: Text,
        definition: Text,
    }
}

fn view_list(source: &Source) -> Vec<PgViews> {
    source
        .catalog()
        .views()
        .iter()
        .map(|v| PgViews {
            schemaname: v.schema.clone(),
            viewname: v.name.clone(),
            viewowner: source.owner().to_owned(),
            definition: view_definition(v),
        })
        .collect()
}

catalog_relation! {
    PgMatviews = "pg_matviews" (rows: materialized_view_list) {
        schemaname: Text,
        matviewname: Text,
        matviewowner: Text,
        tablespace: Text or null,
        hasindexes: Bool,
        ispopulated: Bool,
        definition: Text,
    }
}

fn materialized_view_list(source: &Source) -> Vec<PgMatviews> {
    source
        .tables()
        .into_iter()
        .filter_map(|def| {
            let definition = materialized_query(&def)?;
            Some(PgMatviews {
                hasindexes: has_indexes(&def),
                schemaname: def.schema,
                matviewname: def.name,
                matviewowner: source.owner().to_owned(),
                tablespace: None,
                ispopulated: true,
                definition,
            })
        })
        .collect()
}

catalog_relation! {
    /// Each table's indexes, its primary key's first.
    PgIndexes = "pg_indexes" (rows: index_list) {
        schemaname: Text,
        tablename: Text,
        indexname: Text,
        tablespace: Text or null,
        indexdef: Text,
    }
}

fn index_list(source: &Source) -> Vec<PgIndexes> {
    let mut rows = Vec::new();
    for def in source.tables() {
        let primary = (!def.primary_key.is_empty())
            .then(|| (true, def.primary_key_constraint(), def.primary_key.clone()));
        let others = def
            .indexes
            .iter()
            .map(|i| (i.unique, i.name.clone(), i.columns.clone()));
        for (unique, name, columns) in primary.into_iter().chain(others) {
            rows.push(PgIndexes {
                schemaname: def.schema.clone(),
                tablename: def.name.clone(),
                indexdef: index_definition(&def, unique, &name, &columns),
                indexname: name,
                tablespace: None,
            });
        }
    }
    rows
}
