//! One statement at a read point: pmdb's own DDL, UPDATE, DELETE, COPY and ANALYZE run
//! here; everything else is planned and run by DataFusion over the catalog's tables.

use datafusion::arrow::array::RecordBatch;
use datafusion::common::ScalarValue;
use datafusion::dataframe::DataFrame;
use datafusion::execution::context::SessionState;
use datafusion::logical_expr::LogicalPlan;
use datafusion::sql::parser::Statement as DfStatement;
use datafusion::sql::sqlparser::ast::{SelectItem, Statement, TableObject};

use std::sync::Arc;

use crate::ddl_transaction::DdlScope;
use crate::dml::Changed;
use crate::error::{Result, SqlError, df_error, state};
use crate::insert::{Inserted, insert_batches, insert_from_query, insert_statement, source_query};
use crate::notices::Notice;
use crate::output::{CommandTag, Output};
use crate::prepared::{Plan, Prepared};
use crate::read_point::ReadPoint;
use crate::schema::TableDef;
use crate::session::Session;
use crate::statement_kind::StatementKind;
use crate::{
    alter, column_defaults, ddl, dml, fast_path, locking, read_locks, returning, truncate,
    unhonoured,
};

/// The syntax-tree rewrites a statement gets before it is recognised, planned or run,
/// at once or prepared: names qualified as the session's temporary schema and search
/// path resolve them, column
/// defaults filled in, casts to domains, to enum types, to CHAR(n) and VARCHAR(n) and to
/// the types DataFusion cannot plan made calls, row constructors the planner refuses made `struct` calls, FETCH FIRST
/// made LIMIT, and functions in FROM given PostgreSQL's column names.
pub(crate) fn rewrite(session: &Session, s: &mut Statement) -> Result<()> {
    crate::explain_options::as_keywords(s)?;
    session
        .search_path
        .qualify(&session.catalog, &session.temp, s)?;
    column_defaults::apply(&session.catalog, s)?;
    crate::domain_input::rewrite_casts(&session.catalog, s)?;
    crate::enum_values::rewrite_casts(&session.catalog, s)?;
    crate::type_input::rewrite_casts(s)?;
    crate::length_casts::rewrite(s)?;
    crate::window_frames::as_literals(s);
    crate::make_interval::positional(s)?;
    crate::numeric_literals::as_exact(s);
    crate::row_constructors::as_struct_calls(s);
    crate::fetch_clause::as_limit(s)?;
    crate::function_columns::as_postgresql(s);
    Ok(())
}

