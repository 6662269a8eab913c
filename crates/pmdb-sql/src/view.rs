//! A view's definition (its name, the names it gives its columns, and its query as SQL
//! text) and its persistent codec, the value of the view's entry in the catalog
//! subtable (`v` + name). Byte table: `docs/format.md`, "View definition".

use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::visit_relations;
use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
use datafusion::sql::sqlparser::parser::Parser;

use crate::error::CodecError;
use crate::names::{PUBLIC, RelName, object_name};
use crate::reader::put_name;
use crate::rowcode::MAX_COLUMNS;
use crate::schema::{MAX_IDENT, MAX_QUERY, get_type, put_type};
use crate::types::SqlType;

/// Format version: 2 adds the view's schema, 3 its result columns; versions 1 (in
/// `public`) and 2 (result columns unknown) are still read.
const VERSION: u8 = 3;
const VERSION_WITHOUT_OUTPUT: u8 = 2;
const VERSION_WITHOUT_SCHEMA: u8 = 1;
/// Prefix of a view entry's key; the view's name follows.
pub const VIEW_PREFIX: u8 = b'v';

/// `v` + name (see [`RelName::key_bytes`]): where a view's definition lives.
pub fn view_key(name: &RelName) -> Vec<u8> {
    let mut k = vec![VIEW_PREFIX];
    k.extend_from_slice(&name.key_bytes());
    k
}

