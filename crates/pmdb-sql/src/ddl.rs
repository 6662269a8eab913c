//! CREATE TABLE, CREATE INDEX, CREATE SEQUENCE and DROP: from the parsed statement to a
//! change of the catalog. pmdb handles these itself (DataFusion's own DDL would make
//! in-memory tables).

use std::ops::ControlFlow;
use std::sync::Arc;

use datafusion::sql::sqlparser::ast::{
    CharacterLength, ColumnOption, CreateIndex, CreateTable, DataType, ExactNumberInfo,
    Expr as SqlExpr, GeneratedAs, NullsDistinctOption, ObjectName, ObjectType, SchemaName,
    SequenceOptions as SqlSequenceOptions, Statement, TableConstraint, TimezoneInfo, UnaryOperator,
    UniqueConstraint, Value as Literal, visit_expressions,
};

use crate::catalog::{Catalog, NewIndex};
use crate::constraint_defs::{new_check, new_reference};
use crate::domain_rules::Domain;
use crate::error::{Result, SqlError, state, undefined_column};
use crate::key_rules::NewReference;
use crate::names::{RelName, ident_name, object_name, relation_named};
use crate::notices::Notice;
use crate::schema::{ColumnDef, Identity, IndexDef, TableDef};
use crate::sequence::{SequenceDef, SequenceOptions};
use crate::types::{MAX_DECIMAL_PRECISION, SqlType};

/// Whether `e` calls `nextval` of sequence `sequence`.
fn calls_nextval_of(e: &SqlExpr, sequence: &RelName) -> bool {
    let mut found = false;
    let _ = visit_expressions(e, |e| {
        if let SqlExpr::Function(f) = e
            && f.name
                .0
                .last()
                .and_then(|p| p.as_ident())
                .map(ident_name)
                .as_deref()
                == Some("nextval")
            && let datafusion::sql::sqlparser::ast::FunctionArguments::List(list) = &f.args
            && let [
                datafusion::sql::sqlparser::ast::FunctionArg::Unnamed(
                    datafusion::sql::sqlparser::ast::FunctionArgExpr::Expr(SqlExpr::Value(v)),
                ),
            ] = list.args.as_slice()
            && let Literal::SingleQuotedString(text) = &v.value
            && relation_named(text).is_ok_and(|n| &n == sequence)
        {
            found = true;
        }
        ControlFlow::<()>::Continue(())
    });
    found
}

/// The type of a column declared `ty`: one of [`sql_type`]'s, an enum type of the
/// catalog named by its name, or a domain's base type, with the domain.
pub fn column_type(catalog: &Catalog, ty: &DataType) -> Result<(SqlType, Option<Arc<Domain>>)> {
    if let DataType::Custom(name, modifiers) = ty
        && modifiers.is_empty()
    {
        if let Some(ty) = crate::type_ddl::named_type(catalog, name) {
            return Ok((ty, None));
        }
        if let Some(domain) = crate::type_ddl::named_domain(catalog, name) {
            return Ok((domain.def.base, Some(domain)));
        }
    }
    Ok((sql_type(ty)?, None))
}

