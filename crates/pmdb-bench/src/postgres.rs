//! A throwaway PostgreSQL cluster for the benchmarks that compare with it: created
//! with initdb in the benchmark's directory (the same filesystem as pmdb's data),
//! configured with the settings the benchmark gives, started with pg_ctl, and stopped
//! when dropped. When this process runs as root the server runs as the `postgres` user
//! (initdb refuses root). Install it with `apt-get install postgresql`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

pub struct Postgres {
    bin: PathBuf,
    data: PathBuf,
    socket: PathBuf,
    /// The user the server runs as when this process is root (initdb refuses root).
    run_as: Option<String>,
    pub version: String,
    pub settings: Vec<(String, String)>,
}

/// Where clients reach a cluster besides its Unix socket.
#[derive(Clone, Copy, Debug)]
pub enum Listen {
    /// The Unix socket only.
    SocketOnly,
    /// Also TCP on 127.0.0.1, this port.
    Loopback(u16),
}

/// The directory holding PostgreSQL's server programs, if it is installed.
pub fn find() -> Option<PathBuf> {
    let on_path = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .find(|d| d.join("initdb").is_file() && d.join("pg_ctl").is_file())
    });
    on_path.or_else(|| {
        let mut dirs: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
            .ok()?
            .filter_map(|e| e.ok().map(|e| e.path().join("bin")))
            .filter(|d| d.join("initdb").is_file())
            .collect();
        dirs.sort();
        dirs.pop()
    })
}

fn output(cmd: &mut Command) -> Result<String, String> {
    let out = cmd.output().map_err(|e| format!("{cmd:?}: {e}"))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(format!(
            "{:?} failed: {}{}",
            cmd.get_program(),
            String::from_utf8_lossy(&out.stderr).trim(),
            String::from_utf8_lossy(&out.stdout).trim()
        ))
    }
}

