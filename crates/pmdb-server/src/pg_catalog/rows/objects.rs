//! The relations of pmdb's objects: schemas (`pg_namespace`), relations (`pg_class`),
//! their columns (`pg_attribute`, `pg_attrdef`), indexes (`pg_index`), constraints
//! (`pg_constraint`), sequences (`pg_sequence`), comments (`pg_description`), and the
//! access methods and tablespaces they name.

use pmdb_sql::schema::{ColumnDef, Deferral, ForeignKeyDef, Identity, TableDef};

use super::shown::{column_numbers, has_indexes, shown_default};
use crate::pg_catalog::oids;
use crate::pg_catalog::relation::catalog_relation;
use crate::pg_catalog::source::Source;

catalog_relation! {
    PgNamespace = "pg_namespace" (rows: namespaces) {
        oid: Oid,
        nspname: Text,
        nspowner: Oid,
        nspacl: Text or null,
    }
}

fn namespaces(source: &Source) -> Vec<PgNamespace> {
    let mut names: Vec<String> = ["pg_catalog", "public", "information_schema"]
        .into_iter()
        .map(str::to_owned)
        .collect();
    names.extend(source.catalog().schemas().iter().map(|s| s.name.clone()));
    names
        .into_iter()
        .map(|name| PgNamespace {
            oid: source.namespace(&name),
            nspname: name,
            nspowner: oids::BOOTSTRAP_ROLE,
            nspacl: None,
        })
        .collect()
}

catalog_relation! {
    PgClass = "pg_class" (rows: classes) {
        oid: Oid,
        relname: Text,
        relnamespace: Oid,
        reltype: Oid,
        reloftype: Oid,
        relowner: Oid,
        relam: Oid,
        relfilenode: Oid,
        reltablespace: Oid,
        relpages: Int,
        reltuples: Real,
        relallvisible: Int,
        reltoastrelid: Oid,
        relhasindex: Bool,
        relisshared: Bool,
        relpersistence: Text,
        relkind: Text,
        relnatts: Int,
        relchecks: Int,
        relhasrules: Bool,
        relhastriggers: Bool,
        relhassubclass: Bool,
        relrowsecurity: Bool,
        relforcerowsecurity: Bool,
        relispopulated: Bool,
        relreplident: Text,
        relispartition: Bool,
        relrewrite: Oid,
        relacl: Text or null,
        reloptions: Text or null,
        relpartbound: Text or null,
    }
}

impl PgClass {
    /// A relation without constraints of its own (a sequence, a view, an index), in
    /// schema `schema`: its CHECK count 0, no triggers, no index.
    fn plain(
        source: &Source,
        oid: i64,
        name: &str,
        schema: &str,
        kind: &str,
        am: i64,
        columns: usize,
    ) -> PgClass {
        let temporary = pmdb_sql::is_temporary(schema);
        PgClass {
            oid,
            relname: name.to_owned(),
            relnamespace: source.namespace(schema),
            reltype: 0,
            reloftype: 0,
            relowner: oids::BOOTSTRAP_ROLE,
            relam: am,
            relfilenode: oid,
            reltablespace: 0,
            relpages: 0,
            reltuples: -1.0,
            relallvisible: 0,
            reltoastrelid: 0,
            relhasindex: false,
            relisshared: false,
            // A session's temporary schema holds its temporary relations.
            relpersistence: if temporary { "t" } else { "p" }.to_owned(),
            relkind: kind.to_owned(),
            relnatts: columns as i64,
            relchecks: 0,
            relhasrules: false,
            relhastriggers: false,
            relhassubclass: false,
            relrowsecurity: false,
            relforcerowsecurity: false,
            relispopulated: true,
            relreplident: "d".to_owned(),
            relispartition: false,
            relrewrite: 0,
            relacl: None,
            reloptions: None,
            relpartbound: None,
        }
    }
}

