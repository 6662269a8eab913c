//! The rows of the `pg_catalog` relations that have any, built from pmdb's catalog:
//! one function per relation, its cells in the order of the relation's columns.

use pgwire::api::Type;
use pmdb_sql::SqlType;
use pmdb_sql::extension::{Available, HSTORE, PLPGSQL};
use pmdb_sql::schema::{ColumnDef, Deferral, ForeignKeyDef, Identity, TableDef};
use pmdb_sql::sequence::SequenceDef;
use pmdb_sql::view::ViewDef;

use super::oids;
use super::source::Source;
use crate::pg_array::array_type;

/// One value of a catalog row.
pub enum Cell {
    Int(i64),
    Text(String),
    Bool(bool),
    Real(f32),
    /// Microseconds since the Unix epoch (a timestamptz).
    Time(i64),
    /// Column numbers, from 1 (`indkey`, `conkey`); also an index's per-column options
    /// (`indoption`, all 0: ascending, nulls last).
    ColumnNumbers(Vec<i16>),
    /// Object identifiers (`indclass`: 0 for each column, the type's own order).
    Oids(Vec<u32>),
    /// Names (`parameter_types`).
    Texts(Vec<String>),
    Null,
}

pub fn text(s: &str) -> Cell {
    Text(s.to_owned())
}

use Cell::{Bool, Int, Null, Real, Text, Time};

pub fn namespaces(source: &Source) -> Vec<Vec<Cell>> {
    let mut names: Vec<String> = ["pg_catalog", "public", "information_schema"]
        .into_iter()
        .map(str::to_owned)
        .collect();
    names.extend(source.catalog().schemas().iter().map(|s| s.name.clone()));
    names
        .iter()
        .map(|name| {
            vec![
                Int(source.namespace(name)),
                text(name),
                Int(oids::BOOTSTRAP_ROLE),
                Null,
            ]
        })
        .collect()
}

fn has_indexes(def: &TableDef) -> bool {
    !def.primary_key.is_empty() || !def.indexes.is_empty()
}

/// A relation's schema as `pg_class` shows it: its oid, and whether it is a session's
/// temporary schema (its relations' `relpersistence` is `t`).
#[derive(Clone, Copy)]
struct Namespace {
    oid: i64,
    temporary: bool,
}

impl Namespace {
    fn of(source: &Source, schema: &str) -> Namespace {
        Namespace {
            oid: source.namespace(schema),
            temporary: pmdb_sql::is_temporary(schema),
        }
    }
}

/// A relation of `pg_class`: what varies between pmdb's relations.
struct Class<'a> {
    oid: i64,
    name: &'a str,
    namespace: Namespace,
    kind: &'a str,
    am: i64,
    columns: usize,
    has_index: bool,
    /// Its CHECK constraints (`relchecks`: psql lists them only when it is not 0).
    checks: usize,
    /// Whether foreign keys reference it or it has any (PostgreSQL's are triggers, and
    /// psql lists them only when `relhastriggers` is set).
    triggers: bool,
}

impl Class<'_> {
    fn row(&self) -> Vec<Cell> {
        vec![
            Int(self.oid),
            text(self.name),
            Int(self.namespace.oid),
            Int(0),
            Int(0),
            Int(oids::BOOTSTRAP_ROLE),
            Int(self.am),
            Int(self.oid),
            Int(0),
            Int(0),
            Real(-1.0),
            Int(0),
            Int(0),
            Bool(self.has_index),
            Bool(false),
            text(if self.namespace.temporary { "t" } else { "p" }),
            text(self.kind),
            Int(self.columns as i64),
            Int(self.checks as i64),
            Bool(false),
            Bool(self.triggers),
            Bool(false),
            Bool(false),
            Bool(false),
            Bool(true),
            text("d"),
            Bool(false),
            Int(0),
            Null,
            Null,
            Null,
        ]
    }

    /// A relation without constraints of its own (a sequence, a view, an index).
    fn plain<'a>(
        oid: i64,
        name: &'a str,
        namespace: Namespace,
        kind: &'a str,
        am: i64,
        columns: usize,
    ) -> Class<'a> {
        Class {
            oid,
            name,
            namespace,
            kind,
            am,
            columns,
            has_index: false,
            checks: 0,
            triggers: false,
        }
    }
}

