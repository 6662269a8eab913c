//! The relations of the server rather than of the database's objects: its databases
//! (`pg_database`), roles (`pg_roles`), connections (`pg_stat_activity`) and the calling
//! session's prepared statements (`pg_prepared_statements`).

use crate::pg_catalog::oids;
use crate::pg_catalog::relation::{Micros, catalog_relation};
use crate::pg_catalog::source::Source;

catalog_relation! {
    /// The server's own database, then those CREATE DATABASE made, each with an oid of
    /// its name (the same at every start).
    PgDatabase = "pg_database" (rows: databases) {
        oid: Oid,
        datname: Text,
        datdba: Oid,
        encoding: Int,
        datlocprovider: Text,
        datistemplate: Bool,
        datallowconn: Bool,
        datconnlimit: Int,
        datcollate: Text,
        datctype: Text,
        daticulocale: Text or null,
        datacl: Text or null,
    }
}

fn databases(source: &Source) -> Vec<PgDatabase> {
    let made = source.made_databases();
    let own = std::iter::once((oids::DATABASE, source.database().to_owned()));
    own.chain(made.into_iter().map(|n| (oids::made_database(&n), n)))
        .map(|(oid, name)| PgDatabase {
            oid,
            datname: name,
            datdba: oids::BOOTSTRAP_ROLE,
            // UTF-8, with the C collation.
            encoding: 6,
            datlocprovider: "c".to_owned(),
            datistemplate: false,
            datallowconn: true,
            datconnlimit: -1,
            datcollate: "C.UTF-8".to_owned(),
            datctype: "C.UTF-8".to_owned(),
            daticulocale: None,
            datacl: None,
        })
        .collect()
}

catalog_relation! {
    /// One row per connection, as [`crate::activity`] keeps them.
    PgStatActivity = "pg_stat_activity" (rows: activity) {
        datid: Oid,
        datname: Text,
        pid: Int,
        leader_pid: Int or null,
        usesysid: Oid or null,
        usename: Text,
        application_name: Text,
        client_addr: Text or null,
        client_hostname: Text or null,
        client_port: Int,
        backend_start: Time,
        xact_start: Time or null,
        query_start: Time or null,
        state_change: Time,
        wait_event_type: Text or null,
        wait_event: Text or null,
        state: Text,
        backend_xid: Int or null,
        backend_xmin: Int or null,
        query_id: Int or null,
        query: Text,
        backend_type: Text,
    }
}

fn activity(source: &Source) -> Vec<PgStatActivity> {
    let roles: Vec<(i64, String)> = source.roles().map(|(o, n)| (o, n.to_owned())).collect();
    source
        .activity()
        .backends()
        .into_iter()
        .map(|b| {
            let role = roles.iter().find(|(_, n)| *n == b.user).map(|(o, _)| *o);
            // A connection not running a statement waits for its client.
            let waiting = b.state != "active";
            PgStatActivity {
                datid: oids::DATABASE,
                datname: b.database,
                pid: i64::from(b.pid),
                leader_pid: None,
                usesysid: role,
                usename: b.user,
                application_name: b.application_name,
                client_addr: b.client.map(|a| a.ip().to_string()),
                client_hostname: None,
                // -1 for a Unix-domain socket.
                client_port: b.client.map_or(-1, |a| i64::from(a.port())),
                backend_start: Micros(b.backend_start),
                xact_start: b.xact_start.map(Micros),
                query_start: b.query_start.map(Micros),
                state_change: Micros(b.state_change),
                wait_event_type: waiting.then(|| "Client".to_owned()),
                wait_event: waiting.then(|| "ClientRead".to_owned()),
                state: b.state.to_owned(),
                backend_xid: None,
                backend_xmin: None,
                query_id: None,
                query: b.query,
                backend_type: "client backend".to_owned(),
            }
        })
        .collect()
}

catalog_relation! {
    PgRoles = "pg_roles" (rows: roles) {
        oid: Oid,
        rolname: Text,
        rolsuper: Bool,
        rolinherit: Bool,
        rolcreaterole: Bool,
        rolcreatedb: Bool,
        rolcanlogin: Bool,
        rolreplication: Bool,
        rolconnlimit: Int,
        rolpassword: Text,
        rolvaliduntil: Text or null,
        rolbypassrls: Bool,
        rolconfig: Text or null,
    }
}

fn roles(source: &Source) -> Vec<PgRoles> {
    source
        .roles()
        .map(|(oid, name)| {
            // The bootstrap role owns what there is and may make roles and databases.
            let owner = oid == oids::BOOTSTRAP_ROLE;
            PgRoles {
                oid,
                rolname: name.to_owned(),
                rolsuper: true,
                rolinherit: true,
                rolcreaterole: owner,
                rolcreatedb: owner,
                rolcanlogin: true,
                rolreplication: false,
                rolconnlimit: -1,
                rolpassword: "********".to_owned(),
                rolvaliduntil: None,
                rolbypassrls: false,
                rolconfig: None,
            }
        })
        .collect()
}

catalog_relation! {
    /// The calling session's statements prepared by name, each parameter's type named
    /// as `regtype` names it. Every run of one takes the plan made when it was prepared
    /// (pmdb does not plan again for the values bound): a generic plan in PostgreSQL's
    /// words, so `generic_plans` counts the runs and `custom_plans` is 0.
    PgPreparedStatements = "pg_prepared_statements" (rows: prepared_statements) {
        name: Text,
        statement: Text,
        prepare_time: Time,
        parameter_types: Texts,
        from_sql: Bool,
        generic_plans: Int,
        custom_plans: Int,
    }
}

fn prepared_statements(source: &Source) -> Vec<PgPreparedStatements> {
    let Some(statements) = source.statements() else {
        return Vec::new();
    };
    let type_name = |field: &datafusion::arrow::datatypes::Field| -> String {
        let oid = i64::from(crate::encode::parameter_type(field).oid());
        oids::format_type(oid, None)
            .or_else(|| oids::user_type_name(source.catalog(), oid))
            .unwrap_or_else(|| "unknown".into())
    };
    let statements = statements.read();
    let mut names: Vec<&String> = statements.keys().collect();
    names.sort();
    names
        .into_iter()
        .map(|name| {
            let named = &statements[name];
            // A parameter planning left untyped is read as text.
            let types = named.prepared.as_ref().map_or_else(Vec::new, |p| {
                p.parameters()
                    .iter()
                    .map(|f| {
                        f.as_ref()
                            .map_or_else(|| "text".to_owned(), |f| type_name(f))
                    })
                    .collect()
            });
            PgPreparedStatements {
                name: name.clone(),
                statement: named.statement.clone(),
                prepare_time: Micros(named.prepared_at),
                parameter_types: types,
                from_sql: named.from_sql,
                generic_plans: named.runs,
                custom_plans: 0,
            }
        })
        .collect()
}
