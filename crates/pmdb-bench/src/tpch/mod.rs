//! TPC-H: the eight tables generated in-process (the `tpchgen` crates), their schema with
//! primary keys, the 22 queries with the specification's default parameters, the check
//! of one engine's answers against another's, and the benchmark that runs them on pmdb,
//! on DataFusion over in-memory Arrow and on PostgreSQL.

pub mod memory;
pub mod postgres;
pub mod run;
pub mod verify;

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::error::ArrowError;
use tpchgen::generators::{
    CustomerGenerator, LineItemGenerator, NationGenerator, OrderGenerator, PartGenerator,
    PartSuppGenerator, RegionGenerator, SupplierGenerator,
};
use tpchgen_arrow::{
    CustomerArrow, LineItemArrow, NationArrow, OrderArrow, PartArrow, PartSuppArrow, RegionArrow,
    SupplierArrow,
};

/// The tables, smallest first, with their CREATE TABLE (standard SQL that pmdb and
/// PostgreSQL both take; column order as the generator's).
pub const TABLES: [(&str, &str); 8] = [
    (
        "region",
        "CREATE TABLE region (r_regionkey BIGINT PRIMARY KEY, r_name VARCHAR(25) NOT NULL,
            r_comment VARCHAR(152) NOT NULL)",
    ),
    (
        "nation",
        "CREATE TABLE nation (n_nationkey BIGINT PRIMARY KEY, n_name VARCHAR(25) NOT NULL,
            n_regionkey BIGINT NOT NULL, n_comment VARCHAR(152) NOT NULL)",
    ),
    (
        "supplier",
        "CREATE TABLE supplier (s_suppkey BIGINT PRIMARY KEY, s_name VARCHAR(25) NOT NULL,
            s_address VARCHAR(40) NOT NULL, s_nationkey BIGINT NOT NULL,
            s_phone VARCHAR(15) NOT NULL, s_acctbal DECIMAL(15,2) NOT NULL,
            s_comment VARCHAR(101) NOT NULL)",
    ),
    (
        "customer",
        "CREATE TABLE customer (c_custkey BIGINT PRIMARY KEY, c_name VARCHAR(25) NOT NULL,
            c_address VARCHAR(40) NOT NULL, c_nationkey BIGINT NOT NULL,
            c_phone VARCHAR(15) NOT NULL, c_acctbal DECIMAL(15,2) NOT NULL,
            c_mktsegment VARCHAR(10) NOT NULL, c_comment VARCHAR(117) NOT NULL)",
    ),
    (
        "part",
        "CREATE TABLE part (p_partkey BIGINT PRIMARY KEY, p_name VARCHAR(55) NOT NULL,
            p_mfgr VARCHAR(25) NOT NULL, p_brand VARCHAR(10) NOT NULL,
            p_type VARCHAR(25) NOT NULL, p_size INT NOT NULL, p_container VARCHAR(10) NOT NULL,
            p_retailprice DECIMAL(15,2) NOT NULL, p_comment VARCHAR(23) NOT NULL)",
    ),
    (
        "partsupp",
        "CREATE TABLE partsupp (ps_partkey BIGINT NOT NULL, ps_suppkey BIGINT NOT NULL,
            ps_availqty INT NOT NULL, ps_supplycost DECIMAL(15,2) NOT NULL,
            ps_comment VARCHAR(199) NOT NULL, PRIMARY KEY (ps_partkey, ps_suppkey))",
    ),
    (
        "orders",
        "CREATE TABLE orders (o_orderkey BIGINT PRIMARY KEY, o_custkey BIGINT NOT NULL,
            o_orderstatus VARCHAR(1) NOT NULL, o_totalprice DECIMAL(15,2) NOT NULL,
            o_orderdate DATE NOT NULL, o_orderpriority VARCHAR(15) NOT NULL,
            o_clerk VARCHAR(15) NOT NULL, o_shippriority INT NOT NULL,
            o_comment VARCHAR(79) NOT NULL)",
    ),
    (
        "lineitem",
        "CREATE TABLE lineitem (l_orderkey BIGINT NOT NULL, l_partkey BIGINT NOT NULL,
            l_suppkey BIGINT NOT NULL, l_linenumber INT NOT NULL,
            l_quantity DECIMAL(15,2) NOT NULL, l_extendedprice DECIMAL(15,2) NOT NULL,
            l_discount DECIMAL(15,2) NOT NULL, l_tax DECIMAL(15,2) NOT NULL,
            l_returnflag VARCHAR(1) NOT NULL, l_linestatus VARCHAR(1) NOT NULL,
            l_shipdate DATE NOT NULL, l_commitdate DATE NOT NULL, l_receiptdate DATE NOT NULL,
            l_shipinstruct VARCHAR(25) NOT NULL, l_shipmode VARCHAR(10) NOT NULL,
            l_comment VARCHAR(44) NOT NULL, PRIMARY KEY (l_orderkey, l_linenumber))",
    ),
];

