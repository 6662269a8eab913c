//! ALTER TABLE: renames of the table and its columns, column defaults, NOT NULL, added
//! columns (rows written before read them as their default when added, computed once,
//! so no row is rewritten), primary keys, UNIQUE, FOREIGN KEY and CHECK constraints
//! added (checked against the rows), and constraints dropped. The changes of one
//! statement apply together in one catalog write; a change that builds an index (ADD
//! PRIMARY KEY, ADD UNIQUE) comes alone. DROP COLUMN, ALTER COLUMN TYPE and dropping a
//! primary key rebuild the table ([`crate::column_rewrite`]).

use std::ops::ControlFlow;
use std::sync::Arc;

use datafusion::sql::sqlparser::ast::{
    AlterColumnOperation, AlterTable, AlterTableOperation, ColumnOption, DropBehavior,
    Expr as SqlExpr, Owner, RenameTableNameKind, TableConstraint, visit_expressions,
};

use crate::arrow_conv::{cast_to_column, row_values};
use crate::catalog::{Catalog, NewIndex, Rebuild, unchanged_rows};
use crate::column_rewrite;
use crate::constraint_defs::{new_check, new_reference};
use crate::ddl::{default_text, index_columns, sql_type, unique_constraint};
use crate::error::{Result, SqlError, state, undefined_column};
use crate::large_rows::Committed;
use crate::names::{RelName, ident_name, object_name};
use crate::read_point::ReadPoint;
use crate::schema::{ColumnDef, TableDef};
use crate::session::Session;
use crate::table::Table;
use crate::types::{SqlType, Value};

/// Functions whose value changes from one call to the next: a column added with such a
/// default would need each stored row's own value.
const VOLATILE: &[&str] = &[
    "nextval",
    "setval",
    "currval",
    "lastval",
    "random",
    "uuid",
    "gen_random_uuid",
    "clock_timestamp",
    "timeofday",
];

/// One change a statement makes to a definition without touching rows.
enum Change {
    RenameTable(String),
    RenameColumn {
        from: String,
        to: String,
    },
    SetDefault {
        column: String,
        text: String,
    },
    DropDefault(String),
    SetNotNull(String),
    DropNotNull(String),
    AddColumn {
        column: ColumnDef,
        if_not_exists: bool,
        /// Its default differs from call to call: allowed only on an empty table.
        volatile: bool,
    },
}

