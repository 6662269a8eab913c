//! The `pg_catalog` relations and their columns, read afresh ([`rows`](super::rows))
//! each time a query reads them:
//! the ones psql's `\d` family and drivers read (namespaces, classes, attributes,
//! types, indexes, constraints, access methods, databases, roles), and, empty, the ones
//! they also join against for features pmdb does not have (policies, inheritance,
//! publications, triggers, …).

use std::fmt;
use std::sync::Arc;

use super::rows::{
    Cell, access_methods, activity, attrdefs, attributes, classes, constraints, databases,
    description_rows, enum_labels, extensions, index_list, indexes, materialized_view_list,
    namespaces, prepared_statements, roles, sequences, standard_columns, standard_sequences,
    standard_tables, standard_views, table_list, tablespaces, types, view_list,
};
use super::source::{Origin, Source};
use async_trait::async_trait;
use datafusion::arrow::array::{
    ArrayRef, BooleanBuilder, Float32Builder, Int16Builder, Int64Builder, ListBuilder, RecordBatch,
    StringBuilder, TimestampMicrosecondBuilder, UInt32Builder,
};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimeUnit};
use datafusion::catalog::{MemTable, MemorySchemaProvider, SchemaProvider, Session, TableProvider};
use datafusion::common::Result as DfResult;
use datafusion::datasource::TableType;
use datafusion::logical_expr::Expr;
use datafusion::physical_plan::ExecutionPlan;
use pmdb_sql::catalog::Viewer;

use crate::session_statements::SessionStatements;

#[derive(Clone, Copy)]
enum Kind {
    Int,
    /// An object identifier, unsigned 32 bits as in PostgreSQL (type `oid`, so that an
    /// array of them is `oid[]`, which drivers decode without asking).
    Oid,
    Text,
    /// One character, as PostgreSQL's `"char"` (`typtype`, which drivers read as a
    /// byte).
    Char,
    Bool,
    Real,
    /// timestamptz.
    Time,
    /// Column numbers: `int2[]` (`conkey`).
    ColumnNumbers,
    /// Column numbers as `pg_index` has them: `int2vector`.
    ColumnVector,
    /// Object identifiers as `pg_index` has them: `oidvector`.
    Oids,
    /// Names: `text[]`.
    Texts,
}

type Rows = fn(&Source) -> Vec<Vec<Cell>>;

struct Relation {
    name: &'static str,
    columns: &'static [(&'static str, Kind)],
    /// `None`: always empty.
    rows: Option<Rows>,
}

use Kind as K;

