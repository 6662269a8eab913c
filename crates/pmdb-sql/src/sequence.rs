//! Sequences: a definition ([`SequenceDef`], its codec the value of the sequence's entry
//! in the catalog subtable) and the durable state of what `nextval` has handed out
//! ([`SequenceState`], its own entry), and the handle that hands out values
//! ([`Sequence`]). Byte tables: `docs/format.md`, "Sequence definition" and "Sequence
//! state".
//!
//! A value is never handed out twice, also across a crash: before `nextval` gives a
//! value that the stored state does not already cover, it stores a state covering a
//! window of values ahead (so most calls write nothing), and the window's unused values
//! are lost in a crash — gaps, as PostgreSQL leaves. Values are not transactional: a
//! rolled-back block gives none back.

use std::sync::Arc;

use parking_lot::Mutex;
use pmdb_engine::{Db, Subtable, WriteBatch, WriteOptions};

use crate::error::{CodecError, Result, SqlError, state};
use crate::names::{PUBLIC, RelName};
use crate::reader::{Reader, put_name};
use crate::schema::MAX_IDENT;
use crate::types::SqlType;

const VERSION: u8 = 1;
/// Values reserved by one write of the state, at least (a sequence's CACHE may ask for
/// more).
pub const WINDOW: i64 = 32;
/// Prefix of a sequence definition's key in the catalog subtable; the name follows.
pub const DEF_PREFIX: u8 = b's';
/// Prefix of a sequence state's key; the sequence id (u64 big-endian) follows.
const STATE_PREFIX: u8 = b'q';

/// `s` + name (see [`RelName::key_bytes`]): where a sequence's definition lives.
pub fn def_key(name: &RelName) -> Vec<u8> {
    let mut k = vec![DEF_PREFIX];
    k.extend_from_slice(&name.key_bytes());
    k
}

/// Definition flags: the sequence cycles; it has an owner (its table id and column
/// follow); it lives outside `public` (its schema follows, after the owner).
const CYCLE: u8 = 1;
const OWNED: u8 = 2;
const IN_SCHEMA: u8 = 4;

