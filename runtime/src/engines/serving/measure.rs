//! Endpoints driven without LoadGen: a closed loop that keeps a number of requests in flight and
//! starts a new one whenever one ends. The rate probe of development runs and `mlperf bench llm`
//! measure with it.

use super::ServingError;
use super::api::{Output, Payload};
use super::client::{Client, ClientOptions, EndpointStats, RequestError, Sink, Tag};
use crate::cpu::CpuClock;
use std::sync::Arc;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// What a closed loop measured after its warm-up.
#[derive(Debug, Clone)]
pub struct ClosedLoop {
    pub completed: u64,
    pub tokens: u64,
    pub elapsed: Duration,
    /// CPU time of this process (the client) over the measurement, microseconds.
    pub cpu_us: f64,
    /// The endpoints' record over the measurement (the warm-up forgotten).
    pub endpoints: Vec<EndpointStats>,
}

impl ClosedLoop {
    pub fn samples_per_s(&self) -> f64 {
        self.completed as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }

    pub fn tokens_per_s(&self) -> f64 {
        self.tokens as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }

    /// Mean time a request took from submission to its last token (meaningful with one in flight).
    pub fn mean_latency(&self) -> Duration {
        self.elapsed / self.completed.max(1) as u32
    }
}

enum Event {
    Done { tokens: usize },
    Failed(RequestError),
}

struct Channel(std::sync::Mutex<mpsc::Sender<Event>>);

impl Sink for Channel {
    fn first_token(&self, _: Tag, _: &Output) {}
    fn complete(&self, _: Tag, answer: &Output) {
        let _ = self.0.lock().expect("sender").send(Event::Done { tokens: answer.tokens() as usize });
    }
    fn failed(&self, _: Tag, error: &RequestError) {
        let _ = self.0.lock().expect("sender").send(Event::Failed(error.clone()));
    }
}

/// How a closed loop runs.
#[derive(Debug, Clone, Copy)]
pub struct Shape {
    pub in_flight: usize,
    /// The first `in_flight` requests are spread evenly over this (zero: all at once). Spread over
    /// one answer's length, requests stay spread as a server's arrivals are; sent at once, every
    /// answer's tokens arrive in the same instants, a herd that measures how fast a burst drains.
    pub ramp: Duration,
    /// Not measured; counts from the first request, so it should outlast the ramp.
    pub warm_up: Duration,
    pub duration: Duration,
}

impl Shape {
    pub fn all_at_once(in_flight: usize, warm_up: Duration, duration: Duration) -> Shape {
        Shape { in_flight, ramp: Duration::ZERO, warm_up, duration }
    }
}

/// Keeps `shape.in_flight` requests going to the endpoints of `options`, `request(k)` for the k-th
/// request, for the warm-up and then the duration. A failed request ends the loop with its error.
pub fn closed_loop(options: ClientOptions, request: &dyn Fn(usize) -> Payload, shape: Shape) -> Result<ClosedLoop, ServingError> {
    let Shape { in_flight, ramp, warm_up, duration } = shape;
    let (tx, rx) = mpsc::channel();
    let client = Client::start(options, Arc::new(Channel(std::sync::Mutex::new(tx))))?;
    let mut next = 0usize;
    let mut submit = |client: &Client| {
        client.submit(Tag { id: next, sample: next }, request(next));
        next += 1;
    };
    let start = Instant::now();
    let in_flight = in_flight.max(1);
    for k in 0..in_flight {
        std::thread::sleep((start + ramp * k as u32 / in_flight as u32).saturating_duration_since(Instant::now()));
        submit(&client);
    }
    let mut measuring: Option<(Instant, CpuClock)> = None;
    let (mut completed, mut tokens) = (0u64, 0u64);
    let end = start + warm_up + duration;
    let idle = Duration::from_secs(60).max(duration);
    loop {
        let now = Instant::now();
        if now >= end {
            break;
        }
        if measuring.is_none() && now >= start + warm_up {
            client.stats_handle().restart();
            measuring = Some((now, CpuClock::start()));
        }
        let until = if measuring.is_none() { start + warm_up } else { end };
        match rx.recv_timeout(until.saturating_duration_since(now).clamp(Duration::from_millis(1), idle)) {
            Ok(Event::Done { tokens: n }) => {
                if measuring.is_some() {
                    completed += 1;
                    tokens += n as u64;
                }
                submit(&client);
            }
            Ok(Event::Failed(e)) => return Err(ServingError::Request(e)),
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => return Err(ServingError::ClientStopped),
        }
    }
    let (since, cpu) = measuring.ok_or(ServingError::EndedInWarmUp)?;
    let (elapsed, cpu_us) = (since.elapsed(), cpu.elapsed_us());
    Ok(ClosedLoop { completed, tokens, elapsed, cpu_us, endpoints: client.finish() })
}