/// Runs ALTER TABLE `alter`.
pub(crate) async fn run(session: &Session, alter: &AlterTable) -> Result<()> {
    let name = object_name(&alter.name)?;
    if let Some(change) = crate::sequence_syntax::alter_of(alter) {
        return alter_sequence(session, name, alter.if_exists, change).await;
    }
    if let [AlterTableOperation::OwnerTo { new_owner }] = alter.operations.as_slice() {
        return owner_to(&session.catalog, &name, alter.if_exists, new_owner);
    }
    let Some(table) = session.catalog.table(&name) else {
        return if alter.if_exists {
            Ok(())
        } else {
            session.catalog.table_or_error(&name).map(|_| ())
        };
    };
    if table.def().materialized.is_some()
        && let Some(op) = alter.operations.iter().find(|op| {
            !matches!(
                op,
                AlterTableOperation::RenameTable { .. } | AlterTableOperation::RenameColumn { .. }
            )
        })
    {
        return Err(SqlError::user(
            state::WRONG_OBJECT_TYPE,
            format!(
                "ALTER action {op} cannot be performed on relation \"{}\"",
                name.name
            ),
        )
        .with_detail("This operation is not supported for materialized views."));
    }
    match alter.operations.as_slice() {
        [
            AlterTableOperation::AddConstraint {
                constraint: TableConstraint::PrimaryKey(pk),
                not_valid: false,
            },
        ] => {
            let columns = index_columns(&pk.columns, "PRIMARY KEY")?;
            let constraint = pk.name.as_ref().map(ident_name);
            return session
                .off_executor(move |c| c.add_primary_key(&name, &columns, constraint))
                .await;
        }
        [
            AlterTableOperation::AddConstraint {
                constraint: TableConstraint::Unique(u),
                not_valid: false,
            },
        ] => {
            let columns = index_columns(&u.columns, "UNIQUE")?;
            let (given, columns) = unique_constraint(u, u.name.as_ref().map(ident_name), columns)?;
            let index = NewIndex {
                name: given.unwrap_or_else(|| format!("{name}_{}_key", columns.join("_"))),
                columns,
                unique: true,
                constraint: true,
            };
            return session
                .off_executor(move |c| c.create_index(&name, index, false).map(|_| ()))
                .await;
        }
        [
            AlterTableOperation::AddConstraint {
                constraint: TableConstraint::ForeignKey(fk),
                not_valid: false,
            },
        ] => {
            let r = new_reference(fk, None, None)?;
            return session
                .off_executor(move |c| c.add_foreign_key(&name, r))
                .await;
        }
        [
            AlterTableOperation::AddConstraint {
                constraint: TableConstraint::Check(check),
                not_valid: false,
            },
        ] => {
            let check = check.clone();
            return session
                .off_executor(move |c| c.add_check(&name, |def| new_check(def, &check, None)))
                .await;
        }
        [
            AlterTableOperation::DropConstraint {
                if_exists,
                name: constraint,
                drop_behavior,
            },
        ] => {
            let constraint = ident_name(constraint);
            let if_exists = *if_exists;
            let cascade = *drop_behavior == Some(DropBehavior::Cascade);
            return session
                .off_executor(move |c| drop_constraint(c, &name, &constraint, if_exists, cascade))
                .await;
        }
        [AlterTableOperation::AddColumn { column_def, .. }]
            if column_def.options.iter().any(|o| is_constraint(&o.option)) =>
        {
            return add_column_with_constraints(session, &table, alter).await;
        }
        ops if ops.iter().any(rebuilds) => return rewrite(session, &table, ops).await,
        _ => {}
    }
    let mut changes = Vec::with_capacity(alter.operations.len());
    for op in &alter.operations {
        changes.push(change_of(session, &table, op).await?);
    }
    session
        .off_executor(move |c| {
            c.change_table(&name, |table, def| {
                changes
                    .into_iter()
                    .try_for_each(|change| apply(c, table, def, change))
            })
        })
        .await
}

/// Whether `op` changes what rows hold, so the table is rebuilt.
fn rebuilds(op: &AlterTableOperation) -> bool {
    matches!(
        op,
        AlterTableOperation::DropColumn { .. }
            | AlterTableOperation::AlterColumn {
                op: AlterColumnOperation::SetDataType { .. },
                ..
            }
    )
}

/// ALTER TABLE with DROP COLUMN or ALTER COLUMN TYPE among `ops`: the in-place changes
/// among them are made to the definition first, then the table is rebuilt with the
/// columns dropped and retyped.
async fn rewrite(session: &Session, table: &Table, ops: &[AlterTableOperation]) -> Result<()> {
    let def = table.def().clone();
    let state = session.ctx.state();
    let (mut drops, mut changes, mut in_place) = (Vec::new(), Vec::new(), Vec::new());
    let mut cascade = false;
    for op in ops {
        match op {
            AlterTableOperation::DropColumn {
                column_names,
                if_exists,
                drop_behavior,
                ..
            } => {
                cascade |= *drop_behavior == Some(DropBehavior::Cascade);
                for c in column_names {
                    let column = ident_name(c);
                    if !(*if_exists && def.column(&column).is_none()) {
                        drops.push(column);
                    }
                }
            }
            AlterTableOperation::AlterColumn {
                column_name,
                op:
                    AlterColumnOperation::SetDataType {
                        data_type, using, ..
                    },
            } => {
                let column = ident_name(column_name);
                let ty = sql_type(data_type)?;
                // The default must take the new type.
                if let Some(text) = def
                    .column(&column)
                    .and_then(|p| def.columns[p].default.as_ref())
                {
                    evaluate(session, text, ty, false).await?;
                }
                changes.push(column_rewrite::type_change(
                    &state,
                    &def,
                    &column,
                    ty,
                    using.as_ref(),
                )?);
            }
            AlterTableOperation::AddColumn { .. } => {
                return Err(SqlError::unsupported(
                    "ADD COLUMN in the statement of a DROP COLUMN or ALTER COLUMN TYPE: give \
                     it a statement of its own",
                ));
            }
            other => in_place.push(change_of(session, table, other).await?),
        }
    }
    let name = def.rel_name();
    if drops.is_empty() && changes.is_empty() {
        return session
            .off_executor(move |c| {
                c.change_table(&name, |table, def| {
                    in_place
                        .into_iter()
                        .try_for_each(|change| apply(c, table, def, change))
                })
            })
            .await;
    }
    let changes = Arc::new(changes);
    session
        .off_executor(move |c| {
            c.rebuild_table(
                &name,
                |old| {
                    if *old.def() != def {
                        return Err(SqlError::user(
                            state::SERIALIZATION_FAILURE,
                            format!("table {name:?} changed while ALTER TABLE was planned"),
                        ));
                    }
                    let mut def = def;
                    for change in in_place {
                        apply(c, old, &mut def, change)?;
                    }
                    column_rewrite::rebuilt(c, &def, &drops, &changes, cascade)
                },
                |old, new, positions| {
                    column_rewrite::converter(old, new, positions, Arc::clone(&changes))
                },
            )
        })
        .await
}

