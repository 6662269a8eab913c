//! The statements that make and drop domains: `CREATE DOMAIN` (its clauses read by
//! [`crate::domain_syntax`] where the parser's grammar is narrower) and `DROP DOMAIN`.
//! ALTER DOMAIN is refused (0A000): a domain keeps the rules it was made with.

use datafusion::sql::sqlparser::ast::{
    CreateDomain, DataType, DropBehavior, DropDomain, TableConstraint,
};

use crate::catalog::{Catalog, DomainBase, NewDomain};
use crate::error::{Result, SqlError};
use crate::names::{ident_name, object_name};
use crate::notices::Notice;
use crate::type_ddl::{named_domain, named_type};

/// The domain CREATE DOMAIN makes: over an enum type, a domain (whose rules it keeps) or
/// one of pmdb's types. An unnamed `CHECK (VALUE IS NOT NULL)` is the domain's NOT NULL
/// ([`crate::domain_syntax`] writes NOT NULL so, as the parser knows no other form).
pub fn create_domain(catalog: &Catalog, create: &CreateDomain) -> Result<NewDomain> {
    // pmdb compares strings by their bytes: the C collation is the one it has.
    if let Some(collation) = create
        .collation
        .as_ref()
        .filter(|c| !matches!(c.value.as_str(), "C" | "POSIX"))
    {
        return Err(SqlError::unsupported(format!(
            "COLLATE {collation} on a domain (pmdb compares strings by their bytes, the C \
             collation)"
        )));
    }
    let over = match &create.data_type {
        DataType::Custom(name, modifiers) if modifiers.is_empty() => {
            match (named_type(catalog, name), named_domain(catalog, name)) {
                (Some(ty), _) => DomainBase::Type(ty),
                (None, Some(domain)) => DomainBase::Domain(domain),
                (None, None) => DomainBase::Type(crate::ddl::sql_type(&create.data_type)?),
            }
        }
        ty => DomainBase::Type(crate::ddl::sql_type(ty)?),
    };
    let name = object_name(&create.name)?;
    let default = create
        .default
        .as_ref()
        .map(|e| crate::ddl::default_text(&name.name, e))
        .transpose()?;
    let mut not_null = false;
    let mut checks = Vec::new();
    for c in &create.constraints {
        match c {
            TableConstraint::Check(check) if check.enforced.is_none() => {
                if check.name.is_none() && crate::domain_syntax::is_not_null(&check.expr) {
                    not_null = true;
                } else {
                    checks.push((check.name.as_ref().map(ident_name), check.expr.to_string()));
                }
            }
            other => {
                return Err(SqlError::unsupported(format!(
                    "domain constraint {other} (a domain has NOT NULL, NULL and CHECK)"
                )));
            }
        }
    }
    Ok(NewDomain {
        name,
        over,
        not_null,
        default,
        checks,
    })
}

/// Runs DROP DOMAIN; what IF EXISTS says of a domain it did not find.
pub fn drop_domain(catalog: &Catalog, drop: &DropDomain) -> Result<Option<Notice>> {
    let name = object_name(&drop.name)?;
    let cascade = drop.drop_behavior == Some(DropBehavior::Cascade);
    Ok((!catalog.drop_domain(&name, drop.if_exists, cascade)?)
        .then(|| Notice::skipped_missing("type", &name.name)))
}
