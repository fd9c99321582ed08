//! Burn's data loaders, as tidemark builds them.

use std::sync::Arc;

use burn::data::dataloader::batcher::Batcher;
use burn::data::dataloader::{DataLoader, DataLoaderBuilder};
use burn::data::dataset::Dataset;
use burn::tensor::Device;

/// A batcher that keeps the items as they are: the training loop cuts them into micro-batches
/// of the size it decides (a memory limit may shrink it mid-run) before the task's own batcher
/// makes tensors of them.
#[derive(Debug, Clone, Copy, Default)]
pub struct Collect;

impl<I: Send + Sync> Batcher<I, Vec<I>> for Collect {
    fn batch(&self, items: Vec<I>, _device: &Device) -> Vec<I> {
        items
    }
}

/// Burn's data loader over `dataset`, in lists of `batch_size` items, shuffled each epoch from
/// `shuffle`'s seed if given.
///
/// With `workers > 0`, Burn's multi-threaded loader fetches items on that many threads and
/// queues up to 100 lists ahead of the training loop (the `tf.data` prefetch analogue); they
/// then arrive in the order the workers finish them. With 0, each list is fetched on the
/// training thread when the loop asks for it.
pub fn item_loader<I>(
    dataset: Arc<dyn Dataset<I>>,
    batch_size: usize,
    shuffle: Option<u64>,
    workers: usize,
) -> Arc<dyn DataLoader<Vec<I>>>
where
    I: Clone + Send + Sync + std::fmt::Debug + 'static,
{
    let mut builder = DataLoaderBuilder::new(Collect)
        .batch_size(batch_size)
        .num_workers(workers);
    if let Some(seed) = shuffle {
        builder = builder.shuffle(seed);
    }
    builder.build(dataset)
}