/// `q` + id: where a sequence's state lives.
pub fn state_key(id: u64) -> Vec<u8> {
    let mut k = vec![STATE_PREFIX];
    k.extend_from_slice(&id.to_be_bytes());
    k
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SequenceDef {
    /// From the catalog's id counter (shared with tables); never reused.
    pub id: u64,
    pub schema: String,
    pub name: String,
    /// SMALLINT, INT or BIGINT: bounds the default minimum and maximum.
    pub ty: SqlType,
    pub increment: i64,
    pub min: i64,
    pub max: i64,
    pub start: i64,
    pub cache: i64,
    pub cycle: bool,
    /// The table (id) and column (position) the sequence belongs to: it is dropped
    /// with the table, and cannot be dropped alone.
    pub owned_by: Option<(u64, u16)>,
}

/// The range of values of a sequence type.
pub fn type_bounds(ty: SqlType) -> Option<(i64, i64)> {
    match ty {
        SqlType::SmallInt => Some((i16::MIN.into(), i16::MAX.into())),
        SqlType::Int => Some((i32::MIN.into(), i32::MAX.into())),
        SqlType::BigInt => Some((i64::MIN, i64::MAX)),
        _ => None,
    }
}

impl SequenceDef {
    /// A sequence of `ty` with PostgreSQL's defaults for what `options` leave out.
    pub fn new(name: RelName, ty: SqlType, options: SequenceOptions) -> Result<SequenceDef> {
        let invalid = |m: String| SqlError::user(state::INVALID_PARAMETER_VALUE, m);
        let (type_min, type_max) = type_bounds(ty).ok_or_else(|| {
            invalid(format!(
                "sequence type must be smallint, integer, or bigint, not {ty}"
            ))
        })?;
        let increment = options.increment.unwrap_or(1);
        if increment == 0 {
            return Err(invalid("INCREMENT must not be zero".into()));
        }
        let (min, max) = if increment > 0 {
            (options.min.unwrap_or(1), options.max.unwrap_or(type_max))
        } else {
            (options.min.unwrap_or(type_min), options.max.unwrap_or(-1))
        };
        for (what, v) in [("MINVALUE", min), ("MAXVALUE", max)] {
            if v < type_min || v > type_max {
                return Err(invalid(format!(
                    "{what} ({v}) is out of range for sequence data type {ty}"
                )));
            }
        }
        if min >= max {
            return Err(invalid(format!(
                "MINVALUE ({min}) must be less than MAXVALUE ({max})"
            )));
        }
        let start = options
            .start
            .unwrap_or(if increment > 0 { min } else { max });
        if start < min || start > max {
            return Err(invalid(format!(
                "START value ({start}) cannot be below MINVALUE ({min}) or above MAXVALUE ({max})"
            )));
        }
        let cache = options.cache.unwrap_or(1);
        if cache < 1 {
            return Err(invalid(format!(
                "CACHE ({cache}) must be greater than zero"
            )));
        }
        let def = SequenceDef {
            id: 0,
            schema: name.schema,
            name: name.name,
            ty,
            increment,
            min,
            max,
            start,
            cache,
            cycle: options.cycle.unwrap_or(false),
            owned_by: None,
        };
        def.validate().map_err(invalid)?;
        Ok(def)
    }

    /// The sequence's name in its schema, as the catalog keys it.
    pub fn rel_name(&self) -> RelName {
        RelName::new(self.schema.clone(), self.name.clone())
    }

    /// Checks what a decoder or a CREATE statement must not let through.
    pub fn validate(&self) -> Result<(), String> {
        for n in [&self.name, &self.schema] {
            if n.is_empty() || n.len() > MAX_IDENT {
                return Err(format!("a sequence or schema name of {} bytes", n.len()));
            }
        }
        let (lo, hi) =
            type_bounds(self.ty).ok_or_else(|| format!("a sequence of type {}", self.ty))?;
        if self.increment == 0
            || self.min >= self.max
            || self.min < lo
            || self.max > hi
            || !(self.min..=self.max).contains(&self.start)
            || self.cache < 1
        {
            return Err(format!(
                "sequence {}: increment {}, bounds {}..{}, start {}, cache {}",
                self.name, self.increment, self.min, self.max, self.start, self.cache
            ));
        }
        Ok(())
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut out = vec![VERSION];
        out.extend_from_slice(&self.id.to_le_bytes());
        out.extend_from_slice(&(self.name.len() as u16).to_le_bytes());
        out.extend_from_slice(self.name.as_bytes());
        out.push(type_tag(self.ty));
        for v in [self.increment, self.min, self.max, self.start, self.cache] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        let elsewhere = self.schema != PUBLIC;
        out.push(
            if self.cycle { CYCLE } else { 0 }
                | if self.owned_by.is_some() { OWNED } else { 0 }
                | if elsewhere { IN_SCHEMA } else { 0 },
        );
        if let Some((table, column)) = self.owned_by {
            out.extend_from_slice(&table.to_le_bytes());
            out.extend_from_slice(&column.to_le_bytes());
        }
        if elsewhere {
            put_name(&mut out, &self.schema);
        }
        sealed(out)
    }

    pub fn decode(bytes: &[u8]) -> Result<SequenceDef, CodecError> {
        let mut r = opened("sequence definition", bytes)?;
        let id = u64::from_le_bytes(r.take()?);
        let name = r.name(MAX_IDENT)?;
        let ty = match r.byte()? {
            2 => SqlType::SmallInt,
            4 => SqlType::Int,
            8 => SqlType::BigInt,
            t => return Err(r.invalid(format!("type tag {t}"))),
        };
        let mut next = || -> Result<i64, CodecError> { Ok(i64::from_le_bytes(r.take()?)) };
        let (increment, min, max, start, cache) = (next()?, next()?, next()?, next()?, next()?);
        let flags = r.byte()?;
        if flags & !(CYCLE | OWNED | IN_SCHEMA) != 0 {
            return Err(r.invalid(format!("flags {flags:#04x}")));
        }
        let owned_by = if flags & OWNED != 0 {
            Some((u64::from_le_bytes(r.take()?), u16::from_le_bytes(r.take()?)))
        } else {
            None
        };
        let schema = if flags & IN_SCHEMA != 0 {
            let schema = r.name(MAX_IDENT)?;
            if schema == PUBLIC {
                return Err(r.invalid("a schema flag naming public".into()));
            }
            schema
        } else {
            PUBLIC.to_owned()
        };
        if r.left() != 0 {
            return Err(r.invalid(format!("{} bytes after the end", r.left())));
        }
        let def = SequenceDef {
            id,
            schema,
            name,
            ty,
            increment,
            min,
            max,
            start,
            cache,
            cycle: flags & CYCLE != 0,
            owned_by,
        };
        def.validate().map_err(|reason| CodecError::Invalid {
            what: "sequence definition",
            reason,
        })?;
        Ok(def)
    }

    /// The value after `v`: `None` past a bound of a sequence that does not cycle, and
    /// with `true` when it wrapped around.
    fn step(&self, v: i64) -> Option<(i64, bool)> {
        match v.checked_add(self.increment) {
            Some(n) if (self.min..=self.max).contains(&n) => Some((n, false)),
            _ if self.cycle => Some((
                if self.increment > 0 {
                    self.min
                } else {
                    self.max
                },
                true,
            )),
            _ => None,
        }
    }

    /// The last value of a window of values reserved from `first` on (never past a
    /// bound), and how many values it holds.
    fn window_from(&self, first: i64) -> (i64, i64) {
        let mut last = first;
        let mut n = 1;
        while n < WINDOW.max(self.cache) {
            match last.checked_add(self.increment) {
                Some(v) if (self.min..=self.max).contains(&v) => last = v,
                _ => break,
            }
            n += 1;
        }
        (last, n)
    }
}

/// A sequence type's tag in the codec: its width in bytes.
fn type_tag(ty: SqlType) -> u8 {
    match ty {
        SqlType::SmallInt => 2,
        SqlType::Int => 4,
        _ => 8,
    }
}

/// What CREATE SEQUENCE (or an identity column's options) asked for.
#[derive(Clone, Debug, Default)]
pub struct SequenceOptions {
    pub increment: Option<i64>,
    pub min: Option<i64>,
    pub max: Option<i64>,
    pub start: Option<i64>,
    pub cache: Option<i64>,
    pub cycle: Option<bool>,
}

/// What is stored of a sequence's progress, as PostgreSQL's `last_value` and
/// `is_called`: the next value is `last` itself when not called, else the one after
/// it. Every value a `nextval` gave is at or before `last`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SequenceState {
    pub last: i64,
    pub called: bool,
}