pub fn classes(source: &Source) -> Vec<Vec<Cell>> {
    let mut rows = Vec::new();
    for seq in source.catalog().sequences() {
        let def = seq.def();
        // A sequence's relation has PostgreSQL's three columns.
        let namespace = Namespace::of(source, &def.schema);
        rows.push(Class::plain(oids::sequence(def), &def.name, namespace, "S", 0, 3).row());
    }
    for v in source.catalog().views() {
        let namespace = Namespace::of(source, &v.schema);
        let class = Class::plain(oids::view(&v), &v.name, namespace, "v", 0, v.output.len());
        rows.push(class.row());
    }
    let tables = source.tables();
    for def in &tables {
        let namespace = Namespace::of(source, &def.schema);
        let referenced = tables
            .iter()
            .any(|t| t.foreign_keys.iter().any(|fk| fk.parent == def.id));
        rows.push(
            Class {
                has_index: has_indexes(def),
                checks: def.checks.len(),
                triggers: referenced || !def.foreign_keys.is_empty(),
                ..Class::plain(
                    oids::table(def),
                    &def.name,
                    namespace,
                    if def.materialized.is_some() { "m" } else { "r" },
                    oids::HEAP_AM,
                    def.columns.len(),
                )
            }
            .row(),
        );
        if !def.primary_key.is_empty() {
            rows.push(
                Class::plain(
                    oids::primary_key_index(def),
                    &def.primary_key_constraint(),
                    namespace,
                    "i",
                    oids::BTREE_AM,
                    def.primary_key.len(),
                )
                .row(),
            );
        }
        for index in &def.indexes {
            rows.push(
                Class::plain(
                    oids::index(def, index),
                    &index.name,
                    namespace,
                    "i",
                    oids::BTREE_AM,
                    index.columns.len(),
                )
                .row(),
            );
        }
    }
    rows
}

/// Column `c` as relation `relation`'s `num`th; `own`: a table's own column (an
/// index's and a view's have neither defaults nor identities of their own).
fn attribute(relation: i64, num: usize, c: &ColumnDef, own: bool) -> Vec<Cell> {
    let name = c.name.as_str();
    let identity = match c.identity {
        Some(Identity::Always) if own => "a",
        Some(Identity::ByDefault) if own => "d",
        _ => "",
    };
    let (ty, typmod) = oids::column_type(c.ty);
    let len = oids::TYPES.iter().find(|t| t.0 == ty).map_or(-1, |t| t.2);
    // A column of a domain is of the domain's type, its modifier the domain's own.
    let (ty, typmod) = match c.domain {
        Some(id) => (oids::domain_type(id), -1),
        None => (ty, typmod),
    };
    vec![
        Int(relation),
        text(name),
        Int(ty),
        Int(len),
        Int(num as i64),
        Int(0),
        Int(typmod),
        Bool(c.not_null),
        // An identity column's sequence is its identity, not a default.
        Bool(own && c.default.is_some() && identity.is_empty()),
        Bool(false),
        text(identity),
        text(""),
        Bool(false),
        Bool(true),
        Int(0),
        // Stored inline ('p') when fixed-length, else extended ('x'), as PostgreSQL
        // shows them.
        text(if len > 0 { "p" } else { "x" }),
        text(""),
        Int(0),
        Int(-1),
        Null,
        Null,
    ]
}

/// The columns of every table, of every index (numbered in the index) and of every
/// view.
pub fn attributes(source: &Source) -> Vec<Vec<Cell>> {
    let mut rows = Vec::new();
    for def in source.tables() {
        let table = oids::table(&def);
        for (i, c) in def.columns.iter().enumerate() {
            rows.push(attribute(table, i + 1, c, true));
        }
        let pk = oids::primary_key_index(&def);
        for (n, &i) in def.primary_key.iter().enumerate() {
            rows.push(attribute(pk, n + 1, &def.columns[usize::from(i)], false));
        }
        for index in &def.indexes {
            let oid = oids::index(&def, index);
            for (n, &i) in index.columns.iter().enumerate() {
                rows.push(attribute(oid, n + 1, &def.columns[usize::from(i)], false));
            }
        }
    }
    for v in source.catalog().views() {
        for (i, (name, ty)) in v.output.iter().enumerate() {
            let column = ColumnDef::new(name.clone(), *ty, false);
            rows.push(attribute(oids::view(&v), i + 1, &column, false));
        }
    }
    rows
}

/// Column defaults, as PostgreSQL prints them (a sequence's name as a `regclass`); an
/// identity column has none.
pub fn attrdefs(source: &Source) -> Vec<Vec<Cell>> {
    let mut rows = Vec::new();
    for def in source.tables() {
        for (i, c) in def.columns.iter().enumerate() {
            let Some(default) = c.default.as_ref().filter(|_| c.identity.is_none()) else {
                continue;
            };
            rows.push(vec![
                Int(oids::attrdef(&def, i)),
                Int(oids::table(&def)),
                Int(i as i64 + 1),
                Text(shown_default(default)),
            ]);
        }
    }
    rows
}

