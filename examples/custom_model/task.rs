//! The example's own model, data, batcher and loss: nothing here comes from `tidemark::model`
//! or `tidemark::data`. A model with two inputs (numbers and a category) predicting a value,
//! trained with a Huber loss.

use std::sync::Arc;

use burn::data::dataloader::batcher::Batcher;
use burn::data::dataset::{Dataset, InMemDataset};
use burn::module::Module;
use burn::nn::{Embedding, EmbeddingConfig, Linear, LinearConfig};
use burn::tensor::activation::gelu;
use burn::tensor::{Device, Int, Tensor, TensorData};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use tidemark::task::{Compute, Splits, StepOutput, Task};

/// Numeric features per sample.
pub const FEATURES: usize = 8;
/// Categories (e.g. the store a sale happened in).
pub const CATEGORIES: usize = 16;

/// One sample: measurements, a category and the value to predict.
#[derive(Debug, Clone)]
pub struct Sale {
    pub features: [f32; FEATURES],
    pub store: u32,
    pub amount: f32,
}

/// A batch of sales as tensors.
#[derive(Debug, Clone)]
pub struct SaleBatch {
    pub features: Tensor<2>,
    pub stores: Tensor<1, Int>,
    pub amounts: Tensor<2>,
}

/// Stacks sales into a batch.
pub struct SaleBatcher;

impl Batcher<Sale, SaleBatch> for SaleBatcher {
    fn batch(&self, items: Vec<Sale>, device: &Device) -> SaleBatch {
        let n = items.len();
        let features: Vec<f32> = items.iter().flat_map(|s| s.features).collect();
        let stores: Vec<i64> = items.iter().map(|s| s.store as i64).collect();
        let amounts: Vec<f32> = items.iter().map(|s| s.amount).collect();
        SaleBatch {
            features: Tensor::from_data(TensorData::new(features, [n, FEATURES]), device),
            stores: Tensor::from_data(TensorData::new(stores, [n]), device),
            amounts: Tensor::from_data(TensorData::new(amounts, [n, 1]), device),
        }
    }
}

/// Two inputs: the features through a linear layer, the store through an embedding; their
/// sum through a hidden layer to one output.
#[derive(Module, Debug)]
pub struct SalesModel {
    features: Linear,
    store: Embedding,
    hidden: Linear,
    out: Linear,
}

impl SalesModel {
    pub fn new(width: usize, device: &Device) -> Self {
        Self {
            features: LinearConfig::new(FEATURES, width).init(device),
            store: EmbeddingConfig::new(CATEGORIES, width).init(device),
            hidden: LinearConfig::new(width, width).init(device),
            out: LinearConfig::new(width, 1).init(device),
        }
    }

    pub fn forward(&self, features: Tensor<2>, stores: Tensor<1, Int>) -> Tensor<2> {
        let [n] = stores.dims();
        let store: Tensor<2> = self.store.forward(stores.reshape([1, n])).squeeze_dim(0);
        let x = gelu(self.features.forward(features) + store);
        self.out.forward(gelu(self.hidden.forward(x)))
    }
}

/// The Huber loss with threshold 1: squared for small errors, linear for large ones.
pub fn huber(predicted: Tensor<2>, target: Tensor<2>) -> Tensor<1> {
    let error = (predicted - target).abs();
    let small = error.clone().lower_elem(1.0).float();
    let quadratic = error.clone().powi_scalar(2).mul_scalar(0.5);
    let linear = error.sub_scalar(0.5);
    (small.clone() * quadratic + (small.neg().add_scalar(1.0)) * linear).mean()
}

/// `n` sales from a fixed rule plus noise: a smooth function of the features (mostly linear,
/// with a sine), and a different offset for every store.
pub fn sales(n: usize, seed: u64) -> Vec<Sale> {
    let mut rng = StdRng::seed_from_u64(seed);
    let offsets: Vec<f32> = (0..CATEGORIES)
        .map(|s| (s as f32 * 0.7).sin() * 2.0)
        .collect();
    (0..n)
        .map(|_| {
            let features: [f32; FEATURES] = std::array::from_fn(|_| rng.random_range(-1.0..1.0));
            let store = rng.random_range(0..CATEGORIES as u32);
            let signal: f32 = features
                .iter()
                .enumerate()
                .map(|(i, x)| x * (i + 1) as f32 / 4.0)
                .sum::<f32>()
                + (2.0 * features[0]).sin();
            let amount = signal + offsets[store as usize] + rng.random_range(-0.1..0.1);
            Sale {
                features,
                store,
                amount,
            }
        })
        .collect()
}

/// The task: the model, the data, and a batch to a loss.
pub struct Sales {
    pub width: usize,
    pub train: Arc<InMemDataset<Sale>>,
    pub valid: Arc<InMemDataset<Sale>>,
}

impl Sales {
    /// The model over `items`, as its validation split (a file's sales, to score or predict).
    pub fn on(width: usize, items: Vec<Sale>) -> Self {
        Self {
            width,
            train: Arc::new(InMemDataset::new(Vec::new())),
            valid: Arc::new(InMemDataset::new(items)),
        }
    }

    pub fn new(width: usize, samples: usize) -> Self {
        let mut all = sales(samples, 7);
        let valid = all.split_off(samples * 4 / 5);
        Self {
            width,
            train: Arc::new(InMemDataset::new(all)),
            valid: Arc::new(InMemDataset::new(valid)),
        }
    }
}

impl Task for Sales {
    type Model = SalesModel;
    type Item = Sale;
    type Batch = SaleBatch;

    fn name(&self) -> String {
        "sales".into()
    }

    fn model(&self, device: &Device) -> SalesModel {
        SalesModel::new(self.width, device)
    }

    fn data(&self) -> Splits<Sale> {
        let train: Arc<dyn Dataset<Sale>> = self.train.clone();
        let valid: Arc<dyn Dataset<Sale>> = self.valid.clone();
        Splits::new(train, Some(valid))
    }

    fn batcher(&self) -> &dyn Batcher<Sale, SaleBatch> {
        &SaleBatcher
    }

    fn step(&self, model: &SalesModel, batch: SaleBatch, cx: &Compute) -> StepOutput {
        let predicted = cx.output(model.forward(cx.input(batch.features), batch.stores));
        StepOutput::new(huber(predicted, batch.amounts))
    }

    fn valid_step(&self, model: &SalesModel, batch: SaleBatch, cx: &Compute) -> StepOutput {
        let predicted = cx.output(model.forward(cx.input(batch.features), batch.stores));
        let error = predicted - batch.amounts;
        let mae = error.clone().abs().mean();
        let huber_loss = huber(error.clone(), error.zeros_like());
        StepOutput::new(huber_loss).metric("mae", mae)
    }
}
