//! The Kafka stage runtime shared by the gate and the render stage: a consumer group in, an
//! output topic out, **at least once**. Each component supplies only its decision, a
//! [`Stage`]; the runtime does the rest:
//!
//! * [`batch`] — [`Batch`] (input messages) and [`Staged`] (records to produce, counts, the
//!   stage's pending state), with their [`Dest`]inations.
//! * [`worker`] — one consumer with its producer: poll → [`Stage::stage`] → produce and await
//!   every delivery report → [`Stage::finish`] → commit the finished prefix; pause and back off
//!   while Redis or Kafka is away; finish or abandon a batch on a revocation.
//! * [`offsets`] — which offset of a partition may be committed when messages finish out of
//!   order (model-checked by a proptest).
//! * [`run`] — signals, the metrics server, `kafka.workers` worker threads, the closing summary.
//! * [`signals`] — SIGTERM/SIGINT: finish, commit, exit; a second signal exits at once.
//! * [`metrics`] — the runtime's series and its readiness.
//! * [`passthrough`] — a stage that forwards every message (the benchmark's baseline).
//!
//! Owns: the Kafka delivery discipline. May import `config`, `events` (dead letters) and
//! `observe`; never `gate`, `render`, `serve` or `cli` (they build on it).

pub mod batch;
pub mod metrics;
pub mod offsets;
pub mod passthrough;
pub mod run;
pub mod signals;
pub mod worker;

pub use batch::{Batch, Dest, Msg, Staged};
pub use metrics::StageMetrics;
pub use passthrough::Passthrough;
pub use signals::Stop;
pub(crate) use worker::client_config;
pub use worker::{Report, Topics, Worker};

/// An error of a [`Stage`]: the runtime waits out the retryable ones with the partitions
/// paused, and stops on the others.
pub trait StageError: std::error::Error + Send + Sync + 'static {
    /// The cause may pass (a store unavailable): stage or finish again after a back-off.
    fn is_retryable(&self) -> bool;
}

impl StageError for std::convert::Infallible {
    fn is_retryable(&self) -> bool {
        match *self {}
    }
}

/// One component's decision between consume and commit.
///
/// The split into [`Stage::stage`] and [`Stage::finish`] is what makes a stage at least once:
/// `stage` only reads (it may be repeated after an error), and `finish` records what must be
/// remembered only after every record of the batch was delivered — so a crash at any point can
/// repeat an input but never lose one.
pub trait Stage {
    /// What goes wrong.
    type Error: StageError;
    /// What a staged batch carries until it is finished (see [`Staged::pending`]).
    type Pending: Default + Send;

    /// Turn `batch` (read from `topic`) into `out` (cleared first).
    fn stage(
        &mut self,
        topic: &str,
        batch: &Batch,
        out: &mut Staged<Self::Pending>,
    ) -> Result<(), Self::Error>;

    /// After every record of `out` was delivered: record what must be remembered (idempotent:
    /// called again after a retryable error).
    fn finish(&mut self, out: &mut Staged<Self::Pending>) -> Result<(), Self::Error>;

    /// Record `i` of `out`, an [`Dest::Output`] record, will never be delivered (the output
    /// cluster refused it for good; its input becomes a dead letter): forget what it stood for.
    fn withdraw(&mut self, _out: &mut Staged<Self::Pending>, _i: usize) {}

    /// Count a finished batch into the stage's own metrics (the runtime counts consumed,
    /// emitted and dead-lettered messages itself).
    fn account(&self, _out: &Staged<Self::Pending>) {}

    /// Nothing is in flight and no input is waiting (and once more before the worker stops):
    /// a moment to write down what [`Stage::finish`] left for later. Errors are logged.
    fn idle(&mut self) -> Result<(), Self::Error> {
        Ok(())
    }

    /// Whether the stage has output of its own while no input arrives (the gate: fetch events
    /// adopted from a dead gate): the worker then stages an empty batch.
    fn wants_batch(&mut self) -> bool {
        false
    }
}