/// A default's text as PostgreSQL prints it: a sequence's name as a `regclass`.
fn shown_default(default: &str) -> String {
    match default
        .strip_prefix("nextval(")
        .and_then(|d| d.strip_suffix(')'))
    {
        Some(name) if name.starts_with('\'') && name.ends_with('\'') => {
            format!("nextval({name}::regclass)")
        }
        _ => default.to_owned(),
    }
}

/// `information_schema.columns`: the columns of every table and view, their types as
/// the standard names them, with their lengths, precisions, defaults and identities.
pub fn standard_columns(source: &Source) -> Vec<Vec<Cell>> {
    let catalog = source.catalog();
    let sequences = catalog.sequences();
    let mut rows = Vec::new();
    for def in source.tables() {
        if def.materialized.is_some() {
            continue;
        }
        for (i, c) in def.columns.iter().enumerate() {
            let in_key = def.primary_key.iter().any(|&k| usize::from(k) == i);
            let identity = c.identity.and_then(|kind| {
                let owner = Some((def.id, u16::try_from(i).ok()?));
                let seq = sequences.iter().find(|s| s.def().owned_by == owner)?;
                Some((kind, seq.def().clone()))
            });
            let relation = (def.schema.as_str(), def.name.as_str());
            let shape = Shape {
                nullable: !c.not_null && !in_key,
                // An identity column's default is its sequence, shown as its identity.
                default: c
                    .default
                    .as_deref()
                    .filter(|_| identity.is_none())
                    .map(shown_default),
                identity,
                updatable: true,
            };
            rows.push(standard_column(source, relation, i, c, shape));
        }
    }
    for v in catalog.views() {
        for (i, (name, ty)) in v.output.iter().enumerate() {
            let column = ColumnDef::new(name.clone(), *ty, false);
            let shape = Shape {
                nullable: true,
                default: None,
                identity: None,
                updatable: false,
            };
            rows.push(standard_column(
                source,
                (&v.schema, &v.name),
                i,
                &column,
                shape,
            ));
        }
    }
    rows
}

/// `information_schema.tables`: every table (temporary ones as such) and view.
pub fn standard_tables(source: &Source) -> Vec<Vec<Cell>> {
    let row = |schema: &str, name: &str, kind: &str, insertable: bool| {
        vec![
            text(source.database()),
            text(schema),
            text(name),
            text(kind),
            Null,
            Null,
            Null,
            Null,
            Null,
            text(if insertable { "YES" } else { "NO" }),
            text("NO"),
            Null,
        ]
    };
    let mut rows: Vec<Vec<Cell>> = source
        .tables()
        .iter()
        .filter(|def| def.materialized.is_none())
        .map(|def| {
            let kind = if pmdb_sql::is_temporary(&def.schema) {
                "LOCAL TEMPORARY"
            } else {
                "BASE TABLE"
            };
            row(&def.schema, &def.name, kind, true)
        })
        .collect();
    // pmdb's views take no writes.
    rows.extend(
        source
            .catalog()
            .views()
            .iter()
            .map(|v| row(&v.schema, &v.name, "VIEW", false)),
    );
    rows
}

/// `pg_prepared_statements`: the calling session's statements prepared by name, each
/// parameter's type named as `regtype` names it. Every run of one takes the plan made
/// when it was prepared (pmdb does not plan again for the values bound): a generic plan
/// in PostgreSQL's words, so `generic_plans` counts the runs and `custom_plans` is 0.
pub fn prepared_statements(source: &Source) -> Vec<Vec<Cell>> {
    let Some(statements) = source.statements() else {
        return Vec::new();
    };
    let type_name = |field: &datafusion::arrow::datatypes::Field| -> String {
        let oid = i64::from(crate::encode::parameter_type(field).oid());
        oids::format_type(oid, None)
            .or_else(|| oids::user_type_name(source.catalog(), oid))
            .unwrap_or_else(|| "unknown".into())
    };
    let statements = statements.read();
    let mut names: Vec<&String> = statements.keys().collect();
    names.sort();
    names
        .into_iter()
        .map(|name| {
            let named = &statements[name];
            // A parameter planning left untyped is read as text.
            let types = named.prepared.as_ref().map_or_else(Vec::new, |p| {
                p.parameters()
                    .iter()
                    .map(|f| {
                        f.as_ref()
                            .map_or_else(|| "text".to_owned(), |f| type_name(f))
                    })
                    .collect()
            });
            vec![
                Text(name.clone()),
                Text(named.statement.clone()),
                Time(named.prepared_at),
                Cell::Texts(types),
                Bool(named.from_sql),
                Int(named.runs),
                Int(0),
            ]
        })
        .collect()
}

