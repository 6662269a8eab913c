//! CREATE [OR REPLACE] VIEW and CREATE MATERIALIZED VIEW: a view's query is planned
//! once (so a view that does not plan is refused when made) and its text stored with
//! its columns' names and types; a materialized view is a table its query fills
//! ([`crate::create_as`]).

use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{CreateView, Query, Statement};

use crate::error::{Result, SqlError};
use crate::names::{ident_name, object_name};
use crate::read_point::ReadPoint;
use crate::session::Session;
use crate::types::SqlType;
use crate::view::ViewDef;
use crate::view_expansion::{column_names, expand};

/// CREATE [OR REPLACE] VIEW: the query is planned (its views expanded) at `read_point`
/// for its columns, then the view stored. CREATE MATERIALIZED VIEW: a table the query
/// fills ([`crate::create_as`]); the rows it wrote (`None` for a view, or when IF NOT
/// EXISTS found the relation).
pub(crate) async fn create(
    session: &Session,
    read_point: &ReadPoint,
    create: &CreateView,
) -> Result<Option<u64>> {
    let CreateView {
        or_alter,
        or_replace,
        materialized,
        secure,
        name,
        name_before_not_exists: _,
        columns,
        query,
        options,
        cluster_by,
        comment,
        with_no_schema_binding,
        if_not_exists,
        temporary,
        copy_grants,
        to,
        params,
    } = create;
    let options_given = !matches!(
        options,
        datafusion::sql::sqlparser::ast::CreateTableOptions::None
    );
    if *or_alter
        || *secure
        || *with_no_schema_binding
        || (*if_not_exists && !*materialized)
        || (*materialized && (*or_replace || *temporary || options_given))
        || *temporary
        || *copy_grants
        || to.is_some()
        || params.is_some()
        || comment.is_some()
        || !cluster_by.is_empty()
        || options_given
        || columns
            .iter()
            .any(|c| c.data_type.is_some() || c.options.is_some())
    {
        return Err(SqlError::unsupported(
            "CREATE VIEW with TEMPORARY, IF NOT EXISTS, options or typed columns, or CREATE \
             MATERIALIZED VIEW with OR REPLACE, TEMPORARY or options (pmdb has CREATE [OR \
             REPLACE] VIEW name [(columns)] AS query and CREATE MATERIALIZED VIEW [IF NOT \
             EXISTS] name [(columns)] AS query)",
        ));
    }
    let name = object_name(name)?;
    let given: Vec<String> = columns.iter().map(|c| ident_name(&c.name)).collect();
    let mut planned = Statement::Query(query.clone());
    expand(&session.catalog, session.viewer, &mut planned)?;
    let Statement::Query(planned) = planned else {
        unreachable!("a query expands to a query")
    };
    if *materialized {
        if reads_temporary(query) {
            return Err(SqlError::unsupported(
                "materialized views must not use temporary tables or views",
            ));
        }
        let table = crate::create_as::QueryTable {
            name,
            query: *planned,
            columns: given,
            if_not_exists: *if_not_exists,
            materialized: Some(query.to_string()),
        };
        return crate::create_as::create_filled(session, read_point, table).await;
    }
    let (_, plan) = crate::create_as::plan_query(session, read_point, *planned).await?;
    let fields: Vec<String> = plan
        .schema()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect();
    let types: Option<Vec<SqlType>> = plan
        .schema()
        .fields()
        .iter()
        .map(|f| crate::create_as::field_type(f.name(), f).ok())
        .collect();
    let names = column_names(
        &given,
        &fields,
        "CREATE VIEW specifies more column names than columns",
    )?;
    let def = ViewDef {
        id: 0,
        schema: name.schema,
        name: name.name,
        output: types
            .map(|types| names.iter().cloned().zip(types).collect())
            .unwrap_or_default(),
        columns: if given.is_empty() { Vec::new() } else { names },
        query: query.to_string(),
    };
    let or_replace = *or_replace;
    session
        .off_executor(move |c| c.create_view(def, or_replace))
        .await
        .map(|()| None)
}

/// Whether `query` reads a temporary relation (its names qualified already).
fn reads_temporary(query: &Query) -> bool {
    let found =
        datafusion::sql::sqlparser::ast::visit_relations(query, |name| match object_name(name) {
            Ok(r) if crate::temp_tables::is_temporary(&r.schema) => ControlFlow::Break(()),
            _ => ControlFlow::Continue(()),
        });
    found.is_break()
}
