//! `SELECT … FOR UPDATE | NO KEY UPDATE | SHARE | KEY SHARE [OF t, …] [NOWAIT | SKIP
//! LOCKED]`: every row the query returns is locked (see [`crate::row_locks`]) in each
//! table the clauses name (all tables of FROM without `OF`), held to the end of the block.
//! The query runs with each locked table's stored key beside its columns; its rows are
//! then locked one by one, in the query's order, and `LIMIT` / `OFFSET` count the rows
//! locked, as PostgreSQL's LockRows does. A row that a commit changed after the
//! statement's snapshot is read again once locked, as PostgreSQL's EvalPlanQual does:
//! under READ COMMITTED the query is asked again for that row alone at a fresh snapshot
//! (it is returned as it is now, or left out if it no longer qualifies); above it, the
//! statement fails with 40001.
//! The clauses themselves are read in [`crate::lock_clauses`].

use std::collections::HashSet;
use std::sync::Arc;

use datafusion::arrow::array::{Array, AsArray, RecordBatch};
use datafusion::arrow::compute::interleave_record_batch;
use datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};
use datafusion::dataframe::DataFrame;
use datafusion::logical_expr::LogicalPlan;
use datafusion::sql::parser::Statement as DfStatement;
use datafusion::sql::sqlparser::ast::{
    BinaryOperator, Distinct, ExcludeSelectItem, Expr, GroupByExpr, Ident, JoinOperator,
    LimitClause, ObjectName, Query, SelectItem, SelectItemQualifiedWildcardKind, SetExpr,
    Statement, TableAlias, TableFactor, Value as Literal,
};

use crate::error::{Result, SqlError, df_error, state};
use crate::keyed::{and_also, key_literal, key_of, keyed_column, keyed_name};
use crate::lock_clauses::{Clause, clause};
use crate::names::{PUBLIC, ident_name, object_name};
use crate::output::Output;
use crate::read_point::{ReadPoint, changed_since};
use crate::row_locks::{LockMode, WaitPolicy};
use crate::session::Session;
use crate::table::Table;

/// Name of the output column that carries the stored key of locked table `i`.
fn lock_column(i: usize) -> String {
    format!("__pmdb_lock_{i}")
}

/// A table whose rows the query locks: the `instance`-th such, found under its keyed
/// name.
struct Target {
    table: Arc<Table>,
    /// The name the query's columns are qualified with.
    alias: String,
    mode: LockMode,
    policy: WaitPolicy,
}

fn refused(what: &str) -> SqlError {
    SqlError::unsupported(format!("FOR UPDATE / FOR SHARE is not allowed with {what}"))
}

/// The whole number a LIMIT or OFFSET gives (parameters are bound by now).
fn count(e: &Expr, what: &str) -> Result<usize> {
    let bad = || {
        SqlError::unsupported(format!(
            "{what} of a locking SELECT must be a number, not {e}"
        ))
    };
    match e {
        Expr::Value(v) => match &v.value {
            Literal::Number(n, _) => n.parse().map_err(|_| bad()),
            Literal::Null => Ok(usize::MAX),
            _ => Err(bad()),
        },
        _ => Err(bad()),
    }
}

/// The OFFSET and LIMIT a query asks for, taken out of it.
fn take_limits(q: &mut Query) -> Result<(usize, usize)> {
    let mut offset = 0;
    let mut limit = usize::MAX;
    match q.limit_clause.take() {
        None => {}
        Some(LimitClause::LimitOffset {
            limit: l,
            offset: o,
            limit_by,
        }) => {
            if !limit_by.is_empty() {
                return Err(refused("LIMIT BY"));
            }
            if let Some(l) = l {
                limit = count(&l, "LIMIT")?;
            }
            if let Some(o) = o {
                offset = count(&o.value, "OFFSET")?;
            }
        }
        Some(LimitClause::OffsetCommaLimit {
            offset: o,
            limit: l,
        }) => {
            offset = count(&o, "OFFSET")?;
            limit = count(&l, "LIMIT")?;
        }
    }
    // A FETCH clause is a LIMIT by now (crate::fetch_clause).
    Ok((offset, limit))
}

