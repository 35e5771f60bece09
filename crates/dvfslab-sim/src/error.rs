//! Errors of the simulator. Configuration errors say which input, which field and what was
//! expected; they are the user's to fix. Simulation errors are bugs or impossible states and
//! stop the run.

use thiserror::Error;

#[derive(Debug, Error)]
#[non_exhaustive]
pub enum SimError {
    /// Bad input: a platform file, a governor or workload spec, a duration. The run never starts.
    #[error("{source_name}: {field}: {message}")]
    Config { source_name: String, field: String, message: String },
    /// The simulation reached a state it cannot continue from.
    #[error("simulation error: {0}")]
    Simulation(String),
}

impl SimError {
    pub fn config(source: impl Into<String>, field: impl Into<String>, message: impl Into<String>) -> Self {
        SimError::Config { source_name: source.into(), field: field.into(), message: message.into() }
    }
}

pub type Result<T> = std::result::Result<T, SimError>;
