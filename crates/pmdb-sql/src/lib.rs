//! pmdb-sql: relational tables over pmdb's subtables, queried with SQL through Apache
//! DataFusion ([`SqlEngine`]). This crate owns the SQL types and values a table holds
//! ([`types`]), the order-preserving encoding of primary-key and index-key tuples that
//! makes a subtable's byte order the tuples' SQL order ([`keycode`]), the compact row
//! codec of the stored rows ([`rowcode`]), the catalog and its table and sequence
//! definitions ([`catalog`], [`schema`], [`sequence`]), tables with their secondary and
//! unique indexes and columnar segments ([`table`]), the table provider DataFusion plans
//! scans and INSERTs with, pmdb's own DDL (ALTER TABLE included), column defaults,
//! UPDATE, DELETE, COPY and ANALYZE, and client sessions ([`SqlSession`]) with
//! transaction blocks on the engine's optimistic transactions. Every persistent encoding has its byte
//! table in `docs/format.md`, "Part 4".

#![forbid(unsafe_code)]

mod access_path;
mod alter;
mod array_input;
pub mod array_text;
mod arrow_conv;
mod ast_build;
mod ast_shape;
mod branch_types;
mod builtin_types;
mod cast_names;
pub mod catalog;
mod check_expr;
mod column_chunk;
mod column_defaults;
mod column_rewrite;
mod comments;
mod comparison;
mod constant_errors;
mod constraint_defs;
mod copy_in;
mod copy_options;
mod copy_out;
mod copy_where;
mod create_as;
mod create_view;
mod cursors;
mod database_options;
mod date_format;
mod ddl;
mod ddl_transaction;
mod decimal_scales;
mod declared_parameters;
mod deferred_checks;
mod dml;
mod dml_parameters;
mod dml_with;
mod do_block;
mod domain_ddl;
mod domain_input;
pub mod domain_rules;
mod domain_syntax;
pub mod domain_type;
mod empty_select;
mod engine;
mod enum_order;
pub mod enum_type;
mod enum_values;
pub mod error;
mod explain;
mod explain_options;
mod expr_rewrite;
pub mod extension;
mod extension_ddl;
mod fast_path;
mod fetch_clause;
mod float_numeric;
mod function_columns;
pub mod hstore;
mod hstore_functions;
mod identity;
mod insert;
mod integer_averages;
mod integer_casts;
mod integer_literals;
mod integer_overflow;
mod interval;
mod interval_ops;
mod join_yield;
mod json;
mod json_functions;
mod key_rules;
pub mod keycode;
mod keyed;
mod large_rows;
mod length_casts;
mod like_escape;
mod literal_arguments;
mod literal_template;
mod lock_clauses;
mod locking;
mod make_interval;
pub mod names;
pub mod namespace;
mod notices;
mod numeric_literals;
mod numeric_places;
mod optimized_plan;
mod output;
mod parameter_types;
mod pending_checks;
mod plpgsql;
mod prepared;
mod provider;
mod pushdown;
mod quote_functions;
mod read_locks;
mod read_point;
mod reader;
mod referential;
mod refresh;
mod result_types;
mod returning;
mod row_constructors;
mod row_locks;
pub mod rowcode;
mod scalar_subqueries;
mod scan_exec;
pub mod schema;
pub mod search_path;
mod segment_layout;
mod segments;
pub mod select_list_series;
mod select_names;
pub mod sequence;
mod sequence_functions;
mod sequence_syntax;
mod session;
mod set_constraints;
mod setting_functions;
mod sleep_function;
mod sql_session;
mod statement;
mod statement_depth;
mod statement_kind;
mod subplans;
pub mod table;
mod temp_tables;
mod text_cast;
pub mod text_forms;
pub mod time_of_day;
mod tokens;
mod transaction_ids;
mod truncate;
mod type_ddl;
mod type_input;
pub mod types;
mod udf_identity;
mod udf_result;
mod unhonoured;
mod upsert;
pub mod view;
mod view_expansion;
mod window_frames;

pub use arrow_conv::{
    UTC, arrow_type, domain_of, interval_at, interval_input, is_uuid, names_utc, padded_chars,
    text_type,
};
pub use copy_in::{CopyFormat, CopyIn, copy_failed};
pub use cursors::forward_move;
pub use engine::{Sessions, SqlEngine};
pub use error::{CodecError, Result, SqlError};
pub use identity::OWNER;
pub use notices::{Notice, Severity};
pub use output::{CommandTag, CopyEncoding, CopyOutFormat, Output};
pub use prepared::Prepared;
pub use provider::ScanOptions;
pub use quote_functions::ident as quoted_identifier;
pub use search_path::SearchPath;
pub use select_names::name_of as column_name;
pub use session::parse;
pub use setting_functions::{SettingChange, SettingCheck, SettingValues};
pub use sql_session::{SqlSession, TxnStatus, in_failed_block};
pub use statement_depth::{MAX_STATEMENT_DEPTH, STATEMENT_STACK};
pub use statement_kind::StatementKind;
pub use temp_tables::is_temporary;
pub use types::{SqlType, Value};

/// The README's Rust examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
pub struct ReadmeDoctests;