pub fn sql_type(ty: &DataType) -> Result<SqlType> {
    let length = |l: &Option<CharacterLength>, default: Option<u32>| -> Result<Option<u32>> {
        match l {
            None => Ok(default),
            Some(CharacterLength::IntegerLength { length, .. }) => u32::try_from(*length)
                .ok()
                .filter(|&n| n > 0 && n <= 10 << 20)
                .map(Some)
                .ok_or_else(|| {
                    SqlError::user(
                        state::INVALID_DEFINITION,
                        format!("length {length} in {ty}"),
                    )
                }),
            Some(CharacterLength::Max) => Ok(None),
        }
    };
    Ok(match ty {
        DataType::SmallInt(_) | DataType::Int2(_) => SqlType::SmallInt,
        DataType::Int(_) | DataType::Integer(_) | DataType::Int4(_) => SqlType::Int,
        DataType::BigInt(_) | DataType::Int8(_) => SqlType::BigInt,
        DataType::Decimal(info) | DataType::Numeric(info) | DataType::Dec(info) => {
            let (p, s) = match info {
                ExactNumberInfo::Precision(p) => (*p, 0),
                ExactNumberInfo::PrecisionAndScale(p, s) => (*p, *s),
                ExactNumberInfo::None => return Ok(SqlType::UNCONSTRAINED_NUMERIC),
            };
            match (u8::try_from(p), u8::try_from(s)) {
                (Ok(precision), Ok(scale))
                    if (1..=MAX_DECIMAL_PRECISION).contains(&precision) && scale <= precision =>
                {
                    SqlType::decimal(precision, scale)
                }
                _ => {
                    return Err(SqlError::user(
                        state::INVALID_DEFINITION,
                        format!(
                            "{ty}: precision must be 1 to {MAX_DECIMAL_PRECISION} and scale 0 to \
                             the precision"
                        ),
                    ));
                }
            }
        }
        DataType::Real | DataType::Float4 => SqlType::Real,
        DataType::Float(ExactNumberInfo::Precision(p)) if *p <= 24 => SqlType::Real,
        DataType::Float(_)
        | DataType::Double(_)
        | DataType::DoublePrecision
        | DataType::Float8
        | DataType::Float64 => SqlType::Double,
        DataType::Char(l) | DataType::Character(l) => match length(l, Some(1))? {
            Some(n) => SqlType::Char(n),
            None => SqlType::Text,
        },
        DataType::Varchar(l) | DataType::CharacterVarying(l) | DataType::CharVarying(l) => {
            match length(l, None)? {
                Some(n) => SqlType::Varchar(n),
                None => SqlType::Text,
            }
        }
        DataType::Text | DataType::String(None) => SqlType::Text,
        DataType::Date => SqlType::Date,
        // Microseconds are TIME's whole precision; fewer digits would need rounding.
        DataType::Time(None | Some(6), TimezoneInfo::None | TimezoneInfo::WithoutTimeZone) => {
            SqlType::Time
        }
        // As TIME: microseconds are the whole precision, fewer digits would need rounding.
        DataType::Timestamp(None | Some(6), TimezoneInfo::None | TimezoneInfo::WithoutTimeZone)
        | DataType::Datetime(None | Some(6)) => SqlType::Timestamp,
        DataType::Timestamp(None | Some(6), TimezoneInfo::WithTimeZone | TimezoneInfo::Tz) => {
            SqlType::TimestampTz
        }
        DataType::Bool | DataType::Boolean => SqlType::Boolean,
        DataType::Bytea => SqlType::Bytea,
        DataType::Uuid => SqlType::Uuid,
        DataType::JSON => SqlType::Json,
        DataType::JSONB => SqlType::Jsonb,
        // Microseconds are INTERVAL's whole precision too: PostgreSQL reduces a larger
        // one to 6 (with a warning); fewer digits would need rounding.
        DataType::Interval {
            fields: None,
            precision: None,
        } => SqlType::Interval,
        DataType::Interval {
            fields: None,
            precision: Some(p),
        } if *p >= 6 => SqlType::Interval,
        DataType::Custom(name, _)
            if let Some(part) = name.0.last().and_then(|p| p.as_ident())
                && !crate::builtin_types::is_postgresql_type(&part.value) =>
        {
            return Err(SqlError::user(
                state::UNDEFINED_OBJECT,
                format!("type \"{}\" does not exist", ident_name(part)),
            ));
        }
        other => {
            return Err(SqlError::unsupported(format!(
                "type {other} is not supported; pmdb has SMALLINT, INT, BIGINT, DECIMAL(p,s), \
                 REAL, DOUBLE PRECISION, CHAR(n), VARCHAR(n), TEXT, DATE, TIME, TIMESTAMP, \
                 TIMESTAMPTZ, BOOLEAN, BYTEA, UUID, JSON, JSONB and INTERVAL (without fields, of precision 6 or more)"
            )));
        }
    })
}