pub(crate) async fn run(
    session: &Session,
    read_point: ReadPoint,
    kind: StatementKind,
    mut statement: DfStatement,
) -> Result<Output> {
    let shown = crate::select_names::shown(&statement);
    if let DfStatement::Statement(s) = &mut statement {
        rewrite(session, s)?;
        if !matches!(s.as_ref(), Statement::CreateView(_)) {
            crate::view_expansion::expand(&session.catalog, session.viewer, s)?;
        }
    }
    let read_point = match &statement {
        DfStatement::Statement(s) => {
            unhonoured::check(s)?;
            read_locks::take(session, read_point, &read_locks::tables_read(s)).await?
        }
        // It runs the statement.
        DfStatement::Explain(e) if e.options.analyze => match e.statement.as_ref() {
            DfStatement::Statement(s) => {
                read_locks::take(session, read_point, &read_locks::tables_read(s)).await?
            }
            _ => read_point,
        },
        _ => read_point,
    };
    if let DfStatement::Statement(s) = &statement {
        if kind.writes() {
            wait_for_ddl_of_target(session, &read_point, s).await?;
        }
        if let Some(out) = fast_path::run(session, &read_point, s).await {
            return out;
        }
        if kind == StatementKind::LockingQuery
            && let Statement::Query(q) = s.as_ref()
        {
            return locking::run(session, &read_point, q).await;
        }
        if kind == StatementKind::Vacuum {
            // Space is reclaimed by the engine's own merges and compactions.
            return Ok(Output::Command(CommandTag::of("VACUUM")));
        }
        if changes_catalog(s) {
            let scope = DdlScope::enter(session, &read_point, s).await?;
            let out = ddl(session, &read_point, s).await;
            return scope.end(out).await;
        }
        match s.as_ref() {
            Statement::Truncate(truncate) => {
                let done = Output::Command(CommandTag::of("TRUNCATE TABLE"));
                if read_point.txn().is_some() {
                    truncate::delete_rows(session, &read_point, truncate).await?;
                    return Ok(done);
                }
                // Outside a block, in a transaction of its own, as DDL runs.
                let scope = DdlScope::enter(session, &read_point, s).await?;
                let out = truncate::empty(session, truncate).await.map(|()| done);
                return scope.end(out).await;
            }
            Statement::Delete(delete) => {
                let changed = dml::delete(session, &read_point, delete).await?;
                let tag = CommandTag::delete(changed.count);
                return returned(session, changed, delete.returning.as_deref(), tag).await;
            }
            Statement::Update(update) => {
                let changed = dml::update(session, &read_point, update).await?;
                let tag = CommandTag::update(changed.count);
                return returned(session, changed, update.returning.as_deref(), tag).await;
            }
            Statement::Insert(insert) if insert.returning.is_some() || insert.on.is_some() => {
                let (inserted, alias) = insert_statement(session, &read_point, insert).await?;
                let tag = CommandTag::insert(inserted.count);
                return match &insert.returning {
                    Some(items) => {
                        let Inserted { table, rows, .. } = inserted;
                        returning::project(session, &table, &alias, items, &rows, tag).await
                    }
                    None => Ok(Output::Command(tag)),
                };
            }
            Statement::Insert(insert) if let Some(query) = source_query(insert) => {
                let TableObject::TableName(name) = &insert.table else {
                    return Err(SqlError::unsupported("INSERT into a table function"));
                };
                let name = crate::names::object_name(name)?;
                let inserted =
                    insert_from_query(session, &read_point, insert, &name, query).await?;
                return Ok(Output::Command(CommandTag::insert(inserted.count)));
            }
            Statement::Copy { to: true, .. } => {
                return crate::copy_out::run(session, &read_point, s).await;
            }
            Statement::Copy { to: false, .. } => {
                let n = dml::copy_from(session, &read_point, s).await?;
                return Ok(Output::Command(CommandTag::copy(n)));
            }
            Statement::Analyze(analyze) => {
                let tables = match &analyze.table_name {
                    Some(name) => vec![crate::names::object_name(name)?],
                    None => session
                        .catalog
                        .tables()
                        .iter()
                        .map(|t| t.name().clone())
                        .collect(),
                };
                for name in tables {
                    // It reads the whole table.
                    session
                        .off_executor(move |c| {
                            let (table, _guard) = c.lock_table(&name)?;
                            crate::segments::rebuild(&table)
                        })
                        .await?;
                }
                return Ok(Output::Command(CommandTag::of("ANALYZE")));
            }
            _ => {}
        }
    }
    let state = session.statement_state(read_point);
    let (plan, names) = crate::select_names::plan(&state, statement, shown).await?;
    let out = run_plan(session, state, plan, Optimized::AtRun).await?;
    match names {
        Some(names) => crate::select_names::renamed(out, &names),
        None => Ok(out),
    }
}

/// Waits, before statement `s` that changes rows is planned, for another session's
/// transaction whose DDL changes the table `s` writes: the statement is then planned
/// with the table as that DDL left it, as PostgreSQL's writer waits for the relation
/// lock before it plans (in a block, the table's lock it took stays taken to the
/// block's end).
async fn wait_for_ddl_of_target(
    session: &Session,
    read_point: &ReadPoint,
    s: &Statement,
) -> Result<()> {
    if !session.catalog.changed_by_other(session.viewer) {
        return Ok(());
    }
    let Some(name) = crate::view_expansion::changed_relation(s)? else {
        return Ok(());
    };
    if session
        .catalog
        .table_seen_by(&name, session.viewer)
        .is_none()
    {
        // Not there as committed (made by DDL yet to commit, or never): planning says so.
        return Ok(());
    }
    let mut locker = read_point.locker(&session.row_locks);
    session.catalog.lock_table_async(&name, &mut locker).await?;
    Ok(())
}

