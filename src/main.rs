//! `streamd [CONFIG-FILE] [--directive value ...]`: start the server.

use clap::Parser;
use std::path::PathBuf;
use std::process::ExitCode;
use streamd::config::Config;

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
See conf/streamd.conf for the full list."
)]
struct Args {
    /// A configuration file in redis.conf syntax.
    #[arg(allow_hyphen_values = true)]
    config_file: Option<PathBuf>,
    /// Directives: --name value [value ...] (applied after the file).
    #[arg(allow_hyphen_values = true, trailing_var_arg = true, num_args = 0..)]
    directives: Vec<String>,
}

fn main() -> ExitCode {
    let mut args = Args::parse();
    // A first argument starting with "--" is a directive, not a config file.
    if let Some(first) = &args.config_file {
        if first.to_string_lossy().starts_with("--") {
            let first = first.to_string_lossy().into_owned();
            args.directives.insert(0, first);
            args.config_file = None;
        }
    }
    let config = match Config::load(args.config_file.as_deref(), &args.directives) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    streamd::logging::init(&config);
    match streamd::serve(config) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!(error = %e, "fatal");
            eprintln!("streamd: {e}");
            ExitCode::FAILURE
        }
    }
}
