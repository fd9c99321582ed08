//! `lr-find.svg`: the learning-rate finder's loss against the rate (a log axis), smoothed as
//! the finder judged it, each step's own loss behind it, and the suggested rate marked.

use std::path::Path;

use plotters::prelude::*;

use super::error::ReportError;
use super::palette::{BLUE, RED};

const SIZE: (u32, u32) = (720, 440);
const LIGHT: RGBColor = RGBColor(190, 190, 190);

/// What `lr-find.svg` draws.
#[derive(Debug, Clone)]
pub struct LrFindPicture {
    /// Whose finder it was (the run's name).
    pub title: String,
    /// Each step's rate, loss and smoothed loss.
    pub points: Vec<(f64, f64, f64)>,
    /// The suggested point, by index.
    pub suggestion: Option<usize>,
}

/// Draws `picture` into an SVG at `path`.
pub fn render_lr_find_svg(picture: &LrFindPicture, path: &Path) -> Result<(), ReportError> {
    super::write_svg(path, SIZE, |root| {
        draw(picture, root).map_err(|e| ReportError::at(path, &e))
    })
}

fn draw(
    picture: &LrFindPicture,
    root: DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
) -> Result<(), Box<dyn std::error::Error>> {
    root.fill(&WHITE)?;
    let finite: Vec<&(f64, f64, f64)> = (picture.points.iter())
        .filter(|p| p.0 > 0.0 && p.0.is_finite() && p.2.is_finite())
        .collect();
    let x = |lr: f64| lr.log10();
    let (x_lo, x_hi) = bounds(finite.iter().map(|p| x(p.0)));
    // The smoothed curve sets the scale: the raw losses of the last steps would flatten it.
    let (y_lo, y_hi) = bounds(finite.iter().map(|p| p.2));
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!("{}: loss against learning rate", picture.title),
            ("sans-serif", 16),
        )
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(x_lo..x_hi, y_lo..y_hi)?;
    chart
        .configure_mesh()
        .max_light_lines(0)
        .x_desc("learning rate (log scale)")
        .y_desc("loss")
        .x_label_formatter(&|v| format!("{:.0e}", 10f64.powf(*v)))
        .y_label_formatter(&|v| super::axis_label(*v))
        .draw()?;
    // The raw losses where they are inside the frame, in runs: a loss outside it is left off,
    // not drawn along the frame's edge, where it read as a loss of that size.
    let mut runs: Vec<Vec<(f64, f64)>> = vec![Vec::new()];
    for p in &finite {
        match (y_lo..=y_hi).contains(&p.1) {
            true => runs.last_mut().expect("one run").push((x(p.0), p.1)),
            false if runs.last().is_some_and(|r| !r.is_empty()) => runs.push(Vec::new()),
            false => {}
        }
    }
    for (i, run) in runs.into_iter().enumerate() {
        let drawn = chart.draw_series(LineSeries::new(run, LIGHT))?;
        if i == 0 {
            drawn
                .label("loss of each step (in the frame)")
                .legend(|(a, b)| PathElement::new(vec![(a, b), (a + 16, b)], LIGHT));
        }
    }
    chart
        .draw_series(LineSeries::new(
            finite.iter().map(|p| (x(p.0), p.2)),
            BLUE.stroke_width(2),
        ))?
        .label("smoothed (beta 0.98)")
        .legend(|(a, b)| PathElement::new(vec![(a, b), (a + 16, b)], BLUE.stroke_width(2)));
    if let Some(&(lr, _, smoothed)) = picture.suggestion.and_then(|i| picture.points.get(i)) {
        let at = (x(lr), smoothed);
        chart
            .draw_series([Circle::new(at, 6, RED.filled())])?
            .label(format!("suggested: {lr:.2e}"))
            .legend(|(a, b)| Circle::new((a + 8, b), 5, RED.filled()));
    }
    // The legend in the corner the curves cross least.
    let corner = |left: bool, low: bool| {
        let (x_span, y_span) = (x_hi - x_lo, y_hi - y_lo);
        let in_x = |v: f64| match left {
            true => v < x_lo + 0.4 * x_span,
            false => v > x_hi - 0.4 * x_span,
        };
        let in_y = |v: f64| match low {
            true => v < y_lo + 0.35 * y_span,
            false => v > y_hi - 0.35 * y_span,
        };
        (finite.iter())
            .filter(|p| in_x(x(p.0)) && (in_y(p.2) || in_y(p.1)))
            .count()
    };
    let corners = [
        (SeriesLabelPosition::LowerLeft, corner(true, true)),
        (SeriesLabelPosition::UpperRight, corner(false, false)),
        (SeriesLabelPosition::UpperLeft, corner(true, false)),
        (SeriesLabelPosition::LowerRight, corner(false, true)),
    ];
    let position = (corners.into_iter())
        .min_by_key(|(_, crossing)| *crossing)
        .map_or(SeriesLabelPosition::LowerLeft, |(p, _)| p);
    chart
        .configure_series_labels()
        .position(position)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()?;
    root.present()?;
    Ok(())
}

/// The span of `values`, a twentieth wider on each side (a unit around a single value).
fn bounds(values: impl Iterator<Item = f64>) -> (f64, f64) {
    let (lo, hi) = values.fold((f64::MAX, f64::MIN), |(l, h), v| (l.min(v), h.max(v)));
    match hi > lo {
        true => (lo - (hi - lo) / 20.0, hi + (hi - lo) / 20.0),
        false if lo <= hi => (lo - 0.5, hi + 0.5),
        false => (0.0, 1.0),
    }
}
