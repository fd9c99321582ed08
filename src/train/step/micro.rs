//! A step's group of loader batches cut into the micro-batches the memory limit allows: as
//! lists of items ([`micro_batches`]), or as ranges of the step's samples ([`micro_ranges`],
//! the items then taken from [`Items`]).

use std::ops::Range;

/// Cuts each loader batch of `group` into micro-batches of at most `size` items. A short
/// loader batch (the epoch's last) stays short rather than borrowing from another.
///
/// With `keep`, the items are copied and `group` keeps them, for a step that a limit may stop
/// and retry with smaller micro-batches; without, they move out (a copy of a W1 batch is
/// 0.8 MiB of host memory held through the step).
pub fn micro_batches<I: Clone>(group: &mut Vec<Vec<I>>, size: usize, keep: bool) -> Vec<Vec<I>> {
    let size = size.max(1);
    if keep {
        return group
            .iter()
            .flat_map(|batch| batch.chunks(size).map(<[I]>::to_vec))
            .collect();
    }
    let mut out = Vec::new();
    for batch in group.drain(..) {
        if batch.len() <= size {
            out.push(batch);
            continue;
        }
        // Each part in an allocation of its own size. `split_off` would leave each part the
        // capacity of all the items after it: over a batch of n, n²/(2 × size) items held
        // (16 MiB of 32-byte items over 1,024 at a micro-batch of 1, where 1,024 hold 32 KiB).
        let mut rest = batch.into_iter();
        while rest.len() > 0 {
            let mut part = Vec::with_capacity(size.min(rest.len()));
            part.extend(rest.by_ref().take(size));
            out.push(part);
        }
    }
    out
}

/// The micro-batches of a step whose batches hold `batches` samples each, as ranges of the
/// step's samples: each batch cut into parts of at most `size`, a short batch (the epoch's
/// last) staying short rather than borrowing from the next, as [`micro_batches`] cuts.
pub fn micro_ranges(batches: &[usize], size: usize) -> Vec<Range<usize>> {
    let size = size.max(1);
    let mut parts = Vec::new();
    let mut start = 0;
    for &len in batches {
        let end = start + len;
        let mut at = start;
        while at < end {
            let to = at + size.min(end - at);
            parts.push(at..to);
            at = to;
        }
        start = end;
    }
    parts
}

/// A step's items, by their place in the step, for its micro-batches' ranges: copied where
/// the step may be retried (`keep`), moved out otherwise (each range is then taken once).
pub struct Items<I> {
    slots: Vec<Option<I>>,
    keep: bool,
}

impl<I: Clone> Items<I> {
    /// The items of `group`'s batches, in order.
    pub fn new(group: Vec<Vec<I>>, keep: bool) -> Self {
        let slots = group.into_iter().flatten().map(Some).collect();
        Self { slots, keep }
    }

    /// The items at `rows`.
    ///
    /// # Panics
    /// Where an item was moved out by an earlier call (a range taken twice without `keep`).
    pub fn take(&mut self, rows: Range<usize>) -> Vec<I> {
        let slots = &mut self.slots[rows];
        match self.keep {
            true => slots.iter().map(|s| s.clone().expect(TAKEN)).collect(),
            false => slots.iter_mut().map(|s| s.take().expect(TAKEN)).collect(),
        }
    }
}

const TAKEN: &str = "each micro-batch's items are taken once, unless kept for a retry";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn micro_batches_cut_each_loader_batch_and_move_or_keep_the_items() {
        let group = vec![vec![1, 2, 3, 4, 5], vec![6, 7]];
        let expected = vec![vec![1, 2], vec![3, 4], vec![5], vec![6, 7]];
        let mut kept = group.clone();
        assert_eq!(micro_batches(&mut kept, 2, true), expected);
        assert_eq!(kept, group, "kept for a retry");
        let mut moved = group.clone();
        assert_eq!(micro_batches(&mut moved, 2, false), expected);
        assert!(moved.is_empty());
        assert_eq!(micro_batches(&mut group.clone(), 8, false), group);
    }

    #[test]
    fn moved_micro_batches_hold_no_more_than_their_items() {
        // Each part in an allocation of its own size, whatever the micro-batch: cut with
        // `split_off`, each part kept the capacity of all the items after it (issue 65:
        // validation at a micro-batch of 1 held 16 MiB more than at 32).
        let n = 1024;
        let items: Vec<u64> = (0..n).collect();
        for size in [1, 2, 3, 32, 1000, 1024, 4096] {
            let parts = micro_batches(&mut vec![items.clone()], size, false);
            let slots: usize = parts.iter().map(Vec::capacity).sum();
            assert_eq!(slots, items.len(), "at a micro-batch of {size}");
            assert_eq!(parts.concat(), items, "at a micro-batch of {size}");
            assert!(parts.iter().all(|p| p.len() <= size), "at {size}");
        }
    }

    #[test]
    fn micro_ranges_cut_as_micro_batches_cut_and_items_give_them() {
        let group = vec![vec![1, 2, 3, 4, 5], vec![6, 7]];
        let sizes = [5, 2];
        for size in [1, 2, 3, 5, 8] {
            let expected = micro_batches(&mut group.clone(), size, true);
            let mut kept = Items::new(group.clone(), true);
            let mut moved = Items::new(group.clone(), false);
            let parts = micro_ranges(&sizes, size);
            let from_kept: Vec<Vec<i32>> = parts.iter().map(|r| kept.take(r.clone())).collect();
            let again: Vec<Vec<i32>> = parts.iter().map(|r| kept.take(r.clone())).collect();
            let from_moved: Vec<Vec<i32>> = parts.into_iter().map(|r| moved.take(r)).collect();
            assert_eq!(from_kept, expected, "size {size}");
            assert_eq!(again, expected, "kept for a retry, size {size}");
            assert_eq!(from_moved, expected, "size {size}");
        }
        assert_eq!(micro_ranges(&[3, 1], usize::MAX), vec![0..3, 3..4]);
    }
}