fn is_constraint(option: &ColumnOption) -> bool {
    matches!(
        option,
        ColumnOption::Unique(_) | ColumnOption::ForeignKey(_) | ColumnOption::Check(_)
    )
}

/// ADD COLUMN with UNIQUE, REFERENCES or CHECK on the column: the column is added, then
/// each constraint as ALTER TABLE … ADD CONSTRAINT adds it. What the rows start with
/// (NULL, or the default's one value) is checked against the constraints first, so the
/// second step finds nothing to refuse unless another writer gave the new column a
/// value in between.
async fn add_column_with_constraints(
    session: &Session,
    table: &Table,
    alter: &AlterTable,
) -> Result<()> {
    let mut plain = alter.clone();
    let AlterTableOperation::AddColumn {
        if_not_exists,
        column_def,
        ..
    } = &mut plain.operations[0]
    else {
        return Err(SqlError::Query("not an ADD COLUMN".into()));
    };
    let name = table.name().clone();
    let column = ident_name(&column_def.name);
    if *if_not_exists && table.def().column(&column).is_some() {
        return Ok(());
    }
    let (constraints, options): (Vec<_>, Vec<_>) = std::mem::take(&mut column_def.options)
        .into_iter()
        .partition(|o| is_constraint(&o.option));
    column_def.options = options;
    let change = change_of(session, table, &plain.operations[0]).await?;
    let Change::AddColumn {
        column: added,
        volatile,
        ..
    } = &change
    else {
        return Err(SqlError::Query("not an ADD COLUMN".into()));
    };
    let rows = table.row_count();
    if rows > 0 && (*volatile || added.missing.is_some()) {
        let initial = added.missing.clone().unwrap_or(Value::Null);
        for c in &constraints {
            first_values_hold(session, table, &column, &initial, rows, &c.option)?;
        }
    }
    let table_name = name.clone();
    session
        .off_executor(move |c| c.change_table(&table_name, |t, def| apply(c, t, def, change)))
        .await?;
    for c in constraints {
        let constraint_name = c.name.as_ref().map(ident_name);
        let (name, column) = (name.clone(), column.clone());
        match c.option {
            ColumnOption::Unique(u) => {
                let given = constraint_name.or_else(|| u.name.as_ref().map(ident_name));
                let (given, columns) = unique_constraint(&u, given, vec![column.clone()])?;
                let index = NewIndex {
                    name: given.unwrap_or_else(|| format!("{}_{column}_key", name.name)),
                    columns,
                    unique: true,
                    constraint: true,
                };
                session
                    .off_executor(move |c| c.create_index(&name, index, false).map(|_| ()))
                    .await?;
            }
            ColumnOption::ForeignKey(fk) => {
                let r = new_reference(&fk, constraint_name, Some(vec![column]))?;
                session
                    .off_executor(move |c| c.add_foreign_key(&name, r))
                    .await?;
            }
            ColumnOption::Check(check) => {
                session
                    .off_executor(move |c| {
                        c.add_check(&name, |def| new_check(def, &check, constraint_name))
                    })
                    .await?;
            }
            _ => {}
        }
    }
    Ok(())
}