/// `information_schema.sequences`: every sequence but an identity column's, which
/// PostgreSQL leaves out (a serial column's is listed).
pub fn standard_sequences(source: &Source) -> Vec<Vec<Cell>> {
    let tables = source.tables();
    let of_identity = |owner: Option<(u64, u16)>| {
        owner.is_some_and(|(table, column)| {
            tables.iter().any(|t| {
                t.id == table
                    && t.columns
                        .get(usize::from(column))
                        .is_some_and(|c| c.identity.is_some())
            })
        })
    };
    let mut sequences: Vec<_> = source
        .catalog()
        .sequences()
        .iter()
        .map(|s| s.def().clone())
        .filter(|d| !of_identity(d.owned_by))
        .collect();
    sequences.sort_by(|a, b| (&a.schema, &a.name).cmp(&(&b.schema, &b.name)));
    sequences
        .into_iter()
        .map(|d| {
            let ty = oids::standard_type(d.ty);
            vec![
                text(source.database()),
                Text(d.schema.clone()),
                Text(d.name.clone()),
                text(ty.data_type),
                ty.numeric_precision.map_or(Null, Int),
                ty.numeric_precision_radix.map_or(Null, Int),
                ty.numeric_scale.map_or(Null, Int),
                Text(d.start.to_string()),
                Text(d.min.to_string()),
                Text(d.max.to_string()),
                Text(d.increment.to_string()),
                text(if d.cycle { "YES" } else { "NO" }),
            ]
        })
        .collect()
}

/// `information_schema.views`: each view's query, as `pg_views` shows it.
pub fn standard_views(source: &Source) -> Vec<Vec<Cell>> {
    source
        .catalog()
        .views()
        .iter()
        .map(|v| {
            vec![
                text(source.database()),
                Text(v.schema.clone()),
                Text(v.name.clone()),
                Text(view_definition(v)),
                text("NONE"),
                text("NO"),
                text("NO"),
                text("NO"),
                text("NO"),
                text("NO"),
            ]
        })
        .collect()
}

/// What `information_schema.columns` says of a column beyond its name and type.
struct Shape {
    nullable: bool,
    default: Option<String>,
    identity: Option<(Identity, SequenceDef)>,
    updatable: bool,
}

/// The row of column `c`, the `i`th (from 0) of relation `(schema, name)`.
fn standard_column(
    source: &Source,
    (schema, name): (&str, &str),
    i: usize,
    c: &ColumnDef,
    shape: Shape,
) -> Vec<Cell> {
    let ty = oids::standard_type(c.ty);
    let (udt_schema, udt_name) = match c.ty {
        SqlType::Enum(id) => source.catalog().enum_by_id(id).map_or((Null, Null), |t| {
            (Text(t.schema.clone()), Text(t.name.clone()))
        }),
        _ => (text("pg_catalog"), text(ty.udt_name)),
    };
    // A column of a domain names it (its base type is the data type).
    let (domain_catalog, domain_schema, domain_name) =
        match c.domain.and_then(|id| source.catalog().domain_by_id(id)) {
            Some(d) => (
                text(source.database()),
                Text(d.def.schema.clone()),
                Text(d.def.name.clone()),
            ),
            None => (Null, Null, Null),
        };
    let number = |n: Option<i64>| n.map_or(Null, Int);
    let yes_no = |b: bool| text(if b { "YES" } else { "NO" });
    let position = i as i64 + 1;
    let identity = shape.identity.as_ref();
    let of_identity = |f: fn(&SequenceDef) -> String| identity.map_or(Null, |(_, s)| Text(f(s)));
    vec![
        text(source.database()),
        text(schema),
        text(name),
        text(&c.name),
        Int(position),
        shape.default.map_or(Null, Text),
        yes_no(shape.nullable),
        text(ty.data_type),
        number(ty.character_maximum_length),
        number(ty.character_octet_length),
        number(ty.numeric_precision),
        number(ty.numeric_precision_radix),
        number(ty.numeric_scale),
        number(ty.datetime_precision),
        // interval_type and interval_precision; the character set's and the
        // collation's catalog, schema and name.
        Null,
        Null,
        Null,
        Null,
        Null,
        Null,
        Null,
        Null,
        domain_catalog,
        domain_schema,
        domain_name,
        text(source.database()),
        udt_schema,
        udt_name,
        // scope_catalog, scope_schema, scope_name, maximum_cardinality.
        Null,
        Null,
        Null,
        Null,
        Text(position.to_string()),
        text("NO"),
        yes_no(identity.is_some()),
        identity.map_or(Null, |(kind, _)| {
            text(match kind {
                Identity::Always => "ALWAYS",
                Identity::ByDefault => "BY DEFAULT",
            })
        }),
        of_identity(|s| s.start.to_string()),
        of_identity(|s| s.increment.to_string()),
        of_identity(|s| s.max.to_string()),
        of_identity(|s| s.min.to_string()),
        yes_no(identity.is_some_and(|(_, s)| s.cycle)),
        text("NEVER"),
        Null,
        yes_no(shape.updatable),
    ]
}

