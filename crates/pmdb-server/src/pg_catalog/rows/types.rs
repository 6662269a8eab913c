//! The relations of types: `pg_type` (PostgreSQL's types pmdb has, their array types,
//! enum types, domains and the hstore extension's type), `pg_enum` (enum labels) and
//! `pg_extension`.

use pgwire::api::Type;
use pmdb_sql::extension::{Available, HSTORE, PLPGSQL};

use crate::pg_array::array_type;
use crate::pg_catalog::oids;
use crate::pg_catalog::relation::catalog_relation;
use crate::pg_catalog::source::Source;

catalog_relation! {
    PgType = "pg_type" (rows: types) {
        oid: Oid,
        typname: Text,
        typnamespace: Oid,
        typowner: Oid,
        typlen: Int,
        typbyval: Bool,
        typtype: Char,
        typcategory: Text,
        typisdefined: Bool,
        typdelim: Text,
        typrelid: Oid,
        typelem: Oid,
        typarray: Oid,
        typbasetype: Oid,
        typtypmod: Int,
        typnotnull: Bool,
        typcollation: Oid,
        typinput: Text,
    }
}

impl PgType {
    /// A base type of `pg_catalog` (typtype `b`; `e` for category `E`), of `len` bytes
    /// (-1: variable), in `category`, whose array type is `array` (0: none).
    fn base(oid: i64, name: &str, len: i64, category: &str, array: i64) -> PgType {
        PgType {
            oid,
            typname: name.to_owned(),
            typnamespace: oids::PG_CATALOG_NAMESPACE,
            typowner: oids::BOOTSTRAP_ROLE,
            typlen: len,
            typbyval: (1..=8).contains(&len),
            typtype: if category == "E" { "e" } else { "b" }.to_owned(),
            typcategory: category.to_owned(),
            typisdefined: true,
            typdelim: ",".to_owned(),
            typrelid: 0,
            typelem: 0,
            typarray: array,
            typbasetype: 0,
            typtypmod: -1,
            typnotnull: false,
            typcollation: if category == "S" { 100 } else { 0 },
            typinput: format!("{name}in"),
        }
    }

    /// The array type `oid` of type `element`, in the element's schema.
    fn array_of(oid: i64, element: &PgType) -> PgType {
        PgType {
            typnamespace: element.typnamespace,
            typelem: element.oid,
            typinput: "array_in".to_owned(),
            ..PgType::base(oid, &format!("_{}", element.typname), -1, "A", 0)
        }
    }
}

fn types(source: &Source) -> Vec<PgType> {
    let mut rows = Vec::new();
    // A type, then its array type.
    let push = |rows: &mut Vec<PgType>, own: PgType, array: i64| {
        let of_array = PgType::array_of(array, &own);
        rows.push(own);
        rows.push(of_array);
    };
    for &(oid, name, len, category) in oids::TYPES {
        // Each type with an array type has its row (`_int4`), whose element it is.
        let array = u32::try_from(oid)
            .ok()
            .and_then(Type::from_oid)
            .and_then(|t| array_type(&t));
        match array {
            Some(a) => {
                let array = i64::from(a.oid());
                push(
                    &mut rows,
                    PgType::base(oid, name, len, category, array),
                    array,
                );
            }
            None => rows.push(PgType::base(oid, name, len, category, 0)),
        }
    }
    // Each enum type (typtype `e`, four bytes as in PostgreSQL) and its array type, in
    // its schema.
    for t in source.catalog().enum_types() {
        let (oid, array) = (oids::enum_type(t.id), oids::enum_array(t.id));
        let own = PgType {
            typnamespace: source.namespace(&t.schema),
            typinput: "enum_in".to_owned(),
            ..PgType::base(oid, &t.name, 4, "E", array)
        };
        push(&mut rows, own, array);
    }
    // The hstore extension's type and its array type, in public, while it is installed.
    if source
        .catalog()
        .extensions()
        .iter()
        .any(|e| e.name == HSTORE.name)
    {
        let own = PgType {
            typnamespace: oids::PUBLIC_NAMESPACE,
            typinput: "hstore_in".to_owned(),
            ..PgType::base(oids::HSTORE_TYPE, "hstore", -1, "U", oids::HSTORE_ARRAY)
        };
        push(&mut rows, own, oids::HSTORE_ARRAY);
    }
    // Each domain (typtype `d`, its base type's length and category, its base type and
    // modifier, whether it is NOT NULL) and its array type, in its schema.
    for d in source.catalog().domain_types() {
        let (oid, array) = (oids::domain_type(d.def.id), oids::domain_array(d.def.id));
        let (base, typmod) = oids::column_type(d.def.base);
        let (len, category) = oids::TYPES
            .iter()
            .find(|t| t.0 == base)
            .map_or((4, "E"), |t| (t.2, t.3));
        // A domain over a domain names that domain, as PostgreSQL does.
        let (base, typmod) = match d.def.parent {
            Some(parent) => (oids::domain_type(parent), -1),
            None => (base, typmod),
        };
        let own = PgType {
            typnamespace: source.namespace(&d.def.schema),
            typtype: "d".to_owned(),
            typbasetype: base,
            typtypmod: typmod,
            typnotnull: d.def.not_null,
            typinput: "domain_in".to_owned(),
            ..PgType::base(oid, &d.def.name, len, category, array)
        };
        push(&mut rows, own, array);
    }
    rows
}

catalog_relation! {
    /// Each label of each enum type, its sort order its place from 1.
    PgEnum = "pg_enum" (rows: enum_labels) {
        oid: Oid,
        enumtypid: Oid,
        enumsortorder: Real,
        enumlabel: Text,
    }
}

fn enum_labels(source: &Source) -> Vec<PgEnum> {
    let mut rows = Vec::new();
    for t in source.catalog().enum_types() {
        for (i, label) in t.labels.iter().enumerate() {
            rows.push(PgEnum {
                oid: oids::enum_label(t.id, i),
                enumtypid: oids::enum_type(t.id),
                enumsortorder: i as f32 + 1.0,
                enumlabel: label.clone(),
            });
        }
    }
    rows
}

catalog_relation! {
    /// PL/pgSQL, which every database has, and each installed extension.
    PgExtension = "pg_extension" (rows: extensions) {
        oid: Oid,
        extname: Text,
        extowner: Oid,
        extnamespace: Oid,
        extrelocatable: Bool,
        extversion: Text,
        extconfig: Text or null,
        extcondition: Text or null,
    }
}

impl PgExtension {
    fn new(oid: i64, available: Available, namespace: i64, relocatable: bool) -> PgExtension {
        PgExtension {
            oid,
            extname: available.name.to_owned(),
            extowner: oids::BOOTSTRAP_ROLE,
            extnamespace: namespace,
            extrelocatable: relocatable,
            extversion: available.version.to_owned(),
            extconfig: None,
            extcondition: None,
        }
    }
}

fn extensions(source: &Source) -> Vec<PgExtension> {
    let plpgsql = PgExtension::new(
        oids::PLPGSQL_EXTENSION,
        PLPGSQL,
        oids::PG_CATALOG_NAMESPACE,
        false,
    );
    let mut rows = vec![plpgsql];
    for e in source.catalog().extensions() {
        if let Some(available) = e.available().filter(|a| a.name == HSTORE.name) {
            let oid = oids::HSTORE_EXTENSION;
            rows.push(PgExtension::new(
                oid,
                available,
                oids::PUBLIC_NAMESPACE,
                true,
            ));
        }
    }
    rows
}
