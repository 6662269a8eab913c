//! pmdb-bench: pmdb's benchmarks and the reports they write.
//!
//! Each benchmark records the machine, the exact command and every knob next to its
//! numbers, and writes JSON plus a Markdown table. The device-layer benchmark
//! ([`pmem`]) measures what every pmdb commit is built from: persisting a record of a
//! given size and committing a zone, per backend. The engine benchmark ([`engine`])
//! measures durable puts against that floor, gets and recovery; [`index`] compares
//! candidate DRAM index structures; [`recovery`] reopens pmdb and RocksDB after a
//! SIGKILL, X-Engine's recovery experiment.

#![deny(unsafe_code)]

pub mod charts;
pub mod dist;
pub mod engine;
pub mod engines;
pub mod histogram;
pub mod index;
pub mod limits;
pub mod load_generator;
pub mod machine;
pub mod pgbench;
pub mod pmem;
pub mod postgres;
pub mod progress;
pub mod recovery;
pub mod report;
pub mod server_cpu;
pub mod sysbench;
pub mod timeline;
pub mod tpcc;
#[cfg(feature = "tpch")]
pub mod tpch;
pub mod ycsb;
pub mod ycsb_run;