/// Each sequence's parameters.
pub fn sequences(source: &Source) -> Vec<Vec<Cell>> {
    source
        .catalog()
        .sequences()
        .iter()
        .map(|seq| {
            let d = seq.def();
            vec![
                Int(oids::sequence(d)),
                Int(oids::column_type(d.ty).0),
                Int(d.start),
                Int(d.increment),
                Int(d.max),
                Int(d.min),
                Int(d.cache),
                Bool(d.cycle),
            ]
        })
        .collect()
}

pub fn types(source: &Source) -> Vec<Vec<Cell>> {
    let row = |oid: i64, name: &str, len: i64, category: &str, element: i64, array: i64| {
        vec![
            Int(oid),
            text(name),
            Int(oids::PG_CATALOG_NAMESPACE),
            Int(oids::BOOTSTRAP_ROLE),
            Int(len),
            Bool((1..=8).contains(&len)),
            text(if category == "E" { "e" } else { "b" }),
            text(category),
            Bool(true),
            text(","),
            Int(0),
            Int(element),
            Int(array),
            Int(0),
            Int(-1),
            Bool(false),
            Int(if category == "S" { 100 } else { 0 }),
            Text(if element == 0 {
                format!("{name}in")
            } else {
                "array_in".into()
            }),
        ]
    };
    let mut rows = Vec::new();
    for &(oid, name, len, category) in oids::TYPES {
        // Each type with an array type has its row (`_int4`), whose element it is.
        let array = u32::try_from(oid)
            .ok()
            .and_then(Type::from_oid)
            .and_then(|t| array_type(&t));
        let array_oid = array.as_ref().map_or(0, |a| i64::from(a.oid()));
        rows.push(row(oid, name, len, category, 0, array_oid));
        if let Some(a) = array {
            rows.push(row(array_oid, a.name(), -1, "A", oid, 0));
        }
    }
    // Each enum type (typtype `e`, four bytes as in PostgreSQL) and its array type, in
    // its schema.
    for t in source.catalog().enum_types() {
        let (oid, array) = (oids::enum_type(t.id), oids::enum_array(t.id));
        let namespace = source.namespace(&t.schema);
        let mut own = row(oid, &t.name, 4, "E", 0, array);
        own[2] = Int(namespace);
        own[17] = text("enum_in");
        let mut of_array = row(array, &format!("_{}", t.name), -1, "A", oid, 0);
        of_array[2] = Int(namespace);
        rows.push(own);
        rows.push(of_array);
    }
    // The hstore extension's type and its array type, in public, while it is installed.
    if source
        .catalog()
        .extensions()
        .iter()
        .any(|e| e.name == HSTORE.name)
    {
        let mut own = row(oids::HSTORE_TYPE, "hstore", -1, "U", 0, oids::HSTORE_ARRAY);
        own[2] = Int(oids::PUBLIC_NAMESPACE);
        own[17] = text("hstore_in");
        let mut of_array = row(oids::HSTORE_ARRAY, "_hstore", -1, "A", oids::HSTORE_TYPE, 0);
        of_array[2] = Int(oids::PUBLIC_NAMESPACE);
        rows.push(own);
        rows.push(of_array);
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
        let namespace = source.namespace(&d.def.schema);
        let mut own = row(oid, &d.def.name, len, category, 0, array);
        own[2] = Int(namespace);
        own[6] = text("d");
        // A domain over a domain names that domain, as PostgreSQL does.
        let (base, typmod) = match d.def.parent {
            Some(parent) => (oids::domain_type(parent), -1),
            None => (base, typmod),
        };
        own[13] = Int(base);
        own[14] = Int(typmod);
        own[15] = Bool(d.def.not_null);
        own[17] = text("domain_in");
        let mut of_array = row(array, &format!("_{}", d.def.name), -1, "A", oid, 0);
        of_array[2] = Int(namespace);
        rows.push(own);
        rows.push(of_array);
    }
    rows
}

