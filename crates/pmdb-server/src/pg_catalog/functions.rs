//! The PostgreSQL functions catalog queries call (`format_type`, `pg_get_indexdef`,
//! `pg_table_is_visible`, …), and the `reg*` conversions the query adapter turns casts
//! into. They run a row at a time: catalog queries are small.

use std::hash::{Hash, Hasher};
use std::sync::Arc;

use datafusion::arrow::array::Array;
use datafusion::arrow::datatypes::DataType;
use datafusion::common::{Result as DfResult, ScalarValue};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, TypeSignature,
    Volatility,
};
use pmdb_sql::SearchPath;
use pmdb_sql::catalog::Viewer;
use pmdb_sql::names::{RelName, relation_named};
use pmdb_sql::quoted_identifier;
use pmdb_sql::schema::{Action, Deferral};

use super::oids::{self, Object};
use super::rows::{column_list, descriptions, index_definition};
use super::source::{Origin, Source};

/// What a function returns for its arguments' types.
#[derive(Clone, Copy)]
enum Returns {
    Text,
    Bool,
    Int,
    /// An oid for a name, a name for an oid (`regclass`, `regtype`).
    OidOrName,
    /// Names (`name[]`).
    Names,
}

type Body = fn(&Source, &[ScalarValue]) -> ScalarValue;

struct PgFunction {
    name: &'static str,
    returns: Returns,
    body: Body,
    origin: Arc<Origin>,
    signature: Signature,
}

impl std::fmt::Debug for PgFunction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "pg_catalog.{}", self.name)
    }
}

impl PartialEq for PgFunction {
    fn eq(&self, other: &PgFunction) -> bool {
        self.name == other.name
    }
}

impl Eq for PgFunction {}

impl Hash for PgFunction {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.name.hash(state);
    }
}

fn is_text(ty: &DataType) -> bool {
    matches!(
        ty,
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View
    )
}

