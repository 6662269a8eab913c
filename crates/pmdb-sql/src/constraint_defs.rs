//! FOREIGN KEY and CHECK clauses as CREATE TABLE and ALTER TABLE state them: from the
//! parsed clause to a [`NewReference`] (resolved against its parent by
//! [`crate::key_rules::resolve`]) or a [`CheckDef`], with PostgreSQL's names for those the
//! statement leaves unnamed and its errors for what pmdb would not honour. How the
//! constraints are enforced lives with the writer (`table`) and in
//! [`crate::referential`].

use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{
    CheckConstraint, ConstraintCharacteristics, ConstraintReferenceMatchKind, DeferrableInitial,
    Expr as SqlExpr, ForeignKeyConstraint, ReferentialAction, visit_expressions,
};

use crate::error::{Result, SqlError, state};
use crate::key_rules::{NewReference, duplicate_constraint, free_name};
use crate::names::{ident_name, object_name};
use crate::schema::{Action, CheckDef, Deferral, TableDef};

fn action(a: Option<ReferentialAction>) -> Result<Action> {
    Ok(match a {
        None | Some(ReferentialAction::NoAction) => Action::NoAction,
        Some(ReferentialAction::Restrict) => Action::Restrict,
        Some(ReferentialAction::Cascade) => Action::Cascade,
        Some(ReferentialAction::SetNull) => Action::SetNull,
        Some(ReferentialAction::SetDefault) => {
            return Err(SqlError::unsupported(
                "ON DELETE/UPDATE SET DEFAULT (pmdb has NO ACTION, RESTRICT, CASCADE and SET NULL)",
            ));
        }
    })
}

/// The reference `fk` states; `columns` are the referencing columns when the clause
/// is a column's (`REFERENCES` after a column), else `fk`'s own.
pub fn new_reference(
    fk: &ForeignKeyConstraint,
    name: Option<String>,
    columns: Option<Vec<String>>,
) -> Result<NewReference> {
    if matches!(
        fk.match_kind,
        Some(ConstraintReferenceMatchKind::Full | ConstraintReferenceMatchKind::Partial)
    ) {
        return Err(SqlError::unsupported(
            "MATCH FULL or MATCH PARTIAL (pmdb has MATCH SIMPLE)",
        ));
    }
    if fk.index_name.is_some() {
        return Err(SqlError::unsupported("an index name on a FOREIGN KEY"));
    }
    Ok(NewReference {
        name: name.or_else(|| fk.name.as_ref().map(ident_name)),
        columns: columns.unwrap_or_else(|| fk.columns.iter().map(ident_name).collect()),
        parent: object_name(&fk.foreign_table)?,
        parent_columns: fk.referred_columns.iter().map(ident_name).collect(),
        on_delete: action(fk.on_delete)?,
        on_update: action(fk.on_update)?,
        deferral: deferral(fk.characteristics.as_ref())?,
    })
}

/// When a foreign key with `characteristics` is checked: INITIALLY DEFERRED makes it
/// DEFERRABLE, as in PostgreSQL; NOT ENFORCED is refused.
fn deferral(characteristics: Option<&ConstraintCharacteristics>) -> Result<Deferral> {
    let Some(c) = characteristics else {
        return Ok(Deferral::NotDeferrable);
    };
    if c.enforced == Some(false) {
        return Err(SqlError::unsupported("NOT ENFORCED on a FOREIGN KEY"));
    }
    Ok(match (c.deferrable, c.initially) {
        (Some(false), Some(DeferrableInitial::Deferred)) => {
            return Err(SqlError::user(
                state::SYNTAX,
                "constraint declared INITIALLY DEFERRED must be DEFERRABLE",
            ));
        }
        (_, Some(DeferrableInitial::Deferred)) => Deferral::InitiallyDeferred,
        (Some(true), _) => Deferral::InitiallyImmediate,
        _ => Deferral::NotDeferrable,
    })
}

/// The CHECK `c` states on table `def` (with the columns it will have), named as
/// PostgreSQL names it when the statement does not: `<table>_<column>_check` when the
/// expression uses one column, else `<table>_check`. Subqueries are refused (0A000);
/// whether the expression plans as a boolean over the columns is checked when the
/// table's handle compiles it.
pub fn new_check(def: &TableDef, c: &CheckConstraint, name: Option<String>) -> Result<CheckDef> {
    if c.enforced == Some(false) {
        return Err(SqlError::unsupported("NOT ENFORCED on a CHECK constraint"));
    }
    let mut columns: Vec<String> = Vec::new();
    let mut subquery = false;
    let _ = visit_expressions(c.expr.as_ref(), |e| {
        match e {
            SqlExpr::Identifier(id) => {
                let n = ident_name(id);
                if !columns.contains(&n) {
                    columns.push(n);
                }
            }
            SqlExpr::CompoundIdentifier(parts) => {
                if let Some(last) = parts.last() {
                    let n = ident_name(last);
                    if !columns.contains(&n) {
                        columns.push(n);
                    }
                }
            }
            SqlExpr::Subquery(_) | SqlExpr::Exists { .. } | SqlExpr::InSubquery { .. } => {
                subquery = true;
            }
            _ => {}
        }
        ControlFlow::<()>::Continue(())
    });
    if subquery {
        return Err(SqlError::unsupported(
            "cannot use subquery in check constraint",
        ));
    }
    let name = match name.or_else(|| c.name.as_ref().map(ident_name)) {
        Some(n) => {
            if def.has_constraint(&n) {
                return Err(duplicate_constraint(&n, &def.name));
            }
            n
        }
        None => match columns.as_slice() {
            [one] => free_name(def, &format!("{}_{one}_check", def.name)),
            _ => free_name(def, &format!("{}_check", def.name)),
        },
    };
    Ok(CheckDef {
        name,
        expr: c.expr.to_string(),
    })
}