/// `pg_extension`: PL/pgSQL, which every database has, and each installed extension.
pub fn extensions(source: &Source) -> Vec<Vec<Cell>> {
    let row = |oid: i64, available: Available, namespace: i64, relocatable: bool| {
        vec![
            Int(oid),
            text(available.name),
            Int(oids::BOOTSTRAP_ROLE),
            Int(namespace),
            Bool(relocatable),
            text(available.version),
            Null,
            Null,
        ]
    };
    let mut rows = vec![row(
        oids::PLPGSQL_EXTENSION,
        PLPGSQL,
        oids::PG_CATALOG_NAMESPACE,
        false,
    )];
    for e in source.catalog().extensions() {
        if let Some(available) = e.available().filter(|a| a.name == HSTORE.name) {
            rows.push(row(
                oids::HSTORE_EXTENSION,
                available,
                oids::PUBLIC_NAMESPACE,
                true,
            ));
        }
    }
    rows
}

/// `pg_enum`: each label of each enum type, its sort order its place from 1.
pub fn enum_labels(source: &Source) -> Vec<Vec<Cell>> {
    let mut rows = Vec::new();
    for t in source.catalog().enum_types() {
        for (i, label) in t.labels.iter().enumerate() {
            rows.push(vec![
                Int(oids::enum_label(t.id, i)),
                Int(oids::enum_type(t.id)),
                Real(i as f32 + 1.0),
                text(label),
            ]);
        }
    }
    rows
}

/// Column positions (from 0) as PostgreSQL numbers them (from 1).
fn column_numbers(columns: &[u16]) -> Cell {
    Cell::ColumnNumbers(
        columns
            .iter()
            .map(|&c| i16::try_from(c).map_or(i16::MAX, |c| c.saturating_add(1)))
            .collect(),
    )
}

fn index_row(index: i64, table: i64, columns: &[u16], primary: bool, unique: bool) -> Vec<Cell> {
    let n = columns.len() as i64;
    vec![
        Int(index),
        Int(table),
        Int(n),
        Int(n),
        Bool(primary || unique),
        Bool(primary),
        Bool(false),
        Bool(true),
        Bool(false),
        Bool(true),
        Bool(false),
        Bool(true),
        Bool(true),
        Bool(false),
        Bool(false),
        column_numbers(columns),
        Cell::Oids(vec![0; columns.len()]),
        Cell::ColumnNumbers(vec![0; columns.len()]),
        Null,
        Null,
    ]
}

pub fn indexes(source: &Source) -> Vec<Vec<Cell>> {
    let mut rows = Vec::new();
    for def in source.tables() {
        let table = oids::table(&def);
        if !def.primary_key.is_empty() {
            rows.push(index_row(
                oids::primary_key_index(&def),
                table,
                &def.primary_key,
                true,
                true,
            ));
        }
        for index in &def.indexes {
            rows.push(index_row(
                oids::index(&def, index),
                table,
                &index.columns,
                false,
                index.unique,
            ));
        }
    }
    rows
}

pub fn constraints(source: &Source) -> Vec<Vec<Cell>> {
    let mut rows = Vec::new();
    for def in source.tables() {
        let namespace = source.namespace(&def.schema);
        if !def.primary_key.is_empty() {
            rows.push(constraint(
                oids::primary_key_constraint(&def),
                &def.primary_key_constraint(),
                "p",
                (&def, namespace),
                oids::primary_key_index(&def),
                &def.primary_key,
                None,
            ));
        }
        for index in def.indexes.iter().filter(|i| i.constraint) {
            rows.push(constraint(
                oids::unique_constraint(&def, index),
                &index.name,
                "u",
                (&def, namespace),
                oids::index(&def, index),
                &index.columns,
                None,
            ));
        }
        for (i, fk) in def.foreign_keys.iter().enumerate() {
            let parent = source.tables().into_iter().find(|t| t.id == fk.parent);
            rows.push(constraint(
                oids::foreign_key(&def, i),
                &fk.name,
                "f",
                (&def, namespace),
                0,
                &fk.columns,
                parent.map(|p| (p, fk)),
            ));
        }
        for (i, c) in def.checks.iter().enumerate() {
            rows.push(constraint(
                oids::check(&def, i),
                &c.name,
                "c",
                (&def, namespace),
                0,
                &[],
                None,
            ));
        }
    }
    rows
}

