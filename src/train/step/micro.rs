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
    for mut batch in group.drain(..) {
        while batch.len() > size {
            let rest = batch.split_off(size);
            out.push(batch);
            batch = rest;
        }
        out.push(batch);
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
