//! `information_schema`'s tables, views, columns and sequences, which the adapter reads
//! from these relations (see `super::super::rewrite::STANDARD_RELATIONS`): the
//! standard's names for pmdb's objects and types.

use pmdb_sql::SqlType;
use pmdb_sql::schema::{ColumnDef, Identity};
use pmdb_sql::sequence::SequenceDef;

use super::shown::{shown_default, view_definition, yes_no};
use crate::pg_catalog::oids;
use crate::pg_catalog::relation::catalog_relation;
use crate::pg_catalog::source::Source;

catalog_relation! {
    /// Every sequence but an identity column's, which PostgreSQL leaves out (a serial
    /// column's is listed).
    StandardSequence = "pmdb_standard_sequences" (rows: standard_sequences) {
        sequence_catalog: Text,
        sequence_schema: Text,
        sequence_name: Text,
        data_type: Text,
        numeric_precision: Int or null,
        numeric_precision_radix: Int or null,
        numeric_scale: Int or null,
        start_value: Text,
        minimum_value: Text,
        maximum_value: Text,
        increment: Text,
        cycle_option: Text,
    }
}

fn standard_sequences(source: &Source) -> Vec<StandardSequence> {
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
            StandardSequence {
                sequence_catalog: source.database().to_owned(),
                sequence_schema: d.schema.clone(),
                sequence_name: d.name.clone(),
                data_type: ty.data_type.to_owned(),
                numeric_precision: ty.numeric_precision,
                numeric_precision_radix: ty.numeric_precision_radix,
                numeric_scale: ty.numeric_scale,
                start_value: d.start.to_string(),
                minimum_value: d.min.to_string(),
                maximum_value: d.max.to_string(),
                increment: d.increment.to_string(),
                cycle_option: yes_no(d.cycle),
            }
        })
        .collect()
}

catalog_relation! {
    /// Every table (temporary ones as such) and view.
    StandardTable = "pmdb_standard_tables" (rows: standard_tables) {
        table_catalog: Text,
        table_schema: Text,
        table_name: Text,
        table_type: Text,
        self_referencing_column_name: Text or null,
        reference_generation: Text or null,
        user_defined_type_catalog: Text or null,
        user_defined_type_schema: Text or null,
        user_defined_type_name: Text or null,
        is_insertable_into: Text,
        is_typed: Text,
        commit_action: Text or null,
    }
}