fn classes(source: &Source) -> Vec<PgClass> {
    let mut rows = Vec::new();
    for seq in source.catalog().sequences() {
        let def = seq.def();
        // A sequence's relation has PostgreSQL's three columns.
        let oid = oids::sequence(def);
        rows.push(PgClass::plain(
            source,
            oid,
            &def.name,
            &def.schema,
            "S",
            0,
            3,
        ));
    }
    for v in source.catalog().views() {
        let (oid, columns) = (oids::view(&v), v.output.len());
        rows.push(PgClass::plain(
            source, oid, &v.name, &v.schema, "v", 0, columns,
        ));
    }
    let tables = source.tables();
    for def in &tables {
        let referenced = tables
            .iter()
            .any(|t| t.foreign_keys.iter().any(|fk| fk.parent == def.id));
        let kind = if def.materialized.is_some() { "m" } else { "r" };
        let (oid, columns) = (oids::table(def), def.columns.len());
        rows.push(PgClass {
            relhasindex: has_indexes(def),
            // psql lists CHECK constraints only when this is not 0.
            relchecks: def.checks.len() as i64,
            // PostgreSQL's foreign keys are triggers, and psql lists them only when
            // this is set.
            relhastriggers: referenced || !def.foreign_keys.is_empty(),
            ..PgClass::plain(
                source,
                oid,
                &def.name,
                &def.schema,
                kind,
                oids::HEAP_AM,
                columns,
            )
        });
        if !def.primary_key.is_empty() {
            rows.push(PgClass::plain(
                source,
                oids::primary_key_index(def),
                &def.primary_key_constraint(),
                &def.schema,
                "i",
                oids::BTREE_AM,
                def.primary_key.len(),
            ));
        }
        for index in &def.indexes {
            rows.push(PgClass::plain(
                source,
                oids::index(def, index),
                &index.name,
                &def.schema,
                "i",
                oids::BTREE_AM,
                index.columns.len(),
            ));
        }
    }
    rows
}

catalog_relation! {
    PgAttribute = "pg_attribute" (rows: attributes) {
        attrelid: Oid,
        attname: Text,
        atttypid: Oid,
        attlen: Int,
        attnum: Int,
        attndims: Int,
        atttypmod: Int,
        attnotnull: Bool,
        atthasdef: Bool,
        atthasmissing: Bool,
        attidentity: Text,
        attgenerated: Text,
        attisdropped: Bool,
        attislocal: Bool,
        attinhcount: Int,
        attstorage: Text,
        attcompression: Text,
        attcollation: Oid,
        attstattarget: Int,
        attacl: Text or null,
        attoptions: Text or null,
    }
}

/// Column `c` as relation `relation`'s `num`th; `own`: a table's own column (an
/// index's and a view's have neither defaults nor identities of their own).
fn attribute(relation: i64, num: usize, c: &ColumnDef, own: bool) -> PgAttribute {
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
    PgAttribute {
        attrelid: relation,
        attname: c.name.clone(),
        atttypid: ty,
        attlen: len,
        attnum: num as i64,
        attndims: 0,
        atttypmod: typmod,
        attnotnull: c.not_null,
        // An identity column's sequence is its identity, not a default.
        atthasdef: own && c.default.is_some() && identity.is_empty(),
        atthasmissing: false,
        attidentity: identity.to_owned(),
        attgenerated: String::new(),
        attisdropped: false,
        attislocal: true,
        attinhcount: 0,
        // Stored inline ('p') when fixed-length, else extended ('x'), as PostgreSQL
        // shows them.
        attstorage: if len > 0 { "p" } else { "x" }.to_owned(),
        attcompression: String::new(),
        attcollation: 0,
        attstattarget: -1,
        attacl: None,
        attoptions: None,
    }
}