const QUERY_TEXT: [&str; 22] = [
    include_str!("queries/q01.sql"),
    include_str!("queries/q02.sql"),
    include_str!("queries/q03.sql"),
    include_str!("queries/q04.sql"),
    include_str!("queries/q05.sql"),
    include_str!("queries/q06.sql"),
    include_str!("queries/q07.sql"),
    include_str!("queries/q08.sql"),
    include_str!("queries/q09.sql"),
    include_str!("queries/q10.sql"),
    include_str!("queries/q11.sql"),
    include_str!("queries/q12.sql"),
    include_str!("queries/q13.sql"),
    include_str!("queries/q14.sql"),
    include_str!("queries/q15.sql"),
    include_str!("queries/q16.sql"),
    include_str!("queries/q17.sql"),
    include_str!("queries/q18.sql"),
    include_str!("queries/q19.sql"),
    include_str!("queries/q20.sql"),
    include_str!("queries/q21.sql"),
    include_str!("queries/q22.sql"),
];

/// Query `n` (1 to 22) at scale factor `sf`: the specification's default parameters,
/// with Q11's FRACTION scaled as it says (0.0001 / SF).
pub fn query(n: usize, sf: f64) -> String {
    let text = QUERY_TEXT[n - 1];
    if n != 11 {
        return text.to_string();
    }
    let fraction = format!("{}", 0.0001 / sf);
    text.lines()
        .filter(|l| !l.trim_start().starts_with("-- FRACTION"))
        .map(|l| l.replace("* 0.0001", &format!("* {fraction}")))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The first line of query `n`'s file names it ("Pricing Summary Report").
pub fn query_name(n: usize) -> &'static str {
    QUERY_TEXT[n - 1]
        .lines()
        .next()
        .and_then(|l| l.split_once(": "))
        .map_or("", |(_, name)| name.trim())
}

/// The rows of table `name` at scale factor `sf`, as record batches of `batch_rows`.
pub fn generate(
    name: &str,
    sf: f64,
    batch_rows: usize,
) -> Box<dyn Iterator<Item = Result<RecordBatch, ArrowError>> + Send> {
    match name {
        "region" => {
            Box::new(RegionArrow::new(RegionGenerator::new(sf, 1, 1)).with_batch_size(batch_rows))
        }
        "nation" => {
            Box::new(NationArrow::new(NationGenerator::new(sf, 1, 1)).with_batch_size(batch_rows))
        }
        "supplier" => Box::new(
            SupplierArrow::new(SupplierGenerator::new(sf, 1, 1)).with_batch_size(batch_rows),
        ),
        "customer" => Box::new(
            CustomerArrow::new(CustomerGenerator::new(sf, 1, 1)).with_batch_size(batch_rows),
        ),
        "part" => {
            Box::new(PartArrow::new(PartGenerator::new(sf, 1, 1)).with_batch_size(batch_rows))
        }
        "partsupp" => Box::new(
            PartSuppArrow::new(PartSuppGenerator::new(sf, 1, 1)).with_batch_size(batch_rows),
        ),
        "orders" => {
            Box::new(OrderArrow::new(OrderGenerator::new(sf, 1, 1)).with_batch_size(batch_rows))
        }
        "lineitem" => Box::new(
            LineItemArrow::new(LineItemGenerator::new(sf, 1, 1)).with_batch_size(batch_rows),
        ),
        other => panic!("no TPC-H table {other}"),
    }
}

/// Generates every table into memory: (name, batches), in [`TABLES`] order.
pub fn generate_all(sf: f64) -> Result<Vec<(&'static str, Vec<RecordBatch>)>, ArrowError> {
    TABLES
        .iter()
        .map(|(name, _)| {
            Ok((
                *name,
                generate(name, sf, 8192).collect::<Result<Vec<_>, _>>()?,
            ))
        })
        .collect()
}