fn standard_tables(source: &Source) -> Vec<StandardTable> {
    let row = |schema: &str, name: &str, kind: &str, insertable: bool| StandardTable {
        table_catalog: source.database().to_owned(),
        table_schema: schema.to_owned(),
        table_name: name.to_owned(),
        table_type: kind.to_owned(),
        self_referencing_column_name: None,
        reference_generation: None,
        user_defined_type_catalog: None,
        user_defined_type_schema: None,
        user_defined_type_name: None,
        is_insertable_into: yes_no(insertable),
        is_typed: yes_no(false),
        commit_action: None,
    };
    let mut rows: Vec<StandardTable> = source
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

catalog_relation! {
    /// Each view's query, as `pg_views` shows it.
    StandardView = "pmdb_standard_views" (rows: standard_views) {
        table_catalog: Text,
        table_schema: Text,
        table_name: Text,
        view_definition: Text,
        check_option: Text,
        is_updatable: Text,
        is_insertable_into: Text,
        is_trigger_updatable: Text,
        is_trigger_deletable: Text,
        is_trigger_insertable_into: Text,
    }
}

fn standard_views(source: &Source) -> Vec<StandardView> {
    source
        .catalog()
        .views()
        .iter()
        .map(|v| StandardView {
            table_catalog: source.database().to_owned(),
            table_schema: v.schema.clone(),
            table_name: v.name.clone(),
            view_definition: view_definition(v),
            check_option: "NONE".to_owned(),
            is_updatable: yes_no(false),
            is_insertable_into: yes_no(false),
            is_trigger_updatable: yes_no(false),
            is_trigger_deletable: yes_no(false),
            is_trigger_insertable_into: yes_no(false),
        })
        .collect()
}

catalog_relation! {
    /// The columns of every table and view, their types as the standard names them,
    /// with their lengths, precisions, defaults and identities.
    StandardColumn = "pmdb_standard_columns" (rows: standard_columns) {
        table_catalog: Text,
        table_schema: Text,
        table_name: Text,
        column_name: Text,
        ordinal_position: Int,
        column_default: Text or null,
        is_nullable: Text,
        data_type: Text,
        character_maximum_length: Int or null,
        character_octet_length: Int or null,
        numeric_precision: Int or null,
        numeric_precision_radix: Int or null,
        numeric_scale: Int or null,
        datetime_precision: Int or null,
        interval_type: Text or null,
        interval_precision: Int or null,
        character_set_catalog: Text or null,
        character_set_schema: Text or null,
        character_set_name: Text or null,
        collation_catalog: Text or null,
        collation_schema: Text or null,
        collation_name: Text or null,
        domain_catalog: Text or null,
        domain_schema: Text or null,
        domain_name: Text or null,
        udt_catalog: Text,
        udt_schema: Text or null,
        udt_name: Text or null,
        scope_catalog: Text or null,
        scope_schema: Text or null,
        scope_name: Text or null,
        maximum_cardinality: Int or null,
        dtd_identifier: Text,
        is_self_referencing: Text,
        is_identity: Text,
        identity_generation: Text or null,
        identity_start: Text or null,
        identity_increment: Text or null,
        identity_maximum: Text or null,
        identity_minimum: Text or null,
        identity_cycle: Text,
        is_generated: Text,
        generation_expression: Text or null,
        is_updatable: Text,
    }
}

/// What `information_schema.columns` says of a column beyond its name and type.
struct Shape {
    nullable: bool,
    default: Option<String>,
    identity: Option<(Identity, SequenceDef)>,
    updatable: bool,
}

fn standard_columns(source: &Source) -> Vec<StandardColumn> {
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

/// The row of column `c`, the `i`th (from 0) of relation `(schema, name)`.
fn standard_column(
    source: &Source,
    (schema, name): (&str, &str),
    i: usize,
    c: &ColumnDef,
    shape: Shape,
) -> StandardColumn {
    let ty = oids::standard_type(c.ty);
    let (udt_schema, udt_name) = match c.ty {
        SqlType::Enum(id) => source.catalog().enum_by_id(id).map_or((None, None), |t| {
            (Some(t.schema.clone()), Some(t.name.clone()))
        }),
        SqlType::Hstore => (Some("public".to_owned()), Some(ty.udt_name.to_owned())),
        _ => (Some("pg_catalog".to_owned()), Some(ty.udt_name.to_owned())),
    };
    // A column of a domain names it (its base type is the data type).
    let domain = c.domain.and_then(|id| source.catalog().domain_by_id(id));
    let position = i as i64 + 1;
    let identity = shape.identity.as_ref();
    let of_identity = |f: fn(&SequenceDef) -> String| identity.map(|(_, s)| f(s));
    StandardColumn {
        table_catalog: source.database().to_owned(),
        table_schema: schema.to_owned(),
        table_name: name.to_owned(),
        column_name: c.name.clone(),
        ordinal_position: position,
        column_default: shape.default,
        is_nullable: yes_no(shape.nullable),
        data_type: ty.data_type.to_owned(),
        character_maximum_length: ty.character_maximum_length,
        character_octet_length: ty.character_octet_length,
        numeric_precision: ty.numeric_precision,
        numeric_precision_radix: ty.numeric_precision_radix,
        numeric_scale: ty.numeric_scale,
        datetime_precision: ty.datetime_precision,
        interval_type: None,
        interval_precision: None,
        character_set_catalog: None,
        character_set_schema: None,
        character_set_name: None,
        collation_catalog: None,
        collation_schema: None,
        collation_name: None,
        domain_catalog: domain.as_ref().map(|_| source.database().to_owned()),
        domain_schema: domain.as_ref().map(|d| d.def.schema.clone()),
        domain_name: domain.as_ref().map(|d| d.def.name.clone()),
        udt_catalog: source.database().to_owned(),
        udt_schema,
        udt_name,
        scope_catalog: None,
        scope_schema: None,
        scope_name: None,
        maximum_cardinality: None,
        dtd_identifier: position.to_string(),
        is_self_referencing: yes_no(false),
        is_identity: yes_no(identity.is_some()),
        identity_generation: identity.map(|(kind, _)| {
            match kind {
                Identity::Always => "ALWAYS",
                Identity::ByDefault => "BY DEFAULT",
            }
            .to_owned()
        }),
        identity_start: of_identity(|s| s.start.to_string()),
        identity_increment: of_identity(|s| s.increment.to_string()),
        identity_maximum: of_identity(|s| s.max.to_string()),
        identity_minimum: of_identity(|s| s.min.to_string()),
        identity_cycle: yes_no(identity.is_some_and(|(_, s)| s.cycle)),
        is_generated: "NEVER".to_owned(),
        generation_expression: None,
        is_updatable: yes_no(shape.updatable),
    }
}
