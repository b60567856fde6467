//! A server that works on one job at a time (a CPU forwarding a packet, a bus carrying a
//! transaction): the job in service and when it ends. Its component's step finishes the job
//! once its time is up, starts the next, and sleeps until the new job ends ([`Server::ends`]),
//! or, idle, until something it waits for arrives.

use crate::time::Time;

/// One job at a time, and when it ends.
#[derive(Debug, Clone)]
pub struct Server<J> {
    busy_until: Time,
    job: Option<J>,
}

impl<J> Default for Server<J> {
    fn default() -> Self {
        Server {
            busy_until: Time::ZERO,
            job: None,
        }
    }
}

impl<J> Server<J> {
    /// Whether it may take a job at `now`: its last job, if any, has ended by then.
    #[inline]
    pub fn is_free(&self, now: Time) -> bool {
        now >= self.busy_until
    }

    /// The job that has ended (call once [`Server::is_free`]), if it had one.
    #[inline]
    pub fn finish(&mut self) -> Option<J> {
        self.job.take()
    }

    /// Start `job` at `now`; it takes `ticks`.
    #[inline]
    pub fn start(&mut self, job: J, now: Time, ticks: u64) {
        self.busy_until = now + ticks;
        self.job = Some(job);
    }

    /// When the job in service ends, if there is one (its component wakes then).
    #[inline]
    pub fn ends(&self) -> Option<Time> {
        self.job.as_ref().map(|_| self.busy_until)
    }

    /// When the last job started ends (or ended).
    #[inline]
    pub fn busy_until(&self) -> Time {
        self.busy_until
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_job_at_a_time() {
        let mut s: Server<u32> = Server::default();
        let at = Time::from_ticks;
        assert!(s.is_free(at(0)) && s.ends().is_none());
        s.start(7, at(10), 5);
        assert_eq!((s.ends(), s.busy_until()), (Some(at(15)), at(15)));
        assert!(!s.is_free(at(14)) && s.is_free(at(15)));
        assert_eq!(s.finish(), Some(7));
        assert_eq!((s.finish(), s.ends()), (None, None));
    }
}