/// Checks that `rows` rows holding `initial` in the new column `column` (a volatile
/// default: values not known yet) keep the constraint `option`: 23505 for one value in
/// two rows, 23503 for a value no parent row holds; a CHECK or a volatile value is
/// refused (0A000), as the constraint could only be checked after the column is there.
fn first_values_hold(
    session: &Session,
    table: &Table,
    column: &str,
    initial: &Value,
    rows: u64,
    option: &ColumnOption,
) -> Result<()> {
    let later = || {
        SqlError::unsupported(format!(
            "ADD COLUMN {column} with a default and {option} on a table with rows: add the \
             column, then the constraint with ALTER TABLE … ADD CONSTRAINT"
        ))
    };
    if *initial == Value::Null {
        return Err(later());
    }
    match option {
        ColumnOption::Unique(_) if rows > 1 => Err(SqlError::user(
            state::UNIQUE_VIOLATION,
            format!(
                "could not create unique index on \"{}\": Key ({column})=({}) is duplicated.",
                table.def().name,
                initial.display(SqlType::Text)
            ),
        )),
        ColumnOption::Unique(_) => Ok(()),
        ColumnOption::ForeignKey(fk) => {
            let r = new_reference(fk, None, Some(vec![column.to_owned()]))?;
            let parent = session.catalog.table_or_error(&r.parent)?;
            let columns: Vec<u16> = if r.parent_columns.is_empty() {
                parent.def().primary_key.clone()
            } else {
                r.parent_columns
                    .iter()
                    .map(|c| {
                        parent
                            .def()
                            .column(c)
                            .map(|p| p as u16)
                            .ok_or_else(|| undefined_column(c, &parent.def().name))
                    })
                    .collect::<Result<_>>()?
            };
            let [at] = columns.as_slice() else {
                return Err(later());
            };
            let wanted = crate::table::in_types(std::slice::from_ref(initial), &parent, &[*at]);
            let found = match wanted {
                None => false,
                Some(wanted) => parent.keys_holding(&[*at], &wanted, None)?.iter().any(|k| {
                    parent
                        .row_for_check(k, None)
                        .ok()
                        .flatten()
                        .is_some_and(|r| crate::table::holds(&r, &[*at], &wanted))
                }),
            };
            if found {
                Ok(())
            } else {
                Err(SqlError::user(
                    state::FOREIGN_KEY_VIOLATION,
                    format!(
                        "insert or update on table \"{}\" violates a foreign key: Key \
                         ({column})=({}) is not present in table \"{}\".",
                        table.def().name,
                        initial.display(SqlType::Text),
                        parent.def().name
                    ),
                ))
            }
        }
        _ => Err(later()),
    }
}