const RELATIONS: &[Relation] = &[
    Relation {
        name: "pg_namespace",
        columns: &[
            ("oid", K::Oid),
            ("nspname", K::Text),
            ("nspowner", K::Oid),
            ("nspacl", K::Text),
        ],
        rows: Some(namespaces),
    },
    Relation {
        name: "pg_class",
        columns: &[
            ("oid", K::Oid),
            ("relname", K::Text),
            ("relnamespace", K::Oid),
            ("reltype", K::Oid),
            ("reloftype", K::Oid),
            ("relowner", K::Oid),
            ("relam", K::Oid),
            ("relfilenode", K::Oid),
            ("reltablespace", K::Oid),
            ("relpages", K::Int),
            ("reltuples", K::Real),
            ("relallvisible", K::Int),
            ("reltoastrelid", K::Oid),
            ("relhasindex", K::Bool),
            ("relisshared", K::Bool),
            ("relpersistence", K::Text),
            ("relkind", K::Text),
            ("relnatts", K::Int),
            ("relchecks", K::Int),
            ("relhasrules", K::Bool),
            ("relhastriggers", K::Bool),
            ("relhassubclass", K::Bool),
            ("relrowsecurity", K::Bool),
            ("relforcerowsecurity", K::Bool),
            ("relispopulated", K::Bool),
            ("relreplident", K::Text),
            ("relispartition", K::Bool),
            ("relrewrite", K::Oid),
            ("relacl", K::Text),
            ("reloptions", K::Text),
            ("relpartbound", K::Text),
        ],
        rows: Some(classes),
    },
    Relation {
        name: "pg_attribute",
        columns: &[
            ("attrelid", K::Oid),
            ("attname", K::Text),
            ("atttypid", K::Oid),
            ("attlen", K::Int),
            ("attnum", K::Int),
            ("attndims", K::Int),
            ("atttypmod", K::Int),
            ("attnotnull", K::Bool),
            ("atthasdef", K::Bool),
            ("atthasmissing", K::Bool),
            ("attidentity", K::Text),
            ("attgenerated", K::Text),
            ("attisdropped", K::Bool),
            ("attislocal", K::Bool),
            ("attinhcount", K::Int),
            ("attstorage", K::Text),
            ("attcompression", K::Text),
            ("attcollation", K::Oid),
            ("attstattarget", K::Int),
            ("attacl", K::Text),
            ("attoptions", K::Text),
        ],
        rows: Some(attributes),
    },
    Relation {
        name: "pg_type",
        columns: &[
            ("oid", K::Oid),
            ("typname", K::Text),
            ("typnamespace", K::Oid),
            ("typowner", K::Oid),
            ("typlen", K::Int),
            ("typbyval", K::Bool),
            ("typtype", K::Char),
            ("typcategory", K::Text),
            ("typisdefined", K::Bool),
            ("typdelim", K::Text),
            ("typrelid", K::Oid),
            ("typelem", K::Oid),
            ("typarray", K::Oid),
            ("typbasetype", K::Oid),
            ("typtypmod", K::Int),
            ("typnotnull", K::Bool),
            ("typcollation", K::Oid),
            ("typinput", K::Text),
        ],
        rows: Some(types),
    },
    Relation {
        name: "pg_index",
        columns: &[
            ("indexrelid", K::Oid),
            ("indrelid", K::Oid),
            ("indnatts", K::Int),
            ("indnkeyatts", K::Int),
            ("indisunique", K::Bool),
            ("indisprimary", K::Bool),
            ("indisexclusion", K::Bool),
            ("indimmediate", K::Bool),
            ("indisclustered", K::Bool),
            ("indisvalid", K::Bool),
            ("indcheckxmin", K::Bool),
            ("indisready", K::Bool),
            ("indislive", K::Bool),
            ("indisreplident", K::Bool),
            ("indnullsnotdistinct", K::Bool),
            ("indkey", K::ColumnVector),
            ("indclass", K::Oids),
            ("indoption", K::ColumnVector),
            ("indexprs", K::Text),
            ("indpred", K::Text),
        ],
        rows: Some(indexes),
    },
    Relation {
        name: "pg_constraint",
        columns: &[
            ("oid", K::Oid),
            ("conname", K::Text),
            ("connamespace", K::Oid),
            ("contype", K::Text),
            ("condeferrable", K::Bool),
            ("condeferred", K::Bool),
            ("convalidated", K::Bool),
            ("conrelid", K::Oid),
            ("contypid", K::Oid),
            ("conindid", K::Oid),
            ("confrelid", K::Oid),
            ("conislocal", K::Bool),
            ("coninhcount", K::Int),
            ("conkey", K::ColumnNumbers),
            ("confkey", K::ColumnNumbers),
            ("confupdtype", K::Text),
            ("confdeltype", K::Text),
            ("confmatchtype", K::Text),
            ("conparentid", K::Oid),
        ],
        rows: Some(constraints),
    },
    Relation {
        name: "pg_am",
        columns: &[("oid", K::Oid), ("amname", K::Text), ("amtype", K::Text)],
        rows: Some(access_methods),
    },
    Relation {
        name: "pg_tablespace",
        columns: &[
            ("oid", K::Oid),
            ("spcname", K::Text),
            ("spcowner", K::Oid),
            ("spcacl", K::Text),
            ("spcoptions", K::Text),
        ],
        rows: Some(tablespaces),
    },
    Relation {
        name: "pg_database",
        columns: &[
            ("oid", K::Oid),
            ("datname", K::Text),
            ("datdba", K::Oid),
            ("encoding", K::Int),
            ("datlocprovider", K::Text),
            ("datistemplate", K::Bool),
            ("datallowconn", K::Bool),
            ("datconnlimit", K::Int),
            ("datcollate", K::Text),
            ("datctype", K::Text),
            ("daticulocale", K::Text),
            ("datacl", K::Text),
        ],
        rows: Some(databases),
    },
    Relation {
        name: "pg_stat_activity",
        columns: &[
            ("datid", K::Oid),
            ("datname", K::Text),
            ("pid", K::Int),
            ("leader_pid", K::Int),
            ("usesysid", K::Oid),
            ("usename", K::Text),
            ("application_name", K::Text),
            ("client_addr", K::Text),
            ("client_hostname", K::Text),
            ("client_port", K::Int),
            ("backend_start", K::Time),
            ("xact_start", K::Time),
            ("query_start", K::Time),
            ("state_change", K::Time),
            ("wait_event_type", K::Text),
            ("wait_event", K::Text),
            ("state", K::Text),
            ("backend_xid", K::Int),
            ("backend_xmin", K::Int),
            ("query_id", K::Int),
            ("query", K::Text),
            ("backend_type", K::Text),
        ],
        rows: Some(activity),
    },
    Relation {
        name: "pg_roles",
        columns: &[
            ("oid", K::Oid),
            ("rolname", K::Text),
            ("rolsuper", K::Bool),
            ("rolinherit", K::Bool),
            ("rolcreaterole", K::Bool),
            ("rolcreatedb", K::Bool),
            ("rolcanlogin", K::Bool),
            ("rolreplication", K::Bool),
            ("rolconnlimit", K::Int),
            ("rolpassword", K::Text),
            ("rolvaliduntil", K::Text),
            ("rolbypassrls", K::Bool),
            ("rolconfig", K::Text),
        ],
        rows: Some(roles),
    },
    Relation {
        name: "pg_tables",
        columns: &[
            ("schemaname", K::Text),
            ("tablename", K::Text),
            ("tableowner", K::Text),
            ("tablespace", K::Text),
            ("hasindexes", K::Bool),
            ("hasrules", K::Bool),
            ("hastriggers", K::Bool),
            ("rowsecurity", K::Bool),
        ],
        rows: Some(table_list),
    },
    Relation {
        name: "pg_prepared_statements",
        columns: &[
            ("name", K::Text),
            ("statement", K::Text),
            ("prepare_time", K::Time),
            ("parameter_types", K::Texts),
            ("from_sql", K::Bool),
            ("generic_plans", K::Int),
            ("custom_plans", K::Int),
        ],
        rows: Some(prepared_statements),
    },
    // information_schema.tables, .views, .columns and .sequences, which the adapter
    // reads here (see super::rewrite::STANDARD_RELATIONS).
    Relation {
        name: "pmdb_standard_sequences",
        columns: &[
            ("sequence_catalog", K::Text),
            ("sequence_schema", K::Text),
            ("sequence_name", K::Text),
            ("data_type", K::Text),
            ("numeric_precision", K::Int),
            ("numeric_precision_radix", K::Int),
            ("numeric_scale", K::Int),
            ("start_value", K::Text),
            ("minimum_value", K::Text),
            ("maximum_value", K::Text),
            ("increment", K::Text),
            ("cycle_option", K::Text),
        ],
        rows: Some(standard_sequences),
    },
    Relation {
        name: "pmdb_standard_tables",
        columns: &[
            ("table_catalog", K::Text),
            ("table_schema", K::Text),
            ("table_name", K::Text),
            ("table_type", K::Text),
            ("self_referencing_column_name", K::Text),
            ("reference_generation", K::Text),
            ("user_defined_type_catalog", K::Text),
            ("user_defined_type_schema", K::Text),
            ("user_defined_type_name", K::Text),
            ("is_insertable_into", K::Text),
            ("is_typed", K::Text),
            ("commit_action", K::Text),
        ],
        rows: Some(standard_tables),
    },
    Relation {
        name: "pmdb_standard_views",
        columns: &[
            ("table_catalog", K::Text),
            ("table_schema", K::Text),
            ("table_name", K::Text),
            ("view_definition", K::Text),
            ("check_option", K::Text),
            ("is_updatable", K::Text),
            ("is_insertable_into", K::Text),
            ("is_trigger_updatable", K::Text),
            ("is_trigger_deletable", K::Text),
            ("is_trigger_insertable_into", K::Text),
        ],
        rows: Some(standard_views),
    },
    Relation {
        name: "pmdb_standard_columns",
        columns: &[
            ("table_catalog", K::Text),
            ("table_schema", K::Text),
            ("table_name", K::Text),
            ("column_name", K::Text),
            ("ordinal_position", K::Int),
            ("column_default", K::Text),
            ("is_nullable", K::Text),
            ("data_type", K::Text),
            ("character_maximum_length", K::Int),
            ("character_octet_length", K::Int),
            ("numeric_precision", K::Int),
            ("numeric_precision_radix", K::Int),
            ("numeric_scale", K::Int),
            ("datetime_precision", K::Int),
            ("interval_type", K::Text),
            ("interval_precision", K::Int),
            ("character_set_catalog", K::Text),
            ("character_set_schema", K::Text),
            ("character_set_name", K::Text),
            ("collation_catalog", K::Text),
            ("collation_schema", K::Text),
            ("collation_name", K::Text),
            ("domain_catalog", K::Text),
            ("domain_schema", K::Text),
            ("domain_name", K::Text),
            ("udt_catalog", K::Text),
            ("udt_schema", K::Text),
            ("udt_name", K::Text),
            ("scope_catalog", K::Text),
            ("scope_schema", K::Text),
            ("scope_name", K::Text),
            ("maximum_cardinality", K::Int),
            ("dtd_identifier", K::Text),
            ("is_self_referencing", K::Text),
            ("is_identity", K::Text),
            ("identity_generation", K::Text),
            ("identity_start", K::Text),
            ("identity_increment", K::Text),
            ("identity_maximum", K::Text),
            ("identity_minimum", K::Text),
            ("identity_cycle", K::Text),
            ("is_generated", K::Text),
            ("generation_expression", K::Text),
            ("is_updatable", K::Text),
        ],
        rows: Some(standard_columns),
    },
    Relation {
        name: "pg_views",
        columns: &[
            ("schemaname", K::Text),
            ("viewname", K::Text),
            ("viewowner", K::Text),
            ("definition", K::Text),
        ],
        rows: Some(view_list),
    },
    Relation {
        name: "pg_indexes",
        columns: &[
            ("schemaname", K::Text),
            ("tablename", K::Text),
            ("indexname", K::Text),
            ("tablespace", K::Text),
            ("indexdef", K::Text),
        ],
        rows: Some(index_list),
    },
    Relation {
        name: "pg_matviews",
        columns: &[
            ("schemaname", K::Text),
            ("matviewname", K::Text),
            ("matviewowner", K::Text),
            ("tablespace", K::Text),
            ("hasindexes", K::Bool),
            ("ispopulated", K::Bool),
            ("definition", K::Text),
        ],
        rows: Some(materialized_view_list),
    },
    Relation {
        name: "pg_attrdef",
        columns: &[
            ("oid", K::Oid),
            ("adrelid", K::Oid),
            ("adnum", K::Int),
            ("adbin", K::Text),
        ],
        rows: Some(attrdefs),
    },
    empty(
        "pg_collation",
        &[
            ("oid", K::Oid),
            ("collname", K::Text),
            ("collnamespace", K::Oid),
        ],
    ),
    Relation {
        name: "pg_description",
        columns: &[
            ("objoid", K::Oid),
            ("classoid", K::Oid),
            ("objsubid", K::Int),
            ("description", K::Text),
        ],
        rows: Some(description_rows),
    },
    empty(
        "pg_inherits",
        &[
            ("inhrelid", K::Oid),
            ("inhparent", K::Oid),
            ("inhseqno", K::Int),
            ("inhdetachpending", K::Bool),
        ],
    ),
    empty(
        "pg_policy",
        &[
            ("oid", K::Oid),
            ("polname", K::Text),
            ("polrelid", K::Oid),
            ("polcmd", K::Text),
            ("polpermissive", K::Bool),
            ("polroles", K::Text),
            ("polqual", K::Text),
            ("polwithcheck", K::Text),
        ],
    ),
    empty(
        "pg_statistic_ext",
        &[
            ("oid", K::Oid),
            ("stxrelid", K::Oid),
            ("stxname", K::Text),
            ("stxnamespace", K::Oid),
            ("stxkind", K::Text),
            ("stxstattarget", K::Int),
        ],
    ),
    empty(
        "pg_publication",
        &[
            ("oid", K::Oid),
            ("pubname", K::Text),
            ("puballtables", K::Bool),
        ],
    ),
    empty(
        "pg_publication_namespace",
        &[("oid", K::Oid), ("pnpubid", K::Oid), ("pnnspid", K::Oid)],
    ),
    empty(
        "pg_publication_rel",
        &[
            ("oid", K::Oid),
            ("prpubid", K::Oid),
            ("prrelid", K::Oid),
            ("prqual", K::Text),
            ("prattrs", K::Text),
        ],
    ),
    empty(
        "pg_trigger",
        &[
            ("oid", K::Oid),
            ("tgrelid", K::Oid),
            ("tgname", K::Text),
            ("tgenabled", K::Text),
            ("tgisinternal", K::Bool),
        ],
    ),
    empty(
        "pg_rewrite",
        &[("oid", K::Oid), ("rulename", K::Text), ("ev_class", K::Oid)],
    ),
    empty(
        "pg_auth_members",
        &[
            ("roleid", K::Oid),
            ("member", K::Oid),
            ("grantor", K::Oid),
            ("admin_option", K::Bool),
        ],
    ),
    empty(
        "pg_foreign_table",
        &[("ftrelid", K::Oid), ("ftserver", K::Oid)],
    ),
    empty(
        "pg_partitioned_table",
        &[("partrelid", K::Oid), ("partstrat", K::Text)],
    ),
    Relation {
        name: "pg_enum",
        columns: &[
            ("oid", K::Oid),
            ("enumtypid", K::Oid),
            ("enumsortorder", K::Real),
            ("enumlabel", K::Text),
        ],
        rows: Some(enum_labels),
    },
    Relation {
        name: "pg_sequence",
        columns: &[
            ("seqrelid", K::Oid),
            ("seqtypid", K::Oid),
            ("seqstart", K::Int),
            ("seqincrement", K::Int),
            ("seqmax", K::Int),
            ("seqmin", K::Int),
            ("seqcache", K::Int),
            ("seqcycle", K::Bool),
        ],
        rows: Some(sequences),
    },
    Relation {
        name: "pg_extension",
        columns: &[
            ("oid", K::Oid),
            ("extname", K::Text),
            ("extowner", K::Oid),
            ("extnamespace", K::Oid),
            ("extrelocatable", K::Bool),
            ("extversion", K::Text),
            ("extconfig", K::Text),
            ("extcondition", K::Text),
        ],
        rows: Some(extensions),
    },
    empty(
        "pg_proc",
        &[
            ("oid", K::Oid),
            ("proname", K::Text),
            ("pronamespace", K::Oid),
            ("prokind", K::Text),
            ("prorettype", K::Oid),
        ],
    ),
    empty(
        "pg_range",
        &[
            ("rngtypid", K::Oid),
            ("rngsubtype", K::Oid),
            ("rngmultitypid", K::Oid),
        ],
    ),
    empty(
        "pg_depend",
        &[
            ("classid", K::Oid),
            ("objid", K::Oid),
            ("objsubid", K::Int),
            ("refclassid", K::Oid),
            ("refobjid", K::Oid),
            ("refobjsubid", K::Int),
            ("deptype", K::Text),
        ],
    ),
    empty("pg_event_trigger", &[("oid", K::Oid), ("evtname", K::Text)]),
    // pmdb's indexes order by each type's own order: no operator class is named, and
    // none is other than the default (which SQLAlchemy's index reflection asks for).
    empty(
        "pg_opclass",
        &[
            ("oid", K::Oid),
            ("opcmethod", K::Oid),
            ("opcname", K::Text),
            ("opcnamespace", K::Oid),
            ("opcowner", K::Oid),
            ("opcfamily", K::Oid),
            ("opcintype", K::Oid),
            ("opcdefault", K::Bool),
            ("opckeytype", K::Oid),
        ],
    ),
];