/// Whether `s` changes the catalog: it runs in a transaction ([`DdlScope`]).
fn changes_catalog(s: &Statement) -> bool {
    matches!(
        s,
        Statement::CreateTable(_)
            | Statement::CreateIndex(_)
            | Statement::CreateSequence { .. }
            | Statement::CreateSchema { .. }
            | Statement::Drop { .. }
            | Statement::AlterTable(_)
            | Statement::CreateView(_)
            | Statement::CreateType { .. }
            | Statement::AlterType(_)
            | Statement::CreateDomain(_)
            | Statement::DropDomain(_)
            | Statement::CreateExtension(_)
            | Statement::DropExtension(_)
            | Statement::Comment { .. }
    )
}

/// Runs `s`, a statement [`changes_catalog`] says changes the catalog.
async fn ddl(session: &Session, read_point: &ReadPoint, s: &Statement) -> Result<Output> {
    let temporary = match session.temp.makes_temporary(s) {
        true => {
            let (temp, given) = (session.temp.clone(), s.clone());
            Some(
                session
                    .off_executor(move |c| temp.made_temporary(c, given))
                    .await?,
            )
        }
        false => None,
    };
    let s = temporary.as_ref().unwrap_or(s);
    let tag = match s {
        Statement::CreateTable(create) if create.query.is_some() => {
            return Ok(Output::Command(
                match crate::create_as::run(session, read_point, create).await? {
                    Some(rows) => CommandTag::select(rows),
                    None => CommandTag::of("CREATE TABLE AS"),
                },
            ));
        }
        Statement::CreateTable(create) => {
            let new = ddl::table_def(&session.catalog, create)?;
            check_defaults(session, &new.def).await?;
            let if_not_exists = create.if_not_exists;
            let name = new.def.name.clone();
            let made = session
                .off_executor(move |c| {
                    c.create_table(new.def, new.serials, new.references, if_not_exists)
                })
                .await?;
            existed(session, made, "relation", &name, state::DUPLICATE_TABLE);
            "CREATE TABLE"
        }
        Statement::CreateSequence { .. } => {
            let (def, if_not_exists) = ddl::sequence_def(&session.catalog, s)?;
            let name = def.name.clone();
            let made = session
                .off_executor(move |c| c.create_sequence(def, if_not_exists))
                .await?;
            existed(session, made, "relation", &name, state::DUPLICATE_TABLE);
            "CREATE SEQUENCE"
        }
        Statement::CreateSchema { .. } => {
            let (name, if_not_exists) = ddl::schema_to_create(s)?;
            let schema = name.clone();
            let made = session
                .off_executor(move |c| c.create_schema(&name, if_not_exists))
                .await?;
            existed(session, made, "schema", &schema, state::DUPLICATE_SCHEMA);
            "CREATE SCHEMA"
        }
        Statement::CreateIndex(create) => {
            let create = create.clone();
            let name = create
                .name
                .as_ref()
                .and_then(|n| crate::names::object_name(n).ok())
                .map(|n| n.name);
            let made = session
                .off_executor(move |c| ddl::create_index(c, &create))
                .await?;
            if let Some(name) = name {
                existed(session, made, "relation", &name, state::DUPLICATE_TABLE);
            }
            "CREATE INDEX"
        }
        Statement::Drop {
            object_type,
            if_exists,
            names,
            cascade,
            ..
        } => {
            let (object_type, names, if_exists, cascade) =
                (*object_type, names.clone(), *if_exists, *cascade);
            let (tag, skipped) = session
                .off_executor(move |c| ddl::drop(c, &object_type, &names, if_exists, cascade))
                .await?;
            skipped.into_iter().for_each(|n| session.notices.push(n));
            tag
        }
        Statement::AlterTable(_) if let Some(refresh) = crate::refresh::of_statement(s) => {
            let refresh = refresh?;
            let name = crate::names::object_name(&refresh.name)?;
            crate::create_as::refresh(session, read_point, name, refresh.concurrently).await?;
            "REFRESH MATERIALIZED VIEW"
        }
        Statement::AlterTable(alter) => {
            alter::run(session, alter).await?;
            "ALTER TABLE"
        }
        Statement::CreateView(create) => {
            match crate::create_view::create(session, read_point, create).await? {
                Some(rows) => return Ok(Output::Command(CommandTag::select(rows))),
                None if create.materialized => "CREATE MATERIALIZED VIEW",
                None => "CREATE VIEW",
            }
        }
        Statement::CreateType { .. } => {
            let new = crate::type_ddl::create(s)?;
            session
                .off_executor(move |c| c.create_enum(&new.name, new.labels))
                .await?;
            "CREATE TYPE"
        }
        Statement::CreateDomain(create) => {
            let create = create.clone();
            session
                .off_executor(move |c| {
                    let new = crate::domain_ddl::create_domain(c, &create)?;
                    c.create_domain(new)
                })
                .await?;
            "CREATE DOMAIN"
        }
        Statement::DropDomain(drop) => {
            let drop = drop.clone();
            let skipped = session
                .off_executor(move |c| crate::domain_ddl::drop_domain(c, &drop))
                .await?;
            skipped.into_iter().for_each(|n| session.notices.push(n));
            "DROP DOMAIN"
        }
        Statement::AlterType(alter) => {
            let alter = alter.clone();
            session
                .off_executor(move |c| crate::type_ddl::alter(c, &alter))
                .await?;
            "ALTER TYPE"
        }
        Statement::CreateExtension(create) => {
            let create = create.clone();
            let name = crate::names::ident_name(&create.name);
            let made = session
                .off_executor(move |c| crate::extension_ddl::create(c, &create))
                .await?;
            existed(session, made, "extension", &name, state::DUPLICATE_OBJECT);
            "CREATE EXTENSION"
        }
        Statement::DropExtension(drop) => {
            let drop = drop.clone();
            let skipped = session
                .off_executor(move |c| crate::extension_ddl::drop(c, &drop))
                .await?;
            skipped.into_iter().for_each(|n| session.notices.push(n));
            "DROP EXTENSION"
        }
        Statement::Comment { .. } => {
            let (target, text) = crate::comments::target(s)?;
            session
                .off_executor(move |c| crate::comments::set(c, &target, text))
                .await?;
            "COMMENT"
        }
        _ => return Err(SqlError::unsupported(format!("{s}"))),
    };
    Ok(Output::Command(CommandTag::of(tag)))
}

