//! A table's definition (columns, primary key, secondary indexes) and its persistent
//! codec, the value of the table's entry in the catalog subtable. Byte table:
//! `docs/format.md`, "Table definition".

use crate::error::CodecError;
use crate::reader::Reader;
use crate::rowcode::MAX_COLUMNS;
use crate::types::{MAX_DECIMAL_PRECISION, SqlType};

/// Format version of an encoded definition.
const VERSION: u8 = 1;
/// Longest table, column or index name, in bytes (as PostgreSQL's 63, rounded up).
pub const MAX_IDENT: usize = 128;
/// Most secondary indexes on one table.
pub const MAX_INDEXES: usize = 64;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ColumnDef {
    pub name: String,
    pub ty: SqlType,
    pub not_null: bool,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IndexDef {
    /// Names the index's subtable; never reused within its table.
    pub id: u32,
    pub name: String,
    /// Positions of the indexed columns in the table.
    pub columns: Vec<u16>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableDef {
    /// Names the table's subtables; never reused within a database.
    pub id: u64,
    pub name: String,
    pub columns: Vec<ColumnDef>,
    /// Positions of the primary-key columns; empty for a table keyed by a hidden row id.
    pub primary_key: Vec<u16>,
    pub indexes: Vec<IndexDef>,
    /// The id the next index gets.
    pub next_index_id: u32,
}

impl TableDef {
    /// The subtable holding the rows.
    pub fn rows_subtable(&self) -> String {
        format!("sql.{}", self.id)
    }

    /// The subtable holding the columnar segments.
    pub fn segments_subtable(&self) -> String {
        format!("sql.{}.columns", self.id)
    }

    pub fn index_subtable(&self, index: &IndexDef) -> String {
        format!("sql.{}.{}", self.id, index.id)
    }

    pub fn column(&self, name: &str) -> Option<usize> {
        self.columns.iter().position(|c| c.name == name)
    }

    pub fn types(&self) -> Vec<SqlType> {
        self.columns.iter().map(|c| c.ty).collect()
    }

    /// Types of the row key's columns (one BIGINT for the hidden row id).
    pub fn key_types(&self) -> Vec<SqlType> {
        if self.primary_key.is_empty() {
            vec![SqlType::BigInt]
        } else {
            self.primary_key
                .iter()
                .map(|&i| self.columns[i as usize].ty)
                .collect()
        }
    }

    /// Checks what a decoder or a CREATE statement must not let through.
    pub fn validate(&self) -> Result<(), String> {
        check_ident("table", &self.name)?;
        if self.columns.is_empty() || self.columns.len() > MAX_COLUMNS {
            return Err(format!(
                "a table has 1 to {MAX_COLUMNS} columns; {} has {}",
                self.name,
                self.columns.len()
            ));
        }
        for (i, c) in self.columns.iter().enumerate() {
            check_ident("column", &c.name)?;
            if self.columns[..i].iter().any(|o| o.name == c.name) {
                return Err(format!("column {} is named twice", c.name));
            }
            if let SqlType::Decimal { precision, scale } = c.ty
                && (precision == 0 || precision > MAX_DECIMAL_PRECISION || scale > precision)
            {
                return Err(format!(
                    "column {}: DECIMAL({precision},{scale}) needs 1 <= precision <= \
                     {MAX_DECIMAL_PRECISION} and scale <= precision",
                    c.name
                ));
            }
            if let SqlType::Char(0) | SqlType::Varchar(0) = c.ty {
                return Err(format!("column {}: a length of 0", c.name));
            }
        }
        check_positions("primary key", &self.primary_key, self.columns.len())?;
        if self.indexes.len() > MAX_INDEXES {
            return Err(format!("more than {MAX_INDEXES} indexes on {}", self.name));
        }
        for (i, ix) in self.indexes.iter().enumerate() {
            check_ident("index", &ix.name)?;
            if ix.columns.is_empty() {
                return Err(format!("index {} has no columns", ix.name));
            }
            check_positions("index", &ix.columns, self.columns.len())?;
            if ix.id >= self.next_index_id {
                return Err(format!("index {} has an id not yet given out", ix.name));
            }
            if self.indexes[..i]
                .iter()
                .any(|o| o.id == ix.id || o.name == ix.name)
            {
                return Err(format!("index {} is defined twice", ix.name));
            }
        }
        Ok(())
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut out = vec![VERSION];
        out.extend_from_slice(&self.id.to_le_bytes());
        put_str(&mut out, &self.name);
        out.extend_from_slice(&(self.columns.len() as u16).to_le_bytes());
        for c in &self.columns {
            put_str(&mut out, &c.name);
            put_type(&mut out, c.ty);
            out.push(u8::from(c.not_null));
        }
        put_positions(&mut out, &self.primary_key);
        out.extend_from_slice(&(self.indexes.len() as u16).to_le_bytes());
        for ix in &self.indexes {
            out.extend_from_slice(&ix.id.to_le_bytes());
            put_str(&mut out, &ix.name);
            put_positions(&mut out, &ix.columns);
        }
        out.extend_from_slice(&self.next_index_id.to_le_bytes());
        let crc = crc32fast::hash(&out);
        out.extend_from_slice(&crc.to_le_bytes());
        out
    }

    pub fn decode(bytes: &[u8]) -> Result<TableDef, CodecError> {
        let invalid = |reason: String| CodecError::Invalid {
            what: "table definition",
            reason,
        };
        let body_len = bytes
            .len()
            .checked_sub(4)
            .ok_or_else(|| invalid(format!("{} bytes", bytes.len())))?;
        let (body, crc) = bytes.split_at(body_len);
        let crc = u32::from_le_bytes(crc.try_into().expect("4 bytes"));
        if crc32fast::hash(body) != crc {
            return Err(invalid("checksum mismatch".into()));
        }
        let mut r = Reader::new("table definition", body);
        let version = r.byte()?;
        if version != VERSION {
            return Err(invalid(format!("format version {version}")));
        }
        let id = u64::from_le_bytes(r.take()?);
        let name = get_str(&mut r)?;
        let ncols = u16::from_le_bytes(r.take()?) as usize;
        if ncols > MAX_COLUMNS {
            return Err(invalid(format!("{ncols} columns")));
        }
        let mut columns = Vec::with_capacity(ncols);
        for _ in 0..ncols {
            let name = get_str(&mut r)?;
            let ty = get_type(&mut r)?;
            let not_null = match r.byte()? {
                0 => false,
                1 => true,
                b => return Err(invalid(format!("NOT NULL flag {b:#04x}"))),
            };
            columns.push(ColumnDef { name, ty, not_null });
        }
        let primary_key = get_positions(&mut r)?;
        let nindexes = u16::from_le_bytes(r.take()?) as usize;
        if nindexes > MAX_INDEXES {
            return Err(invalid(format!("{nindexes} indexes")));
        }
        let mut indexes = Vec::with_capacity(nindexes);
        for _ in 0..nindexes {
            let id = u32::from_le_bytes(r.take()?);
            let name = get_str(&mut r)?;
            let columns = get_positions(&mut r)?;
            indexes.push(IndexDef { id, name, columns });
        }
        let next_index_id = u32::from_le_bytes(r.take()?);
        if r.left() != 0 {
            return Err(invalid(format!("{} bytes after the end", r.left())));
        }
        let def = TableDef {
            id,
            name,
            columns,
            primary_key,
            indexes,
            next_index_id,
        };
        def.validate().map_err(invalid)?;
        Ok(def)
    }
}

fn check_ident(what: &str, name: &str) -> Result<(), String> {
    if name.is_empty() || name.len() > MAX_IDENT {
        Err(format!(
            "a {what} name has 1 to {MAX_IDENT} bytes; {name:?} has {}",
            name.len()
        ))
    } else {
        Ok(())
    }
}

fn check_positions(what: &str, positions: &[u16], columns: usize) -> Result<(), String> {
    for (i, &p) in positions.iter().enumerate() {
        if p as usize >= columns {
            return Err(format!("{what} names column {p} of {columns}"));
        }
        if positions[..i].contains(&p) {
            return Err(format!("{what} names column {p} twice"));
        }
    }
    Ok(())
}

fn put_str(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(&(s.len() as u16).to_le_bytes());
    out.extend_from_slice(s.as_bytes());
}

fn get_str(r: &mut Reader<'_>) -> Result<String, CodecError> {
    let len = u16::from_le_bytes(r.take()?) as usize;
    if len > MAX_IDENT {
        return Err(r.invalid(format!("a name of {len} bytes")));
    }
    String::from_utf8(r.slice(len)?.to_vec())
        .map_err(|_| r.invalid("a name that is not UTF-8".into()))
}

fn put_positions(out: &mut Vec<u8>, positions: &[u16]) {
    out.extend_from_slice(&(positions.len() as u16).to_le_bytes());
    for p in positions {
        out.extend_from_slice(&p.to_le_bytes());
    }
}

fn get_positions(r: &mut Reader<'_>) -> Result<Vec<u16>, CodecError> {
    let n = u16::from_le_bytes(r.take()?) as usize;
    if n > MAX_COLUMNS {
        return Err(r.invalid(format!("{n} column positions")));
    }
    (0..n).map(|_| Ok(u16::from_le_bytes(r.take()?))).collect()
}

/// Type tags of the codec; their values are persistent.
fn put_type(out: &mut Vec<u8>, ty: SqlType) {
    match ty {
        SqlType::SmallInt => out.push(1),
        SqlType::Int => out.push(2),
        SqlType::BigInt => out.push(3),
        SqlType::Decimal { precision, scale } => out.extend_from_slice(&[4, precision, scale]),
        SqlType::Real => out.push(5),
        SqlType::Double => out.push(6),
        SqlType::Char(n) => {
            out.push(7);
            out.extend_from_slice(&n.to_le_bytes());
        }
        SqlType::Varchar(n) => {
            out.push(8);
            out.extend_from_slice(&n.to_le_bytes());
        }
        SqlType::Text => out.push(9),
        SqlType::Date => out.push(10),
        SqlType::Timestamp => out.push(11),
        SqlType::Boolean => out.push(12),
    }
}

fn get_type(r: &mut Reader<'_>) -> Result<SqlType, CodecError> {
    Ok(match r.byte()? {
        1 => SqlType::SmallInt,
        2 => SqlType::Int,
        3 => SqlType::BigInt,
        4 => {
            let [precision, scale] = r.take()?;
            SqlType::Decimal { precision, scale }
        }
        5 => SqlType::Real,
        6 => SqlType::Double,
        7 => SqlType::Char(u32::from_le_bytes(r.take()?)),
        8 => SqlType::Varchar(u32::from_le_bytes(r.take()?)),
        9 => SqlType::Text,
        10 => SqlType::Date,
        11 => SqlType::Timestamp,
        12 => SqlType::Boolean,
        t => return Err(r.invalid(format!("type tag {t}"))),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::tests::any_type;
    use proptest::prelude::*;

    fn def_of(types: Vec<SqlType>, pk: usize, indexed: usize) -> TableDef {
        let n = types.len();
        TableDef {
            id: 7,
            name: "t".into(),
            columns: types
                .into_iter()
                .enumerate()
                .map(|(i, ty)| ColumnDef {
                    name: format!("c{i}"),
                    ty,
                    not_null: i % 2 == 0,
                })
                .collect(),
            primary_key: (0..pk.min(n) as u16).collect(),
            indexes: (0..indexed.min(n) as u16)
                .map(|i| IndexDef {
                    id: u32::from(i),
                    name: format!("ix{i}"),
                    columns: vec![i],
                })
                .collect(),
            next_index_id: 9,
        }
    }

    proptest! {
        #[test]
        fn definitions_round_trip(types in prop::collection::vec(any_type(), 1..12),
                                  pk in 0usize..3, indexed in 0usize..4) {
            let def = def_of(types, pk, indexed);
            prop_assume!(def.validate().is_ok());
            prop_assert_eq!(TableDef::decode(&def.encode()).unwrap(), def);
        }

        #[test]
        fn damage_is_reported(types in prop::collection::vec(any_type(), 1..6),
                              at in any::<prop::sample::Index>(), bit in 0u8..8) {
            let def = def_of(types, 1, 1);
            prop_assume!(def.validate().is_ok());
            let mut bytes = def.encode();
            let i = at.index(bytes.len());
            bytes[i] ^= 1 << bit;
            prop_assert!(TableDef::decode(&bytes).is_err());
            prop_assert!(TableDef::decode(&bytes[..i]).is_err());
        }
    }

    #[test]
    fn bad_definitions_are_refused() {
        let mut def = def_of(vec![SqlType::Int, SqlType::Text], 1, 0);
        def.columns[1].name = "c0".into();
        assert!(def.validate().unwrap_err().contains("named twice"));
        let mut def = def_of(vec![SqlType::Int], 1, 0);
        def.primary_key = vec![3];
        assert!(def.validate().is_err());
        let def = def_of(
            vec![SqlType::Decimal {
                precision: 4,
                scale: 5,
            }],
            0,
            0,
        );
        assert!(def.validate().is_err());
    }
}
