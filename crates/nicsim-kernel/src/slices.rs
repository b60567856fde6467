//! Running a model in slices of simulated time, so that its caller can look for an interrupt
//! (Ctrl-C) or report progress between them: the one loop every model's binding uses.

/// A model that runs to a simulated time.
pub trait RunTo {
    /// The simulated time reached, in µs.
    fn now_us(&self) -> f64;
    /// Run to `until_us` (to the end when `None`); true when the model has finished.
    fn run_to(&mut self, until_us: Option<f64>) -> bool;
    /// The simulated time of the model's next event, in µs, if it knows it: [`run_in_slices`]
    /// skips idle time up to it instead of stepping through it slice by slice.
    fn next_event_us(&self) -> Option<f64> {
        None
    }
}

/// Run `model` to `until_us` (to its end when `None`) in slices of `slice_us` simulated µs,
/// calling `between` after every slice that leaves more to run; an error from it stops the run
/// and is returned. `Ok(true)` when the model finished, `Ok(false)` when it reached `until_us`
/// first.
///
/// Each slice starts where the one before was asked to end, whatever the model's clock says: a
/// model whose `now_us` is its last event's time stays behind the slice's end when nothing
/// happens in a slice (a router offered one frame every 1,184 µs with slices of 1,000 µs), and
/// slices counted from its clock would ask for the same end for ever.
pub fn run_in_slices<M: RunTo + ?Sized, E>(
    model: &mut M,
    until_us: Option<f64>,
    slice_us: f64,
    mut between: impl FnMut() -> Result<(), E>,
) -> Result<bool, E> {
    let mut from = model.now_us();
    loop {
        let mut start = from.max(model.now_us());
        // Idle time is skipped: a slice starts at the next event when that lies beyond it (1 bit/s
        // of 1,500-byte packets put 20 minutes of simulated time, 24 million 50-µs slices, between
        // two packets).
        if let Some(t) = model.next_event_us() {
            if t > start + slice_us {
                start = t;
            }
        }
        let next = start + slice_us;
        let target = until_us.map_or(next, |u| next.min(u));
        if model.run_to(Some(target)) {
            return Ok(true);
        }
        between()?;
        if until_us.is_some_and(|u| target >= u) {
            return Ok(false);
        }
        from = target;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A model that ends at 10 µs.
    struct Ten(f64);
    impl RunTo for Ten {
        fn now_us(&self) -> f64 {
            self.0
        }
        fn run_to(&mut self, until_us: Option<f64>) -> bool {
            self.0 = until_us.unwrap_or(10.0).min(10.0);
            self.0 >= 10.0
        }
    }

    /// A model whose only events are at 0 and 10^12 µs.
    struct Idle(f64, usize);
    impl RunTo for Idle {
        fn now_us(&self) -> f64 {
            self.0
        }
        fn run_to(&mut self, until_us: Option<f64>) -> bool {
            let u = until_us.unwrap_or(f64::INFINITY);
            self.1 += 1;
            if u >= 1e12 {
                self.0 = 1e12;
                return true;
            }
            self.0 = u;
            false
        }
        fn next_event_us(&self) -> Option<f64> {
            (self.0 < 1e12).then_some(1e12)
        }
    }

    #[test]
    fn idle_time_is_skipped() {
        let mut m = Idle(0.0, 0);
        let mut calls = 0;
        let r: Result<bool, &str> = run_in_slices(&mut m, None, 50.0, || {
            calls += 1;
            if calls > 10 {
                return Err("idle time stepped through slice by slice");
            }
            Ok(())
        });
        assert_eq!(r, Ok(true));
        assert!(m.1 <= 2, "{} slices for two events", m.1);
    }

    #[test]
    fn slices_stop_at_the_end_at_until_or_at_an_interrupt() {
        let mut calls = 0;
        let r: Result<bool, ()> = run_in_slices(&mut Ten(0.0), None, 3.0, || {
            calls += 1;
            Ok(())
        });
        assert_eq!((r, calls), (Ok(true), 3)); // 3, 6, 9, then the end
        let mut m = Ten(0.0);
        assert_eq!(
            run_in_slices(&mut m, Some(4.0), 3.0, || Ok::<_, ()>(())),
            Ok(false)
        );
        assert_eq!(m.0, 4.0);
        let mut m = Ten(0.0);
        assert_eq!(
            run_in_slices(&mut m, None, 3.0, || Err("stop")),
            Err("stop")
        );
        assert_eq!(m.0, 3.0);
    }

    /// A model whose clock is its last event's time: events every 10 µs, the end at 40.
    struct Sparse(f64);
    impl RunTo for Sparse {
        fn now_us(&self) -> f64 {
            self.0
        }
        fn run_to(&mut self, until_us: Option<f64>) -> bool {
            let until = until_us.unwrap_or(f64::INFINITY);
            while self.0 + 10.0 <= until.min(40.0) {
                self.0 += 10.0;
            }
            self.0 >= 40.0
        }
    }

    #[test]
    fn slices_shorter_than_the_gap_between_events_still_end() {
        // Slices of 3 µs: most end before the next event, where the clock stays behind them.
        let mut calls = 0;
        let r: Result<bool, ()> = run_in_slices(&mut Sparse(0.0), None, 3.0, || {
            calls += 1;
            assert!(calls < 100, "the slices do not move on");
            Ok(())
        });
        assert_eq!(r, Ok(true));
        assert_eq!(calls, 13); // 3, 6, ..., 39; the slice to 42 ends the run
    }
}
