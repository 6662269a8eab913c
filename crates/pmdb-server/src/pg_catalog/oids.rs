//! The object identifiers pmdb's catalog shows PostgreSQL clients. pmdb has no oids of
//! its own, so they are derived from table and index ids — stable for as long as the
//! table exists — and PostgreSQL's own fixed oids for namespaces, types and access
//! methods, since clients hard-code some of them.

use pmdb_sql::schema::{IndexDef, TableDef};
use pmdb_sql::sequence::SequenceDef;
use pmdb_sql::view::ViewDef;
use pmdb_sql::{SqlType, catalog::CatalogImage};

pub const BOOTSTRAP_ROLE: i64 = 10;
pub const PG_CATALOG_NAMESPACE: i64 = 11;
pub const PUBLIC_NAMESPACE: i64 = 2200;
pub const INFORMATION_SCHEMA_NAMESPACE: i64 = 13_000;
pub const HEAP_AM: i64 = 2;
pub const BTREE_AM: i64 = 403;
pub const DATABASE: i64 = 16_383;

/// The oid of a database CREATE DATABASE made: of its name, so the same at every start,
/// in the upper half of the oids (an oid is 32 bits), above those the catalog gives.
pub fn made_database(name: &str) -> i64 {
    i64::from(0x8000_0000 | (crc32fast::hash(name.as_bytes()) & 0x3FFF_FFFF))
}
/// The catalogs' own oids, as `pg_description.classoid` names them.
pub const PG_CLASS: i64 = 1259;
pub const PG_CONSTRAINT: i64 = 2606;

/// PostgreSQL's catalog relations with the oids every PostgreSQL gives them, for
/// `'pg_catalog.pg_class'::regclass` (how clients name a `classoid`).
const SYSTEM_RELATIONS: &[(i64, &str)] = &[
    (1213, "pg_tablespace"),
    (1247, "pg_type"),
    (1249, "pg_attribute"),
    (1255, "pg_proc"),
    (PG_CLASS, "pg_class"),
    (1260, "pg_authid"),
    (1262, "pg_database"),
    (2601, "pg_am"),
    (2604, "pg_attrdef"),
    (PG_CONSTRAINT, "pg_constraint"),
    (2608, "pg_depend"),
    (2609, "pg_description"),
    (2610, "pg_index"),
    (2615, "pg_namespace"),
    (2618, "pg_rewrite"),
    (2620, "pg_trigger"),
    (2224, "pg_sequence"),
    (3456, "pg_collation"),
];

/// The oid of catalog relation `name` (perhaps qualified with `pg_catalog`).
pub fn system_relation(name: &str) -> Option<i64> {
    let name = name.strip_prefix("pg_catalog.").unwrap_or(name);
    SYSTEM_RELATIONS
        .iter()
        .find(|(_, n)| *n == name)
        .map(|(oid, _)| *oid)
}

/// The name of the catalog relation of oid `oid`.
pub fn system_relation_name(oid: i64) -> Option<&'static str> {
    SYSTEM_RELATIONS
        .iter()
        .find(|(o, _)| *o == oid)
        .map(|(_, n)| *n)
}

/// Where user objects start, as in PostgreSQL.
const FIRST_USER_OID: i64 = 16_384;

/// PL/pgSQL's extension, as every PostgreSQL 15 has it.
pub const PLPGSQL_EXTENSION: i64 = 13_559;
/// The hstore extension and its types: fixed oids in the range of id 0, which no table,
/// type or schema has (ids start at 1), the ones PostgreSQL gives the first extension
/// a fresh database installs.
pub const HSTORE_EXTENSION: i64 = 16_386;
pub const HSTORE_TYPE: i64 = 16_387;
pub const HSTORE_ARRAY: i64 = 16_392;
/// Oids each table reserves: its own, its primary key's index and constraint, and its
/// secondary indexes'.
const PER_TABLE: i64 = 1024;

