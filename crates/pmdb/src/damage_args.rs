//! How the commands that open a database to write it (`sql`, `serve`, `compact`) treat a
//! memtable that recovery finds damaged: by default the database opens read-only and
//! says why; `--fence-damaged` opens it writable with each damaged subtable fenced off.

use clap::Args;
use pmdb_engine::DbOptions;

#[derive(Args)]
pub struct DamageArgs {
    /// If recovery finds a memtable damaged, open writable anyway, with the damaged
    /// tables fenced off (read as far as they can be, never written or compacted),
    /// instead of read-only
    #[arg(long)]
    fence_damaged: bool,
}

impl DamageArgs {
    /// The engine options for opening an existing database, or creating it with `create`.
    pub fn options(&self, create: bool) -> DbOptions {
        DbOptions {
            create_if_missing: create,
            fence_damaged: self.fence_damaged,
            ..DbOptions::default()
        }
    }
}