/// Plans each column default of `def` as a value of its column's type (not run: it may
/// call `nextval`), so that a default naming no function there is, or of a type that
/// does not convert, is refused at CREATE TABLE, as in PostgreSQL.
/// What `IF NOT EXISTS` says when a CREATE made nothing (`made` false): the `kind`
/// called `name` was there already.
fn existed(session: &Session, made: bool, kind: &str, name: &str, sqlstate: &str) {
    if !made {
        session
            .notices
            .push(Notice::skipped_existing(kind, name, sqlstate));
    }
}

async fn check_defaults(session: &Session, def: &TableDef) -> Result<()> {
    for c in &def.columns {
        let Some(text) = c.default.as_deref().filter(|t| !t.is_empty()) else {
            continue;
        };
        let statement = column_defaults::as_column_value(text, c.ty)?;
        let state = session.statement_state(ReadPoint::new(&session.db));
        state.statement_to_plan(statement).await.map_err(df_error)?;
    }
    Ok(())
}

/// Runs `prepared`, a statement the fast path serves, with `params` for its `$n`, if
/// the fast path takes them; `None` (nothing done but the tables' read locks taken)
/// when it does not, or DDL ran since it was planned.
pub(crate) async fn run_fast(
    session: &Session,
    read_point: ReadPoint,
    prepared: &Prepared,
    params: &[ScalarValue],
) -> Option<Result<Output>> {
    let Plan::Fast(shape) = &prepared.plan else {
        return None;
    };
    let read_point = match read_locks::take(session, read_point, prepared.reads()).await {
        Ok(r) => r,
        Err(e) => return Some(Err(e)),
    };
    if prepared.generation != session.catalog.generation() {
        return None;
    }
    fast_path::execute(session, &read_point, shape, params).await
}

