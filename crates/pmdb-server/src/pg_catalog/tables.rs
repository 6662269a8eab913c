//! The `pg_catalog` schema as Arrow tables, read afresh each time a query reads them:
//! the relations psql's `\d` family and drivers read (namespaces, classes, attributes,
//! types, indexes, constraints, access methods, databases, roles), each declared with
//! the type of its rows in [`rows`](super::rows), and, empty, the ones they also join
//! against for features pmdb does not have (policies, inheritance, publications,
//! triggers, …), declared here by their columns.

use std::fmt;
use std::sync::Arc;

use super::relation::{Cell, Kind, Relation};
use super::rows::{
    PgAm, PgAttrdef, PgAttribute, PgClass, PgConstraint, PgDatabase, PgDescription, PgEnum,
    PgExtension, PgIndex, PgIndexes, PgMatviews, PgNamespace, PgPreparedStatements, PgRoles,
    PgSequence, PgStatActivity, PgTables, PgTablespace, PgType, PgViews, StandardColumn,
    StandardSequence, StandardTable, StandardView,
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

use Kind as K;

const RELATIONS: &[Relation] = &[
    Relation::of::<PgNamespace>(),
    Relation::of::<PgClass>(),
    Relation::of::<PgAttribute>(),
    Relation::of::<PgType>(),
    Relation::of::<PgIndex>(),
    Relation::of::<PgConstraint>(),
    Relation::of::<PgAm>(),
    Relation::of::<PgTablespace>(),
    Relation::of::<PgDatabase>(),
    Relation::of::<PgStatActivity>(),
    Relation::of::<PgRoles>(),
    Relation::of::<PgTables>(),
    Relation::of::<PgPreparedStatements>(),
    // information_schema.tables, .views, .columns and .sequences, which the adapter
    // reads here (see super::rewrite::STANDARD_RELATIONS).
    Relation::of::<StandardSequence>(),
    Relation::of::<StandardTable>(),
    Relation::of::<StandardView>(),
    Relation::of::<StandardColumn>(),
    Relation::of::<PgViews>(),
    Relation::of::<PgIndexes>(),
    Relation::of::<PgMatviews>(),
    Relation::of::<PgAttrdef>(),
    Relation::empty(
        "pg_collation",
        &[
            ("oid", K::Oid),
            ("collname", K::Text),
            ("collnamespace", K::Oid),
        ],
    ),
    Relation::of::<PgDescription>(),
    Relation::empty(
        "pg_inherits",
        &[
            ("inhrelid", K::Oid),
            ("inhparent", K::Oid),
            ("inhseqno", K::Int),
            ("inhdetachpending", K::Bool),
        ],
    ),
    Relation::empty(
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
    Relation::empty(
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
    Relation::empty(
        "pg_publication",
        &[
            ("oid", K::Oid),
            ("pubname", K::Text),
            ("puballtables", K::Bool),
        ],
    ),
    Relation::empty(
        "pg_publication_namespace",
        &[("oid", K::Oid), ("pnpubid", K::Oid), ("pnnspid", K::Oid)],
    ),
    Relation::empty(
        "pg_publication_rel",
        &[
            ("oid", K::Oid),
            ("prpubid", K::Oid),
            ("prrelid", K::Oid),
            ("prqual", K::Text),
            ("prattrs", K::Text),
        ],
    ),
    Relation::empty(
        "pg_trigger",
        &[
            ("oid", K::Oid),
            ("tgrelid", K::Oid),
            ("tgname", K::Text),
            ("tgenabled", K::Text),
            ("tgisinternal", K::Bool),
        ],
    ),
    Relation::empty(
        "pg_rewrite",
        &[("oid", K::Oid), ("rulename", K::Text), ("ev_class", K::Oid)],
    ),
    Relation::empty(
        "pg_auth_members",
        &[
            ("roleid", K::Oid),
            ("member", K::Oid),
            ("grantor", K::Oid),
            ("admin_option", K::Bool),
        ],
    ),
    Relation::empty(
        "pg_foreign_table",
        &[("ftrelid", K::Oid), ("ftserver", K::Oid)],
    ),
    Relation::empty(
        "pg_partitioned_table",
        &[("partrelid", K::Oid), ("partstrat", K::Text)],
    ),
    Relation::of::<PgEnum>(),
    Relation::of::<PgSequence>(),
    Relation::of::<PgExtension>(),
    Relation::empty(
        "pg_proc",
        &[
            ("oid", K::Oid),
            ("proname", K::Text),
            ("pronamespace", K::Oid),
            ("prokind", K::Text),
            ("prorettype", K::Oid),
        ],
    ),
    Relation::empty(
        "pg_range",
        &[
            ("rngtypid", K::Oid),
            ("rngsubtype", K::Oid),
            ("rngmultitypid", K::Oid),
        ],
    ),
    Relation::empty(
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
    Relation::empty("pg_event_trigger", &[("oid", K::Oid), ("evtname", K::Text)]),
    // pmdb's indexes order by each type's own order: no operator class is named, and
    // none is other than the default (which SQLAlchemy's index reflection asks for).
    Relation::empty(
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
