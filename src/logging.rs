//! Logging setup: `tracing` with a text or JSON format and Redis's log levels.

use crate::config::Config;

/// Installs the global subscriber according to `loglevel`, `log-format` and `logfile`.
pub fn init(config: &Config) {
    let level = match config.get("loglevel").unwrap_or("notice") {
        "debug" => "debug",
        "verbose" => "info",
        "notice" => "info",
        "warning" => "warn",
        _ => "error",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(level));
    let json = config.get("log-format") == Some("json");
    let logfile = config.get("logfile").unwrap_or("").to_string();
    // Colours only for a terminal: under systemd, stdout is the journal, which shows a line
    // with escape codes as a blob.
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_target(false)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stdout()));
    let result = if logfile.is_empty() {
        if json {
            builder.json().try_init()
        } else {
            builder.try_init()
        }
    } else {
        match std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&logfile)
        {
            Ok(file) => {
                let file = std::sync::Mutex::new(file);
                let b = builder.with_ansi(false).with_writer(file);
                if json {
                    b.json().try_init()
                } else {
                    b.try_init()
                }
            }
            Err(e) => {
                eprintln!("streamd: can't open the log file {logfile}: {e}");
                builder.try_init()
            }
        }
    };
    let _ = result;
}