impl SequenceState {
    pub fn encode(&self) -> Vec<u8> {
        let mut out = vec![VERSION];
        out.extend_from_slice(&self.last.to_le_bytes());
        out.push(u8::from(self.called));
        sealed(out)
    }

    pub fn decode(bytes: &[u8]) -> Result<SequenceState, CodecError> {
        let mut r = opened("sequence state", bytes)?;
        let last = i64::from_le_bytes(r.take()?);
        let called = match r.byte()? {
            0 => false,
            1 => true,
            b => return Err(r.invalid(format!("called flag {b:#04x}"))),
        };
        if r.left() != 0 {
            return Err(r.invalid(format!("{} bytes after the end", r.left())));
        }
        Ok(SequenceState { last, called })
    }
}

/// `out` (which begins with the version) with its CRC-32 trailer.
fn sealed(mut out: Vec<u8>) -> Vec<u8> {
    let crc = crc32fast::hash(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// A reader of `bytes` after its version byte, once the CRC-32 trailer matches and the
/// version is this codec's.
fn opened<'b>(what: &'static str, bytes: &'b [u8]) -> Result<Reader<'b>, CodecError> {
    let mut r = crate::reader::checked(what, bytes)?;
    let version = r.byte()?;
    if version != VERSION {
        return Err(r.invalid(format!("format version {version}")));
    }
    Ok(r)
}

/// A sequence held by [`Sequence::hold`].
pub struct Held<'s>(parking_lot::MutexGuard<'s, Progress>);

impl Held<'_> {
    /// From now on every call fails as if the sequence did not exist.
    pub fn mark_dropped(&mut self) {
        self.0.dropped = true;
    }

    /// The same sequence under definition `def` (a rebuilt table's sequences belong to
    /// its new id): the new handle goes on from what this one handed out and stored,
    /// and this one passes every later call on to it.
    pub fn hand_over(&mut self, db: &Db, catalog: &Subtable, def: SequenceDef) -> Arc<Sequence> {
        let next = Arc::new(Sequence::new(db, catalog, def, self.0.state));
        next.progress.lock().covered = self.0.covered;
        self.0.successor = Some(Arc::clone(&next));
        next
    }
}

