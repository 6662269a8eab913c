//! Each client session's [`Viewer`] carried in its DataFusion options (a configuration
//! extension), so that what runs for the session and is handed the options but not the
//! session (the functions pg_catalog defines, such as `pg_get_indexdef` and
//! `::regclass`, and the relations built from the catalog) reads the catalog as the
//! session does. It is no setting: SET refuses it and SHOW ALL does not list it.

use std::any::Any;

use datafusion::common::config::{ConfigEntry, ConfigExtension, ExtensionOptions};
use datafusion::common::{DataFusionError, Result as DfResult};

use super::Viewer;

impl ExtensionOptions for Viewer {
    fn as_any(&self) -> &dyn Any {
        self
    }

    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }

    fn cloned(&self) -> Box<dyn ExtensionOptions> {
        Box::new(*self)
    }

    fn set(&mut self, key: &str, _value: &str) -> DfResult<()> {
        Err(DataFusionError::Configuration(format!(
            "{}.{key} cannot be set",
            Viewer::PREFIX
        )))
    }

    fn entries(&self) -> Vec<ConfigEntry> {
        Vec::new()
    }
}

impl ConfigExtension for Viewer {
    const PREFIX: &'static str = "pmdb_viewer";
}
