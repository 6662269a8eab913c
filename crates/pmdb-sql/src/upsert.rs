//! INSERT … ON CONFLICT, as PostgreSQL runs it: each row is checked against its arbiter
//! (the unique key the conflict target names, or with no target, every unique key, for
//! DO NOTHING), whose value the writer claims first as any insert does, so a concurrent
//! inserter of the same key waits for this one (and then conflicts with its row) or the
//! other way round. A row that conflicts with a stored row is passed over (DO NOTHING)
//! or updates that row (DO UPDATE SET …, with `EXCLUDED` the row proposed, under an
//! optional WHERE), which is locked by the claim; a row that conflicts with one the
//! statement itself wrote is passed over by DO NOTHING and refused by DO UPDATE
//! (21000), as in PostgreSQL. Above read committed, a conflict with a row the block's
//! snapshot does not hold fails with 40001.

use std::collections::HashSet;
use std::ops::ControlFlow;
use std::sync::Arc;

use datafusion::arrow::array::{Array, AsArray, RecordBatch};
use datafusion::arrow::datatypes::{DataType, Schema};
use datafusion::common::DFSchema;
use datafusion::execution::session_state::SessionState;
use datafusion::physical_plan::PhysicalExpr;
use datafusion::sql::sqlparser::ast::{
    AssignmentTarget, ConflictTarget, DoUpdate, Expr as SqlExpr, ExprWithAlias, Ident, Insert,
    OnConflict as AstOnConflict, OnConflictAction, OnInsert, visit_expressions_mut,
};
use pmdb_engine::Isolation;

use crate::arrow_conv::{arrays_of, arrow_schema, cast_to_column, row_values};
use crate::error::{Result, SqlError, df_error, state, undefined_column};
use crate::names::{ident_name, object_name};
use crate::read_point::{ReadPoint, concurrent_update};
use crate::table::{Arbiter, Conflict, Table, TableWriter};
use crate::types::Value;

/// The ON CONFLICT clause of an INSERT, with what plans its expressions.
pub(crate) struct OnConflict {
    clause: AstOnConflict,
    /// The name the statement gives the table (`INSERT INTO t AS alias`).
    alias: String,
    state: SessionState,
}

/// A conflict clause planned against one handle of its table.
pub(crate) struct Upsert {
    arbiters: Vec<Arbiter>,
    /// `None`: DO NOTHING.
    update: Option<PlannedUpdate>,
}

/// DO UPDATE SET …: each target column's new value and the WHERE, planned over the
/// stored row's columns followed by the proposed row's (`EXCLUDED`).
struct PlannedUpdate {
    schema: Arc<Schema>,
    targets: Vec<usize>,
    values: Vec<Arc<dyn PhysicalExpr>>,
    condition: Option<Arc<dyn PhysicalExpr>>,
}

impl OnConflict {
    /// The conflict clause of `insert`, if it has one; `alias` names its table.
    pub(crate) fn of(
        state: SessionState,
        insert: &Insert,
        alias: &str,
    ) -> Result<Option<OnConflict>> {
        match &insert.on {
            None => Ok(None),
            Some(OnInsert::OnConflict(clause)) => Ok(Some(OnConflict {
                clause: clause.clone(),
                alias: alias.to_owned(),
                state,
            })),
            Some(other) => Err(SqlError::unsupported(format!(
                "{other} (pmdb has ON CONFLICT)"
            ))),
        }
    }

