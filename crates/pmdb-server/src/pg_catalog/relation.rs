//! What a `pg_catalog` relation is: its name, its columns (each of a [`Kind`]) and, for
//! one that has rows, the Rust type of a row, declared together by
//! [`catalog_relation!`]: a struct whose fields are the columns, in their order, so that
//! a row is built by naming its columns and never by position.

use super::source::Source;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
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

/// One value of a catalog row, as the column of its kind takes it.
#[derive(Clone, Debug, PartialEq)]
pub enum Cell {
    Int(i64),
    Text(String),
    Bool(bool),
    Real(f32),
    /// Microseconds since the Unix epoch (a timestamptz).
    Time(i64),
    /// Column numbers, from 1 (`indkey`, `conkey`); also an index's per-column options
    /// (`indoption`, all 0: ascending, nulls last).
    ColumnNumbers(Vec<i16>),
    /// Object identifiers (`indclass`: 0 for each column, the type's own order).
    Oids(Vec<u32>),
    /// Names (`parameter_types`).
    Texts(Vec<String>),
    Null,
}

/// A timestamptz value: microseconds since the Unix epoch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Micros(pub i64);

/// A row field's value as its cell.
pub trait IntoCell {
    fn into_cell(self) -> Cell;
}

/// Each Rust type a column holds, as the cell it is.
macro_rules! into_cell {
    ($($ty:ty => $cell:ident),* $(,)?) => {
        $(impl IntoCell for $ty {
            fn into_cell(self) -> Cell {
                Cell::$cell(self)
            }
        })*
    };
}

into_cell!(
    i64 => Int,
    String => Text,
    bool => Bool,
    f32 => Real,
    Vec<i16> => ColumnNumbers,
    Vec<u32> => Oids,
    Vec<String> => Texts,
);

impl IntoCell for Micros {
    fn into_cell(self) -> Cell {
        Cell::Time(self.0)
    }
}

impl<T: IntoCell> IntoCell for Option<T> {
    fn into_cell(self) -> Cell {
        self.map_or(Cell::Null, IntoCell::into_cell)
    }
}

/// A row of a catalog relation (declared with [`catalog_relation!`]).
pub trait CatalogRow: Sized {
    const NAME: &'static str;
    const COLUMNS: &'static [(&'static str, Kind)];
    /// The relation's rows as `source` has them.
    fn rows(source: &Source) -> Vec<Self>;
    /// Its cells, in the order of the columns.
    fn into_cells(self) -> Vec<Cell>;
}

/// The Rust type of a column of kind `$kind` (`or null` after it: nullable).
macro_rules! cell_type {
    (Int) => { i64 };
    (Oid) => { i64 };
    (Text) => { String };
    (Char) => { String };
    (Bool) => { bool };
    (Real) => { f32 };
    (Time) => { $crate::pg_catalog::relation::Micros };
    (ColumnNumbers) => { Vec<i16> };
    (ColumnVector) => { Vec<i16> };
    (Oids) => { Vec<u32> };
    (Texts) => { Vec<String> };
    ($kind:ident null) => { Option<$crate::pg_catalog::relation::cell_type!($kind)> };
}

/// A catalog relation with rows: `Struct = "relation" (rows: builder) { column: Kind,
/// nullable_column: Kind or null, … }` declares the struct of its rows (fields named as the
/// columns, in their order), its columns' kinds, and the function that builds its rows
/// from a [`Source`].
macro_rules! catalog_relation {
    (
        $(#[$meta:meta])*
        $name:ident = $relation:literal (rows: $rows:path) {
            $($column:ident : $kind:ident $(or $null:ident)?),* $(,)?
        }
    ) => {
        $(#[$meta])*
        pub struct $name {
            $(pub $column: $crate::pg_catalog::relation::cell_type!($kind $($null)?)),*
        }

        impl $crate::pg_catalog::relation::CatalogRow for $name {
            const NAME: &'static str = $relation;
            const COLUMNS: &'static [(&'static str, $crate::pg_catalog::relation::Kind)] =
                &[$((stringify!($column), $crate::pg_catalog::relation::Kind::$kind)),*];

            fn rows(source: &$crate::pg_catalog::source::Source) -> Vec<Self> {
                $rows(source)
            }

            fn into_cells(self) -> Vec<$crate::pg_catalog::relation::Cell> {
                vec![$($crate::pg_catalog::relation::IntoCell::into_cell(self.$column)),*]
            }
        }
    };
}

pub(crate) use {catalog_relation, cell_type};

/// What builds a relation's rows, as cells in the order of its columns.
pub type Cells = fn(&Source) -> Vec<Vec<Cell>>;

/// A relation of the schema: its columns, and the cells of its rows (`None`: always
/// empty, a relation clients join against for what pmdb does not have).
pub struct Relation {
    pub name: &'static str,
    pub columns: &'static [(&'static str, Kind)],
    pub rows: Option<Cells>,
}

fn cells_of<R: CatalogRow>(source: &Source) -> Vec<Vec<Cell>> {
    R::rows(source)
        .into_iter()
        .map(CatalogRow::into_cells)
        .collect()
}

impl Relation {
    /// The relation whose rows are `R`s.
    pub const fn of<R: CatalogRow>() -> Relation {
        Relation {
            name: R::NAME,
            columns: R::COLUMNS,
            rows: Some(cells_of::<R>),
        }
    }

    /// A relation that never has a row.
    pub const fn empty(name: &'static str, columns: &'static [(&'static str, Kind)]) -> Relation {
        Relation {
            name,
            columns,
            rows: None,
        }
    }
}
