//! Python bindings of nicsim-router: validate a router configuration and run it to the end,
//! returning its summary (JSON). A configuration problem raises `nicsim.ConfigError` with the
//! key path, as the datapath's do; the simulation runs without the GIL and sees Ctrl-C.

use nicsim_router::{Config, Router, Validate};
use pyo3::exceptions::PyKeyboardInterrupt;
use pyo3::prelude::*;

use crate::{ConfigError, InputError};

fn parse(config: &str, format: &str) -> PyResult<Config> {
    let parsed = match format {
        "json" => Config::from_json(config),
        "toml" => Config::from_toml(config),
        other => {
            return Err(InputError::new_err(format!(
                "router configuration format {other:?}: expected \"json\" or \"toml\""
            )))
        }
    };
    parsed.map_err(|e| ConfigError::new_err((e.path, e.msg)))
}

/// Check a router configuration (`format`: "json" or "toml" text) without running it.
#[pyfunction]
#[pyo3(signature = (config, format="json"))]
fn router_check(config: &str, format: &str) -> PyResult<()> {
    parse(config, format).map(|_| ())
}

/// Run a router configuration (`format`: "json" or "toml" text) to the end and return
/// `(summary, interrupted)`: its summary as JSON text (docs/router.md) and whether Ctrl-C
/// stopped it first (the summary then covers what ran). The model is single-threaded and not
/// `Send`, so it is built, run and summarised inside one GIL-free closure; every `slice_us` of
/// simulated time it takes the GIL back for a moment to look for Ctrl-C.
#[pyfunction]
#[pyo3(signature = (config, format="json", slice_us=1000.0))]
fn router_run(
    py: Python<'_>,
    config: &str,
    format: &str,
    slice_us: f64,
) -> PyResult<(String, bool)> {
    let cfg = parse(config, format)?;
    if !(slice_us.is_finite() && slice_us > 0.0) {
        return Err(InputError::new_err(format!(
            "slice_us = {slice_us}: must be a positive number of µs"
        )));
    }
    py.detach(move || -> PyResult<(String, bool)> {
        let mut router = Router::new(cfg).map_err(|e| ConfigError::new_err((e.path, e.msg)))?;
        // Ctrl-C between slices: Err(None); any other error from the signal handlers: Err(Some).
        let ran = nicsim_kernel::run_in_slices(&mut router, None, slice_us, || {
            Python::attach(|py| match py.check_signals() {
                Err(e) if e.is_instance_of::<PyKeyboardInterrupt>(py) => Err(None),
                other => other.map_err(Some),
            })
        });
        let interrupted = match ran {
            Ok(_) => false,
            Err(None) => true,
            Err(Some(e)) => return Err(e),
        };
        Ok((router.summary().to_string(), interrupted))
    })
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(router_check, m)?)?;
    m.add_function(wrap_pyfunction!(router_run, m)?)?;
    Ok(())
}