/// A row of `pg_constraint` for a constraint of `table`, whose schema's oid follows it.
fn constraint(
    oid: i64,
    name: &str,
    kind: &str,
    (def, namespace): (&TableDef, i64),
    index: i64,
    columns: &[u16],
    references: Option<(TableDef, &ForeignKeyDef)>,
) -> Vec<Cell> {
    let (deferrable, deferred) = match &references {
        Some((_, fk)) => (
            fk.deferral != Deferral::NotDeferrable,
            fk.deferral == Deferral::InitiallyDeferred,
        ),
        None => (false, false),
    };
    let (parent, parent_columns, on_update, on_delete, matching) = match &references {
        Some((p, fk)) => (
            Int(oids::table(p)),
            column_numbers(&fk.parent_columns),
            text(&fk.on_update.pg_code().to_string()),
            text(&fk.on_delete.pg_code().to_string()),
            text("s"),
        ),
        None => (Int(0), Null, text(" "), text(" "), text(" ")),
    };
    vec![
        Int(oid),
        text(name),
        Int(namespace),
        text(kind),
        Bool(deferrable),
        Bool(deferred),
        Bool(true),
        Int(oids::table(def)),
        Int(0),
        Int(index),
        parent,
        Bool(true),
        Int(0),
        if columns.is_empty() {
            Null
        } else {
            column_numbers(columns)
        },
        parent_columns,
        on_update,
        on_delete,
        matching,
        // No partitions: no constraint is inherited from a parent's.
        Int(0),
    ]
}

pub fn access_methods(_: &Source) -> Vec<Vec<Cell>> {
    vec![
        vec![Int(oids::HEAP_AM), text("heap"), text("t")],
        vec![Int(oids::BTREE_AM), text("btree"), text("i")],
    ]
}

/// PostgreSQL's two tablespaces, with their oids; every relation is in the default one
/// (`reltablespace` 0), as pmdb places data by its tiers, not by tablespace.
pub fn tablespaces(_: &Source) -> Vec<Vec<Cell>> {
    [(1663, "pg_default"), (1664, "pg_global")]
        .into_iter()
        .map(|(oid, name)| vec![Int(oid), text(name), Int(oids::BOOTSTRAP_ROLE), Null, Null])
        .collect()
}

/// The server's own database, then those CREATE DATABASE made, each with an oid of its
/// name (the same at every start).
pub fn databases(source: &Source) -> Vec<Vec<Cell>> {
    let made = source.made_databases();
    let own = std::iter::once((oids::DATABASE, source.database().to_owned()));
    own.chain(made.into_iter().map(|n| (oids::made_database(&n), n)))
        .map(|(oid, name)| database_row(oid, name))
        .collect()
}

fn database_row(oid: i64, name: String) -> Vec<Cell> {
    vec![
        Int(oid),
        text(&name),
        Int(oids::BOOTSTRAP_ROLE),
        Int(6),
        text("c"),
        Bool(false),
        Bool(true),
        Int(-1),
        text("C.UTF-8"),
        text("C.UTF-8"),
        Null,
        Null,
    ]
}

/// A comment: the object's oid, its catalog's oid, the column's number (0 for the
/// object itself) and the text.
pub type Description = (i64, i64, i64, String);

/// Every comment (`COMMENT ON`) of every table, its columns and its constraints.
pub fn descriptions(source: &Source) -> Vec<Description> {
    let mut out = Vec::new();
    for def in source.tables() {
        let table = oids::table(&def);
        if let Some(c) = &def.comment {
            out.push((table, oids::PG_CLASS, 0, c.clone()));
        }
        for (i, col) in def.columns.iter().enumerate() {
            if let Some(c) = &col.comment {
                out.push((table, oids::PG_CLASS, i as i64 + 1, c.clone()));
            }
        }
        for (name, c) in &def.constraint_comments {
            if let Some(oid) = oids::constraint_named(&def, name) {
                out.push((oid, oids::PG_CONSTRAINT, 0, c.clone()));
            }
        }
    }
    out
}

pub fn description_rows(source: &Source) -> Vec<Vec<Cell>> {
    descriptions(source)
        .into_iter()
        .map(|(oid, class, sub, text)| vec![Int(oid), Int(class), Int(sub), Text(text)])
        .collect()
}