    /// The clause planned against `table`.
    pub(crate) fn plan(&self, table: &Table) -> Result<Upsert> {
        let def = table.def();
        let arbiters = match &self.clause.conflict_target {
            Some(ConflictTarget::Columns(columns)) => {
                let names: Vec<String> = columns.iter().map(ident_name).collect();
                let positions = def
                    .positions(&names)
                    .map_err(|c| undefined_column(&c, &def.name))?;
                vec![arbiter_of(table, &positions).ok_or_else(no_arbiter)?]
            }
            Some(ConflictTarget::OnConstraint(name)) => {
                let name = object_name(name)?.name;
                if def.is_primary_key_name(&name) {
                    vec![Arbiter::PrimaryKey]
                } else {
                    let i = def
                        .indexes
                        .iter()
                        .position(|ix| ix.unique && ix.name == name)
                        .ok_or_else(|| {
                            SqlError::user(
                                state::UNDEFINED_OBJECT,
                                format!(
                                    "constraint \"{name}\" for table \"{}\" does not exist",
                                    def.name
                                ),
                            )
                        })?;
                    vec![Arbiter::Unique(i)]
                }
            }
            None => {
                if matches!(self.clause.action, OnConflictAction::DoUpdate(_)) {
                    return Err(SqlError::user(
                        state::SYNTAX,
                        "ON CONFLICT DO UPDATE requires inference specification or constraint \
                         name",
                    ));
                }
                let mut all = Vec::new();
                if !def.primary_key.is_empty() {
                    all.push(Arbiter::PrimaryKey);
                }
                all.extend(
                    (0..def.indexes.len())
                        .filter(|&i| def.indexes[i].unique)
                        .map(Arbiter::Unique),
                );
                all
            }
        };
        let update = match &self.clause.action {
            OnConflictAction::DoNothing => None,
            OnConflictAction::DoUpdate(u) => Some(self.plan_update(table, u)?),
        };
        Ok(Upsert { arbiters, update })
    }

    fn plan_update(&self, table: &Table, u: &DoUpdate) -> Result<PlannedUpdate> {
        let def = table.def();
        let schema = arrow_schema(def, None);
        let stored =
            DFSchema::try_from_qualified_schema(self.alias.as_str(), &schema).map_err(df_error)?;
        let excluded =
            DFSchema::try_from_qualified_schema("excluded", &schema).map_err(df_error)?;
        let mut both = stored;
        both.merge(&excluded);
        let plan = |e: &SqlExpr| -> Result<Arc<dyn PhysicalExpr>> {
            let mut e = e.clone();
            self.qualify(table, &mut e);
            let logical = self
                .state
                .create_logical_expr_from_sql_expr(
                    ExprWithAlias {
                        expr: e,
                        alias: None,
                    },
                    &both,
                )
                .map_err(df_error)?;
            self.state
                .create_physical_expr(logical, &both)
                .map_err(df_error)
        };
        let mut targets = Vec::with_capacity(u.assignments.len());
        let mut values = Vec::with_capacity(u.assignments.len());
        for a in &u.assignments {
            let AssignmentTarget::ColumnName(col) = &a.target else {
                return Err(SqlError::unsupported("assigning a tuple of columns"));
            };
            let name = col
                .0
                .last()
                .and_then(|p| p.as_ident())
                .map(ident_name)
                .unwrap_or_default();
            let pos = def
                .column(&name)
                .ok_or_else(|| undefined_column(&name, &def.name))?;
            if targets.contains(&pos) {
                return Err(SqlError::user(
                    state::SYNTAX,
                    format!("multiple assignments to same column \"{name}\""),
                ));
            }
            crate::numeric_places::check_assigned(&a.value, def.columns[pos].ty)?;
            targets.push(pos);
            values.push(plan(&a.value)?);
        }
        let condition = u.selection.as_ref().map(plan).transpose()?;
        Ok(PlannedUpdate {
            schema: Arc::new(both.as_arrow().clone()),
            targets,
            values,
            condition,
        })
    }

    /// Qualifies with the table's name each bare column of `e`: in DO UPDATE, a bare
    /// column is the stored row's, and `EXCLUDED` is always named.
    fn qualify(&self, table: &Table, e: &mut SqlExpr) {
        let _ = visit_expressions_mut(e, |e| {
            if let SqlExpr::Identifier(id) = e
                && table.def().column(&ident_name(id)).is_some()
            {
                *e = SqlExpr::CompoundIdentifier(vec![Ident::new(&self.alias), id.clone()]);
            }
            ControlFlow::<()>::Continue(())
        });
    }
}

