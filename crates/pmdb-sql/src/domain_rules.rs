//! What makes a value a value of a domain: its NOT NULL and CHECK constraints, and those
//! of the domain it is over, planned once over one column, `value`, of the base type.
//! A cast to a domain ([`crate::domain_input`]) and a write to a column of one (the
//! table's writer) both check values here, so the two cannot disagree.

use std::collections::BTreeMap;
use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, RecordBatch};
use datafusion::arrow::datatypes::{Schema, SchemaRef};
use parking_lot::RwLock;

use crate::arrow_conv::arrow_field;
use crate::check_expr::PlannedCheck;
use crate::domain_type::DomainDef;
use crate::error::{Result, SqlError, state};
use crate::names::RelName;

/// A domain as the catalog holds it: its definition and its rules, planned once (a
/// domain never changes after CREATE DOMAIN).
#[derive(Debug)]
pub struct Domain {
    pub def: DomainDef,
    pub rules: DomainRules,
}

/// The catalog's domains by name, shared with every table handle (which checks the
/// values written to its columns of a domain against the domain's rules).
pub type DomainTypes = Arc<RwLock<BTreeMap<RelName, Arc<Domain>>>>;

/// The domain whose id is `id`.
pub fn by_id(domains: &DomainTypes, id: u64) -> Option<Arc<Domain>> {
    domains.read().values().find(|d| d.def.id == id).cloned()
}

/// A domain's rules, its parent's included.
#[derive(Clone, Debug)]
pub struct DomainRules {
    /// The domain's name, as its errors say it.
    name: String,
    not_null: bool,
    schema: SchemaRef,
    checks: Vec<PlannedCheck>,
}

impl DomainRules {
    /// Plans the rules of `def`, a domain over `parent` (whose rules are planned) if it
    /// names one. A CHECK that names anything but `VALUE` or gives no boolean is refused.
    pub fn plan(def: &DomainDef, parent: Option<&DomainRules>) -> Result<DomainRules> {
        let schema: SchemaRef = Arc::new(Schema::new(vec![arrow_field("value", def.base)]));
        let owner = format!("domain {}", def.name);
        let mut checks = parent.map(|p| p.checks.clone()).unwrap_or_default();
        for c in &def.checks {
            checks.push(PlannedCheck::plan(&c.name, &schema, &c.expr, &owner)?);
        }
        Ok(DomainRules {
            name: def.name.clone(),
            not_null: def.not_null || parent.is_some_and(|p| p.not_null),
            schema,
            checks,
        })
    }

    /// Whether a value may be refused at all: with neither NOT NULL nor a CHECK, every
    /// value of the base type is one of the domain.
    pub fn is_empty(&self) -> bool {
        !self.not_null && self.checks.is_empty()
    }

    /// Checks `values`, of the base type: 23502 for a NULL where the domain is NOT
    /// NULL, 23514 for a value a CHECK refuses.
    pub fn check(&self, values: &ArrayRef) -> Result<()> {
        if self.not_null && values.null_count() > 0 {
            return Err(SqlError::user(
                state::NOT_NULL_VIOLATION,
                format!("domain {} does not allow null values", self.name),
            ));
        }
        if self.checks.is_empty() || values.is_empty() {
            return Ok(());
        }
        let batch = RecordBatch::try_new(Arc::clone(&self.schema), vec![Arc::clone(values)])
            .map_err(|e| SqlError::Query(format!("a value of domain {}: {e}", self.name)))?;
        for check in &self.checks {
            if check.first_refused(&batch)?.is_some() {
                return Err(SqlError::user(
                    state::CHECK_VIOLATION,
                    format!(
                        "value for domain {} violates check constraint \"{}\"",
                        self.name, check.name
                    ),
                ));
            }
        }
        Ok(())
    }
}
