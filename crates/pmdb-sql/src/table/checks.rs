//! CHECK constraints as a table's writer evaluates them: each expression planned once,
//! when the table's handle is made, into a DataFusion physical expression over the
//! row's columns, then run on each row written (false refuses it with 23514; true and
//! NULL pass, as in PostgreSQL), with the rules of the domains its columns are of.

use std::sync::Arc;

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::SchemaRef;

use super::Table;
use crate::arrow_conv::{arrays_of, arrow_schema};
use crate::check_expr::PlannedCheck;
use crate::domain_rules::DomainRules;
use crate::domain_rules::{DomainTypes, by_id};
use crate::error::{Result, SqlError, state};
use crate::large_rows::Committed;
use crate::schema::TableDef;
use crate::types::{SqlType, Value};

/// The checks of a table: planned over the schema of its rows, and the rules of the
/// domains its columns are of.
pub(crate) struct Checks {
    schema: SchemaRef,
    checks: Vec<PlannedCheck>,
    /// Each column of a domain that may refuse a value, and the domain's rules.
    domains: Vec<(usize, DomainRules)>,
}

impl Checks {
    /// The checks of `def`, planned, and the rules of its columns' domains.
    pub(crate) fn plan(def: &TableDef, domains: &DomainTypes) -> Result<Checks> {
        let schema = arrow_schema(def, None);
        let checks = def
            .checks
            .iter()
            .map(|c| {
                PlannedCheck::plan(&c.name, &schema, &c.expr, &format!("table {:?}", def.name))
            })
            .collect::<Result<Vec<_>>>()?;
        let mut of_domains = Vec::new();
        for (i, c) in def.columns.iter().enumerate() {
            let Some(id) = c.domain else { continue };
            let domain = by_id(domains, id).ok_or_else(|| {
                SqlError::Query(format!(
                    "the domain of column {:?} of table {:?} is gone",
                    c.name, def.name
                ))
            })?;
            if !domain.rules.is_empty() {
                of_domains.push((i, domain.rules.clone()));
            }
        }
        Ok(Checks {
            schema,
            checks,
            domains: of_domains,
        })
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.checks.is_empty() && self.domains.is_empty()
    }
}

impl Table {
    fn check_labels(&self, rows: &[&[Value]]) -> Result<()> {
        for (c, ty) in self.types.iter().enumerate() {
            let SqlType::Enum(id) = *ty else {
                continue;
            };
            let def = crate::enum_type::by_id(&self.enums, id).ok_or_else(|| {
                SqlError::Query(format!(
                    "the type of column {:?} of table {:?} is gone",
                    self.def.columns[c].name, self.def.name
                ))
            })?;
            for row in rows {
                if let Some(Value::Str(label)) = row.get(c)
                    && def.position(label).is_none()
                {
                    return Err(crate::enum_type::invalid_label(&def, label));
                }
            }
        }
        Ok(())
    }

    /// Runs the CHECK constraints on every stored row (committed now), for ALTER TABLE
    /// ADD CHECK: a row that fails check `name` is 23514.
    pub(crate) fn check_stored_rows(&self, name: &str) -> Result<()> {
        const BATCH: usize = 1024;
        let mut scan = self.rows.scan::<[u8]>(..);
        let mut rows = Vec::with_capacity(BATCH);
        loop {
            let next = scan.next_ref();
            let end = next.is_none();
            if let Some(e) = next {
                let e = e?;
                rows.push(self.decode(&Committed, e.key, e.value)?);
            }
            if rows.len() == BATCH || (end && !rows.is_empty()) {
                let refs: Vec<&[Value]> = rows.iter().map(Vec::as_slice).collect();
                self.check_constraints(&refs)
                    .map_err(|e| match e.sqlstate() {
                        state::CHECK_VIOLATION => SqlError::user(
                            state::CHECK_VIOLATION,
                            format!(
                                "check constraint \"{name}\" of relation \"{}\" is violated by \
                             some row",
                                self.def.name
                            ),
                        ),
                        _ => e,
                    })?;
                rows.clear();
            }
            if end {
                return Ok(());
            }
        }
    }

    /// Runs the table's CHECK constraints on `rows`; the first a row fails is 23514.
    /// A value of an enum column that is none of its type's labels is 22P02 first, and
    /// one its column's domain refuses is that domain's error.
    pub(crate) fn check_constraints(&self, rows: &[&[Value]]) -> Result<()> {
        self.check_labels(rows)?;
        let checks = &self.checks;
        if checks.is_empty() || rows.is_empty() {
            return Ok(());
        }
        let batch = RecordBatch::try_new(Arc::clone(&checks.schema), arrays_of(&self.types, rows))
            .map_err(|e| SqlError::Query(e.to_string()))?;
        for (column, rules) in &checks.domains {
            rules.check(batch.column(*column))?;
        }
        for check in &checks.checks {
            if let Some(i) = check.first_refused(&batch)? {
                return Err(SqlError::user(
                    state::CHECK_VIOLATION,
                    format!(
                        "new row for relation \"{}\" violates check constraint \"{}\"",
                        self.def.name, check.name
                    ),
                )
                .with_detail(self.failing_row(rows[i])));
            }
        }
        Ok(())
    }
}