/// The query as it is run: each locked table read under its keyed name, its key last
/// in the select list (and left out of every wildcard); the tables it locks.
fn keyed_query(session: &Session, query: &Query) -> Result<(Query, Vec<Target>)> {
    let clauses = query.locks.iter().map(clause).collect::<Result<Vec<_>>>()?;
    let mut q = query.clone();
    q.locks.clear();
    let ctes: HashSet<String> = q
        .with
        .iter()
        .flat_map(|w| &w.cte_tables)
        .map(|c| ident_name(&c.alias.name))
        .collect();
    let SetExpr::Select(select) = q.body.as_mut() else {
        return Err(refused("UNION, INTERSECT, EXCEPT or VALUES"));
    };
    if matches!(select.distinct, Some(Distinct::Distinct | Distinct::On(_))) {
        return Err(refused("DISTINCT"));
    }
    if !matches!(&select.group_by, GroupByExpr::Expressions(e, m) if e.is_empty() && m.is_empty()) {
        return Err(refused("GROUP BY"));
    }
    if select.having.is_some() {
        return Err(refused("HAVING"));
    }
    let mut targets: Vec<Target> = Vec::new();
    let mut named: HashSet<String> = HashSet::new();
    for from in &mut select.from {
        // Which factors an outer join may fill with NULLs.
        let mut nullable = vec![false; from.joins.len() + 1];
        for (j, join) in from.joins.iter().enumerate() {
            match join.join_operator {
                JoinOperator::Left(_) | JoinOperator::LeftOuter(_) => nullable[j + 1] = true,
                JoinOperator::Right(_) | JoinOperator::RightOuter(_) => {
                    nullable[..=j].iter_mut().for_each(|n| *n = true)
                }
                JoinOperator::FullOuter(_) => nullable[..=j + 1].iter_mut().for_each(|n| *n = true),
                _ => {}
            }
        }
        let factors = std::iter::once(&mut from.relation)
            .chain(from.joins.iter_mut().map(|j| &mut j.relation));
        for (factor, nullable) in factors.zip(nullable) {
            lock_factor(
                session,
                factor,
                nullable,
                &clauses,
                &ctes,
                &mut targets,
                &mut named,
            )?;
        }
    }
    if let Some(missing) = clauses
        .iter()
        .filter_map(|c| c.of.as_ref())
        .find(|of| !named.contains(*of))
    {
        return Err(SqlError::user(
            state::UNDEFINED_TABLE,
            format!("relation \"{missing}\" in FOR UPDATE clause not found in FROM clause"),
        ));
    }
    // Each wildcard leaves out the keys of the locked tables it would show.
    let keys: Vec<(String, String)> = targets
        .iter()
        .enumerate()
        .map(|(i, t)| (t.alias.clone(), keyed_column(Some(i))))
        .collect();
    for item in &mut select.projection {
        let (options, shown): (_, Vec<&String>) = match item {
            SelectItem::Wildcard(o) => (o, keys.iter().map(|(_, k)| k).collect()),
            SelectItem::QualifiedWildcard(SelectItemQualifiedWildcardKind::ObjectName(n), o) => {
                let n = object_name(n)?;
                (
                    o,
                    keys.iter()
                        .filter(|(a, _)| *a == n.name)
                        .map(|(_, k)| k)
                        .collect(),
                )
            }
            _ => continue,
        };
        if shown.is_empty() {
            continue;
        }
        if options.opt_exclude.is_some() || options.opt_except.is_some() {
            return Err(refused("EXCLUDE or EXCEPT in the select list"));
        }
        options.opt_exclude = Some(ExcludeSelectItem::Multiple(
            shown
                .into_iter()
                .map(|k| ObjectName::from(vec![Ident::new(k)]))
                .collect(),
        ));
    }
    for (i, (alias, key)) in keys.iter().enumerate() {
        select.projection.push(SelectItem::ExprWithAlias {
            expr: key_of(alias, key),
            alias: Ident::new(lock_column(i)),
        });
    }
    Ok((q, targets))
}

