//! What every model's configuration shares: the one error type a bad config produces, naming
//! the key path of the problem (`flows[2].chain[1]: ...`), which the CLI turns into a one-line
//! message and exit code 2.

/// A configuration error: `path` is the key path (`traffic[0].flows[1].dst`), `msg` what was
/// expected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {msg}")]
pub struct ConfigError {
    pub path: String,
    pub msg: String,
}

/// `Err(ConfigError)` at `path`.
pub fn err<T>(path: impl Into<String>, msg: impl Into<String>) -> Result<T, ConfigError> {
    Err(ConfigError {
        path: path.into(),
        msg: msg.into(),
    })
}
