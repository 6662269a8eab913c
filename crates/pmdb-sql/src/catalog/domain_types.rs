//! CREATE DOMAIN and DROP DOMAIN. A domain is one catalog entry; columns name it by id.
//! A domain never changes once made (ALTER DOMAIN is refused), so its rules are planned
//! once, when it is made or loaded, and a table's handle plans nothing for them.

use std::collections::BTreeMap;
use std::sync::Arc;

use pmdb_engine::{Subtable, WriteBatch};

use super::{Catalog, check_entry, mismatched};
use crate::domain_rules::{Domain, DomainRules, by_id};
use crate::domain_type::{DOMAIN_PREFIX, DomainDef, domain_key};
use crate::error::{Result, SqlError, state};
use crate::names::RelName;
use crate::namespace::NamespaceDef;
use crate::schema::CheckDef;
use crate::types::SqlType;

/// What CREATE DOMAIN asks for, checked against the catalog by [`Catalog::create_domain`].
pub struct NewDomain {
    pub name: RelName,
    /// The type the domain is over: a type, or a domain whose base and rules it takes.
    pub over: DomainBase,
    pub not_null: bool,
    pub default: Option<String>,
    /// Each CHECK's name, if the statement gives one, and its SQL text.
    pub checks: Vec<(Option<String>, String)>,
}

pub enum DomainBase {
    Type(SqlType),
    Domain(Arc<Domain>),
}

/// Loads the domains of `cat`, each over its parent (made before it, so of a smaller
/// id), and plans their rules.
pub(super) fn load(
    cat: &Subtable,
    schemas: &BTreeMap<String, Arc<NamespaceDef>>,
) -> Result<BTreeMap<RelName, Arc<Domain>>> {
    let mut defs = Vec::new();
    for entry in cat.scan(vec![DOMAIN_PREFIX]..vec![DOMAIN_PREFIX + 1]) {
        let entry = entry?;
        let key = String::from_utf8_lossy(&entry.key()[1..]).into_owned();
        let what = move || format!("catalog entry of domain {key:?}");
        let def = DomainDef::decode(entry.value()).map_err(|source| SqlError::Damaged {
            what: what(),
            source,
        })?;
        check_entry(&entry.key()[1..], &def.rel_name(), schemas, &what)?;
        defs.push((def, what));
    }
    defs.sort_by_key(|(d, _)| d.id);
    let mut planned: BTreeMap<u64, Arc<Domain>> = BTreeMap::new();
    for (def, what) in defs {
        let parent = match def.parent {
            None => None,
            Some(p) => match planned.get(&p) {
                Some(parent) if parent.def.id < def.id && parent.def.base == def.base => {
                    Some(Arc::clone(parent))
                }
                _ => {
                    return Err(mismatched(
                        what(),
                        format!("it is over domain #{p}, which has no entry over its type"),
                    ));
                }
            },
        };
        let rules = DomainRules::plan(&def, parent.as_ref().map(|p| &p.rules))
            .map_err(|e| mismatched(what(), format!("its rules do not plan: {e}")))?;
        planned.insert(def.id, Arc::new(Domain { def, rules }));
    }
    Ok(planned
        .into_values()
        .map(|d| (d.def.rel_name(), d))
        .collect())
}

fn undefined(name: &RelName) -> SqlError {
    SqlError::user(
        state::UNDEFINED_OBJECT,
        format!("type \"{}\" does not exist", name.name),
    )
}

impl Catalog {
    pub fn domain_type(&self, name: &RelName) -> Option<Arc<Domain>> {
        self.domains.read().get(name).cloned()
    }

    pub fn domain_types(&self) -> Vec<Arc<Domain>> {
        self.domains.read().values().cloned().collect()
    }

    /// The domain whose id is `id`.
    pub fn domain_by_id(&self, id: u64) -> Option<Arc<Domain>> {
        by_id(&self.domains, id)
    }

    /// The default a column of `domain` takes when it states none: the domain's own, or
    /// else that of the domain it is over, and so on.
    pub fn domain_default(&self, domain: &Domain) -> Option<String> {
        let mut at = domain.def.clone();
        loop {
            if let Some(d) = at.default {
                return Some(d);
            }
            at = self.domain_by_id(at.parent?)?.def.clone();
        }
    }

    /// Whether a type or a relation (whose row type PostgreSQL names alike) is called
    /// `name`.
    pub(super) fn type_name_taken(&self, name: &RelName) -> bool {
        self.enum_type(name).is_some()
            || self.domain_type(name).is_some()
            || self.relation_exists(name)
            || self.hstore_named(name)
    }