/// What `op` changes; refused (0A000) if it is not one of the changes made in place.
async fn change_of(session: &Session, table: &Table, op: &AlterTableOperation) -> Result<Change> {
    use AlterTableOperation as Op;
    Ok(match op {
        Op::RenameTable {
            table_name: RenameTableNameKind::To(to) | RenameTableNameKind::As(to),
        } => {
            // The new name is a name in the table's schema, never qualified.
            if to.0.len() > 1 {
                return Err(SqlError::user(
                    state::SYNTAX,
                    format!("a table is renamed within its schema, not to {to}"),
                ));
            }
            Change::RenameTable(object_name(to)?.name)
        }
        Op::RenameColumn {
            old_column_name,
            new_column_name,
        } => Change::RenameColumn {
            from: ident_name(old_column_name),
            to: ident_name(new_column_name),
        },
        Op::AlterColumn { column_name: c, op } => {
            let column = ident_name(c);
            match op {
                AlterColumnOperation::SetNotNull => Change::SetNotNull(column),
                AlterColumnOperation::DropNotNull => Change::DropNotNull(column),
                AlterColumnOperation::DropDefault => Change::DropDefault(column),
                AlterColumnOperation::SetDefault { value } => {
                    let text = default_text(&column, value)?;
                    let ty = table
                        .def()
                        .column(&column)
                        .map_or(SqlType::Text, |p| table.def().columns[p].ty);
                    // Planned, not run: it must name functions there are, of a type
                    // that converts.
                    evaluate(session, &text, ty, false).await?;
                    Change::SetDefault { column, text }
                }
                other => {
                    return Err(SqlError::unsupported(format!(
                        "ALTER COLUMN … {other}: pmdb changes a column's name, default, NOT \
                         NULL and type"
                    )));
                }
            }
        }
        Op::AddColumn {
            column_keyword: _,
            if_not_exists,
            column_def,
            column_position: None,
        } => {
            let name = ident_name(&column_def.name);
            let ty = match crate::ddl::column_type(&session.catalog, &column_def.data_type)? {
                (ty, None) => ty,
                (_, Some(d)) => {
                    return Err(SqlError::unsupported(format!(
                        "ADD COLUMN of domain {} (a table's columns of a domain are stated by \
                         its CREATE TABLE)",
                        d.def.name
                    )));
                }
            };
            let mut column = ColumnDef::new(name.clone(), ty, false);
            column.added = true;
            for opt in &column_def.options {
                match &opt.option {
                    ColumnOption::NotNull => column.not_null = true,
                    ColumnOption::Null => column.not_null = false,
                    ColumnOption::Default(e) => column.default = Some(default_text(&name, e)?),
                    other => {
                        return Err(SqlError::unsupported(format!(
                            "ADD COLUMN … {other}: add the column, then its constraint with \
                             ALTER TABLE … ADD"
                        )));
                    }
                }
            }
            let mut volatile = false;
            if let Some(text) = &column.default {
                volatile = is_volatile(text)?;
                let value = evaluate(session, text, ty, !volatile).await?;
                column.missing = value.filter(|v| *v != Value::Null);
            }
            Change::AddColumn {
                column,
                if_not_exists: *if_not_exists,
                volatile,
            }
        }
        other => {
            return Err(SqlError::unsupported(format!(
                "ALTER TABLE … {other}: pmdb has RENAME [COLUMN], ALTER COLUMN SET/DROP DEFAULT, \
                 NOT NULL and TYPE, ADD/DROP COLUMN, ADD/DROP CONSTRAINT"
            )));
        }
    })
}

/// `ALTER SEQUENCE name OWNED BY t.c | NONE`: the sequence is dropped with that column
/// from then on (a table of its schema, as PostgreSQL asks).
async fn alter_sequence(
    session: &Session,
    name: RelName,
    if_exists: bool,
    change: crate::sequence_syntax::AlterSequence,
) -> Result<()> {
    use crate::sequence_syntax::AlterSequence;
    if session.catalog.sequence(&name).is_none() {
        return match if_exists {
            true => Ok(()),
            false => session.catalog.sequence_or_error(&name).map(|_| ()),
        };
    }
    let AlterSequence::OwnedBy(column) = change else {
        return Err(SqlError::unsupported(
            "ALTER SEQUENCE other than OWNED BY and OWNER TO (drop and make the sequence, \
             or setval)",
        ));
    };
    let owned_by = match &column {
        None => None,
        Some(column) => {
            let owner = crate::ddl::owner_column(&session.catalog, column)?;
            if let Some((table, _)) = owner
                && session
                    .catalog
                    .table_by_id(table)
                    .is_some_and(|t| t.def().schema != name.schema)
            {
                return Err(SqlError::user(
                    state::OBJECT_NOT_IN_PREREQUISITE_STATE,
                    "sequence must be in same schema as table it is linked to",
                ));
            }
            owner
        }
    };
    session
        .off_executor(move |c| c.set_sequence_owner(&name, owned_by))
        .await
}