impl ScalarUDFImpl for PgFunction {
    fn name(&self) -> &str {
        self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> DfResult<DataType> {
        Ok(match self.returns {
            Returns::Text => DataType::Utf8,
            Returns::Bool => DataType::Boolean,
            Returns::Int => DataType::Int64,
            Returns::OidOrName if args.first().is_some_and(is_text) => DataType::Int64,
            Returns::OidOrName => DataType::Utf8,
            Returns::Names => DataType::new_list(DataType::Utf8, true),
        })
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> DfResult<ColumnarValue> {
        let rows = args.number_rows;
        let scalar = args
            .args
            .iter()
            .all(|a| matches!(a, ColumnarValue::Scalar(_)));
        let arrays = ColumnarValue::values_to_arrays(&args.args)?;
        let ty = args.return_field.data_type().clone();
        let mut out = Vec::with_capacity(rows);
        // The catalog as the calling session reads it (as it is now, for a caller with
        // no session).
        let viewer = args.config_options.extensions.get::<Viewer>().copied();
        let mut source = self.origin.read(viewer);
        if let Some(path) = args.config_options.extensions.get::<SearchPath>() {
            source = source.searching(path.schemas());
        }
        for row in 0..if scalar { 1 } else { rows } {
            let values = arrays
                .iter()
                .map(|a| ScalarValue::try_from_array(a, row))
                .collect::<DfResult<Vec<_>>>()?;
            out.push((self.body)(&source, &values).cast_to(&ty)?);
        }
        if scalar {
            return Ok(ColumnarValue::Scalar(
                out.pop().unwrap_or(ScalarValue::Null),
            ));
        }
        if out.is_empty() {
            // A batch of no rows.
            return Ok(ColumnarValue::Array(
                datafusion::arrow::array::new_empty_array(&ty),
            ));
        }
        Ok(ColumnarValue::Array(ScalarValue::iter_to_array(out)?))
    }
}

fn int(v: Option<&ScalarValue>) -> Option<i64> {
    match v? {
        ScalarValue::Int8(Some(x)) => Some(i64::from(*x)),
        ScalarValue::Int16(Some(x)) => Some(i64::from(*x)),
        ScalarValue::Int32(Some(x)) => Some(i64::from(*x)),
        ScalarValue::Int64(Some(x)) => Some(*x),
        ScalarValue::UInt8(Some(x)) => Some(i64::from(*x)),
        ScalarValue::UInt16(Some(x)) => Some(i64::from(*x)),
        ScalarValue::UInt32(Some(x)) => Some(i64::from(*x)),
        ScalarValue::UInt64(Some(x)) => i64::try_from(*x).ok(),
        other => string(Some(other)).and_then(|s| s.trim().parse().ok()),
    }
}

fn string(v: Option<&ScalarValue>) -> Option<&str> {
    match v? {
        ScalarValue::Utf8(Some(s))
        | ScalarValue::LargeUtf8(Some(s))
        | ScalarValue::Utf8View(Some(s)) => Some(s),
        _ => None,
    }
}

fn text(s: Option<String>) -> ScalarValue {
    ScalarValue::Utf8(s)
}

/// `pg_get_indexdef(oid[, column, pretty])`: the index's CREATE INDEX, or with a
/// column number (from 1) that column of it.
fn index_def(source: &Source, args: &[ScalarValue]) -> ScalarValue {
    let (unique, name, table, columns) =
        match int(args.first()).and_then(|oid| oids::find(source.catalog(), oid)) {
            Some(Object::PrimaryKey(t)) => {
                let columns = t.primary_key.clone();
                ("UNIQUE ", t.primary_key_constraint(), t, columns)
            }
            Some(Object::Index(t, i)) => {
                let unique = if i.unique { "UNIQUE " } else { "" };
                (unique, i.name, t, i.columns)
            }
            _ => return text(None),
        };
    let column = int(args.get(1)).unwrap_or(0);
    if column > 0 {
        let picked = usize::try_from(column - 1)
            .ok()
            .and_then(|k| columns.get(k))
            .map(|&c| column_list(&table, &[c]));
        return text(picked);
    }
    text(Some(index_definition(
        &table,
        !unique.is_empty(),
        &name,
        &columns,
    )))
}

fn constraint_def(source: &Source, args: &[ScalarValue]) -> ScalarValue {
    match int(args.first()).and_then(|oid| oids::find(source.catalog(), oid)) {
        Some(Object::PrimaryKeyConstraint(t)) => text(Some(format!(
            "PRIMARY KEY ({})",
            column_list(&t, &t.primary_key)
        ))),
        Some(Object::UniqueConstraint(t, i)) => {
            text(Some(format!("UNIQUE ({})", column_list(&t, &i.columns))))
        }
        Some(Object::ForeignKey(t, i)) => {
            let fk = &t.foreign_keys[i];
            let Some(parent) = source.catalog().table_by_id(fk.parent) else {
                return text(None);
            };
            let parent = parent.def();
            let mut def = format!(
                "FOREIGN KEY ({}) REFERENCES {}({})",
                column_list(&t, &fk.columns),
                parent.rel_name().quoted(),
                column_list(parent, &fk.parent_columns)
            );
            // PostgreSQL leaves out the default action.
            for (what, action) in [("UPDATE", fk.on_update), ("DELETE", fk.on_delete)] {
                if action != Action::NoAction {
                    def.push_str(&format!(" ON {what} {}", action.sql()));
                }
            }
            def.push_str(match fk.deferral {
                Deferral::NotDeferrable => "",
                Deferral::InitiallyImmediate => " DEFERRABLE",
                Deferral::InitiallyDeferred => " DEFERRABLE INITIALLY DEFERRED",
            });
            text(Some(def))
        }
        // Pretty-printed (psql's `\d`), the condition is not parenthesized again.
        Some(Object::Check(t, i)) => {
            let condition = unparenthesized(&t.checks[i].expr);
            text(Some(
                if matches!(args.get(1), Some(ScalarValue::Boolean(Some(true)))) {
                    format!("CHECK ({condition})")
                } else {
                    format!("CHECK (({condition}))")
                },
            ))
        }
        _ => text(None),
    }
}

/// A condition without the parentheses that only wrap all of it, as PostgreSQL prints a
/// condition it keeps parsed (`((x > 0))` is `x > 0`; `(a) AND (b)` stays).
fn unparenthesized(condition: &str) -> String {
    use datafusion::sql::sqlparser::ast::Expr;
    use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
    use datafusion::sql::sqlparser::parser::Parser;
    let parsed = Parser::new(&PostgreSqlDialect {})
        .try_with_sql(condition)
        .and_then(|mut p| p.parse_expr());
    let Ok(mut e) = parsed else {
        return condition.to_owned();
    };
    while let Expr::Nested(inner) = e {
        e = *inner;
    }
    e.to_string()
}

/// `pg_get_viewdef(oid [, pretty])`: the view's query, as PostgreSQL prints it (a
/// leading space, a closing semicolon).
fn view_def(source: &Source, args: &[ScalarValue]) -> ScalarValue {
    match int(args.first()).and_then(|oid| oids::find(source.catalog(), oid)) {
        Some(Object::View(v)) => text(Some(format!(" {};", v.query))),
        Some(Object::Table(def)) => text(super::rows::materialized_query(&def)),
        _ => text(None),
    }
}

fn format_type(source: &Source, args: &[ScalarValue]) -> ScalarValue {
    text(int(args.first()).and_then(|oid| type_name(source, oid, int(args.get(1)))))
}

/// A type's name as `format_type` gives it: a built-in type's, or a user type's.
fn type_name(source: &Source, oid: i64, typmod: Option<i64>) -> Option<String> {
    oids::format_type(oid, typmod).or_else(|| oids::user_type_name(source.catalog(), oid))
}

/// `x::regclass`: a relation's oid for its name (or for the oid written as text, as
/// psql writes them), its name for its oid (quoted where it needs it).
fn regclass(source: &Source, args: &[ScalarValue]) -> ScalarValue {
    if let Some(name) = string(args.first()) {
        if let Ok(oid) = name.trim().parse::<u32>() {
            return ScalarValue::Int64(Some(i64::from(oid)));
        }
        // The catalogs come first in every search path.
        if let Some(oid) = oids::system_relation(name.trim()) {
            return ScalarValue::Int64(Some(oid));
        }
        let catalog = source.catalog();
        let Ok(name) = pmdb_sql::search_path::relation_named(source.search_path(), name, |n| {
            catalog.names_a_relation(n)
        }) else {
            return ScalarValue::Int64(None);
        };
        let oid = catalog
            .table(&name)
            .map(|t| oids::table(t.def()))
            .or_else(|| catalog.sequence(&name).map(|s| oids::sequence(s.def())))
            .or_else(|| catalog.view(&name).map(|v| oids::view(&v)))
            .or_else(|| {
                // An index (a primary key's too): relations share their schema's names.
                source.tables().iter().find_map(|t| {
                    if t.schema != name.schema {
                        return None;
                    }
                    if t.is_primary_key_name(&name.name) {
                        return Some(oids::primary_key_index(t));
                    }
                    let index = t.indexes.iter().find(|i| i.name == name.name)?;
                    Some(oids::index(t, index))
                })
            });
        return ScalarValue::Int64(oid);
    }
    let Some(oid) = int(args.first()) else {
        return text(None);
    };
    // Shown as PostgreSQL's regclass shows it: quoted where the name needs it, with its
    // schema outside `public`.
    text(Some(match oids::find(source.catalog(), oid) {
        Some(Object::Table(t)) => t.rel_name().quoted(),
        Some(Object::PrimaryKey(t)) => t.rel_name().sibling(t.primary_key_constraint()).quoted(),
        Some(Object::Index(t, i)) => t.rel_name().sibling(i.name).quoted(),
        Some(Object::Sequence(s)) => s.rel_name().quoted(),
        Some(Object::View(v)) => v.rel_name().quoted(),
        _ => oids::system_relation_name(oid).map_or_else(|| oid.to_string(), str::to_owned),
    }))
}

/// The oid of the type called `name` (its catalog name or the one `format_type` gives,
/// or a user type's name).
fn type_oid(source: &Source, name: &str) -> Option<i64> {
    let builtin = name.trim_start_matches("pg_catalog.");
    oids::TYPES
        .iter()
        .find(|t| t.1 == builtin || oids::format_type(t.0, None).as_deref() == Some(builtin))
        .map(|t| t.0)
        .or_else(|| {
            let name = relation_named(name).ok()?;
            if name.schema == "public"
                && name.name == "hstore"
                && source
                    .catalog()
                    .extensions()
                    .iter()
                    .any(|e| e.name == "hstore")
            {
                return Some(oids::HSTORE_TYPE);
            }
            source
                .catalog()
                .enum_type(&name)
                .map(|t| oids::enum_type(t.id))
        })
}

/// `x::regtype`: a type's oid for its name, its name for its oid.
fn regtype(source: &Source, args: &[ScalarValue]) -> ScalarValue {
    if let Some(name) = string(args.first()) {
        return ScalarValue::Int64(type_oid(source, name));
    }
    let oid = int(args.first());
    text(oid.map(|o| type_name(source, o, None).unwrap_or_else(|| o.to_string())))
}

/// `to_regtype(name)`: the type's oid, null for a type that does not exist (drivers ask
/// for extension types such as hstore this way).
fn to_regtype(source: &Source, args: &[ScalarValue]) -> ScalarValue {
    ScalarValue::Int64(string(args.first()).and_then(|n| type_oid(source, n)))
}

fn regnamespace(source: &Source, args: &[ScalarValue]) -> ScalarValue {
    let name = |oid| {
        oids::namespace_name(source.catalog(), oid)
            .map_or_else(|| oid.to_string(), |n| quoted_identifier(&n))
    };
    text(int(args.first()).map(name))
}

fn user_by_id(source: &Source, args: &[ScalarValue]) -> ScalarValue {
    let oid = int(args.first());
    text(oid.map(|o| {
        source
            .role_name(o)
            .map_or_else(|| format!("unknown (OID={o})"), str::to_owned)
    }))
}

/// `obj_description(oid [, catalog])`: the object's comment (a table's or a
/// constraint's).
fn obj_description(source: &Source, args: &[ScalarValue]) -> ScalarValue {
    let class = match string(args.get(1)) {
        None if args.len() < 2 => None,
        Some("pg_class") => Some(oids::PG_CLASS),
        Some("pg_constraint") => Some(oids::PG_CONSTRAINT),
        _ => return text(None),
    };
    let Some(oid) = int(args.first()) else {
        return text(None);
    };
    text(
        descriptions(source)
            .into_iter()
            .find(|d| d.objoid == oid && d.objsubid == 0 && class.is_none_or(|k| k == d.classoid))
            .map(|d| d.description),
    )
}

/// `col_description(table oid, column number)`: the column's comment.
fn col_description(source: &Source, args: &[ScalarValue]) -> ScalarValue {
    let (Some(oid), Some(n)) = (int(args.first()), int(args.get(1))) else {
        return text(None);
    };
    text(
        descriptions(source)
            .into_iter()
            .find(|d| d.objoid == oid && d.classoid == oids::PG_CLASS && d.objsubid == n)
            .map(|d| d.description),
    )
}

fn null(_: &Source, _: &[ScalarValue]) -> ScalarValue {
    ScalarValue::Null
}

/// `pg_get_expr(text, relation)`: pmdb keeps expressions as their text already.
fn first_text(_: &Source, args: &[ScalarValue]) -> ScalarValue {
    text(string(args.first()).map(str::to_owned))
}

/// `pg_table_is_visible(oid)`: whether an unqualified name finds the relation: one of
/// a temporary schema (a session's own: pmdb does not tell whose), of the catalog (an
/// oid of no user relation), or of a schema in the caller's search path that no schema
/// before it has a relation of the same name in.
fn table_is_visible(source: &Source, args: &[ScalarValue]) -> ScalarValue {
    let Some(oid) = int(args.first()) else {
        return ScalarValue::Boolean(None);
    };
    let name = match oids::find(source.catalog(), oid) {
        Some(Object::Table(t)) => t.rel_name(),
        Some(Object::PrimaryKey(t)) => t.rel_name().sibling(t.primary_key_constraint()),
        Some(Object::Index(t, index)) => t.rel_name().sibling(index.name),
        Some(Object::Sequence(s)) => s.rel_name(),
        Some(Object::View(v)) => v.rel_name(),
        Some(_) => return ScalarValue::Boolean(Some(false)),
        None => return ScalarValue::Boolean(Some(true)),
    };
    if pmdb_sql::is_temporary(&name.schema) {
        return ScalarValue::Boolean(Some(true));
    }
    let first = source.search_path().iter().find(|schema| {
        *schema == &name.schema
            || source
                .catalog()
                .names_a_relation(&RelName::new(schema.as_str(), &name.name))
    });
    ScalarValue::Boolean(Some(first == Some(&name.schema)))
}

fn yes(_: &Source, _: &[ScalarValue]) -> ScalarValue {
    ScalarValue::Boolean(Some(true))
}

fn no(_: &Source, _: &[ScalarValue]) -> ScalarValue {
    ScalarValue::Boolean(Some(false))
}

fn utf8(_: &Source, _: &[ScalarValue]) -> ScalarValue {
    text(Some("UTF8".into()))
}

/// `current_schema()`: the first schema of the caller's search path that exists, where
/// an unqualified CREATE makes its relation (null with none).
fn current_schema(source: &Source, _: &[ScalarValue]) -> ScalarValue {
    text(
        source
            .search_path()
            .iter()
            .find(|s| *s == pmdb_sql::names::PUBLIC || source.catalog().schema(s).is_some())
            .cloned(),
    )
}

/// `current_schemas(implicit)`: the schemas of the search path that exist, in its
/// order, after pg_catalog (searched first whether the path names it or not) when
/// `implicit` is true.
fn current_schemas(source: &Source, args: &[ScalarValue]) -> ScalarValue {
    let implicit = matches!(args.first(), Some(ScalarValue::Boolean(Some(true))));
    let searched = source
        .search_path()
        .iter()
        .filter(|s| *s == pmdb_sql::names::PUBLIC || source.catalog().schema(s).is_some())
        .filter(|s| *s != "pg_catalog");
    let names: Vec<ScalarValue> = implicit
        .then_some("pg_catalog")
        .into_iter()
        .chain(searched.map(String::as_str))
        .map(|s| ScalarValue::Utf8(Some(s.to_owned())))
        .collect();
    ScalarValue::List(ScalarValue::new_list_nullable(&names, &DataType::Utf8))
}

fn version(_: &Source, _: &[ScalarValue]) -> ScalarValue {
    text(Some(format!(
        "PostgreSQL 15.0 (pmdb {}) on x86_64-pc-linux-gnu",
        env!("CARGO_PKG_VERSION")
    )))
}

/// `array_to_string(array, separator [, null_text])`: an array's elements joined (NULLs
/// left out, or shown as `null_text`). pmdb's catalog holds no arrays, so from a catalog
/// query what arrives is a string already, or a null.
fn array_to_string(_: &Source, args: &[ScalarValue]) -> ScalarValue {
    let Some(ScalarValue::List(list)) = args.first() else {
        return text(string(args.first()).map(str::to_owned));
    };
    if list.is_null(0) {
        return text(None);
    }
    let separator = string(args.get(1)).unwrap_or_default();
    let null_text = string(args.get(2));
    let values = list.value(0);
    let parts: Vec<String> = (0..values.len())
        .filter_map(|i| match ScalarValue::try_from_array(&values, i) {
            Ok(v) if v.is_null() => null_text.map(str::to_owned),
            Ok(v) => Some(v.to_string()),
            Err(_) => None,
        })
        .collect();
    text(Some(parts.join(separator)))
}

/// `pg_cancel_backend(pid)`: stops the running statement of the connection with process
/// id `pid`, as its cancel request would; false when there is no such connection.
fn cancel_backend(source: &Source, args: &[ScalarValue]) -> ScalarValue {
    let pid = int(args.first()).and_then(|p| i32::try_from(p).ok());
    ScalarValue::Boolean(pid.map(|p| source.activity().cancel(p)))
}

/// `pg_terminate_backend(pid)`: ends the connection with process id `pid` (FATAL
/// 57P01 to its client); false when there is no such connection.
fn terminate_backend(source: &Source, args: &[ScalarValue]) -> ScalarValue {
    let pid = int(args.first()).and_then(|p| i32::try_from(p).ok());
    ScalarValue::Boolean(pid.map(|p| source.activity().terminate(p)))
}

/// `pg_size_pretty(bytes)`, as PostgreSQL rounds it: bytes up to 10 kB, then the
/// largest unit that keeps the number under 10,240.
fn size_pretty(_: &Source, args: &[ScalarValue]) -> ScalarValue {
    text(int(args.first()).map(|bytes| {
        let units = ["bytes", "kB", "MB", "GB", "TB", "PB"];
        let mut v = bytes;
        let mut unit = 0;
        while v.abs() >= 10 * 1024 && unit + 1 < units.len() {
            // PostgreSQL rounds half up at each step.
            v = (v + v.signum() * 512) / 1024;
            unit += 1;
        }
        format!("{v} {}", units[unit])
    }))
}

const FUNCTIONS: &[(&str, Returns, Body)] = &[
    ("pg_get_indexdef", Returns::Text, index_def),
    ("pg_get_constraintdef", Returns::Text, constraint_def),
    ("pg_get_viewdef", Returns::Text, view_def),
    ("format_type", Returns::Text, format_type),
    ("regclass", Returns::OidOrName, regclass),
    ("regtype", Returns::OidOrName, regtype),
    ("to_regtype", Returns::Int, to_regtype),
    ("regnamespace", Returns::Text, regnamespace),
    ("pg_get_userbyid", Returns::Text, user_by_id),
    ("pg_get_expr", Returns::Text, first_text),
    ("obj_description", Returns::Text, obj_description),
    ("col_description", Returns::Text, col_description),
    ("shobj_description", Returns::Text, null),
    ("pg_get_statisticsobjdef_columns", Returns::Text, null),
    ("pg_table_is_visible", Returns::Bool, table_is_visible),
    ("pg_type_is_visible", Returns::Bool, yes),
    ("has_table_privilege", Returns::Bool, yes),
    ("has_schema_privilege", Returns::Bool, yes),
    ("has_database_privilege", Returns::Bool, yes),
    ("pg_relation_is_publishable", Returns::Bool, no),
    ("pg_encoding_to_char", Returns::Text, utf8),
    ("current_schema", Returns::Text, current_schema),
    ("current_schemas", Returns::Names, current_schemas),
    ("version", Returns::Text, version),
    // pmdb takes no advisory lock (pg_advisory_lock is refused): a session holds none to
    // release. Pools call it when a connection comes back (asyncpg).
    ("pg_advisory_unlock_all", Returns::Text, null),
    ("pg_cancel_backend", Returns::Bool, cancel_backend),
    ("pg_terminate_backend", Returns::Bool, terminate_backend),
    ("array_to_string", Returns::Text, array_to_string),
    ("pg_size_pretty", Returns::Text, size_pretty),
    // pmdb keeps no per-table size: an unknown size is a null.
    ("pg_table_size", Returns::Int, null),
    ("pg_relation_size", Returns::Int, null),
    ("pg_total_relation_size", Returns::Int, null),
    ("pg_indexes_size", Returns::Int, null),
];

/// The functions of a process id take an integer (so that `pg_cancel_backend($1)`
/// describes `$1` as int4, as PostgreSQL does, and drivers send a number); the others
/// anything.
fn signature(name: &str) -> Signature {
    let pid = [DataType::Int32, DataType::Int64].map(|t| TypeSignature::Exact(vec![t]));
    match name {
        "pg_cancel_backend" | "pg_terminate_backend" => {
            Signature::one_of(pid.to_vec(), Volatility::Volatile)
        }
        _ => Signature::one_of(
            vec![TypeSignature::Nullary, TypeSignature::VariadicAny],
            Volatility::Volatile,
        ),
    }
}

/// Every function, over `source`.
pub fn all(origin: &Arc<Origin>) -> Vec<ScalarUDF> {
    FUNCTIONS
        .iter()
        .map(|&(name, returns, body)| {
            ScalarUDF::new_from_impl(PgFunction {
                name,
                returns,
                body,
                origin: Arc::clone(origin),
                signature: signature(name),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::unparenthesized;

    #[test]
    fn conditions_lose_only_the_parentheses_around_all_of_them() {
        assert_eq!(unparenthesized("((((x > 0))))"), "x > 0");
        assert_eq!(unparenthesized("x > 0"), "x > 0");
        assert_eq!(
            unparenthesized("(x IS NULL OR y IS NULL) AND (x IS NULL OR y IS NULL)"),
            "(x IS NULL OR y IS NULL) AND (x IS NULL OR y IS NULL)"
        );
        assert_eq!(
            unparenthesized("a = '(' AND b = ')'"),
            "a = '(' AND b = ')'"
        );
    }
}
