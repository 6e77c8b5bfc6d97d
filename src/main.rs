//! `streamd [CONFIG-FILE] [--directive value ...]`: start the server.
//! `streamd --check-aof FILE [--fix]`: check (and repair) a log file, a snapshot, or
//! every file a manifest names, without starting a server.
//! `streamd --import-rdb FILE [CONFIG-FILE] [--directive value ...]`: import the streams
//! of a Redis `dump.rdb` into an empty data directory, then serve as usual.

use clap::Parser;
use std::path::PathBuf;
use std::process::ExitCode;
use streamd::config::Config;

/// Every allocation is counted (by its allocator size class, as Redis's zmalloc does)
/// for INFO `used_memory` and `maxmemory`.
#[global_allocator]
static GLOBAL: streamd::alloc::CountingAlloc = streamd::alloc::CountingAlloc;

/// A Redis-protocol stream server.
#[derive(Parser, Debug)]
#[command(
    name = "streamd",
    allow_hyphen_values = true,
    args_override_self = true,
    version = streamd::STREAMD_VERSION,
    about = "A Redis-protocol stream server",
    after_help = "Every configuration directive can be given on the command line as \
--<directive> <value>, e.g. --port 7000 --appendonly no --dir /var/lib/streamd. \
See conf/streamd.conf for the full list. \
`streamd --check-aof FILE [--fix]` checks (and with --fix truncates to the last good record) \
a log file, a snapshot or a manifest's files without starting a server. \
`streamd --check-tier DIR [--fix]` checks every record of the segment files in DIR (a data \
directory's tier/) and with --fix cuts a torn tail. \
`streamd --import-rdb dump.rdb [options]` imports the streams of a Redis RDB file (versions 9-12) \
into an empty data directory, writes a snapshot, then serves as usual."
)]
struct Args {
    /// A configuration file in redis.conf syntax.
    #[arg(allow_hyphen_values = true)]
    config_file: Option<PathBuf>,
    /// Directives: --name value [value ...] (applied after the file).
    #[arg(allow_hyphen_values = true, trailing_var_arg = true, num_args = 0..)]
    directives: Vec<String>,
}

/// The arguments of `--check-aof` and `--check-tier`: one path and an optional `--fix`;
/// `None` (after printing `usage`) for anything else.
fn path_and_fix(args: &[String], usage: &str) -> Option<(PathBuf, bool)> {
    let mut path = None;
    let mut fix = false;
    for a in args {
        match a.as_str() {
            "--fix" => fix = true,
            _ if path.is_none() && !a.starts_with("--") => path = Some(PathBuf::from(a)),
            _ => {
                eprintln!("{usage}");
                return None;
            }
        }
    }
    if path.is_none() {
        eprintln!("{usage}");
    }
    Some((path?, fix))
}

/// `--check-aof FILE [--fix]`: exit 0 when the file is good or was fixed, 1 when it is
/// damaged, 2 on usage or I/O errors.
fn check_aof(args: &[String]) -> ExitCode {
    let Some((file, fix)) = path_and_fix(
        args,
        "Usage: streamd --check-aof <file.incr.log|file.manifest|file.snap> [--fix]",
    ) else {
        return ExitCode::from(2);
    };
    // The whole table, as a server has it: a log's FUNCTION LOAD is a known command.
    streamd::core::command::install(streamd::scripting::table());
    match streamd::persist::check::check(&file, fix) {
        Ok(report) => {
            for line in &report.lines {
                println!("{line}");
            }
            if report.damaged {
                ExitCode::from(1)
            } else {
                ExitCode::SUCCESS
            }
        }
        Err(e) => {
            eprintln!("streamd --check-aof: {e}");
            ExitCode::from(2)
        }
    }
}

/// `--check-tier DIR [--fix]`: every record of every segment file in DIR (a data
/// directory's `tier/`); exit 0 when all are good (or a torn tail was cut with --fix), 1
/// when one is damaged, 2 on usage errors.
fn check_tier(args: &[String]) -> ExitCode {
    let Some((dir, fix)) = path_and_fix(args, "Usage: streamd --check-tier <dir>/tier [--fix]")
    else {
        return ExitCode::from(2);
    };
    let report = streamd::tier::SegmentStore::check(&dir, fix);
    for line in &report.lines {
        println!("{line}");
    }
    println!(
        "{} segments, {} records{}",
        report.segments,
        report.records,
        if report.error.is_some() {
            ": DAMAGED"
        } else {
            ": ok"
        }
    );
    if report.error.is_some() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

fn main() -> ExitCode {
    streamd::alloc::tune_system_allocator();
    let raw: Vec<String> = std::env::args().collect();
    if raw.get(1).is_some_and(|a| a == "--check-aof") {
        return check_aof(&raw[2..]);
    }
    if raw.get(1).is_some_and(|a| a == "--check-tier") {
        return check_tier(&raw[2..]);
    }
    // `--import-rdb PATH` may stand anywhere; it is not a configuration directive.
    let mut import = None;
    let mut rest = Vec::with_capacity(raw.len());
    let mut it = raw.into_iter();
    while let Some(a) = it.next() {
        if a == "--import-rdb" {
            match it.next() {
                Some(p) => import = Some(PathBuf::from(p)),
                None => {
                    eprintln!(
                        "Usage: streamd --import-rdb <dump.rdb> [config file] [--directive value ...]"
                    );
                    return ExitCode::from(2);
                }
            }
        } else {
            rest.push(a);
        }
    }
    let mut args = Args::parse_from(rest);
    // A first argument starting with "--" is a directive, not a config file.
    if let Some(first) = &args.config_file
        && first.to_string_lossy().starts_with("--")
    {
        let first = first.to_string_lossy().into_owned();
        args.directives.insert(0, first);
        args.config_file = None;
    }
    let config = match Config::load(args.config_file.as_deref(), &args.directives) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    streamd::logging::init(&config);
    if let Some(path) = import
        && let Err(e) = streamd::persist::import::import(&config, &path)
    {
        tracing::error!(error = %e, "RDB import refused");
        eprintln!("streamd --import-rdb: {e}");
        return ExitCode::FAILURE;
    }
    match streamd::serve(config) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!(error = %e, "fatal");
            eprintln!("streamd: {e}");
            ExitCode::FAILURE
        }
    }
}