/// The oid of the schema called `name`, if there is one.
pub fn namespace(catalog: &CatalogImage, name: &str) -> Option<i64> {
    match name {
        "pg_catalog" => Some(PG_CATALOG_NAMESPACE),
        "public" => Some(PUBLIC_NAMESPACE),
        "information_schema" => Some(INFORMATION_SCHEMA_NAMESPACE),
        _ => catalog
            .schema(name)
            .map(|s| FIRST_USER_OID + (s.id as i64).saturating_mul(PER_TABLE)),
    }
}

/// The name of the schema whose oid is `oid`.
pub fn namespace_name(catalog: &CatalogImage, oid: i64) -> Option<String> {
    match oid {
        PG_CATALOG_NAMESPACE => Some("pg_catalog".into()),
        PUBLIC_NAMESPACE => Some("public".into()),
        INFORMATION_SCHEMA_NAMESPACE => Some("information_schema".into()),
        _ => catalog
            .schemas()
            .into_iter()
            .find(|s| namespace(catalog, &s.name) == Some(oid))
            .map(|s| s.name.clone()),
    }
}

pub fn table(def: &TableDef) -> i64 {
    FIRST_USER_OID + (def.id as i64).saturating_mul(PER_TABLE)
}

pub fn primary_key_index(def: &TableDef) -> i64 {
    table(def) + 1
}

pub fn primary_key_constraint(def: &TableDef) -> i64 {
    table(def) + PER_TABLE - 1
}

/// Index ids are never reused within a table, so a table that has had more than
/// `PER_TABLE - 3` indexes wraps around; two live indexes sharing an oid would need a
/// thousand created and dropped between them.
pub fn index(def: &TableDef, index: &IndexDef) -> i64 {
    table(def) + 2 + i64::from(index.id) % (PER_TABLE - 3)
}

/// A sequence's oid: sequences take their ids from the counter tables take theirs from,
/// so the two never share an oid.
pub fn sequence(def: &SequenceDef) -> i64 {
    FIRST_USER_OID + (def.id as i64).saturating_mul(PER_TABLE)
}

/// An enum type's oid: types take their ids from the counter tables take theirs from;
/// its array type's is the next.
pub fn enum_type(id: u64) -> i64 {
    FIRST_USER_OID + (id as i64).saturating_mul(PER_TABLE)
}

pub fn enum_array(id: u64) -> i64 {
    enum_type(id) + 1
}

/// A domain's oid: domains take their ids from the counter tables and enum types take
/// theirs from; its array type's is the next.
pub fn domain_type(id: u64) -> i64 {
    enum_type(id)
}

pub fn domain_array(id: u64) -> i64 {
    domain_type(id) + 1
}

/// The name of the user type (an enum type or a domain, or an array of one) whose oid
/// is `oid`, as `format_type` spells it: quoted where it needs it, with its schema
/// outside `public`.
pub fn user_type_name(catalog: &CatalogImage, oid: i64) -> Option<String> {
    let enums = catalog
        .enum_types()
        .into_iter()
        .map(|t| (t.id, t.rel_name()));
    let domains = catalog
        .domain_types()
        .into_iter()
        .map(|d| (d.def.id, d.def.rel_name()));
    enums.chain(domains).find_map(|(id, name)| {
        if enum_type(id) == oid {
            Some(name.quoted())
        } else if enum_array(id) == oid {
            Some(format!("{}[]", name.quoted()))
        } else {
            None
        }
    })
}

/// The oid of the `i`th label of an enum type (`pg_enum.oid`): in the type's range, so
/// unique while a type has fewer than `PER_TABLE - 2` labels.
pub fn enum_label(id: u64, i: usize) -> i64 {
    enum_type(id) + 2 + i as i64
}

/// A view's oid: views take their ids from the counter tables take theirs from.
pub fn view(def: &ViewDef) -> i64 {
    FIRST_USER_OID + (def.id as i64).saturating_mul(PER_TABLE)
}

/// Where the oids of UNIQUE constraints start: one per constraint index, as for column
/// defaults below.
const FIRST_UNIQUE_CONSTRAINT: i64 = 2_000_000_000;

/// The oid of the UNIQUE constraint that `index` backs.
pub fn unique_constraint(def: &TableDef, index: &IndexDef) -> i64 {
    FIRST_UNIQUE_CONSTRAINT
        + (def.id as i64).saturating_mul(PER_TABLE)
        + i64::from(index.id) % (PER_TABLE - 3)
}