/// Runs a prepared statement with `params` (already of their planned types): through
/// the plan it keeps while the catalog is as it was planned against, else bound as
/// literals and run like any statement.
pub(crate) async fn run_prepared(
    session: &Session,
    read_point: ReadPoint,
    prepared: &Prepared,
    params: Vec<ScalarValue>,
) -> Result<Output> {
    let read_point = read_locks::take(session, read_point, prepared.reads()).await?;
    if prepared.generation == session.catalog.generation() {
        match &prepared.plan {
            Plan::Fast(shape) => {
                if let Some(out) = fast_path::execute(session, &read_point, shape, &params).await {
                    return out;
                }
            }
            Plan::Logical { plan, optimized } => {
                let state = session.statement_state(read_point);
                let bound = optimized
                    .as_ref()
                    .and_then(|o| crate::optimized_plan::bind(&state, o, params.clone()));
                // Boxed, as the general path below: their futures are large, and the
                // fast path's would otherwise be as large and copied at each statement.
                let out = match bound {
                    Some(bound) => {
                        Box::pin(run_plan(session, state, bound, Optimized::Already)).await?
                    }
                    None => {
                        let plan = plan.clone().with_param_values(params).map_err(df_error)?;
                        Box::pin(run_plan(session, state, plan, Optimized::AtRun)).await?
                    }
                };
                // Its columns as PostgreSQL names them, which Parse described.
                return match prepared.columns() {
                    Some(columns) => {
                        let names: Vec<String> =
                            columns.fields().iter().map(|f| f.name().clone()).collect();
                        crate::select_names::renamed(out, &names)
                    }
                    None => Ok(out),
                };
            }
            Plan::InsertQuery(plan) => {
                if let DfStatement::Statement(s) = prepared.statement()
                    && let Statement::Insert(insert) = s.as_ref()
                    && let TableObject::TableName(name) = &insert.table
                {
                    let plan = plan.clone().with_param_values(params).map_err(df_error)?;
                    let state = session.statement_state(read_point.clone());
                    let batches = Box::pin(session.collect(DataFrame::new(state, plan))).await?;
                    let name = crate::names::object_name(name)?;
                    let inserted = Box::pin(insert_batches(
                        session,
                        &read_point,
                        insert,
                        &name,
                        &batches,
                        None,
                    ))
                    .await?;
                    return Ok(Output::Command(CommandTag::insert(inserted.count)));
                }
            }
            Plan::Unplanned => {}
        }
    }
    let kind = prepared.kind();
    let out = Box::pin(run(session, read_point, kind, prepared.bind(&params)?)).await?;
    // DDL since Parse may have changed what the query returns; its client decodes rows
    // by what Parse described, so, as PostgreSQL, the statement fails instead.
    if let (Some(described), Output::Rows { schema, .. }) = (prepared.columns(), &out)
        && !kind.writes()
        && !same_types(described, schema)
    {
        return Err(SqlError::CachedPlanChanged);
    }
    Ok(out)
}

/// Whether two row types have the same column types, in order.
fn same_types(
    a: &datafusion::arrow::datatypes::Schema,
    b: &datafusion::arrow::datatypes::Schema,
) -> bool {
    a.fields().len() == b.fields().len()
        && a.fields()
            .iter()
            .zip(b.fields())
            .all(|(x, y)| x.data_type() == y.data_type())
}