fn no_arbiter() -> SqlError {
    SqlError::user(
        "42P10",
        "there is no unique or exclusion constraint matching the ON CONFLICT specification",
    )
}

/// The unique key of `table` whose columns are exactly `columns` (in any order).
fn arbiter_of(table: &Table, columns: &[u16]) -> Option<Arbiter> {
    Some(
        match crate::key_rules::unique_key_of(table.def(), columns)? {
            None => Arbiter::PrimaryKey,
            Some(i) => Arbiter::Unique(i),
        },
    )
}

impl Upsert {
    /// Writes `rows` through `writer`, each inserted or, on a conflict, passed over or
    /// made an update: the rows written (inserted, or updated as they now are).
    pub(crate) fn write(
        &self,
        writer: &mut TableWriter<'_>,
        table: &Table,
        read_point: &ReadPoint,
        rows: &[Vec<Value>],
    ) -> Result<Vec<Vec<Value>>> {
        let mut updated: HashSet<Vec<u8>> = HashSet::new();
        let mut written = Vec::new();
        let txn = read_point.txn();
        for row in rows {
            let key = match writer.insert_unless_conflict(row, &self.arbiters)? {
                None => {
                    written.push(row.clone());
                    continue;
                }
                Some(Conflict::ThisStatement) if self.update.is_some() => {
                    return Err(second_time());
                }
                Some(Conflict::ThisStatement) => continue,
                Some(Conflict::Stored(key)) => key,
            };
            if let Some(txn) = txn
                && txn.isolation() != Isolation::ReadCommitted
                && !txn.exists(table.rows(), &key)?
            {
                return Err(concurrent_update());
            }
            let Some(update) = &self.update else {
                continue;
            };
            if !updated.insert(key.clone()) {
                return Err(second_time());
            }
            let old = table
                .row_for_check(&key, txn.map(Arc::as_ref))?
                .ok_or_else(|| SqlError::Query("a conflicting row that is not there".into()))?;
            if let Some(new) = update.apply(table, &old, row)? {
                writer.update(&key, &old, &new)?;
                written.push(new);
            }
        }
        Ok(written)
    }
}

fn second_time() -> SqlError {
    SqlError::user(
        state::CARDINALITY_VIOLATION,
        "ON CONFLICT DO UPDATE command cannot affect row a second time: ensure that no rows \
         proposed for insertion within the same command have duplicate constrained values",
    )
}

impl PlannedUpdate {
    /// The stored row `old` as DO UPDATE leaves it given the proposed row `excluded`;
    /// `None` if the WHERE does not hold.
    fn apply(
        &self,
        table: &Table,
        old: &[Value],
        excluded: &[Value],
    ) -> Result<Option<Vec<Value>>> {
        let types: Vec<_> = table.types().iter().chain(table.types()).copied().collect();
        let both: Vec<Value> = old.iter().chain(excluded).cloned().collect();
        let batch = RecordBatch::try_new(Arc::clone(&self.schema), arrays_of(&types, &[&both]))
            .map_err(|e| SqlError::Query(e.to_string()))?;
        let eval = |e: &Arc<dyn PhysicalExpr>| {
            e.evaluate(&batch)
                .and_then(|v| v.into_array(1))
                .map_err(df_error)
        };
        if let Some(condition) = &self.condition {
            let holds = eval(condition)?;
            let holds = match holds.data_type() {
                DataType::Boolean => holds.as_boolean().is_valid(0) && holds.as_boolean().value(0),
                _ => false,
            };
            if !holds {
                return Ok(None);
            }
        }
        let mut new = old.to_vec();
        for (&t, e) in self.targets.iter().zip(&self.values) {
            let column = &table.def().columns[t];
            let value = cast_to_column(&eval(e)?, column)?;
            new[t] = row_values(&[value], &[table.types()[t]], 0)
                .pop()
                .unwrap_or(Value::Null);
        }
        Ok(Some(new))
    }
}