/// Where the oids of foreign keys and of CHECK constraints start: one per constraint,
/// by its place in its table's definition (at most 256 of each).
const FIRST_FOREIGN_KEY: i64 = 2_300_000_000;
const FIRST_CHECK: i64 = 2_600_000_000;

/// The oid of the `i`th foreign key of a table.
pub fn foreign_key(def: &TableDef, i: usize) -> i64 {
    FIRST_FOREIGN_KEY + (def.id as i64).saturating_mul(256) + i as i64
}

/// The oid of the `i`th CHECK constraint of a table.
pub fn check(def: &TableDef, i: usize) -> i64 {
    FIRST_CHECK + (def.id as i64).saturating_mul(256) + i as i64
}

/// Where the oids of column defaults start: above every table's range for the ids a
/// database gives out in practice, and within 32 bits.
const FIRST_ATTRDEF: i64 = 3_000_000_000;

/// The oid of the default of column `column` (0-based) of a table.
pub fn attrdef(def: &TableDef, column: usize) -> i64 {
    FIRST_ATTRDEF + (def.id as i64).saturating_mul(1600) + column as i64
}

/// The oid of the constraint of `def` called `name`, if it has one.
pub fn constraint_named(def: &TableDef, name: &str) -> Option<i64> {
    if def.is_primary_key_name(name) {
        return Some(primary_key_constraint(def));
    }
    if let Some(ix) = def.indexes.iter().find(|i| i.constraint && i.name == name) {
        return Some(unique_constraint(def, ix));
    }
    if let Some(i) = def.foreign_keys.iter().position(|f| f.name == name) {
        return Some(foreign_key(def, i));
    }
    def.checks
        .iter()
        .position(|c| c.name == name)
        .map(|i| check(def, i))
}

/// What an oid names among the user's objects.
pub enum Object {
    Table(TableDef),
    PrimaryKey(TableDef),
    Index(TableDef, IndexDef),
    PrimaryKeyConstraint(TableDef),
    UniqueConstraint(TableDef, IndexDef),
    /// The table and the position of the key in its definition.
    ForeignKey(TableDef, usize),
    Check(TableDef, usize),
    Sequence(SequenceDef),
    View(ViewDef),
}

pub fn find(catalog: &CatalogImage, oid: i64) -> Option<Object> {
    if let Some(seq) = catalog
        .sequences()
        .iter()
        .find(|s| sequence(s.def()) == oid)
    {
        return Some(Object::Sequence(seq.def().clone()));
    }
    if let Some(v) = catalog.views().iter().find(|v| view(v) == oid) {
        return Some(Object::View(v.as_ref().clone()));
    }
    catalog.tables().into_iter().find_map(|t| {
        let def = t.def();
        if oid == table(def) {
            Some(Object::Table(def.clone()))
        } else if oid == primary_key_index(def) && !def.primary_key.is_empty() {
            Some(Object::PrimaryKey(def.clone()))
        } else if oid == primary_key_constraint(def) && !def.primary_key.is_empty() {
            Some(Object::PrimaryKeyConstraint(def.clone()))
        } else if let Some(i) = def.indexes.iter().find(|i| index(def, i) == oid) {
            Some(Object::Index(def.clone(), i.clone()))
        } else if let Some(i) = (0..def.foreign_keys.len()).find(|&i| foreign_key(def, i) == oid) {
            Some(Object::ForeignKey(def.clone(), i))
        } else if let Some(i) = (0..def.checks.len()).find(|&i| check(def, i) == oid) {
            Some(Object::Check(def.clone(), i))
        } else {
            def.indexes
                .iter()
                .find(|i| i.constraint && unique_constraint(def, i) == oid)
                .map(|i| Object::UniqueConstraint(def.clone(), i.clone()))
        }
    })
}

