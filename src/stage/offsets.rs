//! At-least-once offset bookkeeping for one partition.
//!
//! Messages are received in offset order but finish in any order (a batch waits for its
//! delivery reports and filter writes). A partition may only commit up to its **lowest
//! unfinished** offset: committing past an unfinished message would lose it if the process
//! died. [`PartitionOffsets`] keeps the unfinished window in arrival order and answers the
//! offset to commit (Kafka's convention: the next offset to read). Offsets need not be
//! contiguous (compaction and transaction markers leave gaps).

use std::collections::VecDeque;

/// What went wrong; each is a bug in the caller or a redelivery to handle by [`PartitionOffsets::reset`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OffsetError {
    /// An offset not above the last one received (a redelivery after a seek or rebalance).
    #[error("offset {got} received after {last}: reset the partition after a seek or rebalance")]
    NotIncreasing {
        /// The offset received.
        got: i64,
        /// The last offset received before it.
        last: i64,
    },
    /// `done` for an offset that is not in flight.
    #[error("offset {0} is not in flight")]
    Unknown(i64),
}

/// The in-flight window of one partition.
#[derive(Debug, Default, Clone)]
pub struct PartitionOffsets {
    window: VecDeque<(i64, bool)>,
    last: Option<i64>,
    committable: Option<i64>,
    committed: Option<i64>,
}

impl PartitionOffsets {
    /// An empty window.
    pub fn new() -> PartitionOffsets {
        PartitionOffsets::default()
    }

    /// A message at `offset` was handed to the stage.
    pub fn received(&mut self, offset: i64) -> Result<(), OffsetError> {
        if let Some(last) = self.last {
            if offset <= last {
                return Err(OffsetError::NotIncreasing { got: offset, last });
            }
        }
        self.last = Some(offset);
        self.window.push_back((offset, false));
        Ok(())
    }

    /// The message at `offset` is finished (emitted and delivered, or dead-lettered).
    pub fn done(&mut self, offset: i64) -> Result<(), OffsetError> {
        let i = self
            .window
            .binary_search_by_key(&offset, |&(o, _)| o)
            .map_err(|_| OffsetError::Unknown(offset))?;
        self.window[i].1 = true;
        while let Some(&(o, true)) = self.window.front() {
            self.window.pop_front();
            self.committable = Some(o + 1);
        }
        Ok(())
    }

    /// The offset to commit now (next to read), if it moved since the last [`Self::committed`].
    pub fn to_commit(&self) -> Option<i64> {
        match (self.committable, self.committed) {
            (Some(c), Some(d)) if c <= d => None,
            (c, _) => c,
        }
    }

    /// The offset up to which everything is finished (next to read), committed or not.
    pub fn committable(&self) -> Option<i64> {
        self.committable
    }

    /// Record that `offset` (from [`Self::to_commit`]) was committed.
    pub fn committed(&mut self, offset: i64) {
        self.committed = Some(self.committed.map_or(offset, |d| d.max(offset)));
    }

    /// Messages received and not finished.
    pub fn in_flight(&self) -> usize {
        self.window.len()
    }

    /// Forget the window (the partition was revoked, or the consumer seeks back): what was not
    /// committed will be redelivered.
    pub fn reset(&mut self) {
        *self = PartitionOffsets::default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn commits_only_the_finished_prefix() {
        let mut p = PartitionOffsets::new();
        for o in [10, 11, 12, 15, 16] {
            p.received(o).unwrap();
        }
        assert_eq!(p.to_commit(), None);
        p.done(11).unwrap();
        p.done(15).unwrap();
        assert_eq!(p.to_commit(), None, "10 is unfinished");
        p.done(10).unwrap();
        assert_eq!(p.to_commit(), Some(12), "11 done, 12 not");
        p.committed(12);
        assert_eq!(p.to_commit(), None);
        p.done(12).unwrap();
        assert_eq!(p.to_commit(), Some(16), "the gap 13–14 is not waited for");
        p.done(16).unwrap();
        assert_eq!(p.to_commit(), Some(17));
        assert_eq!(p.in_flight(), 0);
        assert_eq!(
            p.received(16),
            Err(OffsetError::NotIncreasing { got: 16, last: 16 })
        );
        assert_eq!(p.done(99), Err(OffsetError::Unknown(99)));
        p.reset();
        p.received(12).unwrap();
    }

    proptest! {
        /// Whatever order messages finish in, the offset to commit never passes an unfinished
        /// message, and once all are finished it is the last offset + 1.
        #[test]
        fn never_commits_past_an_unfinished_message(
            gaps in proptest::collection::vec(1i64..4, 1..200),
            order in proptest::collection::vec(any::<u32>(), 1..200),
        ) {
            let mut offsets = Vec::new();
            let mut o = 0;
            for g in &gaps { o += g; offsets.push(o); }
            let mut p = PartitionOffsets::new();
            for &o in &offsets { p.received(o).unwrap(); }
            // A permutation from the random keys.
            let mut idx: Vec<usize> = (0..offsets.len()).collect();
            idx.sort_by_key(|&i| order.get(i).copied().unwrap_or(i as u32));
            let mut done = std::collections::HashSet::new();
            for &i in &idx {
                p.done(offsets[i]).unwrap();
                done.insert(offsets[i]);
                if let Some(c) = p.to_commit() {
                    for &x in &offsets {
                        if x < c { prop_assert!(done.contains(&x), "commit {} passes unfinished {}", c, x); }
                    }
                    // Maximal: the first offset at or past c is unfinished (or there is none).
                    if let Some(&next) = offsets.iter().find(|&&x| x >= c) {
                        prop_assert!(!done.contains(&next));
                    }
                }
            }
            prop_assert_eq!(p.to_commit(), Some(o + 1));
            prop_assert_eq!(p.in_flight(), 0);
        }
    }
}