/// A sequence in use: its definition, and what it has handed out.
pub struct Sequence {
    def: SequenceDef,
    db: Db,
    catalog: Subtable,
    progress: Mutex<Progress>,
}

struct Progress {
    state: SequenceState,
    /// Values the stored state still covers after `state.last` (0: the next value
    /// needs a write first).
    covered: i64,
    /// Set by DROP SEQUENCE: nothing may be handed out or stored any more.
    dropped: bool,
    /// The handle that took over from this one ([`Held::hand_over`]).
    successor: Option<Arc<Sequence>>,
}

impl std::fmt::Debug for Sequence {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Sequence({})", self.def.name)
    }
}

impl Sequence {
    pub fn new(db: &Db, catalog: &Subtable, def: SequenceDef, state: SequenceState) -> Sequence {
        Sequence {
            def,
            db: db.clone(),
            catalog: catalog.clone(),
            progress: Mutex::new(Progress {
                state,
                covered: 0,
                dropped: false,
                successor: None,
            }),
        }
    }

    /// The state of a sequence nothing has been taken from.
    pub fn initial_state(def: &SequenceDef) -> SequenceState {
        SequenceState {
            last: def.start,
            called: false,
        }
    }

    pub fn def(&self) -> &SequenceDef {
        &self.def
    }

    /// The stored progress as of now (`last_value`, `is_called`).
    pub fn state(&self) -> SequenceState {
        let p = self.progress.lock();
        match &p.successor {
            Some(next) => next.state(),
            None => p.state,
        }
    }

    fn gone(&self) -> SqlError {
        SqlError::user(
            state::UNDEFINED_TABLE,
            format!("relation \"{}\" does not exist", self.def.name),
        )
    }

    /// The next value; durable (never given again) before it is returned.
    pub fn next_value(&self) -> Result<i64> {
        let mut p = self.progress.lock();
        if let Some(next) = p.successor.clone() {
            drop(p);
            return next.next_value();
        }
        if p.dropped {
            return Err(self.gone());
        }
        let (next, wrapped) = if p.state.called {
            self.def.step(p.state.last).ok_or_else(|| {
                let (which, bound) = if self.def.increment > 0 {
                    ("maximum", self.def.max)
                } else {
                    ("minimum", self.def.min)
                };
                SqlError::user(
                    state::SEQUENCE_GENERATOR_LIMIT_EXCEEDED,
                    format!(
                        "nextval: reached {which} value of sequence \"{}\" ({bound})",
                        self.def.name
                    ),
                )
            })?
        } else {
            (p.state.last, false)
        };
        if wrapped || p.covered == 0 {
            let (last, n) = self.def.window_from(next);
            self.store(SequenceState { last, called: true })?;
            p.covered = n;
        }
        p.covered -= 1;
        p.state = SequenceState {
            last: next,
            called: true,
        };
        Ok(next)
    }

