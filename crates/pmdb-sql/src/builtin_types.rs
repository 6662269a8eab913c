//! The names of PostgreSQL 15's own types. A type a statement names that pmdb does not
//! have is refused as unsupported (0A000) when PostgreSQL has it, and as not existing
//! (42704) when PostgreSQL would not know the name either: a misspelling, or an
//! extension's type (`hstore`) while the extension is not installed.

/// PostgreSQL 15's types by their `pg_type` names and the aliases its grammar takes,
/// beyond those the SQL parser reads as types of its own.
const NAMES: &[&str] = &[
    "aclitem",
    "any",
    "anyarray",
    "anycompatible",
    "anycompatiblearray",
    "anycompatiblemultirange",
    "anycompatiblenonarray",
    "anycompatiblerange",
    "anyelement",
    "anyenum",
    "anymultirange",
    "anynonarray",
    "anyrange",
    "bit",
    "bool",
    "box",
    "bpchar",
    "bytea",
    "char",
    "cid",
    "cidr",
    "circle",
    "cstring",
    "date",
    "datemultirange",
    "daterange",
    "event_trigger",
    "fdw_handler",
    "float4",
    "float8",
    "gtsvector",
    "index_am_handler",
    "inet",
    "int2",
    "int2vector",
    "int4",
    "int4multirange",
    "int4range",
    "int8",
    "int8multirange",
    "int8range",
    "internal",
    "interval",
    "json",
    "jsonb",
    "jsonpath",
    "language_handler",
    "line",
    "lseg",
    "macaddr",
    "macaddr8",
    "money",
    "name",
    "numeric",
    "nummultirange",
    "numrange",
    "oid",
    "oidvector",
    "path",
    "pg_brin_bloom_summary",
    "pg_brin_minmax_multi_summary",
    "pg_ddl_command",
    "pg_dependencies",
    "pg_lsn",
    "pg_mcv_list",
    "pg_ndistinct",
    "pg_node_tree",
    "pg_snapshot",
    "point",
    "polygon",
    "record",
    "refcursor",
    "regclass",
    "regcollation",
    "regconfig",
    "regdictionary",
    "regnamespace",
    "regoper",
    "regoperator",
    "regproc",
    "regprocedure",
    "regrole",
    "regtype",
    "table_am_handler",
    "text",
    "tid",
    "time",
    "timestamp",
    "timestamptz",
    "timetz",
    "trigger",
    "tsm_handler",
    "tsmultirange",
    "tsquery",
    "tsrange",
    "tstzmultirange",
    "tstzrange",
    "tsvector",
    "txid_snapshot",
    "unknown",
    "uuid",
    "varbit",
    "varchar",
    "void",
    "xid",
    "xid8",
    "xml",
];

/// Whether PostgreSQL 15 has a type of this name (any case, without its schema).
pub(crate) fn is_postgresql_type(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    let base = name.strip_prefix('_').unwrap_or(&name);
    NAMES.contains(&base)
}

/// The name in DataFusion's refusal of a type it cannot plan (`Unsupported SQL type
/// foo`, from a cast), when PostgreSQL has no such type either.
pub(crate) fn unknown_in(refusal: &str) -> Option<&str> {
    let name = refusal.strip_prefix("Unsupported SQL type ")?;
    let plain = name
        .chars()
        .all(|c| c.is_alphanumeric() || matches!(c, '_' | '.' | '"'));
    let last = name.rsplit('.').next()?.trim_matches('"');
    (plain && !last.is_empty() && !is_postgresql_type(last)).then_some(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_of_unknown_types_are_told_from_unsupported_ones() {
        assert_eq!(unknown_in("Unsupported SQL type foo"), Some("foo"));
        assert_eq!(
            unknown_in("Unsupported SQL type pg_catalog.foo"),
            Some("pg_catalog.foo")
        );
        assert_eq!(unknown_in("Unsupported SQL type xml"), None);
        assert_eq!(unknown_in("Unsupported SQL type pg_catalog.money"), None);
        assert_eq!(unknown_in("Unsupported SQL type INT UNSIGNED"), None);
        assert_eq!(unknown_in("Unsupported SQL type foo(3)"), None);
        assert_eq!(unknown_in("Unsupported feature"), None);
    }

    #[test]
    fn postgresql_types_are_told_from_unknown_names() {
        assert!(is_postgresql_type("inet"));
        assert!(is_postgresql_type("TSVECTOR"));
        assert!(is_postgresql_type("_int4"));
        assert!(!is_postgresql_type("hstore"));
        assert!(!is_postgresql_type("foo"));
        assert!(!is_postgresql_type("citext"));
    }
}
