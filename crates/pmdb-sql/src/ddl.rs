//! CREATE TABLE, CREATE INDEX and DROP: from the parsed statement to a change of the
//! catalog. pmdb handles these itself (DataFusion's own DDL would make in-memory
//! tables).

use datafusion::sql::sqlparser::ast::{
    AlterTable, AlterTableOperation, CharacterLength, ColumnOption, CreateIndex, CreateTable,
    DataType, ExactNumberInfo, Expr as SqlExpr, ObjectName, ObjectType, TableConstraint,
    TimezoneInfo,
};

use crate::catalog::Catalog;
use crate::error::{Result, SqlError, state};
use crate::schema::{ColumnDef, TableDef};
use crate::types::{MAX_DECIMAL_PRECISION, SqlType};

/// A name as DataFusion resolves it: unquoted identifiers fold to lower case.
pub fn ident_name(ident: &datafusion::sql::sqlparser::ast::Ident) -> String {
    if ident.quote_style.is_some() {
        ident.value.clone()
    } else {
        ident.value.to_lowercase()
    }
}

/// The table named by `name` (an optional `public.` schema is allowed).
pub fn object_name(name: &ObjectName) -> Result<String> {
    let parts: Vec<String> = name
        .0
        .iter()
        .map(|p| {
            p.as_ident()
                .map(ident_name)
                .ok_or_else(|| SqlError::user(state::SYNTAX, format!("bad name {name}")))
        })
        .collect::<Result<_>>()?;
    match parts.as_slice() {
        [n] => Ok(n.clone()),
        [s, n] if s == "public" => Ok(n.clone()),
        [c, s, n] if c == "pmdb" && s == "public" => Ok(n.clone()),
        _ => Err(SqlError::user(
            state::UNDEFINED_TABLE,
            format!("{name}: pmdb has one schema, public"),
        )),
    }
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
                ExactNumberInfo::None => {
                    return Err(SqlError::unsupported(format!(
                        "{ty} without a precision: give {ty}(p, s), p at most \
                         {MAX_DECIMAL_PRECISION}"
                    )));
                }
            };
            match (u8::try_from(p), u8::try_from(s)) {
                (Ok(precision), Ok(scale))
                    if (1..=MAX_DECIMAL_PRECISION).contains(&precision) && scale <= precision =>
                {
                    SqlType::Decimal { precision, scale }
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
        DataType::Timestamp(_, TimezoneInfo::None | TimezoneInfo::WithoutTimeZone)
        | DataType::Datetime(_) => SqlType::Timestamp,
        DataType::Bool | DataType::Boolean => SqlType::Boolean,
        other => {
            return Err(SqlError::unsupported(format!(
                "type {other} is not supported; pmdb has SMALLINT, INT, BIGINT, DECIMAL(p,s), \
                 REAL, DOUBLE PRECISION, CHAR(n), VARCHAR(n), TEXT, DATE, TIMESTAMP and BOOLEAN"
            )));
        }
    })
}

fn index_columns(
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

/// The definition a CREATE TABLE statement asks for (its id is given by the catalog).
pub fn table_def(create: &CreateTable) -> Result<TableDef> {
    if create.query.is_some() {
        return Err(SqlError::unsupported(
            "CREATE TABLE ... AS SELECT: create the table, then INSERT INTO ... SELECT",
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
    for c in &create.columns {
        let col_name = ident_name(&c.name);
        let mut not_null = false;
        for opt in &c.options {
            match &opt.option {
                ColumnOption::NotNull => not_null = true,
                ColumnOption::Null => not_null = false,
                ColumnOption::PrimaryKey(_) => {
                    if !primary_key.is_empty() {
                        return Err(SqlError::user(
                            state::INVALID_DEFINITION,
                            format!("table {name:?} has more than one primary key"),
                        ));
                    }
                    primary_key.push(col_name.clone());
                }
                other => {
                    return Err(SqlError::unsupported(format!(
                        "column option {other} (pmdb has NOT NULL, NULL and PRIMARY KEY)"
                    )));
                }
            }
        }
        columns.push(ColumnDef {
            name: col_name,
            ty: sql_type(&c.data_type)?,
            not_null,
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
            }
            other => {
                return Err(SqlError::unsupported(format!(
                    "table constraint {other} (pmdb has PRIMARY KEY)"
                )));
            }
        }
    }
    let mut def = TableDef {
        id: 0,
        name: name.clone(),
        columns,
        primary_key: Vec::new(),
        indexes: Vec::new(),
        next_index_id: 0,
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
    def.validate()
        .map_err(|m| SqlError::user(state::INVALID_DEFINITION, m))?;
    Ok(def)
}

pub fn create_index(catalog: &Catalog, create: &CreateIndex) -> Result<bool> {
    if create.unique {
        return Err(SqlError::unsupported(
            "UNIQUE indexes (a primary key is unique)",
        ));
    }
    if create.predicate.is_some() || !create.include.is_empty() {
        return Err(SqlError::unsupported("partial or covering indexes"));
    }
    let table = object_name(&create.table_name)?;
    let columns = index_columns(&create.columns, "an index")?;
    let name = match &create.name {
        Some(n) => object_name(n)?,
        None => format!("{table}_{}_idx", columns.join("_")),
    };
    catalog.create_index(&table, &name, &columns, create.if_not_exists)
}

/// DROP TABLE or DROP INDEX of each name; the count of dropped objects.
pub fn drop(
    catalog: &Catalog,
    object_type: &ObjectType,
    names: &[ObjectName],
    if_exists: bool,
) -> Result<&'static str> {
    for n in names {
        let n = object_name(n)?;
        match object_type {
            ObjectType::Table => catalog.drop_table(&n, if_exists)?,
            ObjectType::Index => catalog.drop_index(&n, if_exists)?,
            other => return Err(SqlError::unsupported(format!("DROP {other}"))),
        };
    }
    Ok(match object_type {
        ObjectType::Table => "DROP TABLE",
        _ => "DROP INDEX",
    })
}

/// The table and columns of `ALTER TABLE t ADD PRIMARY KEY (columns)`, the one change
/// ALTER TABLE makes.
pub fn added_primary_key(alter: &AlterTable) -> Result<(String, Vec<String>)> {
    let name = object_name(&alter.name)?;
    match alter.operations.as_slice() {
        [
            AlterTableOperation::AddConstraint {
                constraint: TableConstraint::PrimaryKey(pk),
                ..
            },
        ] => {
            let columns = pk
                .columns
                .iter()
                .map(|c| match &c.column.expr {
                    SqlExpr::Identifier(i) => Ok(ident_name(i)),
                    other => Err(SqlError::unsupported(format!(
                        "a primary key on the expression {other}"
                    ))),
                })
                .collect::<Result<Vec<_>>>()?;
            Ok((name, columns))
        }
        _ => Err(SqlError::unsupported(
            "ALTER TABLE other than ADD PRIMARY KEY (columns)",
        )),
    }
}