/// The built-in types clients look up: oid, name, length, category.
pub const TYPES: &[(i64, &str, i64, &str)] = &[
    (16, "bool", 1, "B"),
    (17, "bytea", -1, "U"),
    (18, "char", 1, "S"),
    (19, "name", 64, "S"),
    (20, "int8", 8, "N"),
    (21, "int2", 2, "N"),
    (23, "int4", 4, "N"),
    (25, "text", -1, "S"),
    (26, "oid", 4, "N"),
    (114, "json", -1, "U"),
    (700, "float4", 4, "N"),
    (701, "float8", 8, "N"),
    (1042, "bpchar", -1, "S"),
    (1043, "varchar", -1, "S"),
    (1082, "date", 4, "D"),
    (1083, "time", 8, "D"),
    (1114, "timestamp", 8, "D"),
    (1184, "timestamptz", 8, "D"),
    (1186, "interval", 16, "T"),
    (1700, "numeric", -1, "N"),
    (2950, "uuid", 16, "U"),
    (3802, "jsonb", -1, "U"),
];

/// A column type's oid and type modifier, as `pg_attribute` gives them.
pub fn column_type(ty: SqlType) -> (i64, i64) {
    // A modifier carries the declared length or precision, plus 4 (PostgreSQL's
    // VARHDRSZ), or -1 for none.
    match ty {
        SqlType::Boolean => (16, -1),
        SqlType::SmallInt => (21, -1),
        SqlType::Int => (23, -1),
        SqlType::BigInt => (20, -1),
        SqlType::Real => (700, -1),
        SqlType::Double => (701, -1),
        SqlType::Decimal {
            unconstrained: true,
            ..
        } => (1700, -1),
        SqlType::Decimal {
            precision, scale, ..
        } => (1700, ((i64::from(precision) << 16) | i64::from(scale)) + 4),
        SqlType::Char(n) => (1042, i64::from(n) + 4),
        SqlType::Varchar(n) => (1043, i64::from(n) + 4),
        SqlType::Text => (25, -1),
        SqlType::Date => (1082, -1),
        SqlType::Time => (1083, -1),
        SqlType::Timestamp => (1114, -1),
        SqlType::TimestampTz => (1184, -1),
        SqlType::Bytea => (17, -1),
        SqlType::Uuid => (2950, -1),
        SqlType::Json => (114, -1),
        SqlType::Jsonb => (3802, -1),
        SqlType::Interval => (1186, -1),
        SqlType::Enum(id) => (enum_type(id), -1),
        SqlType::Hstore => (HSTORE_TYPE, -1),
    }
}

/// A column type as `information_schema.columns` describes it: the standard's name,
/// the PostgreSQL type's, and the length, precision and scale it gives.
#[derive(Default)]
pub struct StandardType {
    pub data_type: &'static str,
    pub udt_name: &'static str,
    pub character_maximum_length: Option<i64>,
    pub character_octet_length: Option<i64>,
    pub numeric_precision: Option<i64>,
    pub numeric_precision_radix: Option<i64>,
    pub numeric_scale: Option<i64>,
    pub datetime_precision: Option<i64>,
}

/// The octets a character of the server's encoding (UTF-8) may take, and the most a
/// string may hold, as `information_schema` counts them.
const MAX_CHARACTER_OCTETS: i64 = 4;
const MAX_STRING_OCTETS: i64 = 1 << 30;

