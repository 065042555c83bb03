//! Steps of [`RedisFilter::take_submit`]: the batch's payloads, its outbox field, and the direct
//! send of its write-ahead and inserts.

use super::super::resp::Batch;
use super::super::{RedisFilter, RedisFilterError};
use super::{Kind, Outbox, Take};

impl RedisFilter {
    /// The payloads of the URLs `todo` sends to Redis, one line each, in the outbox's spare
    /// buffer; an error if a payload holds a newline.
    pub(super) fn take_payloads(
        &mut self,
        todo: &[usize],
        payload: &mut impl FnMut(usize, &mut Vec<u8>),
    ) -> Result<Vec<u8>, RedisFilterError> {
        let mut blob = std::mem::take(&mut self.ob.as_mut().expect("made by outbox()").spare_blob);
        blob.clear();
        for &i in todo {
            let start = blob.len();
            payload(i, &mut blob);
            if blob[start..].contains(&b'\n') {
                return Err(RedisFilterError::Params(
                    "an outbox payload contains a newline".into(),
                ));
            }
            blob.push(b'\n');
        }
        Ok(blob)
    }

    /// Write `take`'s write-ahead and inserts into `b` and send it on the hot connection; `take`
    /// becomes [`Kind::Sent`] whether or not the send failed.
    pub(super) fn send_direct(
        &mut self,
        take: &mut Take,
        b: &mut Batch,
    ) -> Result<(), RedisFilterError> {
        self.write_ahead(take, b);
        let base = b.len();
        let cur = self.gens.current().clone();
        let groups = self.write_cmds(&cur, &take.fps, &take.todo, true, b);
        let readmit = self.write_readmit(&take.fps, &take.todo, b);
        self.readmit_seen.clear(); // one live generation: no lookup ran
        let n = b.len();
        self.stats.redis_lookups += take.todo.len() as u64;
        let sent = self.conn().and_then(|c| c.send(b));
        take.kind = Kind::Sent {
            n,
            epoch: self.epoch,
            base,
            groups,
            cur,
            readmit,
        };
        sent
    }
}

impl Outbox {
    /// Give `take` its field (an abandoned batch's first, else the next number) and the entries
    /// its exchange clears.
    pub(super) fn assign_field(&mut self, take: &mut Take) {
        take.field = match self.reuse.pop_front() {
            Some(f) => f,
            None => {
                self.seq += 1;
                self.seq.to_string()
            }
        };
        take.cleared = std::mem::take(&mut self.clear_q);
    }
}