/// The relations a stored query `text` names (tables, views, and names of its own
/// CTEs: a dependency is never missed, at worst one too many is seen); none if the
/// text no longer parses.
pub fn query_relations(text: &str) -> Vec<RelName> {
    let Ok(query) = Parser::new(&PostgreSqlDialect {})
        .try_with_sql(text)
        .and_then(|mut p| p.parse_query())
    else {
        return Vec::new();
    };
    let mut names = Vec::new();
    let _ = visit_relations(&query, |name| {
        if let Ok(n) = object_name(name)
            && !names.contains(&n)
        {
            names.push(n);
        }
        ControlFlow::<()>::Continue(())
    });
    names
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ViewDef {
    /// From the counter table ids come from: no table or sequence shares it.
    pub id: u64,
    pub schema: String,
    pub name: String,
    /// The names `CREATE VIEW v (a, b)` gives the first columns of the query; empty
    /// when it gives none.
    pub columns: Vec<String>,
    /// The query, as SQL text.
    pub query: String,
    /// The view's columns as it was made: each one's name and type, for the catalogs
    /// (`pg_attribute`); empty for a view made before pmdb kept them, or whose query
    /// gives a column of a type no table column has.
    pub output: Vec<(String, SqlType)>,
}

impl ViewDef {
    /// The view's name in its schema, as the catalog keys it.
    pub fn rel_name(&self) -> RelName {
        RelName::new(self.schema.clone(), self.name.clone())
    }

    /// Checks what a decoder or a CREATE VIEW must not let through.
    pub fn validate(&self) -> Result<(), String> {
        let ident = |what: &str, n: &str| {
            if n.is_empty() || n.len() > MAX_IDENT {
                Err(format!(
                    "a {what} name of {} bytes (1 to {MAX_IDENT})",
                    n.len()
                ))
            } else {
                Ok(())
            }
        };
        ident("view", &self.name)?;
        ident("schema", &self.schema)?;
        if self.columns.len() > MAX_COLUMNS {
            return Err(format!("{} column names", self.columns.len()));
        }
        for (i, c) in self.columns.iter().enumerate() {
            ident("column", c)?;
            if self.columns[..i].contains(c) {
                return Err(format!("column {c} is named twice"));
            }
        }
        if self.output.len() > MAX_COLUMNS {
            return Err(format!("{} result columns", self.output.len()));
        }
        for (c, _) in &self.output {
            ident("result column", c)?;
        }
        if self.query.is_empty() || self.query.len() > MAX_QUERY {
            return Err(format!(
                "a query of {} bytes (1 to {MAX_QUERY})",
                self.query.len()
            ));
        }
        Ok(())
    }

    /// The relations the query names (see [`query_relations`]).
    pub fn relations(&self) -> Vec<RelName> {
        query_relations(&self.query)
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut out = vec![VERSION];
        out.extend_from_slice(&self.id.to_le_bytes());
        put_name(&mut out, &self.name);
        out.extend_from_slice(&(self.columns.len() as u16).to_le_bytes());
        for c in &self.columns {
            put_name(&mut out, c);
        }
        out.extend_from_slice(&(self.query.len() as u32).to_le_bytes());
        out.extend_from_slice(self.query.as_bytes());
        put_name(&mut out, &self.schema);
        out.extend_from_slice(&(self.output.len() as u16).to_le_bytes());
        for (name, ty) in &self.output {
            put_name(&mut out, name);
            put_type(&mut out, *ty);
        }
        let crc = crc32fast::hash(&out);
        out.extend_from_slice(&crc.to_le_bytes());
        out
    }

    pub fn decode(bytes: &[u8]) -> Result<ViewDef, CodecError> {
        let invalid = |reason: String| CodecError::Invalid {
            what: "view definition",
            reason,
        };
        let mut r = crate::reader::checked("view definition", bytes)?;
        let version = r.byte()?;
        if !(VERSION_WITHOUT_SCHEMA..=VERSION).contains(&version) {
            return Err(invalid(format!("format version {version}")));
        }
        let id = u64::from_le_bytes(r.take()?);
        let name = r.name(MAX_IDENT)?;
        let n = u16::from_le_bytes(r.take()?) as usize;
        if n > MAX_COLUMNS {
            return Err(invalid(format!("{n} column names")));
        }
        let columns = (0..n)
            .map(|_| r.name(MAX_IDENT))
            .collect::<Result<Vec<_>, _>>()?;
        let len = u32::from_le_bytes(r.take()?) as usize;
        if len > MAX_QUERY {
            return Err(invalid(format!("a query of {len} bytes")));
        }
        let query = String::from_utf8(r.slice(len)?.to_vec())
            .map_err(|_| invalid("a query that is not UTF-8".into()))?;
        let schema = if version > VERSION_WITHOUT_SCHEMA {
            r.name(MAX_IDENT)?
        } else {
            PUBLIC.to_owned()
        };
        let mut output = Vec::new();
        if version > VERSION_WITHOUT_OUTPUT {
            let n = u16::from_le_bytes(r.take()?) as usize;
            if n > MAX_COLUMNS {
                return Err(invalid(format!("{n} result columns")));
            }
            for _ in 0..n {
                let name = r.name(MAX_IDENT)?;
                output.push((name, get_type(&mut r)?));
            }
        }
        if r.left() != 0 {
            return Err(invalid(format!("{} bytes after the end", r.left())));
        }
        let def = ViewDef {
            id,
            schema,
            name,
            columns,
            query,
            output,
        };
        def.validate().map_err(invalid)?;
        Ok(def)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn view(columns: usize, query: &str) -> ViewDef {
        ViewDef {
            id: 42,
            schema: "reports".into(),
            name: "recent_orders".into(),
            columns: (0..columns).map(|i| format!("c{i}")).collect(),
            query: query.into(),
            output: (0..columns)
                .map(|i| (format!("c{i}"), [SqlType::Int, SqlType::Text][i % 2]))
                .collect(),
        }
    }

    proptest! {
        #[test]
        fn definitions_round_trip(columns in 0usize..6, query in "[a-z0-9 ,*()=<>']{1,200}") {
            let def = view(columns, &query);
            prop_assert_eq!(ViewDef::decode(&def.encode()).unwrap(), def);
        }

        #[test]
        fn damage_is_reported(columns in 0usize..4, at in any::<prop::sample::Index>(),
                              bit in 0u8..8) {
            let def = view(columns, "SELECT k FROM t WHERE k > 1");
            let mut bytes = def.encode();
            let i = at.index(bytes.len());
            bytes[i] ^= 1 << bit;
            prop_assert!(ViewDef::decode(&bytes).is_err());
            prop_assert!(ViewDef::decode(&bytes[..i]).is_err());
        }
    }

    #[test]
    fn bad_definitions_are_refused() {
        assert!(view(0, "").validate().is_err());
        let mut def = view(2, "SELECT 1, 2");
        def.columns[1] = "c0".into();
        assert!(def.validate().unwrap_err().contains("twice"));
    }

    /// A definition as version 2 wrote it reads with its result columns unknown.
    #[test]
    fn version_2_definitions_are_read() {
        let mut def = view(2, "SELECT k, v FROM t");
        def.output.clear();
        let mut bytes = def.encode();
        bytes.truncate(bytes.len() - 4 - 2);
        bytes[0] = VERSION_WITHOUT_OUTPUT;
        let crc = crc32fast::hash(&bytes);
        bytes.extend_from_slice(&crc.to_le_bytes());
        assert_eq!(ViewDef::decode(&bytes).unwrap(), def);
    }

    /// A definition as version 1 wrote it (no schema) reads as a view of `public`.
    #[test]
    fn version_1_definitions_are_read_in_public() {
        let mut def = view(1, "SELECT k FROM t");
        def.schema = PUBLIC.into();
        def.output.clear();
        let mut bytes = def.encode();
        bytes.truncate(bytes.len() - 4 - 2 - 2 - PUBLIC.len());
        bytes[0] = VERSION_WITHOUT_SCHEMA;
        let crc = crc32fast::hash(&bytes);
        bytes.extend_from_slice(&crc.to_le_bytes());
        assert_eq!(ViewDef::decode(&bytes).unwrap(), def);
    }
}
