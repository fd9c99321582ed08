//! A step's group of loader batches cut into the micro-batches the memory limit allows.

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
}