    /// CREATE DOMAIN: its unnamed CHECKs named as PostgreSQL names them
    /// (`<domain>_check`, then `<domain>_check1` …), each planned over `VALUE`.
    pub fn create_domain(&self, new: NewDomain) -> Result<()> {
        let _ddl = self.ddl();
        let name = &new.name;
        self.schema_or_error(&name.schema)?;
        if self.type_name_taken(name) {
            return Err(SqlError::user(
                state::DUPLICATE_OBJECT,
                format!("type \"{}\" already exists", name.name),
            ));
        }
        let (base, parent) = match &new.over {
            DomainBase::Type(ty) => (*ty, None),
            DomainBase::Domain(d) => (d.def.base, Some(Arc::clone(d))),
        };
        let mut checks: Vec<CheckDef> = Vec::new();
        for (given, expr) in new.checks {
            let name = match given {
                Some(n) => n,
                None => (0..)
                    .map(|i| match i {
                        0 => format!("{}_check", name.name),
                        i => format!("{}_check{i}", name.name),
                    })
                    .find(|n| checks.iter().all(|c| &c.name != n))
                    .unwrap_or_default(),
            };
            if checks.iter().any(|c| c.name == name) {
                return Err(SqlError::user(
                    state::DUPLICATE_OBJECT,
                    format!(
                        "constraint \"{name}\" for domain {} already exists",
                        new.name.name
                    ),
                ));
            }
            checks.push(CheckDef { name, expr });
        }
        let cat = self.catalog_subtable()?;
        let def = DomainDef {
            id: self.take_ids(&cat, 1)?,
            schema: name.schema.clone(),
            name: name.name.clone(),
            base,
            parent: parent.as_ref().map(|p| p.def.id),
            not_null: new.not_null,
            default: new.default,
            checks,
        };
        def.validate()
            .map_err(|m| SqlError::user(state::INVALID_DEFINITION, m))?;
        let rules = DomainRules::plan(&def, parent.as_ref().map(|p| &p.rules))?;
        let mut batch = WriteBatch::new();
        batch.put(&cat, domain_key(name), def.encode());
        self.write(batch)?;
        self.domains
            .write()
            .insert(name.clone(), Arc::new(Domain { def, rules }));
        Ok(())
    }

    /// What depends on type `ty`, or on domain `domain`: columns of it and domains over
    /// it, as PostgreSQL's DETAIL lists them.
    pub(super) fn type_users(
        &self,
        ty: SqlType,
        domain: Option<u64>,
        type_name: &str,
    ) -> Vec<String> {
        let mut users: Vec<String> = self
            .tables()
            .iter()
            .flat_map(|t| {
                let table = t.def();
                table
                    .columns
                    .iter()
                    .filter(|c| match domain {
                        Some(id) => c.domain == Some(id),
                        None => c.ty == ty && c.domain.is_none(),
                    })
                    .map(|c| {
                        format!(
                            "column {} of table {} depends on type {type_name}",
                            c.name, table.name
                        )
                    })
                    .collect::<Vec<_>>()
            })
            .collect();
        users.extend(
            self.domains
                .read()
                .values()
                .filter(|d| match domain {
                    Some(id) => d.def.parent == Some(id),
                    None => d.def.base == ty && d.def.parent.is_none(),
                })
                .map(|d| format!("type {} depends on type {type_name}", d.def.name)),
        );
        users
    }

    /// DROP DOMAIN `name`: refused (2BP01) while a column is of it or a domain is over
    /// it, and with `cascade` (which would drop those) 0A000. `Ok(false)` if it does not
    /// exist and `if_exists` was given.
    pub fn drop_domain(&self, name: &RelName, if_exists: bool, cascade: bool) -> Result<bool> {
        let _ddl = self.ddl();
        let domain = match self.domain_type(name) {
            Some(d) => d,
            None if if_exists => return Ok(false),
            None => return Err(undefined(name)),
        };
        let users = self.type_users(domain.def.base, Some(domain.def.id), &domain.def.name);
        super::refuse_dependents(
            "DROP DOMAIN",
            &format!("type {}", domain.def.name),
            &users,
            cascade,
        )?;
        let mut batch = WriteBatch::new();
        batch.delete(&self.catalog_subtable()?, domain_key(name));
        self.write(batch)?;
        self.domains.write().remove(name);
        Ok(true)
    }

    /// The domains of schema `schema`.
    pub(super) fn domains_in(&self, schema: &str) -> Vec<RelName> {
        self.domains
            .read()
            .keys()
            .filter(|n| n.schema == schema)
            .cloned()
            .collect()
    }
}