pub(crate) fn index_columns(
    cols: &[datafusion::sql::sqlparser::ast::IndexColumn],
    what: &str,
) -> Result<Vec<String>> {
    cols.iter()
        .map(|c| match &c.column.expr {
            SqlExpr::Identifier(id) => Ok(ident_name(id)),
            e => Err(SqlError::unsupported(format!(
                "{what} on the expression {e}: only plain columns"
            ))),
        })
        .collect()
}

/// What a CREATE TABLE statement asks for: the table (its id is given by the catalog)
/// and a sequence for each serial or identity column (its name the one it would have,
/// unless taken).
pub struct NewTable {
    pub def: TableDef,
    pub serials: Vec<(usize, SequenceDef)>,
    /// Its foreign keys, resolved by the catalog once the parents are certain.
    pub references: Vec<NewReference>,
}

/// A UNIQUE constraint's name (if given) and columns; refused if it asks for what pmdb
/// does not do (deferred checks, NULLS NOT DISTINCT, index options).
pub(crate) fn unique_constraint(
    u: &UniqueConstraint,
    name: Option<String>,
    columns: Vec<String>,
) -> Result<(Option<String>, Vec<String>)> {
    if u.characteristics.is_some() {
        return Err(SqlError::unsupported(
            "DEFERRABLE or INITIALLY on a UNIQUE constraint: pmdb checks it at each statement",
        ));
    }
    if u.nulls_distinct == NullsDistinctOption::NotDistinct {
        return Err(SqlError::unsupported("UNIQUE NULLS NOT DISTINCT"));
    }
    if u.index_type.is_some() || !u.index_options.is_empty() {
        return Err(SqlError::unsupported(
            "index options on a UNIQUE constraint",
        ));
    }
    Ok((name, columns))
}

/// The serial types: a column of the integer type whose default takes the values of a
/// sequence of its own.
fn serial_type(ty: &DataType) -> Option<SqlType> {
    let DataType::Custom(name, modifiers) = ty else {
        return None;
    };
    let [part] = name.0.as_slice() else {
        return None;
    };
    if !modifiers.is_empty() {
        return None;
    }
    match part.as_ident()?.value.to_lowercase().as_str() {
        "smallserial" | "serial2" => Some(SqlType::SmallInt),
        "serial" | "serial4" => Some(SqlType::Int),
        "bigserial" | "serial8" => Some(SqlType::BigInt),
        _ => None,
    }
}