const fn empty(name: &'static str, columns: &'static [(&'static str, Kind)]) -> Relation {
    Relation {
        name,
        columns,
        rows: None,
    }
}

/// Whether `name` is one of the relations that never has a row.
pub fn always_empty(name: &str) -> bool {
    RELATIONS.iter().any(|r| r.name == name && r.rows.is_none())
}

/// Whether `name` is a relation of this schema.
pub fn is_relation(name: &str) -> bool {
    RELATIONS.iter().any(|r| r.name == name)
}

/// The `pg_catalog` schema over `source`.
pub fn schema(origin: &Arc<Origin>) -> DfResult<Arc<dyn SchemaProvider>> {
    let schema = MemorySchemaProvider::new();
    for relation in RELATIONS {
        let table = CatalogTable {
            relation,
            schema: Arc::new(Schema::new(
                relation
                    .columns
                    .iter()
                    .map(|(name, kind)| field(name, *kind))
                    .collect::<Vec<_>>(),
            )),
            origin: Arc::clone(origin),
        };
        schema.register_table(relation.name.to_owned(), Arc::new(table))?;
    }
    Ok(Arc::new(schema))
}

/// A catalog column: its Arrow type, and for a vector or a `"char"` the PostgreSQL type it is.
fn field(name: &str, kind: Kind) -> Field {
    let field = Field::new(name, data_type(kind), true);
    let vector = match kind {
        Kind::ColumnVector => "int2vector",
        Kind::Oids => "oidvector",
        Kind::Char => "char",
        _ => return field,
    };
    field.with_metadata(
        [(crate::encode::VECTOR_TYPE.to_owned(), vector.to_owned())]
            .into_iter()
            .collect(),
    )
}

fn data_type(kind: Kind) -> DataType {
    match kind {
        Kind::Int => DataType::Int64,
        Kind::Oid => DataType::UInt32,
        Kind::Text | Kind::Char => DataType::Utf8,
        Kind::Bool => DataType::Boolean,
        Kind::Real => DataType::Float32,
        Kind::Time => DataType::Timestamp(TimeUnit::Microsecond, Some("+00:00".into())),
        Kind::ColumnNumbers | Kind::ColumnVector => DataType::new_list(DataType::Int16, true),
        Kind::Oids => DataType::new_list(DataType::UInt32, true),
        Kind::Texts => DataType::new_list(DataType::Utf8, true),
    }
}

/// A relation read afresh at each scan, so it follows DDL, as the scanning session
/// sees the catalog.
struct CatalogTable {
    relation: &'static Relation,
    schema: SchemaRef,
    origin: Arc<Origin>,
}

impl fmt::Debug for CatalogTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "pg_catalog.{}", self.relation.name)
    }
}