/// `ALTER TABLE name OWNER TO role`, of a table, view or sequence (pg_dump writes one
/// for each): every relation of a pmdb database is owned by its one owner, so OWNER TO
/// that owner leaves it as it is, and any other role is refused.
fn owner_to(catalog: &Catalog, name: &RelName, if_exists: bool, owner: &Owner) -> Result<()> {
    let exists = catalog.table(name).is_some()
        || catalog.view(name).is_some()
        || catalog.sequence(name).is_some();
    if !exists {
        return match if_exists {
            true => Ok(()),
            false => catalog.table_or_error(name).map(|_| ()),
        };
    }
    match owner {
        Owner::Ident(role) if ident_name(role) == crate::identity::OWNER => Ok(()),
        other => Err(SqlError::unsupported(format!(
            "ALTER TABLE … OWNER TO {other}: every relation is owned by {} (restore \
             pg_dump's output made with --no-owner, or as that role)",
            crate::identity::OWNER
        ))),
    }
}

/// Whether the default `text` calls a function whose value changes from call to call.
fn is_volatile(text: &str) -> Result<bool> {
    let e = crate::table::parse_default(text)
        .map_err(|m| SqlError::user(state::SYNTAX, format!("default {text}: {m}")))?;
    let mut volatile = false;
    let _ = visit_expressions(&e, |e: &SqlExpr| {
        if let SqlExpr::Function(f) = e
            && let Some(part) = f.name.0.last().and_then(|p| p.as_ident())
            && VOLATILE.contains(&ident_name(part).as_str())
        {
            volatile = true;
        }
        ControlFlow::<()>::Continue(())
    });
    Ok(volatile)
}

/// Plans `text` as a value of type `ty`; with `run`, its value too.
async fn evaluate(session: &Session, text: &str, ty: SqlType, run: bool) -> Result<Option<Value>> {
    let statement = crate::column_defaults::as_column_value(text, ty)?;
    let read_point = ReadPoint::new(&session.db);
    if !run {
        let state = session.statement_state(read_point);
        state
            .statement_to_plan(statement)
            .await
            .map_err(crate::error::df_error)?;
        return Ok(None);
    }
    let batches = session.plan_and_collect(statement, &read_point).await?;
    let Some(batch) = batches.iter().find(|b| b.num_rows() > 0) else {
        return Ok(Some(Value::Null));
    };
    let column = ColumnDef::new(String::new(), ty, false);
    let array = cast_to_column(batch.column(0), &column)?;
    Ok(row_values(&[array], &[ty], 0).pop())
}

fn column_position(def: &TableDef, name: &str) -> Result<usize> {
    def.column(name)
        .ok_or_else(|| undefined_column(name, &def.name))
}

/// Whether any row of `table` holds NULL in column `c` (or lacks it with no missing
/// value).
fn has_null(catalog: &Catalog, table: &Table, c: usize) -> Result<bool> {
    catalog.reading_rows(table)?;
    let mut scan = table.rows().scan::<[u8]>(..);
    while let Some(e) = scan.next_ref() {
        let e = e?;
        if table.decode(&Committed, e.key, e.value)?[c] == Value::Null {
            return Ok(true);
        }
    }
    Ok(false)
}

fn is_empty(catalog: &Catalog, table: &Table) -> Result<bool> {
    catalog.reading_rows(table)?;
    Ok(table.rows().scan::<[u8]>(..).next().transpose()?.is_none())
}

fn contains_nulls(def: &TableDef, column: &str) -> SqlError {
    SqlError::user(
        state::NOT_NULL_VIOLATION,
        format!(
            "column \"{column}\" of relation \"{}\" contains null values",
            def.name
        ),
    )
}