/// Makes `factor` read its table under a keyed name if a clause locks it.
fn lock_factor(
    session: &Session,
    factor: &mut TableFactor,
    nullable: bool,
    clauses: &[Clause],
    ctes: &HashSet<String>,
    targets: &mut Vec<Target>,
    named: &mut HashSet<String>,
) -> Result<()> {
    let TableFactor::Table {
        name, alias, args, ..
    } = factor
    else {
        if clauses.iter().any(|c| c.of.is_none()) {
            return Err(refused("a subquery, a function or a nested join in FROM"));
        }
        if let TableFactor::Derived {
            alias: Some(alias), ..
        } = factor
        {
            let alias = ident_name(&alias.name);
            if clauses
                .iter()
                .any(|c| c.of.as_deref() == Some(alias.as_str()))
            {
                return Err(refused("a subquery in FROM"));
            }
        }
        return Ok(());
    };
    let table_name = object_name(name)?;
    let seen_as = match alias {
        Some(a) => ident_name(&a.name),
        None => table_name.name.clone(),
    };
    let applying: Vec<&Clause> = clauses
        .iter()
        .filter(|c| c.of.as_ref().is_none_or(|of| *of == seen_as))
        .collect();
    if applying.is_empty() {
        return Ok(());
    }
    named.insert(seen_as.clone());
    let table = match (
        args,
        table_name.schema == PUBLIC && ctes.contains(&table_name.name),
        session.catalog.table_seen_by(&table_name, session.viewer),
    ) {
        (None, false, Some(t)) => t,
        _ => return Err(refused(&format!("{name}: only pmdb's tables are locked"))),
    };
    if nullable {
        return Err(SqlError::unsupported(
            "FOR UPDATE cannot be applied to the nullable side of an outer join",
        ));
    }
    // The strongest mode; NOWAIT over SKIP LOCKED over waiting, as PostgreSQL does.
    let mode = applying
        .iter()
        .map(|c| c.mode)
        .max()
        .unwrap_or(LockMode::Update);
    let policy = if applying.iter().any(|c| c.policy == WaitPolicy::NoWait) {
        WaitPolicy::NoWait
    } else if applying.iter().any(|c| c.policy == WaitPolicy::SkipLocked) {
        WaitPolicy::SkipLocked
    } else {
        WaitPolicy::Wait
    };
    *name = crate::ast_build::relation(
        &table_name.sibling(keyed_name(&table_name.name, Some(targets.len()))),
    );
    if alias.is_none() {
        *alias = Some(TableAlias {
            explicit: true,
            name: Ident::with_quote('"', &seen_as),
            columns: Vec::new(),
            at: None,
        });
    }
    targets.push(Target {
        table,
        alias: seen_as,
        mode,
        policy,
    });
    Ok(())
}

/// Plans `q` at `read_point`, refusing what cannot lock rows (aggregates, windows).
async fn plan(session: &Session, read_point: &ReadPoint, q: &Query) -> Result<DataFrame> {
    let state = session.statement_state(read_point.clone());
    let statement = DfStatement::Statement(Box::new(Statement::Query(Box::new(q.clone()))));
    let plan = state.statement_to_plan(statement).await.map_err(df_error)?;
    refuse_unlockable(&plan)?;
    Ok(DataFrame::new(state, plan))
}

/// Why a query `original` (the locking query as written, its clauses taken out) cannot
/// lock its rows, if the plan of its keyed form failed for that reason (an aggregate
/// does not carry its rows' keys); else `error`.
async fn why_not(
    session: &Session,
    read_point: &ReadPoint,
    original: &Query,
    error: SqlError,
) -> SqlError {
    let mut q = original.clone();
    q.locks.clear();
    let state = session.statement_state(read_point.clone());
    let statement = DfStatement::Statement(Box::new(Statement::Query(Box::new(q))));
    match state.statement_to_plan(statement).await {
        Ok(plan) => refuse_unlockable(&plan).err().unwrap_or(error),
        Err(_) => error,
    }
}