impl CatalogTable {
    fn batch(&self, source: &Source) -> DfResult<RecordBatch> {
        let rows = self.relation.rows.map_or_else(Vec::new, |f| f(source));
        let columns = self
            .relation
            .columns
            .iter()
            .enumerate()
            .map(|(i, (_, kind))| column(*kind, rows.iter().map(|r| &r[i])))
            .collect::<Vec<_>>();
        Ok(RecordBatch::try_new(Arc::clone(&self.schema), columns)?)
    }
}

/// One column of cells; a cell of another kind than the column's is a null (the rows
/// below are written to match their relation's columns).
fn column<'a>(kind: Kind, cells: impl Iterator<Item = &'a Cell>) -> ArrayRef {
    match kind {
        Kind::Int => {
            let mut b = Int64Builder::new();
            cells.for_each(|c| b.append_option(if let Cell::Int(v) = c { Some(*v) } else { None }));
            Arc::new(b.finish())
        }
        Kind::Oid => {
            let mut b = UInt32Builder::new();
            cells.for_each(|c| {
                b.append_option(match c {
                    Cell::Int(v) => u32::try_from(*v).ok(),
                    _ => None,
                })
            });
            Arc::new(b.finish())
        }
        Kind::Text | Kind::Char => {
            let mut b = StringBuilder::new();
            cells.for_each(|c| b.append_option(if let Cell::Text(v) = c { Some(v) } else { None }));
            Arc::new(b.finish())
        }
        Kind::Bool => {
            let mut b = BooleanBuilder::new();
            cells.for_each(|c| {
                b.append_option(if let Cell::Bool(v) = c {
                    Some(*v)
                } else {
                    None
                })
            });
            Arc::new(b.finish())
        }
        Kind::Time => {
            let mut b = TimestampMicrosecondBuilder::new().with_timezone("+00:00");
            cells.for_each(|c| {
                b.append_option(if let Cell::Time(v) = c {
                    Some(*v)
                } else {
                    None
                })
            });
            Arc::new(b.finish())
        }
        Kind::ColumnNumbers | Kind::ColumnVector => {
            let mut b = ListBuilder::new(Int16Builder::new());
            cells.for_each(|c| match c {
                Cell::ColumnNumbers(v) => {
                    b.values().append_slice(v);
                    b.append(true);
                }
                _ => b.append(false),
            });
            Arc::new(b.finish())
        }
        Kind::Oids => {
            let mut b = ListBuilder::new(UInt32Builder::new());
            cells.for_each(|c| match c {
                Cell::Oids(v) => {
                    b.values().append_slice(v);
                    b.append(true);
                }
                _ => b.append(false),
            });
            Arc::new(b.finish())
        }
        Kind::Texts => {
            let mut b = ListBuilder::new(StringBuilder::new());
            cells.for_each(|c| match c {
                Cell::Texts(v) => {
                    v.iter().for_each(|t| b.values().append_value(t));
                    b.append(true);
                }
                _ => b.append(false),
            });
            Arc::new(b.finish())
        }
        Kind::Real => {
            let mut b = Float32Builder::new();
            cells.for_each(|c| {
                b.append_option(if let Cell::Real(v) = c {
                    Some(*v)
                } else {
                    None
                })
            });
            Arc::new(b.finish())
        }
    }
}

#[async_trait]
impl TableProvider for CatalogTable {
    fn schema(&self) -> SchemaRef {
        Arc::clone(&self.schema)
    }

    fn table_type(&self) -> TableType {
        TableType::View
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        let viewer = state.config().options().extensions.get::<Viewer>().copied();
        let statements = state.config().get_extension::<SessionStatements>();
        let batch = self.batch(&self.origin.read(viewer).preparing(statements))?;
        MemTable::try_new(Arc::clone(&self.schema), vec![vec![batch]])?
            .scan(state, projection, filters, limit)
            .await
    }
}
