//! Logging setup: `tracing` with a text or JSON format and Redis's log levels, both
//! changeable at run time (CONFIG SET `loglevel` / `log-format`, [`reconfigure`]).

use crate::config::Config;
use std::sync::{Arc, OnceLock};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer, Registry, reload};

/// The subscriber the format layer sits on: the registry under the level filter.
type Filtered = tracing_subscriber::layer::Layered<reload::Layer<EnvFilter, Registry>, Registry>;

/// The text or JSON formatting layer, boxed so either can replace the other.
type FormatLayer = Box<dyn Layer<Filtered> + Send + Sync>;

/// What [`reconfigure`] changes, kept from [`init`].
struct Handles {
    /// The level filter.
    filter: reload::Handle<EnvFilter, Registry>,
    /// The formatting layer.
    format: reload::Handle<FormatLayer, Filtered>,
    /// Where lines go: the log file, or standard output when there is none.
    file: Option<Arc<std::fs::File>>,
    /// Colours (standard output on a terminal only).
    ansi: bool,
}

/// Set once by [`init`].
static HANDLES: OnceLock<Handles> = OnceLock::new();

/// The `tracing` filter for Redis's `loglevel`.
fn level(config: &Config) -> &'static str {
    match config.get("loglevel").unwrap_or("notice") {
        "debug" => "debug",
        "verbose" => "info",
        "notice" => "info",
        "warning" => "warn",
        _ => "error",
    }
}

/// The formatting layer for `log-format`, writing to `file` or standard output.
fn format_layer(config: &Config, file: &Option<Arc<std::fs::File>>, ansi: bool) -> FormatLayer {
    let json = config.get("log-format") == Some("json");
    let base = tracing_subscriber::fmt::layer().with_target(false);
    match (file, json) {
        (Some(f), true) => base.json().with_writer(f.clone()).boxed(),
        (Some(f), false) => base.with_ansi(false).with_writer(f.clone()).boxed(),
        (None, true) => base.json().boxed(),
        (None, false) => base.with_ansi(ansi).boxed(),
    }
}

/// Installs the global subscriber according to `loglevel`, `log-format` and `logfile`
/// (`RUST_LOG`, when set, overrides `loglevel` until CONFIG SET changes it).
pub fn init(config: &Config) {
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(level(config)));
    let logfile = config.get("logfile").unwrap_or("").to_string();
    let file = if logfile.is_empty() {
        None
    } else {
        match std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&logfile)
        {
            Ok(f) => Some(Arc::new(f)),
            Err(e) => {
                eprintln!("streamd: can't open the log file {logfile}: {e}");
                None
            }
        }
    };
    // Colours only for a terminal: under systemd, stdout is the journal, which shows a line
    // with escape codes as a blob.
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stdout());
    let (filter, filter_handle) = reload::Layer::new(filter);
    let (format, format_handle) = reload::Layer::new(format_layer(config, &file, ansi));
    if tracing_subscriber::registry()
        .with(filter)
        .with(format)
        .try_init()
        .is_ok()
    {
        let _ = HANDLES.set(Handles {
            filter: filter_handle,
            format: format_handle,
            file,
            ansi,
        });
    }
}

/// Applies `loglevel` (when `level`) and `log-format` (when `format`) as they now are,
/// after CONFIG SET; does nothing before [`init`].
pub fn reconfigure(config: &Config, level_changed: bool, format_changed: bool) {
    let Some(h) = HANDLES.get() else {
        return;
    };
    if level_changed && let Err(e) = h.filter.reload(EnvFilter::new(level(config))) {
        tracing::warn!(error = %e, "could not change the log level");
    }
    if format_changed && let Err(e) = h.format.reload(format_layer(config, &h.file, h.ansi)) {
        tracing::warn!(error = %e, "could not change the log format");
    }
}