/// `pg_stat_activity`: one row per connection, as [`crate::activity`] keeps them.
pub fn activity(source: &Source) -> Vec<Vec<Cell>> {
    let roles: Vec<(i64, String)> = source.roles().map(|(o, n)| (o, n.to_owned())).collect();
    source
        .activity()
        .backends()
        .into_iter()
        .map(|b| {
            let role = roles.iter().find(|(_, n)| *n == b.user).map(|(o, _)| *o);
            let waiting = b.state != "active";
            vec![
                Int(oids::DATABASE),
                Text(b.database),
                Int(i64::from(b.pid)),
                Null,
                role.map_or(Null, Int),
                Text(b.user),
                Text(b.application_name),
                b.client.map_or(Null, |a| Text(a.ip().to_string())),
                Null,
                b.client.map_or(Int(-1), |a| Int(i64::from(a.port()))),
                Time(b.backend_start),
                b.xact_start.map_or(Null, Time),
                b.query_start.map_or(Null, Time),
                Time(b.state_change),
                // A connection not running a statement waits for its client.
                if waiting { text("Client") } else { Null },
                if waiting { text("ClientRead") } else { Null },
                text(b.state),
                Null,
                Null,
                Null,
                Text(b.query),
                text("client backend"),
            ]
        })
        .collect()
}

pub fn roles(source: &Source) -> Vec<Vec<Cell>> {
    source
        .roles()
        .map(|(oid, name)| {
            let owner = oid == oids::BOOTSTRAP_ROLE;
            vec![
                Int(oid),
                text(name),
                Bool(true),
                Bool(true),
                Bool(owner),
                Bool(owner),
                Bool(true),
                Bool(false),
                Int(-1),
                text("********"),
                Null,
                Bool(false),
                Null,
            ]
        })
        .collect()
}

pub fn view_list(source: &Source) -> Vec<Vec<Cell>> {
    source
        .catalog()
        .views()
        .iter()
        .map(|v| {
            vec![
                Text(v.schema.clone()),
                Text(v.name.clone()),
                text(source.owner()),
                Text(view_definition(v)),
            ]
        })
        .collect()
}

/// A view's query as `pg_views` and `information_schema.views` show it.
fn view_definition(v: &ViewDef) -> String {
    format!(" {};", v.query)
}

/// A materialized view's query as `pg_get_viewdef` and `pg_matviews` show it.
pub fn materialized_query(def: &TableDef) -> Option<String> {
    def.materialized.as_ref().map(|q| format!(" {q};"))
}

pub fn materialized_view_list(source: &Source) -> Vec<Vec<Cell>> {
    source
        .tables()
        .into_iter()
        .filter_map(|def| {
            let query = materialized_query(&def)?;
            Some(vec![
                Text(def.schema.clone()),
                Text(def.name.clone()),
                text(source.owner()),
                Null,
                Bool(has_indexes(&def)),
                Bool(true),
                Text(query),
            ])
        })
        .collect()
}

/// The names of `columns` of table `def`, quoted where they need it, comma-separated.
pub fn column_list(def: &TableDef, columns: &[u16]) -> String {
    columns
        .iter()
        .filter_map(|&c| def.columns.get(usize::from(c)))
        .map(|c| pmdb_sql::quoted_identifier(&c.name))
        .collect::<Vec<_>>()
        .join(", ")
}

/// An index's CREATE INDEX, as `pg_get_indexdef` and `pg_indexes` show it.
pub fn index_definition(table: &TableDef, unique: bool, name: &str, columns: &[u16]) -> String {
    format!(
        "CREATE {}INDEX {} ON {}.{} USING btree ({})",
        if unique { "UNIQUE " } else { "" },
        pmdb_sql::quoted_identifier(name),
        pmdb_sql::quoted_identifier(&table.schema),
        pmdb_sql::quoted_identifier(&table.name),
        column_list(table, columns)
    )
}

/// `pg_indexes`: each table's indexes, its primary key's first.
pub fn index_list(source: &Source) -> Vec<Vec<Cell>> {
    let mut rows = Vec::new();
    for def in source.tables() {
        let primary = (!def.primary_key.is_empty())
            .then(|| (true, def.primary_key_constraint(), def.primary_key.clone()));
        let others = def
            .indexes
            .iter()
            .map(|i| (i.unique, i.name.clone(), i.columns.clone()));
        for (unique, name, columns) in primary.into_iter().chain(others) {
            rows.push(vec![
                Text(def.schema.clone()),
                Text(def.name.clone()),
                Text(name.clone()),
                Null,
                Text(index_definition(&def, unique, &name, &columns)),
            ]);
        }
    }
    rows
}

/// `pg_tables`: the tables (not the materialized views).
pub fn table_list(source: &Source) -> Vec<Vec<Cell>> {
    source
        .tables()
        .into_iter()
        .filter(|def| def.materialized.is_none())
        .map(|def| {
            vec![
                Text(def.schema.clone()),
                Text(def.name.clone()),
                text(source.owner()),
                Null,
                Bool(has_indexes(&def)),
                Bool(false),
                Bool(false),
                Bool(false),
            ]
        })
        .collect()
}