    /// `setval`: the sequence goes on after `value` (or at it, when not `called`).
    pub fn set(&self, value: i64, called: bool) -> Result<i64> {
        let mut p = self.progress.lock();
        if let Some(next) = p.successor.clone() {
            drop(p);
            return next.set(value, called);
        }
        if p.dropped {
            return Err(self.gone());
        }
        if !(self.def.min..=self.def.max).contains(&value) {
            return Err(SqlError::user(
                state::NUMERIC_OUT_OF_RANGE,
                format!(
                    "setval: value {value} is out of bounds for sequence \"{}\" ({}..{})",
                    self.def.name, self.def.min, self.def.max
                ),
            ));
        }
        let new = SequenceState {
            last: value,
            called,
        };
        self.store(new)?;
        p.state = new;
        p.covered = 0;
        Ok(value)
    }

    /// Holds the sequence: no value is handed out or stored until the hold ends (DROP
    /// deletes its entries meanwhile, then marks it dropped).
    pub fn hold(&self) -> Held<'_> {
        Held(self.progress.lock())
    }

    fn store(&self, s: SequenceState) -> Result<()> {
        let mut batch = WriteBatch::new();
        batch.put(&self.catalog, state_key(self.def.id), s.encode());
        self.db.write(batch, WriteOptions::default())?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn any_def() -> impl Strategy<Value = SequenceDef> {
        (
            prop::sample::select(vec![SqlType::SmallInt, SqlType::Int, SqlType::BigInt]),
            -5i64..5,
            any::<bool>(),
            prop::option::of((any::<u64>(), any::<u16>())),
            1i64..100,
            prop::sample::select(vec![PUBLIC, "app"]),
        )
            .prop_filter_map(
                "a valid sequence",
                |(ty, inc, cycle, owned, cache, schema)| {
                    let mut def = SequenceDef::new(
                        RelName::new(schema, "s"),
                        ty,
                        SequenceOptions {
                            increment: Some(inc),
                            cycle: Some(cycle),
                            cache: Some(cache),
                            ..Default::default()
                        },
                    )
                    .ok()?;
                    def.id = 3;
                    def.owned_by = owned;
                    Some(def)
                },
            )
    }

    proptest! {
        #[test]
        fn definitions_round_trip(def in any_def()) {
            prop_assert_eq!(SequenceDef::decode(&def.encode()).unwrap(), def);
        }

        #[test]
        fn damaged_definitions_are_reported(def in any_def(), at in any::<prop::sample::Index>(),
                                            bit in 0u8..8) {
            let mut bytes = def.encode();
            let i = at.index(bytes.len());
            bytes[i] ^= 1 << bit;
            prop_assert!(SequenceDef::decode(&bytes).is_err());
            prop_assert!(SequenceDef::decode(&def.encode()[..i]).is_err());
        }

        #[test]
        fn states_round_trip(last in any::<i64>(), called in any::<bool>(),
                             at in any::<prop::sample::Index>(), bit in 0u8..8) {
            let s = SequenceState { last, called };
            let mut bytes = s.encode();
            prop_assert_eq!(SequenceState::decode(&bytes).unwrap(), s);
            let i = at.index(bytes.len());
            bytes[i] ^= 1 << bit;
            prop_assert!(SequenceState::decode(&bytes).is_err());
        }
    }

    #[test]
    fn options_are_checked() {
        let make = |ty, o| SequenceDef::new(RelName::public("s"), ty, o);
        assert!(make(SqlType::Text, SequenceOptions::default()).is_err());
        let zero = SequenceOptions {
            increment: Some(0),
            ..Default::default()
        };
        assert!(make(SqlType::Int, zero).is_err());
        let too_big = SequenceOptions {
            max: Some(1 << 40),
            ..Default::default()
        };
        assert!(make(SqlType::Int, too_big).is_err());
        let down = make(
            SqlType::SmallInt,
            SequenceOptions {
                increment: Some(-2),
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!((down.min, down.max, down.start), (-32768, -1, -1));
    }

    #[test]
    fn windows_stop_at_the_bounds() {
        let def = SequenceDef::new(
            RelName::public("s"),
            SqlType::BigInt,
            SequenceOptions {
                max: Some(10),
                cycle: Some(true),
                increment: Some(3),
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(def.window_from(1), (10, 4));
        assert_eq!(def.step(10), Some((1, true)));
        assert_eq!(def.step(4), Some((7, false)));
    }
}
