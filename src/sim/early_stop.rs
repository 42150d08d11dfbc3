//! Early stop: bounds a run must meet (`max` bounds on per-request latency percentiles and on
//! means), checked now and then while it runs, so that a run which certainly misses one stops
//! instead of running to the end. Only what is proven from the simulated past stops a run:
//!
//! - a percentile `pNN` (nearest rank, as the report computes it) of TTFT or end-to-end latency
//!   is certainly above `max` once at least `n - rank(n)` requests have a value above it, where
//!   `n` is the run's request count (an upper bound of the completed requests the percentile is
//!   taken over; `n - rank(n)` grows with `n`, so the test holds for the final count too);
//! - `max_*` is certainly above once one request is;
//! - a mean is certainly above once the sum of the requests' lower bounds exceeds `max` times
//!   the largest count it can be divided by.
//!
//! A request's lower bounds: its TTFT once its first token is out, else the time it has waited
//! so far; its end-to-end latency up to its last token so far (or its wait, when nothing is out);
//! the sum of its token gaps up to its last token so far. Requests that the deployment may refuse
//! (prompt larger than some worker's KV pool, or not shorter than `max_model_len`) never count,
//! since a refused request is in no distribution. Runs with a time cap are never stopped.

use crate::report::stats::percentile_rank;

/// Which per-request latency a bound is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopMetric {
    Ttft,
    E2e,
    /// Pooled token gaps (means only).
    Itl,
}

/// Which statistic of it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum StopStat {
    /// Nearest-rank percentile, in percent.
    Percentile(f64),
    Max,
    Mean,
}

/// One `max` bound the run can be stopped on.
#[derive(Debug, Clone, PartialEq)]
pub struct StopBound {
    /// The report key, e.g. `p99_ttft_ms`.
    pub key: String,
    pub metric: StopMetric,
    pub stat: StopStat,
    pub max: f64,
}

impl StopBound {
    /// The bound `key <= max`, when early stop can prove it missed (else `None`: the bound is
    /// only checked on the finished report).
    pub fn parse(key: &str, max: f64) -> Option<StopBound> {
        let (stat, rest) = key.split_once('_')?;
        let metric = match rest {
            "ttft_ms" => StopMetric::Ttft,
            "e2e_latency_ms" => StopMetric::E2e,
            "itl_ms" => StopMetric::Itl,
            _ => return None,
        };
        let stat = match stat {
            "mean" => StopStat::Mean,
            "max" => StopStat::Max,
            "median" => StopStat::Percentile(50.0),
            p => StopStat::Percentile(p.strip_prefix('p')?.parse::<f64>().ok()?),
        };
        let supported = match (metric, stat) {
            (StopMetric::Itl, StopStat::Mean) => true,
            (StopMetric::Itl, _) => false,
            (_, StopStat::Percentile(p)) => (0.0..100.0).contains(&p),
            _ => true,
        };
        (supported && max.is_finite()).then(|| StopBound {
            key: key.to_string(),
            metric,
            stat,
            max,
        })
    }
}

/// Why a run stopped early.
#[derive(Debug, Clone, PartialEq)]
pub struct Stopped {
    /// The bound that is certainly missed.
    pub key: String,
    pub max: f64,
    /// What the simulated past proves of the metric: it is at least this (ms, above `max`).
    pub proven_min: f64,
    /// Simulated time of the stop.
    pub at_ms: f64,
    /// What proves it, e.g. `131 of 12031 requests already above 2000 ms`.
    pub evidence: String,
}

impl Stopped {
    /// `p99_ttft_ms > max 2000 (stopped early at t=812 s: 131 of 12031 requests already above
    /// 2000 ms)`.
    pub fn reason(&self) -> String {
        format!(
            "{} > max {} (stopped early at t={:.0} s: {})",
            self.key,
            self.max,
            self.at_ms / 1000.0,
            self.evidence
        )
    }
}

/// What the check sees of one request.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Progress {
    pub arrival: f64,
    /// Time of its first and last token so far (`None` before the first).
    pub tokens: Option<(f64, f64)>,
}

/// Relative margin on means: the report's mean is a float sum divided by a count, so a sum of
/// lower bounds only proves a miss when it clears the bound by more than rounding.
const MEAN_MARGIN: f64 = 1e-9;