/// A default expression as stored: refused if it names a column or holds a subquery,
/// as PostgreSQL refuses it.
pub(crate) fn default_text(column: &str, e: &SqlExpr) -> Result<String> {
    let mut bad = None;
    let _ = visit_expressions(e, |e| {
        bad = match e {
            SqlExpr::Identifier(_) | SqlExpr::CompoundIdentifier(_) => {
                Some("cannot use column reference in DEFAULT expression")
            }
            SqlExpr::Subquery(_) | SqlExpr::Exists { .. } | SqlExpr::InSubquery { .. } => {
                Some("cannot use subquery in DEFAULT expression")
            }
            _ => None,
        };
        if bad.is_some() {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    });
    match bad {
        Some(m) => Err(SqlError::user(
            state::FEATURE_NOT_SUPPORTED,
            format!("{m} (column {column:?})"),
        )),
        None => Ok(e.to_string()),
    }
}

/// A sequence option's integer.
fn option_value(what: &str, e: &SqlExpr) -> Result<i64> {
    let (negative, e) = match e {
        SqlExpr::UnaryOp {
            op: UnaryOperator::Minus,
            expr,
        } => (true, expr.as_ref()),
        e => (false, e),
    };
    let parsed = match e {
        SqlExpr::Value(v) => match &v.value {
            Literal::Number(n, _) => format!("{}{n}", if negative { "-" } else { "" })
                .parse::<i64>()
                .ok(),
            _ => None,
        },
        _ => None,
    };
    parsed.ok_or_else(|| {
        SqlError::user(
            state::SYNTAX,
            format!("{what} takes an integer of 64 bits, not {e}"),
        )
    })
}

/// The options of CREATE SEQUENCE or of an identity column.
fn sequence_options(list: &[SqlSequenceOptions]) -> Result<SequenceOptions> {
    let mut o = SequenceOptions::default();
    for opt in list {
        match opt {
            SqlSequenceOptions::IncrementBy(e, _) => {
                o.increment = Some(option_value("INCREMENT", e)?)
            }
            SqlSequenceOptions::MinValue(e) => {
                o.min = e
                    .as_ref()
                    .map(|e| option_value("MINVALUE", e))
                    .transpose()?
            }
            SqlSequenceOptions::MaxValue(e) => {
                o.max = e
                    .as_ref()
                    .map(|e| option_value("MAXVALUE", e))
                    .transpose()?
            }
            SqlSequenceOptions::StartWith(e, _) => o.start = Some(option_value("START", e)?),
            SqlSequenceOptions::Cache(e) => o.cache = Some(option_value("CACHE", e)?),
            SqlSequenceOptions::Cycle(no) => o.cycle = Some(!no),
        }
    }
    Ok(o)
}

/// The definition a CREATE TABLE statement asks for.
pub fn table_def(catalog: &Catalog, create: &CreateTable) -> Result<NewTable> {
    if create.query.is_some() {
        return Err(SqlError::Query(
            "CREATE TABLE … AS runs in create_as, not from a definition".into(),
        ));
    }
    if create.or_replace || create.temporary || create.external {
        return Err(SqlError::unsupported(
            "CREATE OR REPLACE, TEMPORARY or EXTERNAL tables",
        ));
    }
    let name = object_name(&create.name)?;
    let mut columns = Vec::with_capacity(create.columns.len());
    let mut primary_key: Vec<String> = Vec::new();
    // The primary key constraint's name, if one is given.
    let mut primary_key_name: Option<String> = None;
    let mut serials = Vec::new();
    // Each UNIQUE constraint: its name, if given, and its columns.
    let mut uniques: Vec<(Option<String>, Vec<String>)> = Vec::new();
    let mut references = Vec::new();
    // Each CHECK, with its name if given (named once the columns are known).
    let mut checks = Vec::new();
    for (position, c) in create.columns.iter().enumerate() {
        let col_name = ident_name(&c.name);
        let serial = serial_type(&c.data_type);
        let (ty, domain) = match serial {
            Some(ty) => (ty, None),
            None => column_type(catalog, &c.data_type)?,
        };
        let mut not_null = serial.is_some();
        let mut default = None;
        let mut identity = None;
        for opt in &c.options {
            match &opt.option {
                ColumnOption::NotNull => not_null = true,
                ColumnOption::Null => not_null = false,
                ColumnOption::PrimaryKey(pk) => {
                    if !primary_key.is_empty() {
                        return Err(SqlError::user(
                            state::INVALID_DEFINITION,
                            format!("table {name:?} has more than one primary key"),
                        ));
                    }
                    primary_key.push(col_name.clone());
                    primary_key_name = opt.name.as_ref().or(pk.name.as_ref()).map(ident_name);
                }
                ColumnOption::Default(e) => default = Some(default_text(&col_name, e)?),
                ColumnOption::Unique(u) => {
                    let name = opt.name.as_ref().or(u.name.as_ref()).map(ident_name);
                    uniques.push(unique_constraint(u, name, vec![col_name.clone()])?);
                }
                ColumnOption::Generated {
                    generated_as: how @ (GeneratedAs::Always | GeneratedAs::ByDefault),
                    sequence_options,
                    generation_expr: None,
                    generation_expr_mode: None,
                    generated_keyword: true,
                } => {
                    identity = Some((
                        match how {
                            GeneratedAs::Always => Identity::Always,
                            _ => Identity::ByDefault,
                        },
                        sequence_options.as_deref().unwrap_or_default(),
                    ));
                }
                ColumnOption::ForeignKey(fk) => references.push(new_reference(
                    fk,
                    opt.name.as_ref().map(ident_name),
                    Some(vec![col_name.clone()]),
                )?),
                ColumnOption::Check(c) => checks.push((c, opt.name.as_ref().map(ident_name))),
                other => {
                    return Err(SqlError::unsupported(format!(
                        "column option {other} (pmdb has NOT NULL, NULL, DEFAULT, PRIMARY KEY, \
                         UNIQUE, REFERENCES, CHECK and GENERATED {{ALWAYS | BY DEFAULT}} AS \
                         IDENTITY)"
                    )));
                }
            }
        }
        let sequence = match (serial, identity) {
            (Some(_), Some(_)) => {
                return Err(SqlError::user(
                    state::SYNTAX,
                    format!("both default and identity specified for column {col_name:?}"),
                ));
            }
            (Some(ty), None) => Some(SequenceDef::new(
                sequence_name(&name, &col_name),
                ty,
                SequenceOptions::default(),
            )?),
            (None, Some((_, options))) => {
                not_null = true;
                if crate::sequence::type_bounds(ty).is_none() {
                    return Err(SqlError::user(
                        state::INVALID_PARAMETER_VALUE,
                        format!(
                            "identity column type must be smallint, integer, or bigint, not {ty}"
                        ),
                    ));
                }
                Some(SequenceDef::new(
                    sequence_name(&name, &col_name),
                    ty,
                    sequence_options(options)?,
                )?)
            }
            (None, None) => None,
        };
        if let Some(seq) = sequence {
            if default.is_some() {
                return Err(SqlError::user(
                    state::SYNTAX,
                    format!("multiple default values specified for column {col_name:?}"),
                ));
            }
            // The catalog writes the default once the sequence's name is certain.
            default = Some(String::new());
            serials.push((position, seq));
        }
        columns.push(ColumnDef {
            // A column that states no default takes its domain's.
            default: default.or_else(|| domain.as_ref().and_then(|d| catalog.domain_default(d))),
            identity: identity.map(|(how, _)| how),
            domain: domain.map(|d| d.def.id),
            ..ColumnDef::new(col_name, ty, not_null)
        });
    }
    for constraint in &create.constraints {
        match constraint {
            TableConstraint::PrimaryKey(pk) => {
                if !primary_key.is_empty() {
                    return Err(SqlError::user(
                        state::INVALID_DEFINITION,
                        format!("table {name:?} has more than one primary key"),
                    ));
                }
                primary_key = index_columns(&pk.columns, "PRIMARY KEY")?;
                primary_key_name = pk.name.as_ref().map(ident_name);
            }
            TableConstraint::Unique(u) => {
                let columns = index_columns(&u.columns, "UNIQUE")?;
                uniques.push(unique_constraint(
                    u,
                    u.name.as_ref().map(ident_name),
                    columns,
                )?);
            }
            TableConstraint::ForeignKey(fk) => references.push(new_reference(fk, None, None)?),
            TableConstraint::Check(c) => checks.push((c, None)),
            other => {
                return Err(SqlError::unsupported(format!(
                    "table constraint {other} (pmdb has PRIMARY KEY, UNIQUE, FOREIGN KEY and \
                     CHECK)"
                )));
            }
        }
    }
    let mut def = TableDef {
        id: 0,
        schema: name.schema.clone(),
        name: name.name.clone(),
        primary_key_name: None,
        columns,
        primary_key: Vec::new(),
        indexes: Vec::new(),
        next_index_id: 0,
        foreign_keys: Vec::new(),
        checks: Vec::new(),
        comment: None,
        constraint_comments: Vec::new(),
        materialized: None,
    };
    for k in &primary_key {
        let p = def.column(k).ok_or_else(|| {
            SqlError::user(
                state::UNDEFINED_COLUMN,
                format!("primary key column {k:?} is not a column of {name:?}"),
            )
        })?;
        def.primary_key.push(p as u16);
        def.columns[p].not_null = true;
    }
    // Kept as made: a rename of the table leaves it, as in PostgreSQL.
    if !def.primary_key.is_empty() {
        def.primary_key_name =
            Some(primary_key_name.unwrap_or_else(|| def.primary_key_constraint()));
    }
    for (given, columns) in uniques {
        let positions = def
            .positions(&columns)
            .map_err(|c| undefined_column(&c, &name.name))?;
        let name = given.unwrap_or_else(|| format!("{}_{}_key", name.name, columns.join("_")));
        def.indexes.push(IndexDef {
            id: def.next_index_id,
            name,
            columns: positions,
            unique: true,
            constraint: true,
        });
        def.next_index_id += 1;
    }
    for (c, name) in checks {
        let check = new_check(&def, c, name)?;
        def.checks.push(check);
    }
    Ok(NewTable {
        def,
        serials,
        references,
    })
}

/// The name PostgreSQL gives a serial column's sequence, in its table's schema.
fn sequence_name(table: &RelName, column: &str) -> RelName {
    let mut name = format!("{}_{column}_seq", table.name);
    // Cut to the longest name, on a character boundary.
    while name.len() > crate::schema::MAX_IDENT {
        name.pop();
    }
    table.sibling(name)
}

/// CREATE SEQUENCE: the definition it asks for, and whether IF NOT EXISTS was given.
pub fn sequence_def(catalog: &Catalog, s: &Statement) -> Result<(SequenceDef, bool)> {
    let Statement::CreateSequence {
        temporary,
        if_not_exists,
        name,
        data_type,
        sequence_options: options,
        owned_by,
    } = s
    else {
        return Err(SqlError::user(state::INTERNAL, "not a CREATE SEQUENCE"));
    };
    if *temporary {
        return Err(SqlError::unsupported("TEMPORARY sequences"));
    }
    let ty = match data_type {
        Some(t) => sql_type(t)?,
        None => SqlType::BigInt,
    };
    let mut def = SequenceDef::new(object_name(name)?, ty, sequence_options(options)?)?;
    if let Some(owner) = owned_by {
        def.owned_by = owner_column(catalog, owner)?;
    }
    Ok((def, *if_not_exists))
}

/// `OWNED BY t.c` (or `NONE`): the table's id and the column's position.
pub(crate) fn owner_column(catalog: &Catalog, owner: &ObjectName) -> Result<Option<(u64, u16)>> {
    let parts: Vec<String> = owner
        .0
        .iter()
        .filter_map(|p| p.as_ident().map(ident_name))
        .collect();
    let (table, column) = match parts.as_slice() {
        [none] if none == "none" => return Ok(None),
        [t, c] => (RelName::public(t.clone()), c),
        [s, t, c] => (RelName::new(s.clone(), t.clone()), c),
        _ => {
            return Err(SqlError::user(
                state::INVALID_PARAMETER_VALUE,
                format!("invalid OWNED BY option: {owner}"),
            ));
        }
    };
    let t = catalog.table_or_error(&table)?;
    let position = t.def().column(column).ok_or_else(|| {
        SqlError::user(
            state::UNDEFINED_COLUMN,
            format!("column {column:?} of relation {table:?} does not exist"),
        )
    })?;
    Ok(Some((t.def().id, position as u16)))
}

pub fn create_index(catalog: &Catalog, create: &CreateIndex) -> Result<bool> {
    if create.predicate.is_some() || !create.include.is_empty() {
        return Err(SqlError::unsupported("partial or covering indexes"));
    }
    if create.nulls_distinct == Some(false) {
        return Err(SqlError::unsupported("UNIQUE NULLS NOT DISTINCT"));
    }
    let table = object_name(&create.table_name)?;
    let columns = index_columns(&create.columns, "an index")?;
    let name = match &create.name {
        Some(n) if n.0.len() > 1 => {
            return Err(SqlError::user(
                state::SYNTAX,
                format!("index name cannot be schema-qualified: {n}"),
            ));
        }
        Some(n) => object_name(n)?.name,
        None => format!("{}_{}_idx", table.name, columns.join("_")),
    };
    let index = NewIndex {
        name,
        columns,
        unique: create.unique,
        constraint: false,
    };
    catalog.create_index(&table, index, create.if_not_exists)
}

/// CREATE SCHEMA (its options refused before it runs, by [`crate::unhonoured`]): the
/// schema's name, and whether IF NOT EXISTS was given.
pub fn schema_to_create(s: &Statement) -> Result<(String, bool)> {
    match s {
        Statement::CreateSchema {
            schema_name: SchemaName::Simple(name),
            if_not_exists,
            ..
        } => Ok((schema_named(name)?, *if_not_exists)),
        _ => Err(SqlError::user(state::INTERNAL, "not a plain CREATE SCHEMA")),
    }
}

/// A schema's name: one identifier.
fn schema_named(name: &ObjectName) -> Result<String> {
    match name.0.as_slice() {
        [part] => part
            .as_ident()
            .map(ident_name)
            .filter(|n| !n.contains('\0'))
            .ok_or_else(|| SqlError::user(state::INVALID_NAME, format!("bad schema name {name}"))),
        _ => Err(SqlError::user(
            state::SYNTAX,
            format!("improper qualified name (too many dotted names): {name}"),
        )),
    }
}

/// DROP TABLE, VIEW, INDEX, SEQUENCE or SCHEMA of each name; the command's tag, and
/// what `IF EXISTS` says of each name it found nothing of.
pub fn drop(
    catalog: &Catalog,
    object_type: &ObjectType,
    names: &[ObjectName],
    if_exists: bool,
    cascade: bool,
) -> Result<(&'static str, Vec<Notice>)> {
    if cascade
        && !matches!(
            object_type,
            ObjectType::Table
                | ObjectType::View
                | ObjectType::MaterializedView
                | ObjectType::Schema
        )
        && *object_type != ObjectType::Type
    {
        return Err(SqlError::unsupported(format!(
            "DROP {object_type} … CASCADE (pmdb drops the foreign keys of a table's dependents \
             with DROP TABLE … CASCADE)"
        )));
    }
    let mut skipped = Vec::new();
    for n in names {
        if *object_type == ObjectType::Schema {
            let schema = schema_named(n)?;
            let dropped = catalog.drop_schema(&schema, if_exists, cascade, |table, c, seq| {
                table
                    .default_expr(c)
                    .is_some_and(|e| calls_nextval_of(e, seq))
            })?;
            if !dropped {
                skipped.push(Notice::skipped_missing("schema", &schema));
            }
            continue;
        }
        let n = object_name(n)?;
        let dropped = match object_type {
            ObjectType::Table => catalog.drop_table(&n, if_exists, cascade)?,
            ObjectType::View => catalog.drop_view(&n, if_exists, cascade)?,
            ObjectType::MaterializedView => {
                catalog.drop_materialized_view(&n, if_exists, cascade)?
            }
            ObjectType::Index => catalog.drop_index(&n, if_exists)?,
            ObjectType::Type => catalog.drop_enum(&n, if_exists, cascade)?,
            ObjectType::Sequence => catalog.drop_sequence(&n, if_exists, |table, c| {
                table
                    .default_expr(c)
                    .is_some_and(|e| calls_nextval_of(e, &n))
            })?,
            other => return Err(SqlError::unsupported(format!("DROP {other}"))),
        };
        if !dropped {
            let kind = match object_type {
                ObjectType::MaterializedView => "materialized view".to_owned(),
                other => other.to_string().to_lowercase(),
            };
            skipped.push(Notice::skipped_missing(&kind, &n.name));
        }
    }
    let tag = match object_type {
        ObjectType::Table => "DROP TABLE",
        ObjectType::View => "DROP VIEW",
        ObjectType::MaterializedView => "DROP MATERIALIZED VIEW",
        ObjectType::Sequence => "DROP SEQUENCE",
        ObjectType::Schema => "DROP SCHEMA",
        ObjectType::Type => "DROP TYPE",
        _ => "DROP INDEX",
    };
    Ok((tag, skipped))
}
