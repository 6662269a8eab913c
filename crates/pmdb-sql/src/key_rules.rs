//! What makes a FOREIGN KEY valid against its two tables, as PostgreSQL decides it (the
//! referenced columns a primary key or unique key of the parent, of comparable types),
//! how its values are looked up across column types, and the names PostgreSQL chooses
//! for constraints a statement leaves unnamed. Definitions only: no statement, no
//! catalog.

use crate::error::{Result, SqlError, state, undefined_column};
use crate::schema::{Action, Deferral, ForeignKeyDef, TableDef};
use crate::types::{SqlType, Value};

/// A FOREIGN KEY a statement asks for, before its parent is looked up.
#[derive(Clone, Debug)]
pub struct NewReference {
    pub name: Option<String>,
    pub columns: Vec<String>,
    pub parent: crate::names::RelName,
    /// Empty: the parent's primary key.
    pub parent_columns: Vec<String>,
    pub on_delete: Action,
    pub on_update: Action,
    pub deferral: Deferral,
}

/// Whether a value of type `from` can be looked up in a key column of type `to`: the
/// same kind of value (integers of any width, strings of any length, decimals of one
/// scale, or one type).
pub fn comparable(from: SqlType, to: SqlType) -> bool {
    use SqlType as T;
    match (from, to) {
        (T::SmallInt | T::Int | T::BigInt, T::SmallInt | T::Int | T::BigInt) => true,
        (T::Char(_) | T::Varchar(_) | T::Text, T::Char(_) | T::Varchar(_) | T::Text) => true,
        (T::Decimal { scale: a, .. }, T::Decimal { scale: b, .. }) => a == b,
        (a, b) => a == b,
    }
}

/// `v` as a value of type `to` (see [`comparable`]); `None` when it cannot be one (an
/// integer out of its range), so no key of that type holds it.
pub fn converted(v: &Value, to: SqlType) -> Option<Value> {
    let integer = match v {
        Value::SmallInt(n) => Some(i64::from(*n)),
        Value::Int(n) => Some(i64::from(*n)),
        Value::BigInt(n) => Some(*n),
        _ => None,
    };
    let out = match (integer, to) {
        (Some(n), SqlType::SmallInt) => Value::SmallInt(i16::try_from(n).ok()?),
        (Some(n), SqlType::Int) => Value::Int(i32::try_from(n).ok()?),
        (Some(n), SqlType::BigInt) => Value::BigInt(n),
        _ => v.clone(),
    };
    to.check(&out).ok()?;
    Some(out)
}

/// The definition of `r` on table `child` (whose columns and constraints are as they
/// will be), referencing `parent` (`child` itself for a self-reference), checked as
/// PostgreSQL checks it: the referenced columns must be the parent's primary key or a
/// unique constraint's columns (42830), of comparable types (42804).
pub fn resolve(child: &TableDef, parent: &TableDef, r: NewReference) -> Result<ForeignKeyDef> {
    let columns = child
        .positions(&r.columns)
        .map_err(|c| undefined_column(&c, &child.name))?;
    let parent_columns = if r.parent_columns.is_empty() {
        if parent.primary_key.is_empty() {
            return Err(SqlError::user(
                state::INVALID_FOREIGN_KEY,
                format!(
                    "there is no primary key for referenced table \"{}\"",
                    parent.name
                ),
            ));
        }
        parent.primary_key.clone()
    } else {
        parent
            .positions(&r.parent_columns)
            .map_err(|c| undefined_column(&c, &parent.name))?
    };
    if columns.len() != parent_columns.len() {
        return Err(SqlError::user(
            state::INVALID_FOREIGN_KEY,
            "number of referencing and referenced columns for foreign key disagree",
        ));
    }
    if unique_key_of(parent, &parent_columns).is_none() {
        return Err(SqlError::user(
            state::INVALID_FOREIGN_KEY,
            format!(
                "there is no unique constraint matching given keys for referenced table \"{}\"",
                parent.name
            ),
        ));
    }
    for (&c, &p) in columns.iter().zip(&parent_columns) {
        let (from, to) = (
            &child.columns[usize::from(c)],
            &parent.columns[usize::from(p)],
        );
        if !comparable(from.ty, to.ty) {
            return Err(SqlError::user(
                state::DATATYPE_MISMATCH,
                format!(
                    "foreign key constraint cannot be implemented: key columns \"{}\" and \"{}\" \
                     are of incompatible types: {} and {}",
                    from.name, to.name, from.ty, to.ty
                ),
            ));
        }
    }
    let name = match r.name {
        Some(n) => n,
        None => free_name(
            child,
            &format!("{}_{}_fkey", child.name, r.columns.join("_")),
        ),
    };
    if child.has_constraint(&name) {
        return Err(duplicate_constraint(&name, &child.name));
    }
    Ok(ForeignKeyDef {
        name,
        columns,
        parent: parent.id,
        parent_columns,
        on_delete: r.on_delete,
        on_update: r.on_update,
        deferral: r.deferral,
    })
}

/// Which unique key of `def` has exactly the columns `columns` (in any order): `None`
/// for none, `Some(None)` for the primary key, `Some(Some(i))` for unique index `i`.
pub fn unique_key_of(def: &TableDef, columns: &[u16]) -> Option<Option<usize>> {
    let same = |key: &[u16]| key.len() == columns.len() && key.iter().all(|c| columns.contains(c));
    if !def.primary_key.is_empty() && same(&def.primary_key) {
        return Some(None);
    }
    def.indexes
        .iter()
        .position(|ix| ix.unique && same(&ix.columns))
        .map(Some)
}

/// `wanted`, or with the first number after it that no constraint of `def` has, as
/// PostgreSQL chooses a constraint's name.
pub(crate) fn free_name(def: &TableDef, wanted: &str) -> String {
    let cut = |mut n: String| {
        while n.len() > crate::schema::MAX_IDENT {
            n.pop();
        }
        n
    };
    let wanted = cut(wanted.to_owned());
    if !def.has_constraint(&wanted) {
        return wanted;
    }
    (1..)
        .map(|i| format!("{wanted}{i}"))
        .find(|n| !def.has_constraint(n))
        .expect("some number is free")
}

pub(crate) fn duplicate_constraint(name: &str, table: &str) -> SqlError {
    SqlError::user(
        state::DUPLICATE_OBJECT,
        format!("constraint \"{name}\" for relation \"{table}\" already exists"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_convert_within_range() {
        assert_eq!(
            converted(&Value::BigInt(7), SqlType::Int),
            Some(Value::Int(7))
        );
        assert_eq!(converted(&Value::BigInt(1 << 40), SqlType::Int), None);
        assert_eq!(
            converted(&Value::SmallInt(-3), SqlType::BigInt),
            Some(Value::BigInt(-3))
        );
        assert!(comparable(SqlType::Int, SqlType::BigInt));
        assert!(!comparable(SqlType::Int, SqlType::Text));
        assert!(comparable(SqlType::Varchar(3), SqlType::Text));
        // A string longer than the key's column can hold cannot be in it.
        assert_eq!(
            converted(&Value::Str("abcd".into()), SqlType::Varchar(3)),
            None
        );
    }
}