pub fn standard_type(ty: SqlType) -> StandardType {
    let named = |data_type, udt_name| StandardType {
        data_type,
        udt_name,
        ..StandardType::default()
    };
    let binary = |data_type, udt_name, bits| StandardType {
        numeric_precision: Some(bits),
        numeric_precision_radix: Some(2),
        ..named(data_type, udt_name)
    };
    let integer = |data_type, udt_name, bits| StandardType {
        numeric_scale: Some(0),
        ..binary(data_type, udt_name, bits)
    };
    let string = |data_type, udt_name, n: Option<u32>| StandardType {
        character_maximum_length: n.map(i64::from),
        character_octet_length: Some(
            n.map_or(MAX_STRING_OCTETS, |n| i64::from(n) * MAX_CHARACTER_OCTETS),
        ),
        ..named(data_type, udt_name)
    };
    let temporal = |data_type, udt_name, digits| StandardType {
        datetime_precision: Some(digits),
        ..named(data_type, udt_name)
    };
    match ty {
        SqlType::SmallInt => integer("smallint", "int2", 16),
        SqlType::Int => integer("integer", "int4", 32),
        SqlType::BigInt => integer("bigint", "int8", 64),
        SqlType::Decimal {
            unconstrained: true,
            ..
        } => StandardType {
            numeric_precision_radix: Some(10),
            ..named("numeric", "numeric")
        },
        SqlType::Decimal {
            precision, scale, ..
        } => StandardType {
            numeric_precision: Some(i64::from(precision)),
            numeric_precision_radix: Some(10),
            numeric_scale: Some(i64::from(scale)),
            ..named("numeric", "numeric")
        },
        SqlType::Real => binary("real", "float4", 24),
        SqlType::Double => binary("double precision", "float8", 53),
        SqlType::Char(n) => string("character", "bpchar", Some(n)),
        SqlType::Varchar(n) => string("character varying", "varchar", Some(n)),
        SqlType::Text => string("text", "text", None),
        SqlType::Date => temporal("date", "date", 0),
        SqlType::Time => temporal("time without time zone", "time", 6),
        SqlType::Timestamp => temporal("timestamp without time zone", "timestamp", 6),
        SqlType::TimestampTz => temporal("timestamp with time zone", "timestamptz", 6),
        SqlType::Interval => temporal("interval", "interval", 6),
        SqlType::Boolean => named("boolean", "bool"),
        SqlType::Bytea => named("bytea", "bytea"),
        SqlType::Uuid => named("uuid", "uuid"),
        SqlType::Json => named("json", "json"),
        SqlType::Jsonb => named("jsonb", "jsonb"),
        // Its udt is the type itself, which only the catalog names.
        SqlType::Enum(_) => named("USER-DEFINED", ""),
        SqlType::Hstore => named("USER-DEFINED", "hstore"),
    }
}

/// `format_type(oid, typmod)`: a type as SQL spells it.
pub fn format_type(oid: i64, typmod: Option<i64>) -> Option<String> {
    let len = typmod.filter(|&m| m >= 4).map(|m| m - 4);
    Some(match oid {
        16 => "boolean".into(),
        17 => "bytea".into(),
        18 => "\"char\"".into(),
        19 => "name".into(),
        20 => "bigint".into(),
        21 => "smallint".into(),
        23 => "integer".into(),
        25 => "text".into(),
        26 => "oid".into(),
        700 => "real".into(),
        701 => "double precision".into(),
        1042 => match len {
            Some(n) => format!("character({n})"),
            None => "bpchar".into(),
        },
        1043 => match len {
            Some(n) => format!("character varying({n})"),
            None => "character varying".into(),
        },
        1082 => "date".into(),
        1083 => "time without time zone".into(),
        1114 => "timestamp without time zone".into(),
        1184 => "timestamp with time zone".into(),
        1186 => "interval".into(),
        1700 => match len {
            Some(m) => format!("numeric({},{})", m >> 16, m & 0xffff),
            None => "numeric".into(),
        },
        2950 => "uuid".into(),
        114 => "json".into(),
        3802 => "jsonb".into(),
        HSTORE_TYPE => "hstore".into(),
        HSTORE_ARRAY => "hstore[]".into(),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_type_spells_modifiers_back() {
        for (ty, text) in [
            (SqlType::Varchar(20), "character varying(20)"),
            (SqlType::Char(5), "character(5)"),
            (SqlType::decimal(10, 2), "numeric(10,2)"),
            (SqlType::UNCONSTRAINED_NUMERIC, "numeric"),
            (SqlType::Timestamp, "timestamp without time zone"),
            (SqlType::Int, "integer"),
            (SqlType::TimestampTz, "timestamp with time zone"),
            (SqlType::Uuid, "uuid"),
            (SqlType::Bytea, "bytea"),
            (SqlType::Jsonb, "jsonb"),
            (SqlType::Interval, "interval"),
            (SqlType::Time, "time without time zone"),
        ] {
            let (oid, typmod) = column_type(ty);
            assert_eq!(format_type(oid, Some(typmod)).as_deref(), Some(text));
        }
        assert_eq!(
            format_type(1043, None).as_deref(),
            Some("character varying")
        );
        assert_eq!(format_type(123_456, None), None);
    }
}