/// Refuses a plan whose rows are not rows of its tables.
fn refuse_unlockable(plan: &LogicalPlan) -> Result<()> {
    let mut what = None;
    plan.apply(|node| {
        what = match node {
            LogicalPlan::Aggregate(_) => Some("aggregate functions"),
            LogicalPlan::Window(_) => Some("window functions"),
            LogicalPlan::Distinct(_) => Some("DISTINCT"),
            LogicalPlan::Union(_) => Some("UNION"),
            _ => None,
        };
        Ok(if what.is_some() {
            TreeNodeRecursion::Stop
        } else {
            TreeNodeRecursion::Continue
        })
    })
    .map_err(df_error)?;
    match what {
        Some(what) => Err(refused(what)),
        None => Ok(()),
    }
}

/// Runs a SELECT with locking clauses: its rows, each locked.
pub(crate) async fn run(
    session: &Session,
    read_point: &ReadPoint,
    query: &Query,
) -> Result<Output> {
    let (mut q, targets) = keyed_query(session, query)?;
    let (offset, limit) = take_limits(&mut q)?;
    // What the statement reads: a row changed by a commit since is read again.
    let seen = read_point.snapshot();
    let frame = match plan(session, read_point, &q).await {
        Ok(frame) => frame,
        Err(e) => return Err(why_not(session, read_point, query, e).await),
    };
    let schema = frame.schema().inner().clone();
    let width = schema.fields().len() - targets.len();
    let shown: Vec<usize> = (0..width).collect();
    let batches = session.collect(frame).await?;
    let mut sources: Vec<RecordBatch> = batches.clone();
    let mut picked: Vec<(usize, usize)> = Vec::new();
    let mut passed = 0usize;
    let mut locker = read_point.locker(&session.row_locks);
    'batches: for (b, batch) in batches.iter().enumerate() {
        'rows: for row in 0..batch.num_rows() {
            if picked.len() >= limit {
                break 'batches;
            }
            let mut keys = Vec::with_capacity(targets.len());
            let mut changed = false;
            for (i, t) in targets.iter().enumerate() {
                let column = batch.column(width + i).as_binary::<i32>();
                if column.is_null(row) {
                    continue;
                }
                let key = column.value(row);
                if !locker.lock(t.table.as_ref(), key, t.mode, t.policy).await? {
                    continue 'rows;
                }
                changed |= changed_since(&seen, t.table.rows(), key)?;
                keys.push((i, key.to_vec()));
            }
            let at = if changed {
                // Read again: the row as it is now, if it still qualifies.
                let now = read_point.under_lock(&session.db);
                let mut again = q.clone();
                restrict(&mut again, &targets, &keys);
                let found = session.collect(plan(session, &now, &again).await?).await?;
                let Some(batch) = found.into_iter().find(|b| b.num_rows() > 0) else {
                    continue;
                };
                sources.push(batch.slice(0, 1));
                (sources.len() - 1, 0)
            } else {
                (b, row)
            };
            passed += 1;
            if passed > offset {
                picked.push(at);
            }
        }
    }
    if picked.is_empty() {
        let schema = schema
            .project(&shown)
            .map_err(|e| SqlError::Query(e.to_string()))?;
        return Ok(Output::Rows {
            schema: Arc::new(schema),
            batches: vec![],
        });
    }
    let projected = sources
        .iter()
        .map(|b| b.project(&shown))
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(|e| SqlError::Query(e.to_string()))?;
    let refs: Vec<&RecordBatch> = projected.iter().collect();
    let batch =
        interleave_record_batch(&refs, &picked).map_err(|e| SqlError::Query(e.to_string()))?;
    Ok(Output::Rows {
        schema: batch.schema(),
        batches: vec![batch],
    })
}

/// Narrows `q` to the rows whose locked tables have the stored `keys`.
fn restrict(q: &mut Query, targets: &[Target], keys: &[(usize, Vec<u8>)]) {
    let SetExpr::Select(select) = q.body.as_mut() else {
        return;
    };
    for (i, key) in keys {
        let condition = Expr::BinaryOp {
            left: Box::new(key_of(&targets[*i].alias, &keyed_column(Some(*i)))),
            op: BinaryOperator::Eq,
            right: Box::new(key_literal(key)),
        };
        and_also(&mut select.selection, condition);
    }
}
