//! What `sweep.svg` draws of a search ([`SearchPicture`]), and the drawing area its panels
//! share.

use plotters::coord::Shift;
use plotters::prelude::*;

/// One trial, as the picture needs it.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchPoint {
    /// 1-based trial number.
    pub trial: usize,
    /// The varied keys' values as TOML writes them, in the order of [`SearchPicture::keys`].
    pub values: Vec<String>,
    /// Its monitored value; `None` if it failed or has not run.
    pub monitored: Option<f64>,
    /// Whether the pruner stopped it (its value is from fewer epochs).
    pub pruned: bool,
    /// Its peak bytes in use, where known.
    pub peak: Option<u64>,
    /// Its memory lease, where it ran in parallel.
    pub lease: Option<u64>,
    /// Each run of its child, in seconds since the search's first trial started (more than
    /// one where the pruner paused it between runs).
    pub runs: Vec<(f64, f64)>,
}

/// What `sweep.svg` shows.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchPicture {
    /// The metric trials are ranked by.
    pub monitor: String,
    /// The varied keys.
    pub keys: Vec<String>,
    /// The trials, in trial order.
    pub trials: Vec<SearchPoint>,
    /// The budget the trials' leases shared, where they ran in parallel.
    pub budget: Option<u64>,
    /// Population based training's members over their epochs (empty for other searches),
    /// drawn instead of the value against each key's first value.
    pub population: Vec<MemberLine>,
}

/// A population's member over its epochs.
#[derive(Debug, Clone, PartialEq)]
pub struct MemberLine {
    /// 1-based trial number.
    pub trial: usize,
    /// Its monitored value after each interval and at its end: (epoch, value).
    pub values: Vec<(usize, f64)>,
    /// Where it copied another member's checkpoint: (epoch, that member's number).
    pub copied: Vec<(usize, usize)>,
    /// Each varied key's values, in the order of [`SearchPicture::keys`]: (the epoch a value
    /// applies after, the value), the first from epoch 0.
    pub settings: Vec<Vec<(usize, f64)>>,
}

/// A panel's drawing area.
pub(super) type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;
pub(super) type DrawError = DrawingAreaErrorKind<std::io::Error>;