/// The first bound of `bounds` certainly missed. `requests` are the requests that can count
/// (arrived, not refusable, producing tokens); `n_max` bounds the count of any per-request
/// distribution, `gaps_max` the count of token gaps; `safe_now` is a time no token still
/// unrecorded can precede.
pub(crate) fn first_missed(
    bounds: &[StopBound],
    requests: &[Progress],
    n_max: u64,
    gaps_max: u64,
    safe_now: f64,
    now: f64,
) -> Option<Stopped> {
    if n_max == 0 {
        return None;
    }
    for b in bounds {
        let lower = |p: &Progress| -> f64 {
            match b.metric {
                StopMetric::Ttft => match p.tokens {
                    Some((first, _)) => (first - p.arrival).max(0.0),
                    None => safe_now - p.arrival,
                },
                StopMetric::E2e => match p.tokens {
                    Some((_, last)) => (last - p.arrival).max(0.0),
                    None => safe_now - p.arrival,
                },
                StopMetric::Itl => match p.tokens {
                    Some((first, last)) => last - first,
                    None => 0.0,
                },
            }
        };
        let missed = match b.stat {
            StopStat::Max | StopStat::Percentile(_) => {
                let need = match b.stat {
                    StopStat::Percentile(pc) => {
                        let n = usize::try_from(n_max).unwrap_or(usize::MAX);
                        (n - percentile_rank(n, pc)) as u64
                    }
                    _ => 1,
                };
                let mut above: Vec<f64> =
                    requests.iter().map(lower).filter(|x| *x > b.max).collect();
                let count = above.len() as u64;
                (count >= need).then(|| {
                    // At least `need` requests are at or above the need-th largest lower bound,
                    // so the percentile (or the maximum) is too.
                    let k = usize::try_from(need.max(1) - 1).unwrap_or(usize::MAX);
                    above.sort_by(|a, b| b.total_cmp(a));
                    let proven = above.get(k).copied().unwrap_or(b.max);
                    (
                        proven,
                        format!("{count} of {n_max} requests already above {} ms", b.max),
                    )
                })
            }
            StopStat::Mean => {
                let count = if b.metric == StopMetric::Itl {
                    gaps_max
                } else {
                    n_max
                };
                let sum: f64 = requests.iter().map(lower).filter(|x| *x > 0.0).sum();
                (count > 0 && sum > b.max * count as f64 * (1.0 + MEAN_MARGIN)).then(|| {
                    let what = match b.metric {
                        StopMetric::Itl => "token gaps",
                        _ => "requests",
                    };
                    (
                        sum / count as f64,
                        format!(
                            "the {what} already sum to at least {:.0} ms over at most {count} of them",
                            sum
                        ),
                    )
                })
            }
        };
        if let Some((proven_min, evidence)) = missed {
            return Some(Stopped {
                key: b.key.clone(),
                max: b.max,
                proven_min,
                at_ms: now,
                evidence,
            });
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_bounds_it_can_prove() {
        let b = StopBound::parse("p99_ttft_ms", 2000.0).unwrap();
        assert_eq!(
            (b.metric, b.stat),
            (StopMetric::Ttft, StopStat::Percentile(99.0))
        );
        assert_eq!(
            StopBound::parse("median_e2e_latency_ms", 1.0).unwrap().stat,
            StopStat::Percentile(50.0)
        );
        assert_eq!(
            StopBound::parse("mean_itl_ms", 40.0).unwrap().stat,
            StopStat::Mean
        );
        assert!(StopBound::parse("p99_itl_ms", 40.0).is_none());
        assert!(StopBound::parse("min_ttft_ms", 40.0).is_none());
        assert!(StopBound::parse("mean_tpot_ms", 40.0).is_none());
        assert!(StopBound::parse("request_throughput_rps", 4.0).is_none());
    }

    fn waiting(arrival: f64) -> Progress {
        Progress {
            arrival,
            tokens: None,
        }
    }

    #[test]
    fn percentile_needs_enough_requests_above() {
        // 100 requests: p99 is the value of rank round(99 * 0.99) = 98, so 2 values above the
        // bound put it above.
        let b = [StopBound::parse("p99_ttft_ms", 1000.0).unwrap()];
        let mut reqs = vec![
            Progress {
                arrival: 0.0,
                tokens: Some((10.0, 20.0))
            };
            98
        ];
        reqs.push(waiting(0.0));
        assert!(first_missed(&b, &reqs, 100, 1000, 1500.0, 1500.0).is_none());
        reqs.push(Progress {
            arrival: 0.0,
            tokens: Some((1001.0, 1002.0)),
        });
        let s = first_missed(&b, &reqs, 100, 1000, 1500.0, 1500.0).unwrap();
        assert_eq!(
            s.reason(),
            "p99_ttft_ms > max 1000 (stopped early at t=2 s: 2 of 100 requests already above 1000 ms)"
        );
        // Two requests are above 1000 ms: the smaller of the two is proven (1001 ms).
        assert_eq!(s.proven_min, 1001.0);
        assert_eq!(s.at_ms, 1500.0);
        // The wait only counts up to the safe time.
        assert!(first_missed(&b, &reqs, 100, 1000, 900.0, 1500.0).is_none());
    }

    #[test]
    fn mean_needs_the_sum_over_the_largest_count() {
        let b = [StopBound::parse("mean_e2e_latency_ms", 100.0).unwrap()];
        let reqs = vec![waiting(0.0); 10];
        // 10 requests waited 500 ms each: 5000 ms over at most 50 requests is exactly 100.
        assert!(first_missed(&b, &reqs, 50, 0, 500.0, 500.0).is_none());
        let s = first_missed(&b, &reqs, 49, 0, 500.0, 500.0).unwrap();
        // 5000 ms over at most 49 requests: the mean is at least 102.04 ms.
        assert!((s.proven_min - 5000.0 / 49.0).abs() < 1e-9);
    }
}