/// PostgreSQL's durability settings are its defaults, spelled out; memory and WAL
/// sized as its manual's "Resource Consumption" and "WAL Configuration" chapters advise
/// for a write-heavy load. The settings of every OLTP comparison with pmdb.
pub fn write_heavy_settings() -> Vec<(String, String)> {
    let mem_mib = crate::machine::available_memory().unwrap_or(8 << 30) >> 20;
    [
        ("fsync", "on".to_string()),
        ("synchronous_commit", "on".to_string()),
        ("full_page_writes", "on".to_string()),
        ("shared_buffers", format!("{}MB", (mem_mib / 4).min(8192))),
        ("effective_cache_size", format!("{}MB", mem_mib / 2)),
        ("max_wal_size", "4GB".to_string()),
        ("checkpoint_completion_target", "0.9".to_string()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}

/// A port nobody listens on now, for a cluster's [`Listen::Loopback`].
pub fn free_port() -> std::io::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

/// The uid and gid of `user`, from /etc/passwd.
fn ids_of(user: &str) -> Option<(u32, u32)> {
    let passwd = std::fs::read_to_string("/etc/passwd").ok()?;
    passwd.lines().find_map(|l| {
        let f: Vec<&str> = l.split(':').collect();
        (f.first() == Some(&user))
            .then(|| Some((f.get(2)?.parse().ok()?, f.get(3)?.parse().ok()?)))?
    })
}

impl Postgres {
    /// Creates and starts a cluster under `dir` with programs from `bin`, `settings`
    /// appended to its postgresql.conf.
    pub fn start(
        bin: &Path,
        dir: &Path,
        settings: Vec<(String, String)>,
        listen: Listen,
    ) -> Result<Postgres, String> {
        let root = rustix::process::geteuid().is_root();
        let run_as = root.then(|| "postgres".to_string());
        let data = dir.join("pgdata");
        let socket = dir.join("pgsocket");
        std::fs::create_dir_all(&socket).map_err(|e| e.to_string())?;
        if let Some(user) = &run_as {
            let (uid, gid) = ids_of(user)
                .ok_or_else(|| format!("running as root needs a {user} user to run PostgreSQL"))?;
            for d in [dir, socket.as_path()] {
                std::os::unix::fs::chown(d, Some(uid), Some(gid)).map_err(|e| e.to_string())?;
            }
        }
        let pg = Postgres {
            bin: bin.to_path_buf(),
            data,
            socket,
            run_as,
            version: output(Command::new(bin.join("postgres")).arg("--version"))?
                .trim()
                .to_string(),
            settings,
        };
        output(pg.server_command("initdb").args([
            "-D",
            &pg.data.to_string_lossy(),
            "-U",
            "postgres",
            "-A",
            "trust",
            "--no-instructions",
        ]))?;
        let mut conf = String::from("\n# pmdb bench\n");
        match listen {
            Listen::SocketOnly => conf.push_str("listen_addresses = ''\n"),
            Listen::Loopback(port) => {
                conf.push_str(&format!("listen_addresses = '127.0.0.1'\nport = {port}\n"))
            }
        }
        for (k, v) in &pg.settings {
            conf.push_str(&format!("{k} = '{v}'\n"));
        }
        std::fs::OpenOptions::new()
            .append(true)
            .open(pg.data.join("postgresql.conf"))
            .and_then(|mut f| f.write_all(conf.as_bytes()))
            .map_err(|e| e.to_string())?;
        output(pg.server_command("pg_ctl").args([
            "-D",
            &pg.data.to_string_lossy(),
            "-l",
            &dir.join("postgres.log").to_string_lossy(),
            "-o",
            &format!("-k {}", pg.socket.display()),
            "-w",
            "start",
        ]))?;
        Ok(pg)
    }

    /// The version and the settings given, for a report.
    pub fn description(&self) -> String {
        let settings: Vec<String> = self
            .settings
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        format!("{}: {}", self.version, settings.join(", "))
    }

    /// The postmaster's process id, from the first line of its postmaster.pid.
    pub fn postmaster_pid(&self) -> Result<u32, String> {
        let path = self.data.join("postmaster.pid");
        std::fs::read_to_string(&path)
            .map_err(|e| format!("{}: {e}", path.display()))?
            .lines()
            .next()
            .and_then(|l| l.trim().parse().ok())
            .ok_or_else(|| format!("{}: no process id", path.display()))
    }

    pub fn server_command(&self, program: &str) -> Command {
        let path = self.bin.join(program);
        match &self.run_as {
            Some(user) => {
                let mut c = Command::new("runuser");
                c.args(["-u", user, "--"]).arg(path);
                c
            }
            None => Command::new(path),
        }
    }

    /// Runs `script` in one psql session: its output, unaligned, `|` between columns.
    pub fn psql(&self, script: &str) -> Result<String, String> {
        let psql = Some(self.bin.join("psql"))
            .filter(|p| p.is_file())
            .unwrap_or_else(|| PathBuf::from("psql"));
        let mut child = Command::new(psql)
            .args([
                "-X",
                "-q",
                "-A",
                "-t",
                "-F",
                "|",
                "-v",
                "ON_ERROR_STOP=1",
                "-U",
                "postgres",
            ])
            .arg("-h")
            .arg(&self.socket)
            .args(["-d", "postgres"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("psql: {e}"))?;
        child
            .stdin
            .take()
            .expect("piped")
            .write_all(script.as_bytes())
            .map_err(|e| e.to_string())?;
        let out = child.wait_with_output().map_err(|e| e.to_string())?;
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).into_owned())
        } else {
            Err(String::from_utf8_lossy(&out.stderr).trim().to_string())
        }
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        // Stopping is best effort: the directory is removed with the run's anyway.
        let _ = output(self.server_command("pg_ctl").args([
            "-D",
            &self.data.to_string_lossy(),
            "-m",
            "immediate",
            "stop",
        ]));
    }
}
