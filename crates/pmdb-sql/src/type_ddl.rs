//! The statements that make and change enum types: `CREATE TYPE … AS ENUM`, `ALTER
//! TYPE` and (through [`crate::ddl::drop`]) `DROP TYPE`, and how a statement's type
//! name finds a user type (an enum type or a domain, [`crate::domain_ddl`]). A
//! composite, range or base type is refused (0A000).

use std::sync::Arc;

use datafusion::sql::sqlparser::ast::{
    AlterType, AlterTypeAddValuePosition, AlterTypeOperation, Ident, ObjectName, Statement,
    UserDefinedTypeRepresentation,
};

use crate::catalog::{Catalog, LabelPlace};
use crate::domain_rules::Domain;
use crate::error::{Result, SqlError};
use crate::names::{RelName, object_name};
use crate::types::SqlType;

/// A user type named in a statement: an enum type the catalog has or the installed
/// hstore extension's type, or `None` (the name is no user type).
pub fn named_type(catalog: &Catalog, name: &ObjectName) -> Option<SqlType> {
    let name = object_name(name).ok()?;
    if catalog.hstore_named(&name) {
        return Some(SqlType::Hstore);
    }
    catalog.enum_type(&name).map(|def| SqlType::Enum(def.id))
}

/// The domain `name` names, if the catalog has one.
pub fn named_domain(catalog: &Catalog, name: &ObjectName) -> Option<Arc<Domain>> {
    catalog.domain_type(&object_name(name).ok()?)
}

/// What `CREATE TYPE` asks for, checked before the catalog is touched.
pub struct NewEnum {
    pub name: RelName,
    pub labels: Vec<String>,
}

/// The enum type `s` (a `CREATE TYPE`) makes.
pub fn create(s: &Statement) -> Result<NewEnum> {
    let Statement::CreateType {
        name,
        representation,
    } = s
    else {
        return Err(SqlError::Query(format!("not CREATE TYPE: {s}")));
    };
    let labels = match representation {
        Some(UserDefinedTypeRepresentation::Enum { labels }) => labels,
        Some(UserDefinedTypeRepresentation::Composite { .. }) => {
            return Err(SqlError::unsupported(
                "CREATE TYPE … AS (composite types; pmdb's user types are enum types)",
            ));
        }
        Some(UserDefinedTypeRepresentation::Range { .. }) => {
            return Err(SqlError::unsupported(
                "CREATE TYPE … AS RANGE (pmdb's user types are enum types)",
            ));
        }
        Some(UserDefinedTypeRepresentation::SqlDefinition { .. }) | None => {
            return Err(SqlError::unsupported(
                "CREATE TYPE without AS ENUM (base and shell types; pmdb's user types are \
                 enum types)",
            ));
        }
    };
    Ok(NewEnum {
        name: object_name(name)?,
        labels: labels.iter().map(label).collect(),
    })
}

/// A label as written: `'sad'` (an identifier only if the parser took one).
fn label(i: &Ident) -> String {
    i.value.clone()
}

/// Runs `ALTER TYPE`; the tag is `ALTER TYPE`.
pub fn alter(catalog: &Catalog, alter: &AlterType) -> Result<()> {
    let name = object_name(&alter.name)?;
    match &alter.operation {
        AlterTypeOperation::AddValue(add) => {
            let place = match &add.position {
                None => LabelPlace::Last,
                Some(AlterTypeAddValuePosition::Before(l)) => LabelPlace::Before(label(l)),
                Some(AlterTypeAddValuePosition::After(l)) => LabelPlace::After(label(l)),
            };
            catalog.add_enum_label(&name, label(&add.value), place, add.if_not_exists)?;
        }
        AlterTypeOperation::Rename(rename) => {
            catalog.rename_enum(&name, rename.new_name.value.clone())?;
        }
        AlterTypeOperation::RenameValue(_) => {
            return Err(SqlError::unsupported(
                "ALTER TYPE … RENAME VALUE (pmdb stores an enum value as its label)",
            ));
        }
    }
    Ok(())
}