/// The columns of every table, of every index (numbered in the index) and of every
/// view.
fn attributes(source: &Source) -> Vec<PgAttribute> {
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

catalog_relation! {
    /// Column defaults, as PostgreSQL prints them (a sequence's name as a `regclass`);
    /// an identity column has none.
    PgAttrdef = "pg_attrdef" (rows: attrdefs) {
        oid: Oid,
        adrelid: Oid,
        adnum: Int,
        adbin: Text,
    }
}

fn attrdefs(source: &Source) -> Vec<PgAttrdef> {
    let mut rows = Vec::new();
    for def in source.tables() {
        for (i, c) in def.columns.iter().enumerate() {
            let Some(default) = c.default.as_ref().filter(|_| c.identity.is_none()) else {
                continue;
            };
            rows.push(PgAttrdef {
                oid: oids::attrdef(&def, i),
                adrelid: oids::table(&def),
                adnum: i as i64 + 1,
                adbin: shown_default(default),
            });
        }
    }
    rows
}

catalog_relation! {
    PgIndex = "pg_index" (rows: indexes) {
        indexrelid: Oid,
        indrelid: Oid,
        indnatts: Int,
        indnkeyatts: Int,
        indisunique: Bool,
        indisprimary: Bool,
        indisexclusion: Bool,
        indimmediate: Bool,
        indisclustered: Bool,
        indisvalid: Bool,
        indcheckxmin: Bool,
        indisready: Bool,
        indislive: Bool,
        indisreplident: Bool,
        indnullsnotdistinct: Bool,
        indkey: ColumnVector,
        indclass: Oids,
        indoption: ColumnVector,
        indexprs: Text or null,
        indpred: Text or null,
    }
}

impl PgIndex {
    fn new(index: i64, table: i64, columns: &[u16], primary: bool, unique: bool) -> PgIndex {
        let n = columns.len() as i64;
        PgIndex {
            indexrelid: index,
            indrelid: table,
            indnatts: n,
            indnkeyatts: n,
            indisunique: primary || unique,
            indisprimary: primary,
            indisexclusion: false,
            indimmediate: true,
            indisclustered: false,
            indisvalid: true,
            indcheckxmin: false,
            indisready: true,
            indislive: true,
            indisreplident: false,
            indnullsnotdistinct: false,
            indkey: column_numbers(columns),
            // Each column in its type's own order, ascending with nulls last.
            indclass: vec![0; columns.len()],
            indoption: vec![0; columns.len()],
            indexprs: None,
            indpred: None,
        }
    }
}

fn indexes(source: &Source) -> Vec<PgIndex> {
    let mut rows = Vec::new();
    for def in source.tables() {
        let table = oids::table(&def);
        if !def.primary_key.is_empty() {
            let oid = oids::primary_key_index(&def);
            rows.push(PgIndex::new(oid, table, &def.primary_key, true, true));
        }
        for index in &def.indexes {
            let oid = oids::index(&def, index);
            rows.push(PgIndex::new(
                oid,
                table,
                &index.columns,
                false,
                index.unique,
            ));
        }
    }
    rows
}

catalog_relation! {
    PgConstraint = "pg_constraint" (rows: constraints) {
        oid: Oid,
        conname: Text,
        connamespace: Oid,
        contype: Text,
        condeferrable: Bool,
        condeferred: Bool,
        convalidated: Bool,
        conrelid: Oid,
        contypid: Oid,
        conindid: Oid,
        confrelid: Oid,
        conislocal: Bool,
        coninhcount: Int,
        conkey: ColumnNumbers or null,
        confkey: ColumnNumbers or null,
        confupdtype: Text,
        confdeltype: Text,
        confmatchtype: Text,
        conparentid: Oid,
    }
}

impl PgConstraint {
    /// Constraint `name` of kind `kind` of table `def` (whose schema's oid is
    /// `namespace`), over `columns`, with the index that enforces it (0: none).
    fn new(
        (def, namespace): (&TableDef, i64),
        oid: i64,
        name: &str,
        kind: &str,
        index: i64,
        columns: &[u16],
    ) -> PgConstraint {
        PgConstraint {
            oid,
            conname: name.to_owned(),
            connamespace: namespace,
            contype: kind.to_owned(),
            condeferrable: false,
            condeferred: false,
            convalidated: true,
            conrelid: oids::table(def),
            contypid: 0,
            conindid: index,
            confrelid: 0,
            conislocal: true,
            coninhcount: 0,
            conkey: (!columns.is_empty()).then(|| column_numbers(columns)),
            confkey: None,
            confupdtype: " ".to_owned(),
            confdeltype: " ".to_owned(),
            confmatchtype: " ".to_owned(),
            // No partitions: no constraint is inherited from a parent's.
            conparentid: 0,
        }
    }

    /// Foreign key `fk`, `parent` the table it references (if the catalog has it).
    fn foreign_key(self, fk: &ForeignKeyDef, parent: Option<TableDef>) -> PgConstraint {
        let Some(parent) = parent else {
            return self;
        };
        PgConstraint {
            condeferrable: fk.deferral != Deferral::NotDeferrable,
            condeferred: fk.deferral == Deferral::InitiallyDeferred,
            confrelid: oids::table(&parent),
            confkey: Some(column_numbers(&fk.parent_columns)),
            confupdtype: fk.on_update.pg_code().to_string(),
            confdeltype: fk.on_delete.pg_code().to_string(),
            confmatchtype: "s".to_owned(),
            ..self
        }
    }
}

fn constraints(source: &Source) -> Vec<PgConstraint> {
    let mut rows = Vec::new();
    let tables = source.tables();
    for def in &tables {
        let of = (def, source.namespace(&def.schema));
        if !def.primary_key.is_empty() {
            rows.push(PgConstraint::new(
                of,
                oids::primary_key_constraint(def),
                &def.primary_key_constraint(),
                "p",
                oids::primary_key_index(def),
                &def.primary_key,
            ));
        }
        for index in def.indexes.iter().filter(|i| i.constraint) {
            rows.push(PgConstraint::new(
                of,
                oids::unique_constraint(def, index),
                &index.name,
                "u",
                oids::index(def, index),
                &index.columns,
            ));
        }
        for (i, fk) in def.foreign_keys.iter().enumerate() {
            let parent = tables.iter().find(|t| t.id == fk.parent).cloned();
            let row =
                PgConstraint::new(of, oids::foreign_key(def, i), &fk.name, "f", 0, &fk.columns);
            rows.push(row.foreign_key(fk, parent));
        }
        for (i, c) in def.checks.iter().enumerate() {
            rows.push(PgConstraint::new(
                of,
                oids::check(def, i),
                &c.name,
                "c",
                0,
                &[],
            ));
        }
    }
    rows
}

catalog_relation! {
    /// Each sequence's parameters.
    PgSequence = "pg_sequence" (rows: sequences) {
        seqrelid: Oid,
        seqtypid: Oid,
        seqstart: Int,
        seqincrement: Int,
        seqmax: Int,
        seqmin: Int,
        seqcache: Int,
        seqcycle: Bool,
    }
}

fn sequences(source: &Source) -> Vec<PgSequence> {
    source
        .catalog()
        .sequences()
        .iter()
        .map(|seq| {
            let d = seq.def();
            PgSequence {
                seqrelid: oids::sequence(d),
                seqtypid: oids::column_type(d.ty).0,
                seqstart: d.start,
                seqincrement: d.increment,
                seqmax: d.max,
                seqmin: d.min,
                seqcache: d.cache,
                seqcycle: d.cycle,
            }
        })
        .collect()
}

catalog_relation! {
    /// A comment: the object's oid, its catalog's oid, the column's number (0 for the
    /// object itself) and the text.
    PgDescription = "pg_description" (rows: descriptions) {
        objoid: Oid,
        classoid: Oid,
        objsubid: Int,
        description: Text,
    }
}

/// Every comment (`COMMENT ON`) of every table, its columns and its constraints.
pub fn descriptions(source: &Source) -> Vec<PgDescription> {
    let mut out = Vec::new();
    let comment = |objoid, classoid, objsubid, text: &String| PgDescription {
        objoid,
        classoid,
        objsubid,
        description: text.clone(),
    };
    for def in source.tables() {
        let table = oids::table(&def);
        if let Some(c) = &def.comment {
            out.push(comment(table, oids::PG_CLASS, 0, c));
        }
        for (i, col) in def.columns.iter().enumerate() {
            if let Some(c) = &col.comment {
                out.push(comment(table, oids::PG_CLASS, i as i64 + 1, c));
            }
        }
        for (name, c) in &def.constraint_comments {
            if let Some(oid) = oids::constraint_named(&def, name) {
                out.push(comment(oid, oids::PG_CONSTRAINT, 0, c));
            }
        }
    }
    out
}

catalog_relation! {
    PgAm = "pg_am" (rows: access_methods) {
        oid: Oid,
        amname: Text,
        amtype: Text,
    }
}

fn access_methods(_: &Source) -> Vec<PgAm> {
    [(oids::HEAP_AM, "heap", "t"), (oids::BTREE_AM, "btree", "i")]
        .into_iter()
        .map(|(oid, name, kind)| PgAm {
            oid,
            amname: name.to_owned(),
            amtype: kind.to_owned(),
        })
        .collect()
}

catalog_relation! {
    /// PostgreSQL's two tablespaces, with their oids; every relation is in the default
    /// one (`reltablespace` 0), as pmdb places data by its tiers, not by tablespace.
    PgTablespace = "pg_tablespace" (rows: tablespaces) {
        oid: Oid,
        spcname: Text,
        spcowner: Oid,
        spcacl: Text or null,
        spcoptions: Text or null,
    }
}

fn tablespaces(_: &Source) -> Vec<PgTablespace> {
    [(1663, "pg_default"), (1664, "pg_global")]
        .into_iter()
        .map(|(oid, name)| PgTablespace {
            oid,
            spcname: name.to_owned(),
            spcowner: oids::BOOTSTRAP_ROLE,
            spcacl: None,
            spcoptions: None,
        })
        .collect()
}
