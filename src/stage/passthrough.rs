//! A bare consume → produce copy: the ceiling a stage is measured against
//! (`crawlsieve gate --passthrough`): same batching, same delivery discipline, no decoding and
//! no store.

use super::{Batch, Dest, Stage, Staged};

/// Copies every input message to the output topic unchanged.
#[derive(Debug, Default)]
pub struct Passthrough;

impl Stage for Passthrough {
    type Error = std::convert::Infallible;
    type Pending = ();

    fn stage(&mut self, _: &str, batch: &Batch, out: &mut Staged) -> Result<(), Self::Error> {
        out.clear();
        for i in 0..batch.len() {
            out.record(Dest::Output, batch.key(i), |b| {
                b.extend_from_slice(batch.value(i))
            });
        }
        out.consumed = batch.len() as u64;
        out.emitted = batch.len() as u64;
        Ok(())
    }

    fn finish(&mut self, _: &mut Staged) -> Result<(), Self::Error> {
        Ok(())
    }
}