/// Whether a logical plan about to run was optimized already.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Optimized {
    Already,
    AtRun,
}

/// Runs a statement DataFusion planned.
async fn run_plan(
    session: &Session,
    state: SessionState,
    plan: LogicalPlan,
    optimized: Optimized,
) -> Result<Output> {
    let is_insert = matches!(&plan, LogicalPlan::Dml(d) if d.op.name() == "Insert Into");
    let is_command = matches!(&plan, LogicalPlan::Statement(_) | LogicalPlan::Ddl(_));
    let tag = datafusion_tag(&plan);
    let schema = plan.schema().inner().clone();
    let batches = match &plan {
        // Statements that change the session (SET) act on the context itself.
        LogicalPlan::Statement(_) | LogicalPlan::Ddl(_) => session
            .ctx
            .execute_logical_plan(plan)
            .await
            .map_err(df_error)?
            .collect()
            .await
            .map_err(df_error)?,
        _ if optimized == Optimized::Already => session.collect_optimized(state, plan).await?,
        _ => session.collect(DataFrame::new(state, plan)).await?,
    };
    if is_insert {
        return Ok(Output::Command(CommandTag::insert(count_of(&batches))));
    }
    if is_command {
        return Ok(Output::Command(tag));
    }
    Ok(Output::Rows { schema, batches })
}

/// What an UPDATE or DELETE gives back: its tag, or with RETURNING, `items` over the
/// rows it changed.
async fn returned(
    session: &Session,
    changed: Changed,
    items: Option<&[SelectItem]>,
    tag: CommandTag,
) -> Result<Output> {
    match items {
        None => Ok(Output::Command(tag)),
        Some(items) => {
            let (table, alias) = (Arc::clone(&changed.table), changed.alias.clone());
            let rows = changed.rows();
            returning::project(session, &table, &alias, items, &rows, tag).await
        }
    }
}

/// The tag of a statement DataFusion plans and pmdb does not run itself.
fn datafusion_tag(plan: &LogicalPlan) -> CommandTag {
    use datafusion::logical_expr::{DdlStatement as D, Statement as S};
    CommandTag::of(match plan {
        LogicalPlan::Statement(s) => match s {
            S::TransactionStart(_) => "BEGIN",
            S::TransactionEnd(_) => "COMMIT",
            S::SetVariable(_) => "SET",
            S::ResetVariable(_) => "RESET",
            S::Prepare(_) => "PREPARE",
            S::Execute(_) => "EXECUTE",
            S::Deallocate(_) => "DEALLOCATE",
        },
        LogicalPlan::Ddl(d) => match d {
            D::CreateExternalTable(_) | D::CreateMemoryTable(_) => "CREATE TABLE",
            D::CreateView(_) => "CREATE VIEW",
            D::CreateCatalogSchema(_) => "CREATE SCHEMA",
            D::CreateCatalog(_) => "CREATE DATABASE",
            D::CreateIndex(_) => "CREATE INDEX",
            D::DropTable(_) => "DROP TABLE",
            D::DropView(_) => "DROP VIEW",
            D::DropCatalogSchema(_) => "DROP SCHEMA",
            D::CreateFunction(_) => "CREATE FUNCTION",
            D::DropFunction(_) => "DROP FUNCTION",
        },
        LogicalPlan::Dml(_) => "INSERT",
        _ => "SELECT",
    })
}

/// The rows an INSERT, UPDATE or DELETE plan reports in its one-row count batch.
fn count_of(batches: &[RecordBatch]) -> u64 {
    use datafusion::arrow::array::AsArray;
    use datafusion::arrow::datatypes::UInt64Type;
    batches
        .iter()
        .filter(|b| b.num_columns() == 1 && b.num_rows() > 0)
        .filter_map(|b| b.column(0).as_primitive_opt::<UInt64Type>())
        .map(|a| a.values().iter().sum::<u64>())
        .sum()
}