/// Applies `change` to `def`, the definition of `table` (whose rows it may read, if
/// `catalog` allows: see [`Catalog::reading_rows`]).
fn apply(catalog: &Catalog, table: &Table, def: &mut TableDef, change: Change) -> Result<()> {
    match change {
        Change::RenameTable(to) => def.name = to,
        Change::RenameColumn { from, to } => {
            let p = column_position(def, &from)?;
            if def.column(&to).is_some() {
                return Err(SqlError::user(
                    state::DUPLICATE_COLUMN,
                    format!(
                        "column \"{to}\" of relation \"{}\" already exists",
                        def.name
                    ),
                ));
            }
            def.columns[p].name = to;
        }
        Change::SetDefault { column, text } => {
            let p = column_position(def, &column)?;
            if def.columns[p].identity.is_some() {
                return Err(SqlError::user(
                    state::SYNTAX,
                    format!(
                        "column \"{column}\" of relation \"{}\" is an identity column",
                        def.name
                    ),
                ));
            }
            def.columns[p].default = Some(text);
        }
        Change::DropDefault(column) => {
            let p = column_position(def, &column)?;
            if def.columns[p].identity.is_some() {
                return Err(SqlError::user(
                    state::SYNTAX,
                    format!(
                        "column \"{column}\" of relation \"{}\" is an identity column (its \
                         sequence gives its values)",
                        def.name
                    ),
                ));
            }
            def.columns[p].default = None;
        }
        Change::SetNotNull(column) => {
            let p = column_position(def, &column)?;
            if !def.columns[p].not_null && has_null(catalog, table, p)? {
                return Err(contains_nulls(def, &column));
            }
            def.columns[p].not_null = true;
        }
        Change::DropNotNull(column) => {
            let p = column_position(def, &column)?;
            if def.primary_key.contains(&(p as u16)) || def.columns[p].identity.is_some() {
                return Err(SqlError::user(
                    state::INVALID_DEFINITION,
                    format!("column \"{column}\" is in a primary key or an identity column"),
                ));
            }
            def.columns[p].not_null = false;
        }
        Change::AddColumn {
            column,
            if_not_exists,
            volatile,
        } => {
            if def.column(&column.name).is_some() {
                return if if_not_exists {
                    Ok(())
                } else {
                    Err(SqlError::user(
                        state::DUPLICATE_COLUMN,
                        format!(
                            "column \"{}\" of relation \"{}\" already exists",
                            column.name, def.name
                        ),
                    ))
                };
            }
            // Rows written before read the column as its missing value: one that
            // changes from row to row, or a NULL where none may be, needs no rows.
            let unfit = volatile || (column.not_null && column.missing.is_none());
            if unfit && !is_empty(catalog, table)? {
                return Err(if volatile {
                    SqlError::unsupported(format!(
                        "ADD COLUMN {} with a default whose value changes from row to row, on \
                         a table with rows: add the column, then UPDATE it",
                        column.name
                    ))
                } else {
                    contains_nulls(def, &column.name)
                });
            }
            def.columns.push(column);
        }
    }
    Ok(())
}

/// ALTER TABLE … DROP CONSTRAINT: a UNIQUE constraint goes with its index.
fn drop_constraint(
    catalog: &Catalog,
    table: &RelName,
    name: &str,
    if_exists: bool,
    cascade: bool,
) -> Result<()> {
    if catalog.drop_foreign_key_or_check(table, name)? {
        return Ok(());
    }
    let t = catalog.table_or_error(table)?;
    let def = t.def();
    if def.indexes.iter().any(|i| i.constraint && i.name == name) {
        // A foreign key that needs the index refuses the drop (2BP01).
        return match catalog.drop_index(&table.sibling(name), false) {
            Err(e) if cascade && e.sqlstate() == state::DEPENDENT_OBJECTS_STILL_EXIST => {
                Err(SqlError::unsupported(
                    "DROP CONSTRAINT … CASCADE of a key that foreign keys reference: drop them \
                     first",
                ))
            }
            other => other.map(|_| ()),
        };
    }
    if def.is_primary_key_name(name) {
        // Rows are stored by their key: they move to a table keyed by row ids.
        return catalog.rebuild_table(
            table,
            |old| {
                let mut def = old.def().clone();
                for &p in &def.primary_key {
                    def.columns[p as usize].not_null = true;
                }
                def.primary_key.clear();
                def.primary_key_name = None;
                let dropping = format!("constraint {name} on table {table}");
                Ok(Rebuild::same_columns(def, cascade, dropping))
            },
            unchanged_rows,
        );
    }
    if if_exists {
        return Ok(());
    }
    Err(SqlError::user(
        state::UNDEFINED_OBJECT,
        format!("constraint \"{name}\" of relation \"{table}\" does not exist"),
    ))
}
